package actordelivery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"
)

// Publisher actions, as DeliveryResult.Action reports them (equal to the traces package's
// constants).
const (
	ActionDelivered    = "delivered"
	ActionClaimLost    = "claim_lost"
	ActionCommitFailed = "commit_failed"
)

// outboxStore is what a Publisher needs from a store: a *Store. It is an interface, and
// unexported, so that conformance replay can wrap the store from outside to inject a delivery's
// faults (a commit that fails, a crash between commits) while a user's API shows only *Store.
type outboxStore interface {
	ExecTx(ctx context.Context, readOnly bool, fn func(context.Context) error) error
	Enqueue(ctx context.Context, m NewMessage) (bool, error)
	OutboxClaim(ctx context.Context, limit int, claimFor time.Duration) ([]OutboxRow, error)
	OutboxComplete(ctx context.Context, id, token string) error
	OutboxFail(ctx context.Context, id, token string, delay time.Duration) error
}

// PublishMode is how a delivery commits.
type PublishMode int

const (
	// ModeFold: the target enqueue and the outbox completion commit in one transaction.
	ModeFold PublishMode = iota
	// ModeSplit: the enqueue commits, then the completion commits — the only way for a store
	// without cross-table transactions. A crash between the two leaves the row pending and the
	// message enqueued; the redelivery is a duplicate the enqueue suppresses.
	ModeSplit
)

func (m PublishMode) String() string {
	switch m {
	case ModeFold:
		return "fold"
	case ModeSplit:
		return "split"
	}
	return fmt.Sprintf("PublishMode(%d)", int(m))
}

// PublisherOptions configure NewPublisher.
type PublisherOptions struct {
	Mode PublishMode
	// Batch is the claim size; zero means 16.
	Batch int
	// ClaimFor is the claim length; zero means 30s. A row whose delivery failed is claimed again
	// once it runs out.
	ClaimFor time.Duration
	// PollInterval is Run's wait when nothing was claimed; zero means 100ms.
	PollInterval time.Duration
	// Logger: nil discards.
	Logger *slog.Logger
	// Wake, if set, is called with the target mailbox after a delivery's enqueue committed, so
	// local consumers need not wait for their next poll. (*Store also signals its own
	// subscribers.)
	Wake func(mailbox string)
	_    struct{}
}

// DeliveryResult is what Deliver did. Duplicate reports what the target enqueue found — the
// message id already present — even when the delivery then rolled back.
type DeliveryResult struct {
	Action    string
	Duplicate bool
}

// Publisher moves outbox rows into their target mailboxes.
type Publisher struct {
	st       outboxStore
	mode     PublishMode
	batch    int
	claimFor time.Duration
	poll     time.Duration
	log      *slog.Logger
	wake     func(string)
	// metrics is the store's Metrics when st is a *Store (or embeds one), NopMetrics otherwise.
	metrics Metrics
	// id numbers the publisher in a recording store's events; 0 until its first recorded step.
	id atomic.Int64
}

// NewPublisher returns a publisher over st, a *Store.
//
// Errors: ErrInvalidArgument (nil store, unknown mode, negative batch, durations
// outside [0, MaxDuration]).
func NewPublisher(st outboxStore, opts PublisherOptions) (*Publisher, error) {
	const op = "NewPublisher"
	switch {
	case st == nil:
		return nil, invalid(op, "store is nil")
	case opts.Mode != ModeFold && opts.Mode != ModeSplit:
		return nil, invalid(op, "mode %v is unknown", opts.Mode)
	case opts.Batch < 0:
		return nil, invalid(op, "batch %d is negative", opts.Batch)
	}
	if err := checkDuration(op, "claim_for", opts.ClaimFor); err != nil {
		return nil, err
	}
	if err := checkDuration(op, "poll_interval", opts.PollInterval); err != nil {
		return nil, err
	}
	p := &Publisher{st: st, mode: opts.Mode, batch: opts.Batch, claimFor: opts.ClaimFor,
		poll: opts.PollInterval, log: opts.Logger, wake: opts.Wake}
	if p.batch == 0 {
		p.batch = 16
	}
	if p.claimFor == 0 {
		p.claimFor = 30 * time.Second
	}
	if p.poll == 0 {
		p.poll = 100 * time.Millisecond
	}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p.metrics = NopMetrics{}
	if ms, ok := st.(interface{ metricsSink() Metrics }); ok {
		p.metrics = ms.metricsSink()
	}
	return p, nil
}

