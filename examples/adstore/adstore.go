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
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
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
	t := &Target{open: open, clock: actordelivery.NewManualClock(traces.Epoch), log: slog.New(slog.DiscardHandler),
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

// errKind maps the store's sentinels to a result's error kind; any other error fails the run.
func errKind(err error) (string, error) {
	for sentinel, kind := range map[error]string{
		actordelivery.ErrLeaseLost: traces.ErrKindLeaseLost, actordelivery.ErrNotFound: traces.ErrKindNotFound,
		actordelivery.ErrClaimLost: traces.ErrKindClaimLost, actordelivery.ErrVersionConflict: traces.ErrKindVersionConflict,
	} {
		if errors.Is(err, sentinel) {
			return kind, nil
		}
	}
	return "", err
}

func payload(p string) []byte {
	if p == "" {
		return nil
	}
	return []byte(p)
}

// message is what a caller sees; peek and the leaseless fetch report no token.
func message(m *actordelivery.Message, withToken bool) *replay.Message {
	if m == nil {
		return nil
	}
	o := &replay.Message{ID: m.ID, Attempts: m.Attempts}
	if withToken {
		o.Token = m.Token
	}
	return o
}

// Capabilities declares the batch steps unsupported: actordelivery has no batch consumer or
// publisher yet (docs/semantics.md, "Batches").
func (t *Target) Capabilities() replay.Capabilities {
	return replay.Capabilities{Unsupported: slices.Clone(traces.BatchOps)}
}

// Do runs one step at logical time at.
func (t *Target) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	if t.st == nil {
		return replay.Observation{}, errors.New("adstore: closed")
	}
	t.clock.Set(traces.At(at))
	for _, mb := range []string{a.Mailbox, a.Target} {
		if mb != "" {
			t.mailboxes[mb] = true
		}
	}
	o, err := t.do(ctx, op, a)
	if err != nil {
		return replay.Observation{}, fmt.Errorf("adstore: %s: %w", op, err)
	}
	return o, nil
}

