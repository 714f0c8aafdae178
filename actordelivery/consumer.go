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

// Consumer actions, as Outcome.Action reports them (equal to the traces package's constants;
// internal/rulecopies holds them to it).
const (
	ActionAcked        = "acked"
	ActionRetried      = "retried"
	ActionDeadLettered = "dead_lettered"
	ActionLeaseLost    = "lease_lost"
	ActionIdle         = "idle"
)

// Path is how a consumer takes messages from its mailbox.
type Path int

const (
	// PathLeased: any number of workers per mailbox. Fetch leases the message (token, expiry,
	// attempts + 1); the acknowledgement is fenced by the token.
	PathLeased Path = iota
	// PathLeaseless: exactly one worker per mailbox. Fetch only peeks (no write, no writer lock);
	// the acknowledgement is by id. Nothing guards against a second worker: running two leaseless
	// consumers on one mailbox delivers messages twice.
	PathLeaseless
)

func (p Path) String() string {
	switch p {
	case PathLeased:
		return "leased"
	case PathLeaseless:
		return "leaseless"
	}
	return fmt.Sprintf("Path(%d)", int(p))
}

// EffectiveAttempts is the attempt number a failed delivery counts as, given the attempt count
// stored with the fetched message. On the leased path the lease already counted this delivery, so
// it is stored; on the leaseless path nothing has counted it yet, so it is stored + 1. The retry
// decision and the dead-letter threshold use this number on both paths; handing the leaseless path
// the raw stored count would strand a message at attempts == max_attempts, never eligible and never
// dead-lettered.
func EffectiveAttempts(stored int, path Path) int {
	if path == PathLeaseless {
		return stored + 1
	}
	return stored
}

// Effects are the writes a handler's delivery makes. Handle calls them inside the one short write
// transaction that also acknowledges the message: ctx carries that transaction, so every store call
// made with it (SaveCheckpoint, MarkProcessed, OutboxEnqueue, Enqueue, ...) commits together with
// the acknowledgement or not at all. Effects run after the acknowledgement's fence held (on the
// leased path the token still matched), and only then. An error rolls the whole transaction back,
// acknowledgement included, and counts as a failed delivery, exactly as if the handler had returned
// it. Effects must not keep ctx or use it from another goroutine.
type Effects func(ctx context.Context) error

// Handler processes one message. It runs outside any write transaction (Read/Commit): it may read
// the store, call other services and take as long as it needs without holding the database's
// writer lock, so handlers of different mailboxes, and enqueues from other goroutines, proceed
// while it runs. It returns either the Effects to commit with the acknowledgement (nil: nothing to
// write, the message is just acknowledged) or an error, which means the delivery failed and
// nothing is written.
//
// A handler's reads are not part of the commit: a handler that computes a write from what it read
// (a checkpoint, say) should make Effects check it, for example with SaveCheckpoint's expected
// version, so a concurrent change makes the commit fail instead of overwriting it.
type Handler func(ctx context.Context, m *Message) (Effects, error)

// RetryPolicy decides, for a failed delivery whose effective attempt is attempt (1-based, below
// max_attempts), whether to retry and after what delay.
type RetryPolicy interface {
	Retry(err error, attempt int) (delay time.Duration, retry bool)
}

// Backoff is exponential backoff: Base * 2^(attempt-1), at most Max; it always retries. A zero
// Base means 1s, a zero Max means 5m.
type Backoff struct{ Base, Max time.Duration }

// Retry implements RetryPolicy.
func (b Backoff) Retry(_ error, attempt int) (time.Duration, bool) {
	base, max := b.Base, b.Max
	if base <= 0 {
		base = time.Second
	}
	if max <= 0 {
		max = 5 * time.Minute
	}
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	return min(d, max), true
}

