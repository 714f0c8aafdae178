package actordelivery

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery/record"
)

// SnapshotRow is one durable row of the store as it was when a recording store opened: the row of
// a "snapshot" event (record.SnapshotRow; docs/observed.md, "A log that starts mid-life").
type SnapshotRow = record.SnapshotRow

// The snapshot's tables (SnapshotRow.Table), and the op of a snapshot event.
const (
	SnapMessage    = record.SnapMessage
	SnapDeadLetter = record.SnapDeadLetter
	SnapOutbox     = record.SnapOutbox
	SnapProcessed  = record.SnapProcessed
	SnapCheckpoint = record.SnapCheckpoint
	SnapPurgedID   = record.SnapPurgedID
	SnapEnd        = record.SnapEnd
	OpSnapshot     = record.OpSnapshot
)

// recordOpening records the store's incarnation and, when the database holds any row, its
// snapshot: all in one write transaction, so under the commit lock, at the place in the commit
// order after the last commit before this Open. Both are read events (they change nothing).
//
// The rows go to the Recorder as they are read, one event each, so the memory the snapshot costs
// does not grow with the tables; the transaction holds the commit lock while it reads them, so
// a large database delays other recording processes' commits for that long (docs/observed.md
// gives the cost). The "end" event follows the last row, only when there was one: an empty
// database's log starts from the empty state, as it always did.
func (s *Store) recordOpening(ctx context.Context) error {
	return s.ExecTx(ctx, false, func(ctx context.Context) error {
		ts := s.txFrom(ctx)
		if ts == nil || !ts.recording {
			return fmt.Errorf("actordelivery: recorder: the opening transaction does not record")
		}
		at := fromMillis(ts.now)
		base := Event{Seq: ts.base, Read: true, At: at, Op: OpSnapshot, Args: EventArgs{Incarnation: s.incarnation}}
		s.rec.Record(Event{Seq: ts.base, Read: true, At: at, Op: "incarnation", Args: EventArgs{Incarnation: s.incarnation}})
		var n int64
		emit := func(r *SnapshotRow) {
			ev := base
			ev.Row = r
			s.rec.Record(ev)
			n++
		}
		if err := s.snapshotRows(ctx, ts.tx, emit); err != nil {
			return err
		}
		if n > 0 {
			emit(&SnapshotRow{Table: SnapEnd, Rows: n})
		}
		return nil
	})
}

// snapshotRows reads every durable row through q and hands each to emit, which must not keep it.
func (s *Store) snapshotRows(ctx context.Context, q querier, emit func(*SnapshotRow)) error {
	var r SnapshotRow
	var (
		key, token, reason sql.NullString
		payload            []byte
		until, finalAt     sql.NullInt64
		available, expires int64
		maxDelivery        sql.NullInt64
	)
	reset := func(table string) {
		r = SnapshotRow{Table: table}
		key, token, reason, payload, until, finalAt, maxDelivery = sql.NullString{}, sql.NullString{}, sql.NullString{}, nil, sql.NullInt64{}, sql.NullInt64{}, sql.NullInt64{}
	}
	opt := func(v sql.NullInt64) time.Time {
		if !v.Valid {
			return time.Time{}
		}
		return fromMillis(v.Int64)
	}
	tables := []struct {
		name, query string
		scan        func(*sql.Rows) error
		fill        func()
	}{
		{SnapMessage, qSnapMessages, func(rows *sql.Rows) error {
			return rows.Scan(&r.ID, &r.Mailbox, &key, &r.Priority, &r.MaxAttempts, &r.Attempts, &available, &token, &until, &r.State, &payload, &finalAt)
		}, func() {
			r.Until = opt(until)
			r.FinalAt = opt(finalAt)
		}},
		{SnapDeadLetter, qSnapDeadLetters, func(rows *sql.Rows) error {
			return rows.Scan(&r.ID, &r.Mailbox, &key, &r.Priority, &r.MaxAttempts, &r.Attempts, &reason, &payload, &finalAt)
		}, func() { r.FinalAt = opt(finalAt) }},
		{SnapOutbox, qSnapOutbox, func(rows *sql.Rows) error {
			return rows.Scan(&r.ID, &r.Target, &key, &r.Priority, &r.MaxAttempts, &payload, &r.State, &available, &r.Attempts, &token, &until, &maxDelivery, &reason, &finalAt)
		}, func() {
			r.Until = opt(until)
			r.FinalAt = opt(finalAt)
			r.MaxDeliveryAttempts = int(maxDelivery.Int64)
		}},
		{SnapProcessed, qSnapProcessed, func(rows *sql.Rows) error {
			return rows.Scan(&r.Consumer, &r.ID, &expires)
		}, func() { r.ExpiresAt = fromMillis(expires) }},
		{SnapCheckpoint, qSnapCheckpoints, func(rows *sql.Rows) error {
			return rows.Scan(&r.Actor, &r.Version)
		}, func() {}},
		{SnapPurgedID, qSnapPurgedIDs, func(rows *sql.Rows) error {
			return rows.Scan(&r.ID, &expires)
		}, func() { r.ExpiresAt = fromMillis(expires) }},
	}
	for _, t := range tables {
		rows, err := q.QueryContext(ctx, t.query)
		if err != nil {
			return s.dbErr("recorder: snapshot "+t.name, err)
		}
		for rows.Next() {
			reset(t.name)
			available = 0
			if err := t.scan(rows); err != nil {
				_ = rows.Close()
				return s.dbErr("recorder: snapshot "+t.name, err)
			}
			t.fill()
			r.Key, r.Token, r.Reason, r.Payload = key.String, token.String, reason.String, string(payload)
			if t.name == SnapMessage || t.name == SnapOutbox {
				r.AvailableAt = fromMillis(available)
			}
			emit(&r)
		}
		err = rows.Err()
		_ = rows.Close()
		if err != nil {
			return s.dbErr("recorder: snapshot "+t.name, err)
		}
	}
	return nil
}
