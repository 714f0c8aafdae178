package adstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/adapter"
)

// Target runs a trace's steps on an actordelivery store.
type Target struct {
	open  func(actordelivery.Options) (*actordelivery.Store, error)
	clock *actordelivery.ManualClock
	log   *slog.Logger
	// st is the open store; nil after Close.
	st *actordelivery.Store
	// fetched is each worker's fetched, unhandled delivery.
	fetched map[int]*actordelivery.Delivery
	// mailboxes are those any step named, whose effect logs the snapshot reads.
	mailboxes map[string]bool
	// claimed is the last copy of each outbox row a claim returned, as a publisher holds it: a
	// purge may remove the row before a stale publisher delivers it.
	claimed map[string]actordelivery.OutboxRow
	// wakes answers poll_tick from the trace's wakes and fetches.
	wakes adapter.Wakes
}

// New opens the store with open and returns its adapter (see the package documentation).
func New(open func(actordelivery.Options) (*actordelivery.Store, error)) (*Target, error) {
	t := &Target{open: open, clock: actordelivery.NewManualClock(adapter.At(0)), log: slog.New(slog.DiscardHandler),
		fetched: map[int]*actordelivery.Delivery{}, mailboxes: map[string]bool{}, claimed: map[string]actordelivery.OutboxRow{}}
	return t, t.reopen()
}

func (t *Target) reopen() (err error) {
	t.st, err = t.open(actordelivery.Options{Clock: t.clock, Logger: t.log})
	if err != nil {
		return fmt.Errorf("adstore: open: %w", err)
	}
	return nil
}

// Reopen closes and reopens the store; fetched deliveries are kept.
func (t *Target) Reopen(context.Context) error {
	if err := t.Close(); err != nil {
		return err
	}
	return t.reopen()
}

// Close closes the store; its database stays.
func (t *Target) Close() error {
	if t.st == nil {
		return nil
	}
	err := t.st.Close()
	t.st = nil
	return err
}

// denied maps the store's sentinels to the operation's documented error (adapter.ErrDenied);
// any other error fails the run.
func denied(err error) error {
	for _, sentinel := range []error{actordelivery.ErrLeaseLost, actordelivery.ErrNotFound,
		actordelivery.ErrClaimLost, actordelivery.ErrVersionConflict} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("%w: %w", adapter.ErrDenied, err)
		}
	}
	return err
}

func payload(p string) []byte {
	if p == "" {
		return nil
	}
	return []byte(p)
}

// message is what a caller sees; peek and the leaseless fetch report no token.
func message(m *actordelivery.Message, withToken bool) *adapter.Message {
	if m == nil {
		return nil
	}
	o := &adapter.Message{ID: m.ID, Attempts: m.Attempts}
	if withToken {
		o.Token = m.Token
	}
	return o
}

type (
	args = adapter.Args
	obs  = adapter.Observation
)

// step sets the store's clock to logical time at, notes the step's mailboxes and runs fn on the
// open store.
func (t *Target) step(at int64, a args, fn func(st *actordelivery.Store) (obs, error)) (obs, error) {
	if t.st == nil {
		return obs{}, errors.New("adstore: closed")
	}
	t.clock.Set(adapter.At(at))
	for _, mb := range []string{a.Mailbox, a.Target} {
		if mb != "" {
			t.mailboxes[mb] = true
		}
	}
	o, err := fn(t.st)
	return o, denied(err)
}

var d = adapter.Duration

// The store-level operations, one method each (adapter.Adapt), each at logical time at.

func (t *Target) Enqueue(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (o obs, err error) {
		o.Duplicate, err = st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: a.Mailbox, ID: a.ID, Key: a.Key,
			Priority: a.Priority, MaxAttempts: a.MaxAttempts, Delay: d(a.Delay), Payload: payload(a.Payload)})
		return o, err
	})
}

func (t *Target) Lease(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (obs, error) {
		m, err := st.Lease(ctx, a.Mailbox, d(a.LeaseFor))
		return obs{Message: message(m, true)}, err
	})
}

func (t *Target) Peek(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (obs, error) {
		m, err := st.Peek(ctx, a.Mailbox)
		return obs{Message: message(m, false)}, err
	})
}

