package observe

import (
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery/record"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// opSnapshot is the event of one row a recording store found when it opened (see
// record.SnapshotRow): read events right after the store's incarnation event, ended by a
// row of table "end".
const opSnapshot = record.OpSnapshot

// Starting mid-life. The first snapshot of a log, when it comes before any other step, is the
// state the history starts from: the oracle adopts its rows into the model, binding the store's
// lease and claim tokens to the model's. A later snapshot (a restart appending to the same log,
// or a second process opening the same database) states the rows the store holds then; it must be
// the state the model reached, row by row and in number. Either disagreement is an error about
// the log (ErrBadLog) naming the line: the history does not start where its snapshot says, or
// rows changed outside it.

// snapshots follows the snapshots of a log, per incarnation.
type snapshots struct {
	// open maps an incarnation whose snapshot has begun and not ended to its progress.
	open map[string]*snapProgress
	// ended maps an incarnation whose snapshot ended to the end's line.
	ended map[string]int
	// adopting is the incarnation whose snapshot the model adopts, "" when none.
	adopting string
	// adopted maps a row adopted from the starting snapshot, not touched by an event since, to
	// the line that stated it: an event that disagrees with the model on such a row contradicts
	// the snapshot (nothing else stated the row), which is an error naming both lines.
	adopted map[string]int
}

// snapProgress is one incarnation's snapshot while its rows come.
type snapProgress struct {
	adopt  bool
	seq    int64
	line   int
	rows   int64
	counts models.StartCounts
}

// snapshot takes in a snapshot event at logical time at.
func (o *ModelOracle) snapshot(ev *Event, at int64) error {
	sn := &o.snaps
	if sn.open == nil {
		sn.open, sn.ended, sn.adopted = map[string]*snapProgress{}, map[string]int{}, map[string]int{}
	}
	inc, r := ev.Args.Incarnation, ev.Row
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: snapshot of incarnation %s: %s", ErrBadLog, ev.Line, inc, fmt.Sprintf(format, args...))
	}
	if l, done := sn.ended[inc]; done {
		return bad("a row after the snapshot's end at line %d", l)
	}
	p := sn.open[inc]
	if p == nil {
		adopt := o.pos == 0 && (sn.adopting == "" || sn.adopting == inc)
		if adopt {
			sn.adopting = inc
		}
		p = &snapProgress{adopt: adopt, seq: ev.Seq, line: ev.Line}
		sn.open[inc] = p
	}
	if ev.Seq != p.seq {
		return bad("row at seq %d, but the snapshot began at seq %d (line %d): one snapshot is one place in the commit order", ev.Seq, p.seq, p.line)
	}
	if r.Table == record.SnapEnd {
		delete(sn.open, inc)
		sn.ended[inc] = ev.Line
		if r.Rows != p.rows {
			return bad("its end states %d rows, but %d came since line %d (rows lost or added)", r.Rows, p.rows, p.line)
		}
		if !p.adopt && o.variant == "" {
			if got := o.m.Counts(at); got != p.counts {
				return bad("the store holds %+v rows, the model %+v after the history so far: rows changed outside the recorded history (a process that did not record, or a store that lost them)", p.counts, got)
			}
		}
		return nil
	}
	p.rows++
	row, err := startRow(r)
	if err != nil {
		return bad("%v", err)
	}
	space := traces.LeaseTokens
	if r.Table == record.SnapOutbox {
		space = traces.ClaimTokens
	}
	if p.adopt {
		if k, dup := o.bind.fwd[space][r.Token]; dup && row.Leased {
			// One outbox claim gives its token to every row it claims; a lease token is one row's.
			if space == traces.LeaseTokens {
				return bad("row %s carries lease token %q, which another row of the snapshot carries too", r.ID, r.Token)
			}
			row.Token = k
		}
		tok, err := o.m.Adopt(at, row)
		if err != nil {
			return bad("%v", err)
		}
		if tok != 0 {
			o.bind.fwd[space][r.Token], o.bind.rev[space][tok] = tok, r.Token
		}
		if r.ID != "" && (r.Table == record.SnapMessage || r.Table == record.SnapDeadLetter || r.Table == record.SnapOutbox) {
			sn.adopted[r.ID] = ev.Line
		}
		return nil
	}
	if o.variant != "" {
		// A broken variant's store is known to leave the model's states: what it restates
		// at a restart is not held to them (its steps are).
		return nil
	}
	p.counts.Add(at, row)
	tok, diff := o.m.Compare(at, row)
	if diff != "" {
		return bad("%s %s: %s (after the history so far; rows changed outside it)", r.Table, r.ID+r.Actor, diff)
	}
	if tok != 0 {
		if k, ok := o.bind.fwd[space][r.Token]; ok && k != tok || !ok && o.bind.rev[space][tok] != "" {
			return bad("%s %s carries token %q, which is not the token the history gave it", r.Table, r.ID, r.Token)
		}
	}
	return nil
}