// ConsumerOptions configure NewConsumer.
type ConsumerOptions struct {
	// Mailbox is the mailbox served; required.
	Mailbox string
	Path    Path
	// LeaseFor is the lease length on the leased path; zero means 30s, negative is an error.
	LeaseFor time.Duration
	// Retry decides delays; nil means Backoff{Base: time.Second, Max: 5 * time.Minute}.
	Retry RetryPolicy
	// PollInterval is Run's first idle wait, doubled while idle up to MaxPollInterval and reset
	// after work. Zero means 50ms and 2s.
	PollInterval, MaxPollInterval time.Duration
	// Logger: nil discards.
	Logger *slog.Logger
	// Worker names the consumer in a recording store's events; zero numbers it automatically
	// (1, 2, ... in creation order, per store).
	Worker int
	// DrainTimeout bounds RunWorkers' drain: once its context ends, a delivery still in flight
	// has this long before its handler's context is cancelled (with cause ErrDrainTimeout) and
	// its outcome is no longer committed. Zero means 10s; negative is an error. Consumer.Run
	// does not use it (its deliveries run with Run's own context).
	DrainTimeout time.Duration
	// BatchSize is the most messages one fetch takes and one transaction commits
	// (docs/semantics.md, "Batches"); see FetchBatch and HandleBatch. Zero or 1 is a batch of
	// one: Fetch and Handle exactly, with their statements and recorded events. Negative, or
	// above MaxBatchSize, is an error. The retry policy decides for each failed message of a
	// batch whether to retry it; the retried ones all wait the delay it gave the first of them.
	// A recording store (Options.Recorder) records a batch as one consumer_fetch_batch and one
	// consumer_handle_batch step.
	BatchSize int
	// BatchWait is how long a consumer whose last batch came back partly filled (more than
	// none, fewer than BatchSize) waits before its next fetch, so that a trickle of messages is
	// gathered into fuller batches. It bounds the latency batching adds. Zero never waits;
	// negative is an error. It has no effect with a batch of one.
	BatchWait time.Duration
	_         struct{}
}

// MaxBatchSize is the largest ConsumerOptions.BatchSize and PublisherOptions.DeliverBatch.
const MaxBatchSize = 1000

// Delivery is a fetched message and the path it was fetched on. On the leaseless path
// Message.Token is "".
type Delivery struct {
	Message Message
	Path    Path
}

// Outcome is what Handle did. Attempt is the effective attempt handed to the retry decision when
// the handler failed, 0 otherwise.
type Outcome struct {
	Action  string
	Attempt int
}

// Consumer delivers the messages of one mailbox to a Handler.
type Consumer struct {
	st       *Store
	handler  Handler
	mailbox  string
	path     Path
	leaseFor time.Duration
	retry    RetryPolicy
	poll     time.Duration
	maxPoll  time.Duration
	log      *slog.Logger
	// worker numbers the consumer in its store's recorded events.
	worker int
	// drain is ConsumerOptions.DrainTimeout with its default applied.
	drain time.Duration
	// batch is ConsumerOptions.BatchSize, 1 when batches are off;
	// batchWait is ConsumerOptions.BatchWait. partial: the last batch was partly filled.
	batch     int
	batchWait time.Duration
	partial   atomic.Bool
	// busy: the consumer's last fetch found a message, so the mailbox likely holds more. The next
	// leased fetch goes straight to the write transaction instead of reading first; the next
	// leaseless fetch peeks on the writer connection, whose page cache the acknowledgement in
	// between left valid (see Store.peek), instead of on the reader pool.
	busy atomic.Bool
	// placed is, on a recording store, the place in the commit order of the consumer's last
	// recorded fetch, wake or poll tick: its next wake or poll tick goes after it (wake.go).
	placed lastPlace
}

const (
	defaultLeaseFor        = 30 * time.Second
	defaultPollInterval    = 50 * time.Millisecond
	defaultMaxPollInterval = 2 * time.Second
	// defaultDrainTimeout fits inside the usual 30s grace period between a service manager's
	// SIGTERM and its SIGKILL, with room for the rest of a process's shutdown.
	defaultDrainTimeout = 10 * time.Second
)

