package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// WithProtocol returns store with the protocol steps added: consumer_fetch, consumer_handle,
// publisher_deliver, crash, wake and poll_tick run as the reference consumer and publisher of docs/semantics.md
// under profile p, through store's own store-level operations. Every other step goes to store
// unchanged. store's declared capabilities carry over, without the protocol steps.
//
// store is a [Target], or a store with a method per operation, as [Adapt] takes it.
//
// Known limit: a publisher delivery whose enqueue does not run (a lost claim on the fold, a
// failed commit) reports duplicate from store's snapshot, which cannot show an id that a purge
// retired within its dedup horizon.
func WithProtocol(store Store, p profile.Profile) replay.Target {
	return &protocol{
		store: Adapt(store), prof: p, fetched: map[int]delivery{}, effects: map[string][]string{},
		maxAttempts: map[string]int{}, outbox: map[string]replay.Args{},
	}
}

// protocol is the wrapper WithProtocol returns.
type protocol struct {
	store replay.Target
	prof  profile.Profile
	// fetched holds each worker's fetched, not yet handled delivery; a crash forgets them.
	fetched map[int]delivery
	// effects is the effects log: per mailbox, the ids whose handle acked, in order.
	effects map[string][]string
	// maxAttempts and outbox remember what each enqueue that inserted a row said, so the
	// reference steps need no column a store may not report.
	maxAttempts map[string]int
	outbox      map[string]replay.Args
	// wakes answers poll_tick from the trace's wakes and fetches; a crash forgets them.
	wakes Wakes
}

type delivery struct {
	mailbox, id, token string
	attempts, max      int
	leaseless          bool
}

// Capabilities are store's, with the protocol steps supported. A delivery's duplicate flag is
// its enqueue's, so a store that does not report enqueue's leaves the delivery's unreported too.
func (w *protocol) Capabilities() replay.Capabilities {
	c := replay.CapabilitiesOf(w.store)
	c.Unsupported = slices.DeleteFunc(slices.Clone(c.Unsupported), func(op traces.Op) bool { return traces.Spec[op].Protocol })
	c.Unreported = slices.Clone(c.Unreported)
	if !c.Reports(traces.OpEnqueue, "duplicate") && c.Reports(traces.OpPublisherDeliver, "duplicate") {
		c.Unreported = append(c.Unreported, replay.UnreportedResult{Op: traces.OpPublisherDeliver, Field: "duplicate"})
	}
	// The reference steps have no batch steps yet (docs/semantics.md, "Batches").
	c.Unsupported = append(c.Unsupported, traces.BatchOps...)
	return c
}

func (w *protocol) Reopen(ctx context.Context) error { return w.store.Reopen(ctx) }
func (w *protocol) Close() error                     { return w.store.Close() }

// Snapshot is store's, with the effects log.
func (w *protocol) Snapshot(ctx context.Context) (replay.Snapshot, error) {
	s, err := w.store.Snapshot(ctx)
	if err != nil {
		return s, err
	}
	s.Effects = maps.Clone(w.effects)
	return s, nil
}

// Do runs one step.
func (w *protocol) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	switch op {
	case traces.OpConsumerFetch:
		w.wakes.Fetched(a.Worker, a.Mailbox)
		return w.fetch(ctx, at, a)
	case traces.OpConsumerHandle:
		return w.handle(ctx, at, a)
	case traces.OpPublisherDeliver:
		return w.deliver(ctx, at, a)
	case traces.OpCrash:
		clear(w.fetched)
		w.wakes.Crash()
		return replay.Observation{}, w.store.Reopen(ctx)
	case traces.OpWorkerStop:
		// The stop changes nothing stored; the trace's own steps say what the worker does next.
		return replay.Observation{}, nil
	case traces.OpWorkerDrain:
		// A delivery the drain timeout cut off is forgotten; its message stays as stored.
		delete(w.fetched, a.Worker)
		return replay.Observation{}, nil
	case traces.OpWake:
		o, err := w.wake(ctx, a)
		if err == nil && o.Err == "" {
			w.wakes.Woke(a.Worker, a.Mailbox)
		}
		return o, err
	case traces.OpPollTick:
		return replay.Observation{Err: w.wakes.PollTick(a.Worker, a.Mailbox)}, nil
	case traces.OpConsumerFetchBatch, traces.OpConsumerHandleBatch, traces.OpConsumerEffectsBatch, traces.OpPublisherDeliverBatch:
		return replay.Observation{}, fmt.Errorf("%w: %q: the reference steps have no batch steps yet", replay.ErrUnsupported, op)
	}
	o, err := w.store.Do(ctx, op, at, a)
	if err == nil && o.Err == "" && !o.Duplicate {
		switch op {
		case traces.OpEnqueue:
			w.maxAttempts[a.ID] = a.MaxAttempts
		case traces.OpOutboxEnqueue:
			w.outbox[a.ID] = a
		}
	}
	return o, err
}