// run is step for an operation whose only result is its error.
func (t *Target) run(at int64, a args, fn func(st *actordelivery.Store) error) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (obs, error) { return obs{}, fn(st) })
}

func (t *Target) Ack(ctx context.Context, at int64, a args) (obs, error) {
	return t.run(at, a, func(st *actordelivery.Store) error { return st.Ack(ctx, a.ID, a.Token) })
}

func (t *Target) Nack(ctx context.Context, at int64, a args) (obs, error) {
	return t.run(at, a, func(st *actordelivery.Store) error { return st.Nack(ctx, a.ID, a.Token, d(a.Delay)) })
}

func (t *Target) AckByID(ctx context.Context, at int64, a args) (obs, error) {
	return t.run(at, a, func(st *actordelivery.Store) error { return st.AckByID(ctx, a.ID) })
}

func (t *Target) NackByID(ctx context.Context, at int64, a args) (obs, error) {
	return t.run(at, a, func(st *actordelivery.Store) error { return st.NackByID(ctx, a.ID, d(a.Delay)) })
}

func (t *Target) Extend(ctx context.Context, at int64, a args) (obs, error) {
	return t.run(at, a, func(st *actordelivery.Store) error { return st.ExtendLease(ctx, a.ID, a.Token, d(a.LeaseFor)) })
}

func (t *Target) Expire(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (o obs, err error) {
		o.Affected, err = st.ExpireLeases(ctx)
		return o, err
	})
}

func (t *Target) DeadLetter(ctx context.Context, at int64, a args) (obs, error) {
	return t.run(at, a, func(st *actordelivery.Store) error { return st.DeadLetter(ctx, a.ID, a.Reason) })
}

func (t *Target) OutboxEnqueue(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (o obs, err error) {
		o.Duplicate, err = st.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: a.ID, Target: a.Target, Key: a.Key,
			Priority: a.Priority, MaxAttempts: a.MaxAttempts, Payload: payload(a.Payload), MaxDeliveryAttempts: a.MaxDeliveryAttempts})
		return o, err
	})
}

func (t *Target) OutboxClaim(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (o obs, err error) {
		rows, err := st.OutboxClaim(ctx, a.Limit, d(a.ClaimFor))
		for _, r := range rows {
			o.Claimed = append(o.Claimed, adapter.ClaimedRow{ID: r.ID, DeliveryAttempts: r.DeliveryAttempts, Token: r.ClaimToken})
			t.claimed[r.ID] = r
		}
		return o, err
	})
}

func (t *Target) OutboxComplete(ctx context.Context, at int64, a args) (obs, error) {
	return t.run(at, a, func(st *actordelivery.Store) error { return st.OutboxComplete(ctx, a.ID, a.Token) })
}

func (t *Target) OutboxFail(ctx context.Context, at int64, a args) (obs, error) {
	return t.run(at, a, func(st *actordelivery.Store) error { return st.OutboxFail(ctx, a.ID, a.Token, d(a.Delay)) })
}

func (t *Target) OutboxDeadLetter(ctx context.Context, at int64, a args) (obs, error) {
	return t.run(at, a, func(st *actordelivery.Store) error { return st.OutboxDeadLetter(ctx, a.ID, a.Token, a.Reason) })
}

func (t *Target) Purge(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (obs, error) {
		r, err := st.Purge(ctx, d(a.OlderThan), d(a.Horizon), a.Limit)
		return obs{Affected: r.Total()}, err
	})
}

func (t *Target) MarkProcessed(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (o obs, err error) {
		o.Duplicate, err = st.MarkProcessed(ctx, a.Consumer, a.ID, d(a.TTL))
		return o, err
	})
}

func (t *Target) SaveCheckpoint(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (obs, error) {
		v, err := st.SaveCheckpoint(ctx, a.Actor, []byte(a.Payload), int64(a.ExpectVersion))
		return obs{Version: int(v)}, err
	})
}

func (t *Target) LoadCheckpoint(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (obs, error) {
		_, v, err := st.LoadCheckpoint(ctx, a.Actor)
		return obs{Version: int(v)}, err
	})
}

