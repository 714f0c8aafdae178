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
// constants; internal/rulecopies holds them to it).
const (
	ActionDelivered    = "delivered"
	ActionClaimLost    = "claim_lost"
	ActionCommitFailed = "commit_failed"
	// A delivery whose Check refused the row reports ActionDeadLettered (as the consumer does).
)

// OutboxStore is what a Publisher needs from a store; *Store implements it. NewPublisher takes the
// interface rather than *Store so that a caller can stand between the publisher and the store: to
// trace or time each call, or to inject a delivery's faults (a commit that fails, a crash between
// the split profile's two commits) in a test of the code around the publisher. pconform's
// conformance replay is such a caller. A wrapper must keep the store's meaning: every call made
// with a context from ExecTx joins that transaction. Wake-ups (Run's wait) and Metrics come from
// the *Store the wrapper embeds, if it embeds one; otherwise Run polls and nothing is counted.
type OutboxStore interface {
	ExecTx(ctx context.Context, readOnly bool, fn func(context.Context) error) error
	Enqueue(ctx context.Context, m NewMessage) (bool, error)
	OutboxClaim(ctx context.Context, limit int, claimFor time.Duration) ([]OutboxRow, error)
	OutboxComplete(ctx context.Context, id, token string) error
	OutboxFail(ctx context.Context, id, token string, delay time.Duration) error
	OutboxDeadLetter(ctx context.Context, id, token, reason string) error
	// MessageMailbox tells the row's own earlier delivery from an id collision (see Deliver).
	MessageMailbox(ctx context.Context, id string) (string, error)
}

var _ OutboxStore = (*Store)(nil)

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
	// RetryDelay is how long a row whose delivery failed waits before a claim may take it again
	// (the delay Deliver hands to OutboxFail). Zero means no wait.
	RetryDelay time.Duration
	// Check, if set, vets each claimed row before its delivery: an error says the row can never
	// be delivered (its payload does not decode, its target does not exist), and Deliver
	// dead-letters the row with the error's message as the reason (ReasonUndeliverable when the
	// message is empty) instead of enqueueing it. nil accepts every row.
	Check func(ctx context.Context, row OutboxRow) error
	// DeliverBatch is, in ModeFold, the most claimed rows one transaction delivers
	// (docs/semantics.md, "Batches"): every row's enqueue and completion commit together.
	// Zero or 1 delivers row by row, as Deliver does. ModeSplit always delivers row by row. A
	// recording store records a batch as one publisher_deliver_batch step.
	// Negative, or above MaxBatchSize, is an error.
	DeliverBatch int
	_            struct{}
}

// ReasonUndeliverable is the dead-letter reason of a row that Check refused with an error whose
// message is empty.
const ReasonUndeliverable = "undeliverable"

// ReasonIDCollisionPrefix begins ReasonIDCollision's reason; the mailbox's name follows it.
const ReasonIDCollisionPrefix = "id collides with a message in mailbox "

// ReasonIDCollision is the dead-letter reason of an outbox row whose id is already the id of a
// message (or mailbox dead letter) in mailbox, another mailbox than the row's target: delivering
// it would complete the row while its target receives nothing.
func ReasonIDCollision(mailbox string) string {
	return reasonText(ReasonIDCollisionPrefix + mailbox)
}

// DeliveryResult is what Deliver did. Duplicate reports what the target enqueue found — the
// message id already present — even when the delivery then rolled back.
type DeliveryResult struct {
	Action    string
	Duplicate bool
}

// Publisher moves outbox rows into their target mailboxes.
type Publisher struct {
	st       OutboxStore
	mode     PublishMode
	batch    int
	claimFor time.Duration
	poll     time.Duration
	log      *slog.Logger
	wake     func(string)
	// metrics is the store's Metrics when st is a *Store (or embeds one), NopMetrics otherwise.
	metrics Metrics
	// id numbers the publisher in a recording store's events; 0 until its first recorded step.
	id    atomic.Int64
	retry time.Duration
	check func(context.Context, OutboxRow) error
	// deliverBatch is PublisherOptions.DeliverBatch, 1 when rows go one by one.
	deliverBatch int
}