// NewConsumer returns a consumer of opts.Mailbox.
//
// Errors: ErrInvalidArgument (nil store or handler, empty mailbox, unknown path, durations
// outside [0, MaxDuration], MaxPollInterval below PollInterval).
func NewConsumer(st *Store, h Handler, opts ConsumerOptions) (*Consumer, error) {
	const op = "NewConsumer"
	switch {
	case st == nil:
		return nil, invalid(op, "store is nil")
	case h == nil:
		return nil, invalid(op, "handler is nil")
	case opts.Mailbox == "":
		return nil, invalid(op, "mailbox is empty")
	case opts.Path != PathLeased && opts.Path != PathLeaseless:
		return nil, invalid(op, "path %v is unknown", opts.Path)
	case opts.Worker < 0:
		return nil, invalid(op, "worker %d is negative", opts.Worker)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"lease_for", opts.LeaseFor}, {"poll_interval", opts.PollInterval}, {"max_poll_interval", opts.MaxPollInterval}, {"drain_timeout", opts.DrainTimeout}, {"batch_wait", opts.BatchWait}} {
		if err := checkDuration(op, d.name, d.v); err != nil {
			return nil, err
		}
	}
	c := &Consumer{
		st: st, handler: h, mailbox: opts.Mailbox, path: opts.Path,
		leaseFor: opts.LeaseFor, retry: opts.Retry,
		poll: opts.PollInterval, maxPoll: opts.MaxPollInterval, log: opts.Logger,
		worker: opts.Worker, drain: opts.DrainTimeout, batch: opts.BatchSize, batchWait: opts.BatchWait,
	}
	if c.batch < 0 || c.batch > MaxBatchSize {
		return nil, invalid(op, "batch_size %d is outside [0, %d]", c.batch, MaxBatchSize)
	}
	if c.batch == 0 {
		c.batch = 1
	}
	if c.drain == 0 {
		c.drain = defaultDrainTimeout
	}
	if c.worker == 0 {
		c.worker = int(st.workers.Add(1))
	}
	if c.leaseFor == 0 {
		c.leaseFor = defaultLeaseFor
	}
	if c.retry == nil {
		c.retry = Backoff{Base: time.Second, Max: 5 * time.Minute}
	}
	if c.poll == 0 {
		c.poll = defaultPollInterval
	}
	if c.maxPoll == 0 {
		c.maxPoll = max(defaultMaxPollInterval, c.poll)
	}
	if c.maxPoll < c.poll {
		return nil, invalid(op, "max_poll_interval %v is below poll_interval %v", c.maxPoll, c.poll)
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c, nil
}

// Fetch takes the mailbox's next message, or returns nil when there is none. Leased path: in one
// write transaction, ExpireLeases then Lease; a read first checks that this would change anything
// (a lease has expired somewhere, or the mailbox has an eligible message), and when it would not,
// Fetch returns nil without taking the writer or committing anything: an empty poll is a read.
// While fetches find messages the read is skipped (a draining consumer goes straight to the write
// transaction); the first fetch that finds none commits a transaction that changed nothing, and
// the polls after it read first again.
// Leaseless path: Peek, which writes nothing; the message stays exactly as stored until Handle.
// While fetches find messages it peeks on the writer connection (it still takes no SQLite write
// lock, see Store.peek); an idle poll peeks on the reader pool.
//
// Errors: ErrBusy, ErrClosed.
func (c *Consumer) Fetch(ctx context.Context) (*Delivery, error) {
	var m *Message
	var err error
	switch {
	case c.path == PathLeaseless && c.st.rec == nil:
		m, err = c.st.peek(ctx, c.mailbox, c.busy.Load())
		c.busy.Store(err == nil && m != nil)
	case c.path == PathLeaseless:
		// Recording: the peek runs under the commit lock and is recorded as this fetch.
		err = c.st.ExecTx(ctx, false, func(ctx context.Context) error {
			var err error
			if m, err = c.st.Peek(ctx, c.mailbox); err == nil {
				recordStep(ctx, true, "consumer_fetch", c.stepArgs(), EventResult{Message: peekedMessage(m)})
				c.place(ctx)
			}
			return err
		})
	default:
		m, err = c.fetchLeased(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("actordelivery: consumer %q: fetch: %w", c.mailbox, err)
	}
	if m == nil {
		return nil, nil
	}
	c.st.metrics.Count(CounterFetched, c.mailbox, 1)
	return &Delivery{Message: *m, Path: c.path}, nil
}

// stepArgs are the arguments every recorded step of the consumer carries.
func (c *Consumer) stepArgs() EventArgs {
	return EventArgs{Worker: c.worker, Mailbox: c.mailbox, Profile: c.path.String()}
}

// lostOrLeft reports the errors with which an acknowledgement, retry or dead letter finds the
// delivery no longer the consumer's: its lease lost, or (leaseless) the message no longer ready.
func lostOrLeft(err error) bool { return errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound) }