func (t *Target) do(ctx context.Context, op traces.Op, a replay.Args) (o replay.Observation, err error) {
	st, d := t.st, traces.Duration
	switch op {
	case traces.OpEnqueue:
		o.Duplicate, err = st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: a.Mailbox, ID: a.ID, Key: a.Key,
			Priority: a.Priority, MaxAttempts: a.MaxAttempts, Delay: d(a.Delay), Payload: payload(a.Payload)})
	case traces.OpLease:
		var m *actordelivery.Message
		m, err = st.Lease(ctx, a.Mailbox, d(a.LeaseFor))
		o.Message = message(m, true)
	case traces.OpPeek:
		var m *actordelivery.Message
		m, err = st.Peek(ctx, a.Mailbox)
		o.Message = message(m, false)
	case traces.OpAck:
		err = st.Ack(ctx, a.ID, a.Token)
	case traces.OpNack:
		err = st.Nack(ctx, a.ID, a.Token, d(a.Delay))
	case traces.OpAckByID:
		err = st.AckByID(ctx, a.ID)
	case traces.OpNackByID:
		err = st.NackByID(ctx, a.ID, d(a.Delay))
	case traces.OpExtend:
		err = st.ExtendLease(ctx, a.ID, a.Token, d(a.LeaseFor))
	case traces.OpExpire:
		o.Affected, err = st.ExpireLeases(ctx)
	case traces.OpDeadLetter:
		err = st.DeadLetter(ctx, a.ID, a.Reason)
	case traces.OpOutboxEnqueue:
		o.Duplicate, err = st.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: a.ID, Target: a.Target, Key: a.Key,
			Priority: a.Priority, MaxAttempts: a.MaxAttempts, Payload: payload(a.Payload), MaxDeliveryAttempts: a.MaxDeliveryAttempts})
	case traces.OpOutboxClaim:
		var rows []actordelivery.OutboxRow
		rows, err = st.OutboxClaim(ctx, a.Limit, d(a.ClaimFor))
		for _, r := range rows {
			o.Claimed = append(o.Claimed, replay.ClaimedRow{ID: r.ID, DeliveryAttempts: r.DeliveryAttempts, Token: r.ClaimToken})
			t.claimed[r.ID] = r
		}
	case traces.OpOutboxComplete:
		err = st.OutboxComplete(ctx, a.ID, a.Token)
	case traces.OpOutboxFail:
		err = st.OutboxFail(ctx, a.ID, a.Token, d(a.Delay))
	case traces.OpOutboxDeadLetter:
		err = st.OutboxDeadLetter(ctx, a.ID, a.Token, a.Reason)
	case traces.OpAdvanceClock: // the clock is set
	case traces.OpPurge:
		var r actordelivery.PurgeResult
		r, err = st.Purge(ctx, d(a.OlderThan), d(a.Horizon), a.Limit)
		o.Affected = r.Total()
	case traces.OpMarkProcessed:
		o.Duplicate, err = st.MarkProcessed(ctx, a.Consumer, a.ID, d(a.TTL))
	case traces.OpSaveCheckpoint:
		var v int64
		v, err = st.SaveCheckpoint(ctx, a.Actor, []byte(a.Payload), int64(a.ExpectVersion))
		o.Version = int(v)
	case traces.OpLoadCheckpoint:
		var v int64
		_, v, err = st.LoadCheckpoint(ctx, a.Actor)
		o.Version = int(v)
	case traces.OpRedrive:
		err = st.Redrive(ctx, a.ID, a.Reason)
	case traces.OpListRedrives:
		var recs []actordelivery.Redrive
		recs, err = st.ListRedrives(ctx, a.ID)
		for _, r := range recs {
			o.Redrives = append(o.Redrives, traces.RedriveRecord{ID: r.ID, Kind: r.Kind, Mailbox: r.Mailbox,
				Attempts: r.Attempts, DeadReason: r.DeadReason, Reason: r.Reason, At: traces.Seconds(r.At)})
		}
	case traces.OpConsumerFetch:
		t.wakes.Fetched(a.Worker, a.Mailbox)
		return t.fetch(ctx, a)
	case traces.OpConsumerHandle:
		return t.handle(ctx, a)
	case traces.OpPublisherDeliver:
		return t.deliver(ctx, a)
	case traces.OpCrash:
		clear(t.fetched)
		t.wakes.Crash()
		return o, t.Reopen(ctx)
	case traces.OpWorkerStop: // changes nothing stored
		return o, nil
	case traces.OpWorkerDrain: // a delivery the drain timeout cut off is forgotten
		delete(t.fetched, a.Worker)
		return o, nil
	case traces.OpWake:
		// A wake is judged from the rows: its message must be a row or a dead letter of its
		// mailbox (docs/semantics.md, "Wake-ups").
		o.Err = traces.ErrKindNotCommitted
		m, err := st.GetMessage(ctx, a.ID)
		if err == nil && m.Mailbox == a.Mailbox {
			o.Err = ""
		}
		if errors.Is(err, actordelivery.ErrNotFound) {
			var dead []actordelivery.DeadLetter
			dead, err = st.ListDeadLetters(ctx)
			for _, dl := range dead {
				if dl.ID == a.ID && dl.Mailbox == a.Mailbox {
					o.Err = ""
				}
			}
		}
		if err == nil && o.Err == "" {
			t.wakes.Woke(a.Worker, a.Mailbox)
		}
		return o, err
	case traces.OpPollTick: // judged from the trace's wakes and fetches
		o.Err = t.wakes.PollTick(a.Worker, a.Mailbox)
		return o, nil
	default:
		return o, fmt.Errorf("%w: %q", replay.ErrUnsupported, op)
	}
	o.Err, err = errKind(err)
	return o, err
}

// retry is a handle step's retry policy: decline for fail_no_retry, else retry after retry_delay.
type retry struct {
	decline bool
	after   time.Duration
}

func (r retry) Retry(error, int) (time.Duration, bool) { return r.after, !r.decline }

