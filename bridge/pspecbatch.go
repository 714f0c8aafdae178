package bridge

import (
	"maps"
	"slices"

	"github.com/pconform/pconform/traces"
)

// The spec events of batch steps (traces.BatchOps). Each raises what the P model's store
// announces for the same step (PSrc/Store.p, the eBatch* and eDeliverBatchReq handlers): a batch
// handle's eSpecHandled for each message whose part committed, in batch order, before its
// changes; then, as the store reports any step's changes, the rows it changed in creation order,
// the dead letters it made, the leases it gave and the effects it committed. Only what the step's
// result states is raised, as for the single steps.

// owed is the effects of messages a worker's batch handle acknowledged for handlers that
// succeeded, at the handle's time.
type owed struct {
	at int64
	fs []fetch
}

// fetchBatch raises a batch fetch. Leased: the sweep, then each message's lease (its attempts
// and token, lease_until = at + lease_for): the rows in creation order, then the leases.
// Leaseless: a peek of each message. What it returned is kept for the worker's batch handle.
func (d *SpecDeriver) fetchBatch(st traces.Step) {
	a, r, at := st.Args, st.Result, st.At
	got := make([]fetch, len(r.Messages))
	var leaseFor int64
	if a.Profile == traces.ProfileLeased {
		leaseFor = a.LeaseFor
	}
	vs := []any{at, a.Worker, a.Mailbox, string(a.Profile), a.Size, leaseFor, len(r.Messages)}
	for i, msg := range r.Messages {
		got[i] = fetch{id: msg.ID, mailbox: a.Mailbox, token: msg.Token, attempts: msg.Attempts}
		maxAttempts := 0
		if m, ok := d.rows[msg.ID]; ok {
			maxAttempts = m.maxAttempts
		}
		vs = append(vs, a.Mailbox, msg.ID, msg.Attempts, maxAttempts, msg.Token)
	}
	d.add(SpecConsumerFetchBatch, append(vs, false)...)
	d.batches[a.Worker] = got
	if a.Profile != traces.ProfileLeased {
		for i := range r.Messages {
			d.peeked(at, &r.Messages[i])
		}
		return
	}
	if !d.prof.FetchNoSweep {
		d.sweep(at)
	}
	type lease struct {
		m   *mrow
		msg traces.Message
	}
	var ls []lease
	for _, msg := range r.Messages {
		if m, ok := d.rows[msg.ID]; ok {
			ls = append(ls, lease{m, msg})
		}
	}
	slices.SortStableFunc(ls, func(x, y lease) int { return x.m.seq - y.m.seq })
	for _, l := range ls {
		m := l.m
		if m.awaiting && l.msg.Attempts == 1 {
			d.row(at, m, "ready", 0, at, 0, 0) // deliverable just before the batch took it
		}
		m.state, m.attempts, m.token, m.leaseUntil = "ready", l.msg.Attempts, l.msg.Token, at+a.LeaseFor
		m.awaiting = false
		if m.token != 0 {
			d.leased[m.id] = m
		}
		d.emitRow(at, m)
	}
	for _, l := range ls {
		d.add(SpecLeased, at, l.m.mailbox, l.m.id)
	}
}

// handleBatch raises a batch handle of the worker's last batch fetch: each committed part's
// eSpecHandled, then the rows its parts changed (acked, retried), the dead letters they made.
// Each part is a single handle's (handled): a dead letter records the fetched attempts, leaseless
// counting the nack_by_id that commits with it, and its reason is the declining handler's when
// attempts were left. A part acked for a handler that succeeded owes its effect (see settleOwed);
// one acked for a handler that failed has none.
func (d *SpecDeriver) handleBatch(st traces.Step) {
	a, r, at := st.Args, st.Result, st.At
	vs := []any{at, a.Worker, a.Mailbox, string(a.Profile), len(a.Outcomes)}
	for _, o := range a.Outcomes {
		vs = append(vs, o)
	}
	vs = append(vs, a.RetryDelay, a.Fault, len(r.Actions))
	for _, act := range r.Actions {
		vs = append(vs, act)
	}
	d.add(SpecConsumerHandleBatch, append(vs, false)...)
	got, ok := d.batches[a.Worker]
	if !ok {
		return
	}
	delete(d.batches, a.Worker)
	n := min(len(r.Actions), len(got), len(a.Outcomes))
	for k := range n {
		if r.Actions[k] != traces.ActionCommitFailed {
			d.add(SpecHandled, at, a.Worker, got[k].id, got[k].token, r.Actions[k])
		}
	}
	leaseless := a.Profile == traces.ProfileLeaseless
	var rows []*mrow
	var dead []SpecEvent
	var effects []fetch
	for k := range n {
		f, outcome := got[k], a.Outcomes[k]
		m, known := d.rows[f.id]
		switch r.Actions[k] {
		case traces.ActionAcked:
			if outcome == traces.OutcomeOK {
				effects = append(effects, f)
			}
			if known {
				d.finalised(at, m, "acked")
				rows = append(rows, m)
			}
		case traces.ActionDeadLettered:
			if !known {
				break
			}
			attempts := f.attempts
			if leaseless {
				attempts = min(f.attempts+1, m.maxAttempts)
			}
			reason := d.prof.ReasonMaxAttemptsWording()
			if outcome == traces.OutcomeFailNoRetry && attempts < m.maxAttempts {
				reason = traces.ReasonHandlerFailed
				if k < len(a.Reasons) && a.Reasons[k] != "" {
					reason = a.Reasons[k] // the handler's error text
				}
			}
			dead = append(dead, SpecEvent{Kind: SpecDeadLettered, Values: []any{at, f.mailbox, f.id, int64(attempts),
				int64(m.maxAttempts), reason}})
			m.deadAttempts, m.deadReason, m.deadKnown = attempts, reason, true
			d.finalised(at, m, "dead")
		case traces.ActionRetried:
			if !known {
				break
			}
			if leaseless {
				// nack_by_id counted an attempt the result does not state.
				if m.state != unstated {
					m.state, m.finalKnown, m.deadKnown = unstated, false, false
					rows = append(rows, m)
				}
				break
			}
			m.state, m.token, m.leaseUntil, m.availableAt = "ready", 0, 0, at+a.RetryDelay
			rows = append(rows, m)
		}
	}
	slices.SortStableFunc(rows, func(x, y *mrow) int { return x.seq - y.seq })
	for _, m := range rows {
		d.emitRow(at, m)
	}
	d.evs = append(d.evs, dead...)
	if len(effects) > 0 {
		d.owed[a.Worker] = owed{at: at, fs: effects}
	}
}