func (t *Target) Redrive(ctx context.Context, at int64, a args) (obs, error) {
	return t.run(at, a, func(st *actordelivery.Store) error { return st.Redrive(ctx, a.ID, a.Reason) })
}

func (t *Target) ListRedrives(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (o obs, err error) {
		recs, err := st.ListRedrives(ctx, a.ID)
		for _, r := range recs {
			o.Redrives = append(o.Redrives, adapter.RedriveRecord{ID: r.ID, Kind: r.Kind, Mailbox: r.Mailbox,
				Attempts: r.Attempts, DeadReason: r.DeadReason, Reason: r.Reason, At: adapter.Seconds(r.At)})
		}
		return o, err
	})
}

// The protocol steps, run on actordelivery's own consumer and publisher.

func (t *Target) ConsumerFetch(ctx context.Context, at int64, a args) (obs, error) {
	t.wakes.Fetched(a.Worker, a.Mailbox)
	return t.step(at, a, func(*actordelivery.Store) (obs, error) { return t.fetch(ctx, a) })
}

func (t *Target) ConsumerHandle(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(*actordelivery.Store) (obs, error) { return t.handle(ctx, a) })
}

func (t *Target) PublisherDeliver(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(*actordelivery.Store) (obs, error) { return t.deliver(ctx, a) })
}

func (t *Target) Crash(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(*actordelivery.Store) (obs, error) {
		clear(t.fetched)
		t.wakes.Crash()
		return obs{}, t.Reopen(ctx)
	})
}

// AdvanceClock sets the store's clock, which the final snapshot may read.
func (t *Target) AdvanceClock(_ context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(*actordelivery.Store) (obs, error) { return obs{}, nil })
}

// WorkerStop changes nothing stored.
func (t *Target) WorkerStop(context.Context, int64, args) (obs, error) { return obs{}, nil }

// WorkerDrain forgets a delivery the drain timeout cut off.
func (t *Target) WorkerDrain(_ context.Context, _ int64, a args) (obs, error) {
	delete(t.fetched, a.Worker)
	return obs{}, nil
}

// Wake is judged from the rows: its message must be a row or a dead letter of its mailbox
// (docs/semantics.md, "Wake-ups"); otherwise it was not committed (adapter.ErrDenied).
func (t *Target) Wake(ctx context.Context, at int64, a args) (obs, error) {
	return t.step(at, a, func(st *actordelivery.Store) (obs, error) {
		committed := false
		m, err := st.GetMessage(ctx, a.ID)
		if err == nil && m.Mailbox == a.Mailbox {
			committed = true
		}
		if errors.Is(err, actordelivery.ErrNotFound) {
			var dead []actordelivery.DeadLetter
			dead, err = st.ListDeadLetters(ctx)
			for _, dl := range dead {
				if dl.ID == a.ID && dl.Mailbox == a.Mailbox {
					committed = true
				}
			}
		}
		switch {
		case err != nil:
			return obs{}, fmt.Errorf("adstore: wake: %w", err) // not a sentinel: fails the run
		case !committed:
			return obs{}, adapter.ErrDenied
		}
		t.wakes.Woke(a.Worker, a.Mailbox)
		return obs{}, nil
	})
}

// PollTick is judged from the trace's wakes and fetches.
func (t *Target) PollTick(_ context.Context, _ int64, a args) (obs, error) {
	return obs{Err: t.wakes.PollTick(a.Worker, a.Mailbox)}, nil
}

// retry is a handle step's retry policy: decline for fail_no_retry, else retry after retry_delay.
type retry struct {
	decline bool
	after   time.Duration
}

func (r retry) Retry(error, int) (time.Duration, bool) { return r.after, !r.decline }

// consumer is the real consumer a step runs, with a handler whose outcome is the step's.
func (t *Target) consumer(a args, fails bool) (*actordelivery.Consumer, error) {
	return t.consumerFailing(a, fails, nil)
}