// run runs one store operation of a protocol step; a refusal is no observation here but a failure
// of the step.
func (w *protocol) run(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	o, err := w.Do(ctx, op, at, a)
	if err != nil {
		return o, fmt.Errorf("adapter: reference step: %s: %w", op, err)
	}
	return o, nil
}

func (w *protocol) fetch(ctx context.Context, at int64, a replay.Args) (replay.Observation, error) {
	if d, busy := w.fetched[a.Worker]; busy {
		return replay.Observation{}, fmt.Errorf("adapter: worker %d still holds its fetch of %q: a consumer_handle must come between two fetches", a.Worker, d.id)
	}
	leaseless := a.Profile == traces.ProfileLeaseless
	var o replay.Observation
	var err error
	if leaseless {
		o, err = w.run(ctx, traces.OpPeek, at, replay.Args{Mailbox: a.Mailbox})
	} else {
		if !w.prof.FetchNoSweep {
			if _, err := w.run(ctx, traces.OpExpire, at, replay.Args{}); err != nil {
				return replay.Observation{}, err
			}
		}
		o, err = w.run(ctx, traces.OpLease, at, replay.Args{Mailbox: a.Mailbox, LeaseFor: a.LeaseFor})
	}
	if err != nil || o.Message == nil {
		return replay.Observation{Message: o.Message}, err
	}
	m := o.Message
	w.fetched[a.Worker] = delivery{mailbox: a.Mailbox, id: m.ID, token: m.Token, attempts: m.Attempts, max: w.maxAttempts[m.ID], leaseless: leaseless}
	return replay.Observation{Message: m}, nil
}

// stored is the attempt count of id's ready row as the store holds it now, and whether there is one.
func (w *protocol) stored(ctx context.Context, id string) (int, bool, error) {
	s, err := w.store.Snapshot(ctx)
	if err != nil {
		return 0, false, err
	}
	for _, m := range s.Messages {
		if m.ID == id && m.State != traces.StateAcked {
			return m.Attempts, true, nil
		}
	}
	return 0, false, nil
}

func (w *protocol) handle(ctx context.Context, at int64, a replay.Args) (replay.Observation, error) {
	d, ok := w.fetched[a.Worker]
	if !ok {
		return replay.Observation{Action: traces.ActionIdle}, nil
	}
	delete(w.fetched, a.Worker)
	if a.Fault == traces.FaultCommitFails {
		// The handle's transaction fails: none of its operations commits, and the worker no
		// longer holds what it fetched.
		return replay.Observation{Action: traces.ActionCommitFailed}, nil
	}
	done := func(o replay.Observation, err error) bool { return err == nil && o.Err == "" }
	if a.Outcome == traces.OutcomeOK {
		var o replay.Observation
		var err error
		if d.leaseless {
			o, err = w.run(ctx, traces.OpAckByID, at, replay.Args{ID: d.id})
		} else {
			o, err = w.run(ctx, traces.OpAck, at, replay.Args{ID: d.id, Token: d.token})
		}
		if err != nil {
			return replay.Observation{}, err
		}
		if !done(o, err) {
			return replay.Observation{Action: traces.ActionLeaseLost}, nil
		}
		w.effects[d.mailbox] = append(w.effects[d.mailbox], d.id)
		if err := w.saveEffects(ctx, at, d.mailbox); err != nil {
			return replay.Observation{}, err
		}
		return replay.Observation{Action: traces.ActionAcked}, nil
	}
	stored := d.attempts
	if d.leaseless {
		n, ok, err := w.stored(ctx, d.id)
		if err != nil {
			return replay.Observation{}, err
		}
		if ok {
			stored = n
		}
	}
	effective := min(models.CorrectAttempts(stored, d.leaseless), d.max)
	reason := w.prof.ReasonMaxAttemptsWording()
	if effective < d.max {
		reason = HandlerError(a).Error() // the handler's error text, as the store writes it
	}
	r := replay.Observation{Attempt: effective, Action: traces.ActionLeaseLost}
	var steps []func() (replay.Observation, error)
	byID := replay.Args{ID: d.id}
	switch {
	case effective >= d.max || a.Outcome == traces.OutcomeFailNoRetry:
		// The move to the dead letters, fenced first: by the bump on the leaseless path, by the
		// token on the leased one (a nack with no delay changes nothing a dead letter keeps).
		if d.leaseless {
			steps = append(steps, func() (replay.Observation, error) { return w.run(ctx, traces.OpNackByID, at, byID) })
		} else {
			steps = append(steps, func() (replay.Observation, error) {
				return w.run(ctx, traces.OpNack, at, replay.Args{ID: d.id, Token: d.token})
			})
		}
		steps = append(steps, func() (replay.Observation, error) {
			return w.run(ctx, traces.OpDeadLetter, at, replay.Args{ID: d.id, Reason: reason})
		})
		r.Action = traces.ActionDeadLettered
	case d.leaseless:
		steps = append(steps, func() (replay.Observation, error) {
			return w.run(ctx, traces.OpNackByID, at, replay.Args{ID: d.id, Delay: a.RetryDelay})
		})
		r.Action = traces.ActionRetried
	default:
		steps = append(steps, func() (replay.Observation, error) {
			return w.run(ctx, traces.OpNack, at, replay.Args{ID: d.id, Token: d.token, Delay: a.RetryDelay})
		})
		r.Action = traces.ActionRetried
	}
	for _, step := range steps {
		o, err := step()
		if err != nil {
			return replay.Observation{}, err
		}
		if !done(o, err) {
			r.Action = traces.ActionLeaseLost
			return r, nil
		}
	}
	return r, nil
}