// Claim claims up to Batch available rows for ClaimFor.
func (p *Publisher) Claim(ctx context.Context) ([]OutboxRow, error) {
	rows, err := p.st.OutboxClaim(ctx, p.batch, p.claimFor)
	if err != nil {
		return nil, fmt.Errorf("actordelivery: publisher: claim: %w", err)
	}
	return rows, nil
}

func rowMessage(row OutboxRow) NewMessage {
	return NewMessage{Mailbox: row.Target, ID: row.ID, Key: row.Key, Priority: row.Priority,
		MaxAttempts: row.MaxAttempts, Payload: row.Payload}
}

// Deliver enqueues the claimed row's message into its target mailbox and completes the row.
//
// ModeFold: one transaction holds Enqueue (a duplicate is fine) and OutboxComplete. A lost claim
// rolls both back: "claim_lost", nil error. Any other failure — the enqueue, the completion or the
// commit — changes nothing: "commit_failed" with the error, logged; the row is delivered again
// once its claim expires.
//
// ModeSplit: Enqueue commits in one transaction, OutboxComplete in a second. If the first fails,
// the row is not completed: "commit_failed" with the error, logged. If the completion finds the
// claim lost: "claim_lost" (the message stays enqueued). If the completion fails otherwise:
// "commit_failed" with the error; the redelivery will be a duplicate.
//
// Errors (only with "commit_failed"): ErrInvalidArgument (a row without id or claim token), and the
// store's errors, wrapped.
func (p *Publisher) Deliver(ctx context.Context, row OutboxRow) (DeliveryResult, error) {
	if row.ID == "" {
		return DeliveryResult{Action: ActionCommitFailed}, invalid("Deliver", "outbox row id is empty")
	}
	if row.ClaimToken == "" {
		return DeliveryResult{Action: ActionCommitFailed}, invalid("Deliver", "outbox row %q has no claim token", row.ID)
	}
	var res DeliveryResult
	var err error
	if p.mode == ModeSplit {
		res, err = p.deliverSplit(ctx, row)
	} else {
		res, err = p.deliverFold(ctx, row)
	}
	// Counted after the delivery's transactions ended.
	switch res.Action {
	case ActionDelivered:
		p.metrics.Count(CounterOutboxDelivered, row.Target, 1)
	case ActionCommitFailed:
		p.metrics.Count(CounterOutboxFailed, row.Target, 1)
	}
	return res, err
}

func (p *Publisher) deliverFold(ctx context.Context, row OutboxRow) (DeliveryResult, error) {
	var dup bool
	err := p.st.ExecTx(ctx, false, func(ctx context.Context) error {
		d, err := p.st.Enqueue(ctx, rowMessage(row))
		if err != nil {
			return err
		}
		dup = d
		err = p.st.OutboxComplete(ctx, row.ID, row.ClaimToken)
		switch {
		case err == nil:
			p.recordFold(ctx, row, false, DeliveryResult{Action: ActionDelivered, Duplicate: dup})
		case errors.Is(err, ErrClaimLost):
			p.recordFold(ctx, row, true, DeliveryResult{Action: ActionClaimLost, Duplicate: dup})
		}
		return err
	})
	switch {
	case err == nil:
		p.woke(row.Target)
		return DeliveryResult{Action: ActionDelivered, Duplicate: dup}, nil
	case errors.Is(err, ErrClaimLost):
		p.log.LogAttrs(ctx, slog.LevelInfo, "actordelivery: outbox claim lost, delivery rolled back", p.rowAttrs(row)...)
		return DeliveryResult{Action: ActionClaimLost, Duplicate: dup}, nil
	default:
		return DeliveryResult{Action: ActionCommitFailed, Duplicate: dup}, p.failed(ctx, row, "fold delivery", err)
	}
}