// fetchLeased is the leased fetch: expire() then lease(mailbox, leaseFor), as one step. When the
// read finds neither an expired lease nor an eligible message, both would change nothing at that
// instant, so the fetch is over there (idle), with no write transaction. Otherwise the write
// transaction runs both as before, at its own now; the read is only a shortcut, never the
// decision. A recording store skips the read: every fetch, an idle one too, is a recorded step
// under the commit lock. So does a busy consumer (its last fetch found a message): on a draining
// mailbox the read would only repeat what the write transaction finds out anyway.
func (c *Consumer) fetchLeased(ctx context.Context) (*Message, error) {
	if c.st.rec == nil && !c.busy.Load() {
		expired, candidate, err := c.st.leasedWork(ctx, c.mailbox)
		if err != nil {
			return nil, err
		}
		if !expired && !candidate {
			return nil, nil
		}
	}
	var m *Message
	err := c.st.ExecTx(ctx, false, func(ctx context.Context) error {
		if _, err := c.st.ExpireLeases(ctx); err != nil {
			return err
		}
		var err error
		if m, err = c.st.Lease(ctx, c.mailbox, c.leaseFor); err == nil {
			a := c.stepArgs()
			a.LeaseFor = c.leaseFor
			recordStep(ctx, false, "consumer_fetch", a, EventResult{Message: eventMessage(m)})
			c.place(ctx)
		}
		return err
	})
	c.busy.Store(err == nil && m != nil)
	return m, err
}

// errEffectsFailed marks, inside Handle's transaction, that the handler's Effects (not the store)
// failed.
var errEffectsFailed = errors.New("handler effects failed")

// Handle runs the handler on d outside any write transaction, then commits its Effects and the
// acknowledgement (Ack by token on the leased path, AckByID on the leaseless one) in one short
// write transaction. A nil d is an idle step: Outcome{Action: "idle"}.
//
//   - handler succeeds, acknowledgement succeeds: its effects run in the acknowledgement's
//     transaction, which commits: "acked".
//   - handler succeeds, acknowledgement finds the lease lost (leased) or the message gone
//     (leaseless): nothing is written, the effects never run: "lease_lost".
//   - handler fails (it returned an error, or its Effects did, which rolls the acknowledgement
//     back): nothing of the delivery is written. One write transaction records the failure. The
//     effective attempt is EffectiveAttempts(stored, path), capped at max_attempts, where stored is the
//     count the row holds inside that transaction on the leaseless path (a nack_by_id may have
//     landed since the fetch) and the leased count on the leased path.
//     At or above max_attempts the message is dead-lettered with ReasonMaxAttempts; below it, when
//     the retry policy declines, with the handler's error message as the reason ("dead_lettered"); on the leaseless path NackByID(id, 0) and DeadLetter commit in one
//     transaction, so the dead letter records the effective attempt; on the leased path the
//     dead-letter is fenced by the token ("lease_lost" if the lease is lost). Otherwise it is
//     nacked with the policy's delay ("retried"), or "lease_lost" if the fenced nack lost its lease.
//
// A store failure (busy, closed, commit error) is returned as an error with an empty Outcome; the
// message is untouched by the failed step and is fetched again later.
//
// Errors: ErrInvalidArgument (d fetched on another path or for another mailbox), ErrBusy,
// ErrClosed, other wrapped store errors.
func (c *Consumer) Handle(ctx context.Context, d *Delivery) (Outcome, error) {
	out, err := c.handle(ctx, d)
	// Counted after the outcome committed, outside its transaction.
	switch out.Action {
	case ActionAcked:
		c.st.metrics.Count(CounterAcked, c.mailbox, 1)
	case ActionRetried:
		c.st.metrics.Count(CounterRetried, c.mailbox, 1)
	case ActionDeadLettered:
		c.st.metrics.Count(CounterDeadLettered, c.mailbox, 1)
	}
	return out, err
}