// consumerFailing is consumer whose handle, when failCommit is not nil, calls it to make the
// handle's transaction fail: a failing handler before the transaction begins, a succeeding one's
// Effects as the transaction's last work.
func (t *Target) consumerFailing(a args, fails bool, failCommit func()) (*actordelivery.Consumer, error) {
	path := actordelivery.PathLeased
	if a.Leaseless() {
		path = actordelivery.PathLeaseless
	}
	leaseFor := adapter.Duration(a.LeaseFor)
	if leaseFor == 0 {
		leaseFor = time.Nanosecond // 0 means the 30s default to the consumer; lease_for 0 ends at once
	}
	h := func(_ context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		if fails {
			if failCommit != nil {
				failCommit()
			}
			return nil, adapter.HandlerError(a)
		}
		return func(ctx context.Context) error {
			err := t.appendEffect(ctx, m.Mailbox, m.ID)
			if failCommit != nil {
				failCommit()
			}
			return err
		}, nil
	}
	return actordelivery.NewConsumer(t.st, h, actordelivery.ConsumerOptions{Mailbox: a.Mailbox, Path: path,
		LeaseFor: leaseFor, Logger: t.log, Worker: a.Worker,
		Retry: retry{decline: !a.Retries(), after: adapter.Duration(a.RetryDelay)}})
}

// appendEffect appends id to mailbox's effect log in the transaction ctx carries.
func (t *Target) appendEffect(ctx context.Context, mailbox, id string) error {
	actor := adapter.EffectsActor(mailbox)
	state, version, err := t.st.LoadCheckpoint(ctx, actor)
	if err != nil && !errors.Is(err, actordelivery.ErrNotFound) {
		return err
	}
	data, err := adapter.AppendEffect(state, id)
	if err != nil {
		return fmt.Errorf("%s: %w", actor, err)
	}
	_, err = t.st.SaveCheckpoint(ctx, actor, data, version)
	return err
}

// fetch runs the consumer's Fetch; a worker that fetches again drops what it held.
func (t *Target) fetch(ctx context.Context, a args) (obs, error) {
	delete(t.fetched, a.Worker)
	c, err := t.consumer(a, false)
	if err != nil {
		return obs{}, err
	}
	d, err := c.Fetch(ctx)
	if err != nil || d == nil {
		return obs{}, err
	}
	t.fetched[a.Worker] = d
	return obs{Message: message(&d.Message, d.Path == actordelivery.PathLeased)}, nil
}

// handle runs the consumer's Handle on the worker's fetched delivery; a worker holding none is idle.
func (t *Target) handle(ctx context.Context, a args) (obs, error) {
	d := t.fetched[a.Worker]
	if d == nil {
		return obs{Action: adapter.ActionIdle}, nil
	}
	delete(t.fetched, a.Worker)
	if a.Fault == adapter.FaultCommitFails {
		return t.handleFailingCommit(ctx, a, d)
	}
	c, err := t.consumer(a, !a.Succeeds())
	if err != nil {
		return obs{}, err
	}
	out, err := c.Handle(ctx, d)
	return obs{Action: out.Action, Attempt: out.Attempt}, err
}

// handleFailingCommit is a handle with fault commit_fails: its context ends inside (or, for a
// failing handler, just before) its transaction, so nothing commits. A leased delivery whose
// fence failed wrote nothing either, since its Effects never ran.
func (t *Target) handleFailingCommit(ctx context.Context, a args, d *actordelivery.Delivery) (obs, error) {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := t.consumerFailing(a, !a.Succeeds(), cancel)
	if err != nil {
		return obs{}, err
	}
	out, err := c.Handle(hctx, d)
	switch {
	case err != nil && errors.Is(err, context.Canceled) && ctx.Err() == nil:
	case err != nil:
		return obs{}, err
	case out.Action != actordelivery.ActionLeaseLost:
		return obs{}, fmt.Errorf("adstore: a handle whose commit was to fail committed (%s)", out.Action)
	}
	return obs{Action: actordelivery.ActionCommitFailed}, nil
}