// settleOwed raises, before step st, the effects a batch handle owes that st shows committed with
// the handle: a correct store commits a message's effect with its acknowledgement, and only a
// broken one leaves it to a second commit, which is the worker's next step (consumer_effects_batch).
// So the effects are owed until the worker's next step, or a crash (after which the worker takes
// none): when that step is not an effects commit, they committed with the handle. They are raised
// at the handle's time, tagged with st's event.
func (d *SpecDeriver) settleOwed(st traces.Step) {
	switch st.Op {
	case traces.OpCrash:
		for _, w := range slices.Sorted(maps.Keys(d.owed)) {
			d.payOwed(w, nil)
		}
	case traces.OpConsumerFetch, traces.OpConsumerHandle, traces.OpConsumerFetchBatch, traces.OpConsumerHandleBatch,
		traces.OpWorkerStop, traces.OpWorkerDrain, traces.OpWake, traces.OpPollTick:
		if _, ok := d.owed[st.Args.Worker]; ok {
			d.payOwed(st.Args.Worker, nil)
		}
	}
}

// payOwed raises the effects worker w's batch handle owes, except those in skip.
func (d *SpecDeriver) payOwed(w int, skip []string) {
	o := d.owed[w]
	delete(d.owed, w)
	for _, f := range o.fs {
		if !slices.Contains(skip, f.id) {
			d.add(SpecEffect, o.at, f.mailbox, f.id)
		}
	}
}

// effectsBatch raises the effects a worker's second commit committed: those its result lists,
// unless the commit failed. An owed effect it does not list committed with the handle.
func (d *SpecDeriver) effectsBatch(st traces.Step) {
	a, r, at := st.Args, st.Result, st.At
	if _, ok := d.owed[a.Worker]; ok {
		d.payOwed(a.Worker, r.Effects)
	}
	if a.Fault == traces.FaultCommitFails {
		return
	}
	for _, id := range r.Effects {
		d.add(SpecEffect, at, a.Mailbox, id)
	}
}

// Flush appends to out the spec events still owed at the end of a history (the effects of a
// worker's last batch handle: see settleOwed) and returns it.
func (d *SpecDeriver) Flush(out []SpecEvent) []SpecEvent {
	d.evs = out
	for _, w := range slices.Sorted(maps.Keys(d.owed)) {
		d.payOwed(w, nil)
	}
	out, d.evs = d.evs, nil
	return out
}

// deliverBatch raises a batch delivery: each row's part is a single fold delivery's (deliver),
// under the batch's fault and token; the store reports the messages the batch inserted before
// the outbox rows it completed.
func (d *SpecDeriver) deliverBatch(st traces.Step) {
	a, r := st.Args, st.Result
	start := len(d.evs)
	for k, id := range a.IDs {
		if k >= len(r.Actions) {
			break
		}
		one := traces.Step{Op: traces.OpPublisherDeliver, At: st.At,
			Args:   traces.Args{ID: id, Token: a.Token, Profile: traces.ProfileFold, Fault: a.Fault, Publisher: a.Publisher},
			Result: traces.Result{Action: r.Actions[k]}}
		if k < len(r.Duplicates) {
			one.Result.Duplicate = r.Duplicates[k]
		}
		d.deliver(one)
	}
	evs := d.evs[start:]
	inserted := func(e SpecEvent) bool { return e.Kind == SpecMsgInserted || e.Kind == SpecRow }
	sorted := append(slices.Clone(slices.DeleteFunc(slices.Clone(evs), func(e SpecEvent) bool { return !inserted(e) })),
		slices.DeleteFunc(slices.Clone(evs), inserted)...)
	copy(evs, sorted)
}