func (c *Consumer) handle(ctx context.Context, d *Delivery) (Outcome, error) {
	if d == nil {
		return Outcome{Action: ActionIdle}, nil
	}
	m := d.Message
	switch {
	case d.Path != c.path:
		return Outcome{}, invalid("Handle", "delivery %q was fetched on the %v path, consumer runs %v", m.ID, d.Path, c.path)
	case m.Mailbox != c.mailbox:
		return Outcome{}, invalid("Handle", "delivery %q belongs to mailbox %q, consumer serves %q", m.ID, m.Mailbox, c.mailbox)
	case m.ID == "":
		return Outcome{}, invalid("Handle", "delivery has an empty message id")
	case c.path == PathLeased && m.Token == "":
		return Outcome{}, invalid("Handle", "leased delivery %q has no token", m.ID)
	}
	hm := m
	hm.Payload = append([]byte(nil), m.Payload...)
	effects, herr := c.handler(ctx, &hm)
	if herr != nil {
		return c.failed(ctx, m, herr)
	}
	ack := func(ctx context.Context) error {
		if c.path == PathLeased {
			return c.st.Ack(ctx, m.ID, m.Token)
		}
		return c.st.AckByID(ctx, m.ID)
	}
	var err error
	if effects == nil && c.st.rec == nil && c.st.d.backend == BackendSQLite {
		// Nothing to write with the acknowledgement and nothing to record: the acknowledgement
		// alone is the transaction, one statement in autocommit (see Store.execOne).
		err = ack(ctx)
	} else {
		err = c.ackWith(ctx, ack, effects, &herr)
	}
	switch {
	case err == nil:
		return Outcome{Action: ActionAcked}, nil
	case herr != nil && errors.Is(err, errEffectsFailed):
		return c.failed(ctx, m, herr)
	case lostOrLeft(err):
		c.log.LogAttrs(ctx, slog.LevelInfo, "actordelivery: acknowledgement lost, handler effects not written",
			attrMailbox(c.mailbox), attrMessageID(m.ID), slog.String(logKeyPath, c.path.String()))
		return Outcome{Action: ActionLeaseLost}, nil
	default:
		c.recordFailedHandle(ctx, "ok")
		return Outcome{}, fmt.Errorf("actordelivery: consumer %q: handle %q: %w", c.mailbox, m.ID, err)
	}
}

// recordFailedHandle records, when the store records, a single handle whose transaction did not
// commit: one consumer_handle read step with fault commit_fails and action commit_failed, its
// outcome what the handler returned ("ok" or "fail": the retry policy's decision was never
// committed). The handle changed nothing, but the worker no longer holds its fetch, and without
// the step its next fetch would read as a fetch while it still held one.
func (c *Consumer) recordFailedHandle(ctx context.Context, outcome string) {
	if c.st.rec == nil {
		return
	}
	a := c.stepArgs()
	a.Outcome, a.Fault = outcome, "commit_fails"
	c.recordFailed(ctx, "consumer_handle", a, EventResult{Action: ActionCommitFailed})
}

// recordFailed records op, a handle whose transaction did not commit, as a read step, in a
// transaction of its own (which writes nothing) after the failure, under a context that is not
// cancelled with ctx: a drain timeout or a cancelled handle is such a failure.
func (c *Consumer) recordFailed(ctx context.Context, op string, a EventArgs, r EventResult) {
	err := c.st.ExecTx(context.WithoutCancel(ctx), false, func(ctx context.Context) error {
		recordStep(ctx, true, op, a, r)
		return nil
	})
	if err != nil {
		c.log.LogAttrs(ctx, slog.LevelError, "actordelivery: recording a handle that did not commit",
			slog.String("op", op), attrMailbox(c.mailbox), attrError(err))
	}
}