// deliver runs the publisher's Deliver on the step's row and token, with the step's fault.
func (t *Target) deliver(ctx context.Context, a args) (obs, error) {
	mode := actordelivery.ModeFold
	if a.Split() {
		mode = actordelivery.ModeSplit
	}
	rows, err := t.st.ListOutbox(ctx)
	if err != nil {
		return obs{}, err
	}
	var row actordelivery.OutboxRow
	if i := slices.IndexFunc(rows, func(r actordelivery.OutboxRow) bool { return r.ID == a.ID }); i >= 0 {
		row = rows[i]
	} else if c, ok := t.claimed[a.ID]; ok {
		row = c // a purge removed it since the claim: the publisher delivers its copy
	} else {
		return obs{}, fmt.Errorf("outbox row %q does not exist and no claim returned it", a.ID)
	}
	row.ClaimToken = a.Token
	f, err := newFaulty(t.st, a.Fault)
	if err != nil {
		return obs{}, err
	}
	opts := actordelivery.PublisherOptions{Mode: mode, Logger: t.log, RetryDelay: adapter.Duration(a.RetryDelay)}
	if a.Fault == adapter.FaultUndeliverable {
		opts.Check = func(context.Context, actordelivery.OutboxRow) error { return errUndeliverable }
	}
	p, err := actordelivery.NewPublisher(f, opts)
	if err != nil {
		return obs{}, err
	}
	res, err := p.Deliver(ctx, row)
	if err != nil && !f.injected(err) {
		return obs{}, err
	}
	o := obs{Action: res.Action, Duplicate: res.Duplicate}
	if f.crashed {
		o.Action = adapter.ActionCrashed // nobody saw what the publisher went on to report
	}
	return o, nil
}

// Snapshot reads every row and the effect log of every mailbox.
func (t *Target) Snapshot(ctx context.Context) (s adapter.Snapshot, err error) {
	if t.st == nil {
		return s, errors.New("adstore: closed")
	}
	msgs, err1 := t.st.ListMessages(ctx, "")
	dead, err2 := t.st.ListDeadLetters(ctx)
	outbox, err3 := t.st.ListOutbox(ctx)
	if err := errors.Join(err1, err2, err3); err != nil {
		return s, fmt.Errorf("adstore: snapshot: %w", err)
	}
	mailboxes := maps.Clone(t.mailboxes)
	for _, m := range msgs {
		mailboxes[m.Mailbox] = true
		s.Messages = append(s.Messages, adapter.MessageRow{Mailbox: m.Mailbox, ID: m.ID, Key: m.Key, Priority: m.Priority,
			Payload: string(m.Payload), State: m.State, Attempts: m.Attempts, MaxAttempts: m.MaxAttempts,
			AvailableAt: adapter.Seconds(m.AvailableAt), Token: m.Token, LeaseUntil: adapter.Seconds(m.LeaseUntil)})
	}
	for _, d := range dead {
		mailboxes[d.Mailbox] = true
		s.DeadLetters = append(s.DeadLetters, adapter.DeadLetterRow{Mailbox: d.Mailbox, ID: d.ID, Key: d.Key, Priority: d.Priority,
			Payload: string(d.Payload), Attempts: d.Attempts, MaxAttempts: d.MaxAttempts, Reason: d.Reason, DeadAt: adapter.Seconds(d.DeadAt)})
	}
	for _, r := range outbox {
		s.Outbox = append(s.Outbox, adapter.OutboxRow{ID: r.ID, Target: r.Target, Key: r.Key, Priority: r.Priority,
			MaxAttempts: r.MaxAttempts, Payload: string(r.Payload), State: r.State, DeliveryAttempts: r.DeliveryAttempts,
			AvailableAt: adapter.Seconds(r.AvailableAt), Token: r.ClaimToken, ClaimUntil: adapter.Seconds(r.ClaimUntil), Reason: r.DeadReason})
	}
	s.Effects = map[string][]string{}
	for mb := range mailboxes {
		state, _, err := t.st.LoadCheckpoint(ctx, adapter.EffectsActor(mb))
		if errors.Is(err, actordelivery.ErrNotFound) {
			continue
		}
		var ids []string
		if err == nil {
			ids, err = adapter.ReadEffects(state)
		}
		if err != nil {
			return s, fmt.Errorf("adstore: snapshot: effect log of %q: %w", mb, err)
		}
		if len(ids) > 0 {
			s.Effects[mb] = ids
		}
	}
	return s, nil
}