// NewPublisher returns a publisher over st: a *Store, or a wrapper of one (see OutboxStore).
//
// Errors: ErrInvalidArgument (nil store, unknown mode, negative batch, durations
// outside [0, MaxDuration]).
func NewPublisher(st OutboxStore, opts PublisherOptions) (*Publisher, error) {
	const op = "NewPublisher"
	switch {
	case st == nil:
		return nil, invalid(op, "store is nil")
	case opts.Mode != ModeFold && opts.Mode != ModeSplit:
		return nil, invalid(op, "mode %v is unknown", opts.Mode)
	case opts.Batch < 0:
		return nil, invalid(op, "batch %d is negative", opts.Batch)
	case opts.DeliverBatch < 0 || opts.DeliverBatch > MaxBatchSize:
		return nil, invalid(op, "deliver_batch %d is outside [0, %d]", opts.DeliverBatch, MaxBatchSize)
	}
	if err := checkDuration(op, "retry_delay", opts.RetryDelay); err != nil {
		return nil, err
	}
	if err := checkDuration(op, "claim_for", opts.ClaimFor); err != nil {
		return nil, err
	}
	if err := checkDuration(op, "poll_interval", opts.PollInterval); err != nil {
		return nil, err
	}
	p := &Publisher{st: st, mode: opts.Mode, batch: opts.Batch, claimFor: opts.ClaimFor,
		poll: opts.PollInterval, log: opts.Logger, wake: opts.Wake, retry: opts.RetryDelay, check: opts.Check}
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
	p.deliverBatch = max(opts.DeliverBatch, 1)
	if _, ok := st.(interface{ records() bool }); p.mode != ModeFold || !ok {
		// Only a *Store (or a wrapper embedding one) has the savepoints a batch needs.
		p.deliverBatch = 1
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
// First, if Check refuses the row, it is dead-lettered (OutboxDeadLetter, fenced by the claim)
// with Check's error message as the reason: "dead_lettered", or "claim_lost" when the claim no
// longer matches; nothing is enqueued.
//
// An id collision is refused: when the enqueue finds the row's id taken, Deliver asks
// MessageMailbox where it is. In the row's target it is the row's own earlier delivery (a split
// delivery that crashed before its completion, say), and the delivery goes on. In another mailbox
// it is another message that happens to share the id: the row is dead-lettered, fenced by the claim,
// with ReasonIDCollision(that mailbox) in place of the completion, and the action is
// "dead_lettered" (Duplicate true), or "claim_lost". An id only retired by a purge has no mailbox
// any more and counts as the row's own.
//
// ModeFold: one transaction holds Enqueue (a duplicate is fine) and OutboxComplete. A lost claim
// rolls both back: "claim_lost", nil error. Any other failure — the enqueue, the completion or the
// commit — changes nothing: "commit_failed" with the error, logged.
//
// ModeSplit: Enqueue commits in one transaction, OutboxComplete in a second. If the first fails,
// the row is not completed: "commit_failed" with the error, logged. If the completion finds the
// claim lost: "claim_lost" (the message stays enqueued). If the completion fails otherwise:
// "commit_failed" with the error; the redelivery will be a duplicate.
//
// After "commit_failed" the row is released in a transaction of its own, fenced by the claim: if
// the failed attempt was the row's last (DeliveryAttempts >= MaxDeliveryAttempts) it is
// dead-lettered with ReasonMaxDeliveryAttempts, otherwise OutboxFail makes it available again
// after RetryDelay. A release that finds the claim lost changes nothing; one that fails leaves the
// row claimed until the claim runs out (OutboxClaim then takes it again, or dead-letters it when
// it has no attempts left).
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
	var cerr error
	if p.check != nil {
		cerr = p.check(ctx, row)
	}
	switch {
	case cerr != nil:
		res, err = p.undeliverable(ctx, row, cerr)
	case p.mode == ModeSplit:
		res, err = p.deliverSplit(ctx, row)
	default:
		res, err = p.deliverFold(ctx, row)
	}
	if res.Action == ActionCommitFailed && cerr == nil {
		err = errors.Join(err, p.release(ctx, row))
	}
	// Counted after the delivery's transactions ended.
	switch res.Action {
	case ActionDelivered:
		p.metrics.Count(CounterOutboxDelivered, row.Target, 1)
	case ActionCommitFailed, ActionDeadLettered:
		p.metrics.Count(CounterOutboxFailed, row.Target, 1)
	}
	return res, err
}

// undeliverable dead-letters a row that Check refused with cerr.
func (p *Publisher) undeliverable(ctx context.Context, row OutboxRow, cerr error) (DeliveryResult, error) {
	reason := reasonText(cerr.Error())
	if reason == "" {
		reason = ReasonUndeliverable
	}
	err := p.st.OutboxDeadLetter(ctx, row.ID, row.ClaimToken, reason)
	switch {
	case err == nil:
		p.log.LogAttrs(ctx, slog.LevelWarn, "actordelivery: outbox row cannot be delivered; dead-lettered",
			p.rowAttrs(row, slog.String(logKeyReason, reason))...)
		return DeliveryResult{Action: ActionDeadLettered}, nil
	case errors.Is(err, ErrClaimLost):
		p.log.LogAttrs(ctx, slog.LevelInfo, "actordelivery: outbox claim lost before the row was dead-lettered", p.rowAttrs(row)...)
		return DeliveryResult{Action: ActionClaimLost}, nil
	default:
		return DeliveryResult{Action: ActionCommitFailed}, p.failed(ctx, row, "dead-letter", err)
	}
}

// release hands back the claim of a row whose delivery failed: dead-lettered when that was its
// last attempt, available again after RetryDelay otherwise. A lost claim is not an error.
func (p *Publisher) release(ctx context.Context, row OutboxRow) error {
	var err error
	what := "release"
	if row.MaxDeliveryAttempts > 0 && row.DeliveryAttempts >= row.MaxDeliveryAttempts {
		what = "dead-letter"
		err = p.st.OutboxDeadLetter(ctx, row.ID, row.ClaimToken, ReasonMaxDeliveryAttempts)
		if err == nil {
			p.log.LogAttrs(ctx, slog.LevelWarn, "actordelivery: outbox row out of delivery attempts; dead-lettered",
				p.rowAttrs(row, slog.Int(logKeyMaxDelivery, row.MaxDeliveryAttempts))...)
		}
	} else {
		err = p.st.OutboxFail(ctx, row.ID, row.ClaimToken, p.retry)
	}
	if err == nil || errors.Is(err, ErrClaimLost) {
		return nil
	}
	p.log.LogAttrs(ctx, slog.LevelError, "actordelivery: outbox row could not be released; it stays claimed until the claim expires",
		p.rowAttrs(row, slog.String(logKeyStage, what), attrError(err))...)
	return fmt.Errorf("actordelivery: publisher: %s of %q: %w", what, row.ID, err)
}

// collidesWith returns the mailbox whose message already has the row's id when that is not the
// row's target, "" otherwise (the id is the row's own delivery, or only retired).
func (p *Publisher) collidesWith(ctx context.Context, row OutboxRow) (string, error) {
	mailbox, err := p.st.MessageMailbox(ctx, row.ID)
	switch {
	case errors.Is(err, ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	case mailbox == row.Target:
		return "", nil
	}
	return mailbox, nil
}

// finish ends a delivery whose message is in place: it completes the row, or, when the id
// collides with a message of another mailbox, dead-letters it. It returns the mailbox the id
// collides with, "" when it completed the row.
func (p *Publisher) finish(ctx context.Context, row OutboxRow, dup bool) (string, error) {
	if dup {
		other, err := p.collidesWith(ctx, row)
		if err != nil {
			return "", err
		}
		if other != "" {
			return other, p.st.OutboxDeadLetter(ctx, row.ID, row.ClaimToken, ReasonIDCollision(other))
		}
	}
	return "", p.st.OutboxComplete(ctx, row.ID, row.ClaimToken)
}

// collided reports a delivery that dead-lettered its row for an id collision.
func (p *Publisher) collided(ctx context.Context, row OutboxRow, other string) DeliveryResult {
	p.log.LogAttrs(ctx, slog.LevelWarn, "actordelivery: outbox row id collides with a message of another mailbox; dead-lettered",
		p.rowAttrs(row, slog.String(logKeyReason, ReasonIDCollision(other)))...)
	return DeliveryResult{Action: ActionDeadLettered, Duplicate: true}
}

func (p *Publisher) deliverFold(ctx context.Context, row OutboxRow) (DeliveryResult, error) {
	var dup bool
	var other string
	err := p.st.ExecTx(ctx, false, func(ctx context.Context) error {
		d, err := p.st.Enqueue(ctx, rowMessage(row))
		if err != nil {
			return err
		}
		dup = d
		other, err = p.finish(ctx, row, dup)
		done := ActionDelivered
		if other != "" {
			done = ActionDeadLettered
		}
		switch {
		case err == nil:
			p.recordFold(ctx, row, false, DeliveryResult{Action: done, Duplicate: dup})
		case errors.Is(err, ErrClaimLost):
			p.recordFold(ctx, row, true, DeliveryResult{Action: ActionClaimLost, Duplicate: dup})
		}
		return err
	})
	switch {
	case err == nil && other != "":
		return p.collided(ctx, row, other), nil
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
	var other string
	err = p.st.ExecTx(ctx, false, func(ctx context.Context) error {
		var err error
		other, err = p.finish(ctx, row, dup)
		return err
	})
	switch {
	case err == nil && other != "":
		return p.collided(ctx, row, other), nil
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
	p.log.LogAttrs(ctx, slog.LevelError, "actordelivery: outbox delivery failed",
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
	if p.deliverBatch > 1 {
		return p.stepBatches(ctx, rows)
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