// recordFold records a fold delivery as one protocol step when the store records. A split
// delivery is two commits, and is recorded as the two store operations it commits (enqueue,
// outbox_complete), since other steps may come between them.
func (p *Publisher) recordFold(ctx context.Context, row OutboxRow, read bool, r DeliveryResult) {
	s := recordingStore(ctx)
	if s == nil {
		return
	}
	if p.id.Load() == 0 {
		p.id.CompareAndSwap(0, s.publishers.Add(1))
	}
	recordStep(ctx, read, "publisher_deliver",
		EventArgs{Publisher: int(p.id.Load()), ID: row.ID, Token: row.ClaimToken, Profile: "fold", Fault: "none"},
		EventResult{Action: r.Action, Duplicate: r.Duplicate})
}

func (p *Publisher) deliverSplit(ctx context.Context, row OutboxRow) (DeliveryResult, error) {
	var dup bool
	err := p.st.ExecTx(ctx, false, func(ctx context.Context) error {
		d, err := p.st.Enqueue(ctx, rowMessage(row))
		dup = d
		return err
	})
	if err != nil {
		// The row must not be completed: its message may never have arrived.
		return DeliveryResult{Action: ActionCommitFailed, Duplicate: dup}, p.failed(ctx, row, "split enqueue", err)
	}
	p.woke(row.Target)
	err = p.st.ExecTx(ctx, false, func(ctx context.Context) error {
		return p.st.OutboxComplete(ctx, row.ID, row.ClaimToken)
	})
	switch {
	case err == nil:
		return DeliveryResult{Action: ActionDelivered, Duplicate: dup}, nil
	case errors.Is(err, ErrClaimLost):
		p.log.LogAttrs(ctx, slog.LevelInfo, "actordelivery: outbox claim lost after the enqueue committed", p.rowAttrs(row)...)
		return DeliveryResult{Action: ActionClaimLost, Duplicate: dup}, nil
	default:
		return DeliveryResult{Action: ActionCommitFailed, Duplicate: dup}, p.failed(ctx, row, "split complete", err)
	}
}

func (p *Publisher) rowAttrs(row OutboxRow, extra ...slog.Attr) []slog.Attr {
	return append([]slog.Attr{attrMessageID(row.ID), slog.String(logKeyTarget, row.Target),
		slog.Int(logKeyDelivery, row.DeliveryAttempts), slog.String(logKeyClaimToken, row.ClaimToken)}, extra...)
}

func (p *Publisher) failed(ctx context.Context, row OutboxRow, what string, err error) error {
	p.log.LogAttrs(ctx, slog.LevelError, "actordelivery: outbox delivery failed; row stays pending until its claim expires",
		p.rowAttrs(row, slog.String(logKeyMode, p.mode.String()), slog.String(logKeyStage, what), attrError(err))...)
	return fmt.Errorf("actordelivery: publisher: %s of %q to %q: %w", what, row.ID, row.Target, err)
}

func (p *Publisher) woke(target string) {
	if p.wake != nil {
		p.wake(target)
	}
}

// Step claims one batch and delivers each row. It returns how many were delivered, and the joined
// errors of the failed deliveries (it goes on with the rest of the batch, except after ErrClosed or
// the end of ctx).
func (p *Publisher) Step(ctx context.Context) (int, error) {
	rows, err := p.Claim(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, row := range rows {
		res, err := p.Deliver(ctx, row)
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, ErrClosed) || ctx.Err() != nil {
				break
			}
			continue
		}
		if res.Action == ActionDelivered {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// Run steps until ctx ends (nil) or the store is closed (ErrClosed). It waits PollInterval after a
// step that claimed nothing or failed, and wakes early when the store (if it is a *Store) signals a
// committed outbox enqueue.
func (p *Publisher) Run(ctx context.Context) error {
	var wake <-chan struct{}
	if s, ok := p.st.(interface {
		SubscribeOutbox() (<-chan struct{}, func())
	}); ok {
		ch, cancel := s.SubscribeOutbox()
		defer cancel()
		wake = ch
	}
	for {
		if ctx.Err() != nil {
			return nil
		}
		n, err := p.Step(ctx)
		switch {
		case err != nil && errors.Is(err, ErrClosed):
			return err
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			p.log.LogAttrs(ctx, slog.LevelError, "actordelivery: publisher step failed", attrError(err), attrRetryIn(p.poll))
		case n > 0:
			continue
		}
		if !sleep(ctx, p.poll, wake) {
			return nil
		}
	}
}