// consumer is the real consumer a step runs, with a handler whose outcome is the step's.
func (t *Target) consumer(a replay.Args, outcome string) (*actordelivery.Consumer, error) {
	path := actordelivery.PathLeased
	switch a.Profile {
	case traces.ProfileLeased:
	case traces.ProfileLeaseless:
		path = actordelivery.PathLeaseless
	default:
		return nil, fmt.Errorf("consumer profile %q is not %q or %q", a.Profile, traces.ProfileLeased, traces.ProfileLeaseless)
	}
	leaseFor := traces.Duration(a.LeaseFor)
	if leaseFor == 0 {
		leaseFor = time.Nanosecond // 0 means the 30s default to the consumer; lease_for 0 ends at once
	}
	h := func(_ context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		if outcome == traces.OutcomeFail || outcome == traces.OutcomeFailNoRetry {
			return nil, adapter.ErrHandlerFailed
		}
		return func(ctx context.Context) error { return t.appendEffect(ctx, m.Mailbox, m.ID) }, nil
	}
	return actordelivery.NewConsumer(t.st, h, actordelivery.ConsumerOptions{Mailbox: a.Mailbox, Path: path,
		LeaseFor: leaseFor, Logger: t.log, Worker: a.Worker,
		Retry: retry{decline: a.Outcome == traces.OutcomeFailNoRetry, after: traces.Duration(a.RetryDelay)}})
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
func (t *Target) fetch(ctx context.Context, a replay.Args) (replay.Observation, error) {
	delete(t.fetched, a.Worker)
	c, err := t.consumer(a, traces.OutcomeOK)
	if err != nil {
		return replay.Observation{}, err
	}
	d, err := c.Fetch(ctx)
	if err != nil || d == nil {
		return replay.Observation{}, err
	}
	t.fetched[a.Worker] = d
	return replay.Observation{Message: message(&d.Message, d.Path == actordelivery.PathLeased)}, nil
}

// handle runs the consumer's Handle on the worker's fetched delivery; a worker holding none is idle.
func (t *Target) handle(ctx context.Context, a replay.Args) (replay.Observation, error) {
	d := t.fetched[a.Worker]
	if d == nil {
		return replay.Observation{Action: traces.ActionIdle}, nil
	}
	delete(t.fetched, a.Worker)
	c, err := t.consumer(a, a.Outcome)
	if err != nil {
		return replay.Observation{}, err
	}
	out, err := c.Handle(ctx, d)
	return replay.Observation{Action: out.Action, Attempt: out.Attempt}, err
}

// deliver runs the publisher's Deliver on the step's row and token, with the step's fault.
func (t *Target) deliver(ctx context.Context, a replay.Args) (replay.Observation, error) {
	mode := actordelivery.ModeFold
	switch a.Profile {
	case traces.ProfileFold:
	case traces.ProfileSplit:
		mode = actordelivery.ModeSplit
	default:
		return replay.Observation{}, fmt.Errorf("publisher profile %q is not %q or %q", a.Profile, traces.ProfileFold, traces.ProfileSplit)
	}
	rows, err := t.st.ListOutbox(ctx)
	if err != nil {
		return replay.Observation{}, err
	}
	var row actordelivery.OutboxRow
	if i := slices.IndexFunc(rows, func(r actordelivery.OutboxRow) bool { return r.ID == a.ID }); i >= 0 {
		row = rows[i]
	} else if c, ok := t.claimed[a.ID]; ok {
		row = c // a purge removed it since the claim: the publisher delivers its copy
	} else {
		return replay.Observation{}, fmt.Errorf("outbox row %q does not exist and no claim returned it", a.ID)
	}
	row.ClaimToken = a.Token
	f, err := newFaulty(t.st, a.Fault)
	if err != nil {
		return replay.Observation{}, err
	}
	opts := actordelivery.PublisherOptions{Mode: mode, Logger: t.log, RetryDelay: traces.Duration(a.RetryDelay)}
	if a.Fault == traces.FaultUndeliverable {
		opts.Check = func(context.Context, actordelivery.OutboxRow) error { return errUndeliverable }
	}
	p, err := actordelivery.NewPublisher(f, opts)
	if err != nil {
		return replay.Observation{}, err
	}
	res, err := p.Deliver(ctx, row)
	if err != nil && !f.injected(err) {
		return replay.Observation{}, err
	}
	o := replay.Observation{Action: res.Action, Duplicate: res.Duplicate}
	if f.crashed {
		o.Action = traces.ActionCrashed // nobody saw what the publisher went on to report
	}
	return o, nil
}

// Snapshot reads every row and the effect log of every mailbox.
func (t *Target) Snapshot(ctx context.Context) (s replay.Snapshot, err error) {
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
		s.Messages = append(s.Messages, replay.MessageRow{Mailbox: m.Mailbox, ID: m.ID, Key: m.Key, Priority: m.Priority,
			Payload: string(m.Payload), State: m.State, Attempts: m.Attempts, MaxAttempts: m.MaxAttempts,
			AvailableAt: traces.Seconds(m.AvailableAt), Token: m.Token, LeaseUntil: traces.Seconds(m.LeaseUntil)})
	}
	for _, d := range dead {
		mailboxes[d.Mailbox] = true
		s.DeadLetters = append(s.DeadLetters, traces.DeadLetterRow{Mailbox: d.Mailbox, ID: d.ID, Key: d.Key, Priority: d.Priority,
			Payload: string(d.Payload), Attempts: d.Attempts, MaxAttempts: d.MaxAttempts, Reason: d.Reason, DeadAt: traces.Seconds(d.DeadAt)})
	}
	for _, r := range outbox {
		s.Outbox = append(s.Outbox, replay.OutboxRow{ID: r.ID, Target: r.Target, Key: r.Key, Priority: r.Priority,
			MaxAttempts: r.MaxAttempts, Payload: string(r.Payload), State: r.State, DeliveryAttempts: r.DeliveryAttempts,
			AvailableAt: traces.Seconds(r.AvailableAt), Token: r.ClaimToken, ClaimUntil: traces.Seconds(r.ClaimUntil), Reason: r.DeadReason})
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