// saveEffects writes mailbox's effects log to the store's checkpoint EffectsActor(mailbox), as the
// reference handler's effects do, when the store keeps checkpoints: a trace reads its version
// with load_checkpoint. It runs after the ack, not in one transaction with it; no step can fall
// between the two.
func (w *protocol) saveEffects(ctx context.Context, at int64, mailbox string) error {
	if !replay.CapabilitiesOf(w.store).Supports(traces.OpSaveCheckpoint) {
		return nil
	}
	actor := EffectsActor(mailbox)
	cur, err := w.run(ctx, traces.OpLoadCheckpoint, at, replay.Args{Actor: actor})
	if err != nil {
		return err
	}
	log, err := json.Marshal(w.effects[mailbox])
	if err != nil {
		return err
	}
	saved, err := w.run(ctx, traces.OpSaveCheckpoint, at, replay.Args{Actor: actor, Payload: string(log), ExpectVersion: cur.Version})
	if err == nil && saved.Err != "" {
		err = fmt.Errorf("adapter: saving the effects log %s at version %d: %s", actor, cur.Version, saved.Err)
	}
	return err
}

// has reports whether id names a message or a dead letter in store's snapshot: whether an enqueue
// of id would be a duplicate. Under the profile choice dead_letter_id "free" a dead letter does
// not take its id.
func (w *protocol) has(ctx context.Context, id string) (bool, error) {
	s, err := w.store.Snapshot(ctx)
	if err != nil {
		return false, err
	}
	dead := !w.prof.DeadLetterIDFree && slices.ContainsFunc(s.DeadLetters, func(d traces.DeadLetterRow) bool { return d.ID == id })
	return dead || slices.ContainsFunc(s.Messages, func(m replay.MessageRow) bool { return m.ID == id }), nil
}

// collidesWith returns the mailbox of the message or dead letter that has id when it is not target:
// an id collision (docs/semantics.md, "Id collisions"); "" otherwise.
func (w *protocol) collidesWith(ctx context.Context, id, target string) (string, error) {
	s, err := w.store.Snapshot(ctx)
	if err != nil {
		return "", err
	}
	mailbox := ""
	if i := slices.IndexFunc(s.Messages, func(m replay.MessageRow) bool { return m.ID == id }); i >= 0 {
		mailbox = s.Messages[i].Mailbox
	} else if i := slices.IndexFunc(s.DeadLetters, func(d traces.DeadLetterRow) bool { return d.ID == id }); i >= 0 && !w.prof.DeadLetterIDFree {
		// Under dead_letter_id "free" a dead letter does not take its id: the enqueue succeeds.
		mailbox = s.DeadLetters[i].Mailbox
	}
	if mailbox == target {
		return "", nil
	}
	return mailbox, nil
}

// claim returns the outbox row id if it is pending under token.
func (w *protocol) claim(ctx context.Context, id, token string) (replay.OutboxRow, bool, error) {
	s, err := w.store.Snapshot(ctx)
	if err != nil {
		return replay.OutboxRow{}, false, err
	}
	for _, o := range s.Outbox {
		if o.ID == id && o.State == traces.StatePending && o.Token != "" && o.Token == token {
			return o, true, nil
		}
	}
	return replay.OutboxRow{}, false, nil
}

var errNoOutboxRow = errors.New("adapter: publisher_deliver of an outbox row no outbox_enqueue inserted")