// ackWith commits the acknowledgement (ack) and the handler's effects in one write transaction,
// recording the step. When the effects fail it sets *herr to their error and returns
// errEffectsFailed, which rolled the acknowledgement back.
func (c *Consumer) ackWith(ctx context.Context, ack func(context.Context) error, effects Effects, herr *error) error {
	return c.st.ExecTx(ctx, false, func(ctx context.Context) error {
		err := ack(ctx)
		a := c.stepArgs()
		a.Outcome = "ok"
		if lostOrLeft(err) {
			recordStep(ctx, true, "consumer_handle", a, EventResult{Action: ActionLeaseLost})
		}
		if err != nil {
			return err
		}
		if effects != nil {
			if err := effects(ctx); err != nil {
				*herr = err
				return errEffectsFailed
			}
		}
		recordStep(ctx, false, "consumer_handle", a, EventResult{Action: ActionAcked})
		return nil
	})
}

// failed records a failed delivery of m in one write transaction: the retry or the dead letter.
// On the leaseless path the decision reads the row inside that transaction: the attempt count seen
// at fetch may be stale (a nack_by_id may have counted an attempt since), and deciding from it
// would retry a message that this failure exhausts, leaving it stranded at attempts ==
// max_attempts. On the leased path the token fence guarantees the row still holds the count the
// lease set, so the fetched count is the stored one.
func (c *Consumer) failed(ctx context.Context, m Message, herr error) (Outcome, error) {
	eff := min(EffectiveAttempts(m.Attempts, c.path), m.MaxAttempts)
	var action string
	var delay time.Duration
	err := c.st.ExecTx(ctx, false, func(ctx context.Context) error {
		err := c.decide(ctx, m, herr, &eff, &action, &delay, nil)
		a := c.stepArgs()
		a.Outcome = "fail"
		if action == ActionDeadLettered && eff < m.MaxAttempts {
			a.Outcome, a.Reason = "fail_no_retry", stepReason(herr)
		}
		if action == ActionRetried {
			a.RetryDelay = delay
		}
		switch {
		case err == nil:
			recordStep(ctx, false, "consumer_handle", a, EventResult{Action: action, Attempt: eff})
		case lostOrLeft(err):
			recordStep(ctx, true, "consumer_handle", a, EventResult{Action: ActionLeaseLost, Attempt: eff})
		}
		return err
	})
	out := Outcome{Action: action, Attempt: eff}
	switch {
	case err == nil:
		lvl := slog.LevelDebug
		if out.Action == ActionDeadLettered {
			lvl = slog.LevelWarn
		}
		c.log.LogAttrs(ctx, lvl, "actordelivery: delivery failed", attrMailbox(c.mailbox), attrMessageID(m.ID),
			slog.Int(logKeyAttempt, eff), slog.Int(logKeyMaxAttempts, m.MaxAttempts), slog.String(logKeyAction, out.Action),
			attrDuration(logKeyDelay, delay), attrError(herr))
		return out, nil
	case lostOrLeft(err):
		out.Action = ActionLeaseLost
		return out, nil
	default:
		c.recordFailedHandle(ctx, "fail")
		return Outcome{}, fmt.Errorf("actordelivery: consumer %q: after handler error on %q (attempt %d): %w", c.mailbox, m.ID, eff, err)
	}
}

