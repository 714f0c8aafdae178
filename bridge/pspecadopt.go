package bridge

import (
	"fmt"

	"github.com/pconform/pconform/actordelivery/record"
	"github.com/pconform/pconform/observe"
)

// maxAdoptedVersion is the highest checkpoint version whose saves Adopt raises one by one; an
// actor adopted at a higher version is left out of the checkpoint monitor from then on.
const maxAdoptedVersion = 256

// Adopt appends to out the spec events that tell the monitors a row the log's starting snapshot
// holds (ev, a snapshot event before any step), and returns it. The row is taken as if created
// just before the history, at the snapshot's time:
//
//   - a message or dead letter is inserted once into its mailbox, with its row (its state,
//     attempts, lease) or its dead letter (attempts, reason);
//   - an outbox row is enqueued, with its row (state, delivery attempts, claim);
//   - a live processed mark is a mark_processed that wrote it (its ttl the time it has left);
//   - a checkpoint is saved up to its version (up to maxAdoptedVersion);
//   - a purged id is retired until its mark expires.
//
// What the snapshot does not state is not guessed: no redrive of an adopted id is known (a
// list_redrives naming one, or listing all, is not judged), no effect committed before (a second
// effect of an adopted message is not seen), nor any delivery before of an outbox row whose
// message the snapshot does not hold (its completion is raised only after the history inserts
// the message). Errors: a row whose times fall before the trace epoch, or that holds a token
// without an until.
func (d *SpecDeriver) Adopt(ev *observe.Event, out []SpecEvent) ([]SpecEvent, error) {
	d.evs = out
	err := d.adopt(ev)
	out, d.evs = d.evs, nil
	return out, err
}

func (d *SpecDeriver) adopt(ev *observe.Event) error {
	r := ev.Row
	if r == nil || r.Table == record.SnapEnd {
		return nil
	}
	row, err := observe.StartRow(r)
	if err != nil {
		return fmt.Errorf("snapshot line %d: %w", ev.Line, err)
	}
	at := observe.Ticks(ev.At)
	switch r.Table {
	case record.SnapMessage, record.SnapDeadLetter:
		d.seq++
		m := &mrow{mailbox: r.Mailbox, id: r.ID, key: r.Key, priority: r.Priority, maxAttempts: r.MaxAttempts,
			attempts: r.Attempts, availableAt: row.AvailableAt, seq: d.seq}
		d.rows[r.ID] = m
		d.histUnknown[r.ID] = true
		if o, ok := d.out[r.ID]; ok && o.enq.target == r.Mailbox {
			o.adoptedUndelivered = false
		}
		d.add(SpecMsgInserted, at, m.mailbox, m.id)
		if r.Table == record.SnapDeadLetter {
			m.state, m.finalAt, m.finalKnown = "dead", row.FinalAt, true
			m.deadAttempts, m.deadReason, m.deadKnown = r.Attempts, r.Reason, true
			d.final[m.id] = m
			d.add(SpecDeadLettered, at, m.mailbox, m.id, m.attempts, m.maxAttempts, m.deadReason)
			return nil
		}
		m.state = r.State
		switch r.State {
		case "ready":
			m.token, m.leaseUntil = specToken(r.Token), row.Until
			if m.token != 0 {
				d.leased[m.id] = m
			}
		case "acked":
			m.finalAt, m.finalKnown = row.FinalAt, true
			d.final[m.id] = m
		default:
			m.state = unstated
		}
		d.emitRow(at, m)
	case record.SnapOutbox:
		o := &orow{enq: outboxEnqueue{id: r.ID, target: r.Target, key: r.Key, priority: r.Priority, maxAttempts: r.MaxAttempts,
			maxDeliveryAttempts: r.MaxDeliveryAttempts}, state: r.State, deliveryAttempts: r.Attempts}
		switch r.State {
		case "pending":
			if o.deliveryAttempts >= o.bound() {
				d.spent[r.ID] = o
			}
		case "dead_letter":
			o.deadReason, o.deadKnown = r.Reason, true
		case "completed":
		default:
			o.state = unstated
		}
		if m, ok := d.rows[r.ID]; r.State != "completed" && (!ok || m.mailbox != r.Target) {
			o.adoptedUndelivered = true
		}
		d.out[r.ID] = o
		d.histUnknown[r.ID] = true
		d.add(SpecOutboxEnqueued, at, r.ID, r.Target)
		state := o.state
		if state == unstated {
			state = r.State
		}
		d.emitOutRow(at, o, state, r.Attempts, specToken(r.Token), row.Until, row.AvailableAt, r.Reason)
	case record.SnapProcessed:
		if row.ExpiresAt > at {
			d.add(SpecMarkProcessed, at, r.Consumer, r.ID, row.ExpiresAt-at, false, false)
		}
	case record.SnapCheckpoint:
		if r.Version > maxAdoptedVersion {
			d.unjudged[r.Actor] = true
			return nil
		}
		for v := int64(1); v <= r.Version; v++ {
			d.add(SpecSaveCheckpoint, at, r.Actor, v-1, "", v, "", false)
		}
	case record.SnapPurgedID:
		d.histUnknown[r.ID] = true
		d.add(SpecPurged, at, r.ID, row.ExpiresAt)
	}
	return nil
}