// unfinished is an error when the starting snapshot, begun before ev (at an earlier place in the
// commit order), has not ended: its end would have come before ev, and the model lacks the rows
// it did not state. A restart's snapshot cut short is dropped: a process killed while it opened
// leaves one (pconform observe --kill), and the rows it did state were compared.
func (o *ModelOracle) unfinished(ev *Event) error {
	for inc, p := range o.snaps.open {
		if p.seq >= ev.Seq {
			continue
		}
		if p.adopt {
			return fmt.Errorf("%w: line %d: the snapshot of incarnation %s, begun at line %d, has no end before this event (its rows were cut short)", ErrBadLog, ev.Line, inc, p.line)
		}
		delete(o.snaps.open, inc)
	}
	return nil
}

// StartRow is r, a row of a log's snapshot, in the model's time units, as the model oracle
// adopts it. Errors: a time before the trace epoch, a token without an until.
func StartRow(r *record.SnapshotRow) (models.StartRow, error) { return startRow(r) }

// startRow is r in the model's time units. Errors: a time before the trace epoch.
func startRow(r *record.SnapshotRow) (models.StartRow, error) {
	row := models.StartRow{Table: r.Table, Mailbox: r.Mailbox, ID: r.ID, Key: r.Key, Payload: r.Payload, State: r.State,
		Priority: r.Priority, Attempts: r.Attempts, MaxAttempts: r.MaxAttempts, MaxDelivery: r.MaxDeliveryAttempts,
		Target: r.Target, Reason: r.Reason, Consumer: r.Consumer, Actor: r.Actor, Version: r.Version, Leased: r.Token != ""}
	var err error
	tick := func(name string, t time.Time, dst *int64) {
		if err != nil || t.IsZero() {
			return
		}
		if t.Before(traces.Epoch) {
			err = fmt.Errorf("%s %s: %s %s is before the trace epoch %s", r.Table, r.ID+r.Actor, name, t.Format(time.RFC3339), traces.Epoch.Format(time.RFC3339))
			return
		}
		*dst = ticksAt(t)
	}
	tick("until", r.Until, &row.Until)
	tick("available_at", r.AvailableAt, &row.AvailableAt)
	tick("final_at", r.FinalAt, &row.FinalAt)
	tick("expires_at", r.ExpiresAt, &row.ExpiresAt)
	if row.Leased && r.Until.IsZero() {
		return row, fmt.Errorf("%s %s carries token %q without an until", r.Table, r.ID, r.Token)
	}
	return row, err
}

// contradiction returns the error for a disagreement (msg) at ev on a row adopted from the
// starting snapshot and untouched since, or nil when keys name no such row. Every row keys name
// is touched from now on either way.
func (o *ModelOracle) contradiction(ev *Event, keys []string, msg string) error {
	if len(o.snaps.adopted) == 0 {
		return nil
	}
	var err error
	for _, k := range keys {
		l, ok := o.snaps.adopted[k]
		if !ok {
			continue
		}
		delete(o.snaps.adopted, k)
		if err == nil && msg != "" {
			err = fmt.Errorf("%w: line %d: the starting snapshot contradicts this event: %s; row %s was stated by the snapshot at line %d and no event touched it since (the log does not start where its snapshot says)",
				ErrBadLog, ev.Line, msg, k, l)
		}
	}
	return err
}

// pruneAdopted forgets the adopted rows the model no longer holds.
func (o *ModelOracle) pruneAdopted() {
	for id := range o.snaps.adopted {
		if !o.m.Holds(id) {
			delete(o.snaps.adopted, id)
		}
	}
}