// decide runs the failed delivery's decision and its writes inside failed's transaction, setting
// the effective attempt, the action and the retry delay it chose. In a batch, shared is the
// batch's one retry delay (see batchDelay); nil for a single delivery.
func (c *Consumer) decide(ctx context.Context, m Message, herr error, eff *int, action *string, delay *time.Duration, shared *batchDelay) error {
	if c.path == PathLeaseless {
		stored, err := c.st.readyAttempts(ctx, m.ID)
		if err != nil {
			return err // ErrNotFound: acknowledged or dead-lettered meanwhile
		}
		*eff = min(EffectiveAttempts(stored, c.path), m.MaxAttempts)
	}
	reason := ""
	if *eff >= m.MaxAttempts {
		reason = ReasonMaxAttempts
	} else {
		var retry bool
		*delay, retry = c.retry.Retry(herr, *eff)
		if !retry {
			reason = declinedReason(herr)
		}
		*delay = max(*delay, 0)
		if retry && shared != nil {
			*delay = shared.of(*delay)
		}
	}
	*action = ActionDeadLettered
	switch {
	case reason != "" && c.path == PathLeaseless:
		// The bump and the move commit together, so the dead letter records eff.
		if err := c.st.NackByID(ctx, m.ID, 0); err != nil {
			return err
		}
		return c.st.DeadLetter(ctx, m.ID, reason)
	case reason != "":
		// Leased, attempts used up or the policy gave up early: the move is fenced by the token.
		// Another worker may lease the message once this lease expires, even with attempts used
		// up (expiry dead-letters it and a redrive resets its attempts).
		if err := c.st.holdsLease(ctx, m.ID, m.Token); err != nil {
			return err
		}
		return c.st.DeadLetter(ctx, m.ID, reason)
	}
	*action = ActionRetried
	if c.path == PathLeaseless {
		return c.st.NackByID(ctx, m.ID, *delay)
	}
	return c.st.Nack(ctx, m.ID, m.Token, *delay)
}

// stepReason is a declined failure's reason as a recorded handle states it: the dead letter's
// reason, or "" when that is ReasonHandlerFailed, which a step without a reason means.
func stepReason(herr error) string {
	if r := declinedReason(herr); r != ReasonHandlerFailed {
		return r
	}
	return ""
}

// declinedReason is the dead-letter reason when the retry policy declines: the handler's error
// message (a message-less error gives ReasonHandlerFailed, since a reason is never empty), made a
// valid reason by reasonText.
func declinedReason(herr error) string {
	if r := herr.Error(); r != "" {
		return reasonText(r)
	}
	return ReasonHandlerFailed
}

// Step fetches one message and handles it; an empty mailbox is Outcome{Action: "idle"}.
//
// With a BatchSize above 1 it fetches and handles a batch (StepBatch) and returns the outcome of
// the batch's first message, Outcome{Action: "idle"} when the batch was empty.
func (c *Consumer) Step(ctx context.Context) (Outcome, error) {
	if c.batch > 1 {
		outs, err := c.StepBatch(ctx)
		if err != nil {
			return Outcome{}, err
		}
		if len(outs) == 0 {
			return Outcome{Action: ActionIdle}, nil
		}
		return outs[0], nil
	}
	d, err := c.Fetch(ctx)
	if err != nil {
		return Outcome{}, err
	}
	return c.Handle(ctx, d)
}

// Run steps until ctx ends (it then returns nil) or the store is closed (ErrClosed). While idle it
// waits PollInterval, doubling up to MaxPollInterval, and wakes at once when the store signals an
// enqueue into the mailbox; after work it steps again immediately. A failing step (a wedged
// database) is logged and waits the same growing interval, so Run never spins. The waits are real
// time; the store's Clock governs only the times stored in rows.
func (c *Consumer) Run(ctx context.Context) error {
	sub, cancel := c.st.subscribeMailboxes([]string{c.mailbox})
	defer cancel()
	wait := c.poll
	self := []*Consumer{c}
	for {
		if ctx.Err() != nil {
			return nil
		}
		out, err := c.Step(ctx)
		ticked := self // a failed step recorded no fetch: its wait's tick is not judged
		if err != nil {
			ticked = nil
		}
		switch {
		case err != nil && errors.Is(err, ErrClosed):
			return err
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			c.log.LogAttrs(ctx, slog.LevelError, "actordelivery: consumer step failed", attrMailbox(c.mailbox), attrError(err), attrRetryIn(wait))
		case out.Action != ActionIdle:
			wait = c.poll
			continue
		}
		if !waitIdle(ctx, wait, c.st, sub, self, ticked) {
			return nil
		}
		wait = min(2*wait, c.maxPoll)
	}
}

// sleep waits d, or until wake fires; false when ctx ended.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}