func (w *protocol) deliver(ctx context.Context, at int64, a replay.Args) (replay.Observation, error) {
	row, ok := w.outbox[a.ID]
	if !ok {
		return replay.Observation{}, fmt.Errorf("%w: %q", errNoOutboxRow, a.ID)
	}
	withToken := replay.Args{ID: a.ID, Token: a.Token}
	if a.Fault == traces.FaultUndeliverable {
		o, err := w.run(ctx, traces.OpOutboxDeadLetter, at, replay.Args{ID: a.ID, Token: a.Token, Reason: traces.ReasonUndeliverable})
		if err != nil || o.Err != "" {
			return replay.Observation{Action: traces.ActionClaimLost}, err
		}
		return replay.Observation{Action: traces.ActionDeadLettered}, nil
	}
	enqueue := replay.Args{Mailbox: row.Target, ID: a.ID, Key: row.Key, Priority: row.Priority, MaxAttempts: row.MaxAttempts, Payload: row.Payload}
	_, held, err := w.claim(ctx, a.ID, a.Token)
	if err != nil {
		return replay.Observation{}, err
	}
	// An id collision puts a dead-letter, fenced by the claim whatever complete_fence says, in
	// the completion's place.
	other, err := w.collidesWith(ctx, a.ID, row.Target)
	if err != nil {
		return replay.Observation{}, err
	}
	// Where the enqueue does not run, its duplicate flag is what it would have observed.
	notRun := func(action string) (replay.Observation, error) {
		dup, err := w.has(ctx, a.ID)
		return replay.Observation{Action: action, Duplicate: dup}, err
	}
	var r replay.Observation
	switch {
	case a.Profile == traces.ProfileFold && !held && (!w.prof.CompleteFenceSilent || other != ""):
		// Under complete_fence "silent" the completion reports nothing, so the fold goes on as
		// if the claim held and completes nothing, as the model's does.
		return notRun(traces.ActionClaimLost)
	case a.Fault == traces.FaultCommitFails:
		if r, err = notRun(traces.ActionCommitFailed); err != nil {
			return r, err
		}
		return r, w.release(ctx, at, a, row, held)
	}
	e, err := w.run(ctx, traces.OpEnqueue, at, enqueue)
	if err != nil {
		return replay.Observation{}, err
	}
	r.Duplicate = e.Duplicate
	if a.Fault == traces.FaultCrashBetween && a.Profile == traces.ProfileSplit {
		r.Action = traces.ActionCrashed
		return r, nil
	}
	if other != "" {
		d, err := w.run(ctx, traces.OpOutboxDeadLetter, at, replay.Args{ID: a.ID, Token: a.Token, Reason: traces.ReasonIDCollision(other)})
		switch {
		case err != nil:
			return replay.Observation{}, err
		case a.Fault == traces.FaultCrashBetween:
			r.Action = traces.ActionCrashed
		case d.Err != "":
			r.Action = traces.ActionClaimLost
		default:
			r.Action = traces.ActionDeadLettered
		}
		return r, nil
	}
	c, err := w.run(ctx, traces.OpOutboxComplete, at, withToken)
	switch {
	case err != nil:
		return replay.Observation{}, err
	case a.Fault == traces.FaultCrashBetween:
		r.Action = traces.ActionCrashed
	case c.Err != "":
		r.Action = traces.ActionClaimLost
	default:
		r.Action = traces.ActionDelivered
	}
	return r, nil
}

// release gives back a row whose delivery failed to commit, fenced by its claim: dead-lettered
// when the failed attempt was its last, otherwise failed with the step's retry delay. Under a
// profile whose failed deliveries lapse, it does nothing.
func (w *protocol) release(ctx context.Context, at int64, a, row replay.Args, held bool) error {
	if !held || w.prof.FailedDeliveryLapses {
		return nil
	}
	cur, held, err := w.claim(ctx, a.ID, a.Token)
	if err != nil || !held {
		return err
	}
	max := row.MaxDeliveryAttempts
	if max == 0 {
		max = traces.DefaultMaxDeliveryAttempts
	}
	if cur.DeliveryAttempts >= max {
		_, err = w.run(ctx, traces.OpOutboxDeadLetter, at, replay.Args{ID: a.ID, Token: a.Token, Reason: w.prof.ReasonMaxDeliveryAttemptsWording()})
	} else {
		_, err = w.run(ctx, traces.OpOutboxFail, at, replay.Args{ID: a.ID, Token: a.Token, Delay: a.RetryDelay})
	}
	return err
}

// wake judges a recorded wake by store's snapshot, as the model does (docs/semantics.md,
// "Wake-ups"): its message must be a row or a dead letter of its mailbox. A purged message's wake
// reads as not committed.
func (w *protocol) wake(ctx context.Context, a replay.Args) (replay.Observation, error) {
	s, err := w.store.Snapshot(ctx)
	if err != nil {
		return replay.Observation{}, err
	}
	for _, m := range s.Messages {
		if m.ID == a.ID && m.Mailbox == a.Mailbox {
			return replay.Observation{}, nil
		}
	}
	for _, d := range s.DeadLetters {
		if d.ID == a.ID && d.Mailbox == a.Mailbox {
			return replay.Observation{}, nil
		}
	}
	return replay.Observation{Err: traces.ErrKindNotCommitted}, nil
}
