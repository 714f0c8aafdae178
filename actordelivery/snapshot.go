package actordelivery

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// SnapshotRow is one durable row of the store as it was when a recording store opened: the row of
// a "snapshot" event (Event.Row). A log that begins while the database already holds rows can only
// be checked from the state it begins in; the store states that state, row by row, right after
// its "incarnation" event (see docs/observed.md, "A log that starts mid-life").
//
// Table names the row's kind; the other fields are its columns, named as in the trace format's
// snapshot, with the store's real times and tokens:
//   - "message": Mailbox, ID, Key, Priority, Payload, State ("ready" or "acked"), Attempts,
//     MaxAttempts, AvailableAt, Token and Until (its lease, if it carries one), FinalAt (acked_at).
//   - "dead_letter": Mailbox, ID, Key, Priority, Payload, Attempts, MaxAttempts, Reason, FinalAt
//     (dead_at).
//   - "outbox": ID, Target, Key, Priority, Payload, MaxAttempts, MaxDeliveryAttempts, State
//     ("pending", "completed" or "dead_letter"), Attempts (delivery attempts), AvailableAt, Token
//     and Until (its claim), Reason (why dead-lettered), FinalAt.
//   - "processed": Consumer, ID (the message id), ExpiresAt.
//   - "checkpoint": Actor, Version.
//   - "purged_id": ID (a purged message or dead letter still a duplicate), ExpiresAt.
//   - "end": Rows, the number of rows stated before it. It closes a complete snapshot.
//
// Each table comes in its creation order (messages and outbox rows by their seq), so a checker
// that adds them in that order orders them as the store does.
type SnapshotRow struct {
	Table               string    `json:"table"`
	Mailbox             string    `json:"mailbox,omitempty"`
	ID                  string    `json:"id,omitempty"`
	Key                 string    `json:"key,omitempty"`
	Priority            int       `json:"priority,omitempty"`
	Payload             string    `json:"payload,omitempty"`
	State               string    `json:"state,omitempty"`
	Attempts            int       `json:"attempts,omitempty"`
	MaxAttempts         int       `json:"max_attempts,omitempty"`
	Target              string    `json:"target,omitempty"`
	MaxDeliveryAttempts int       `json:"max_delivery_attempts,omitempty"`
	Token               string    `json:"token,omitempty"`
	Until               time.Time `json:"until,omitzero"`
	AvailableAt         time.Time `json:"available_at,omitzero"`
	FinalAt             time.Time `json:"final_at,omitzero"`
	ExpiresAt           time.Time `json:"expires_at,omitzero"`
	Reason              string    `json:"reason,omitempty"`
	Consumer            string    `json:"consumer,omitempty"`
	Actor               string    `json:"actor,omitempty"`
	Version             int64     `json:"version,omitempty"`
	Rows                int64     `json:"rows,omitempty"`
}

// The snapshot's tables (SnapshotRow.Table).
const (
	SnapMessage    = "message"
	SnapDeadLetter = "dead_letter"
	SnapOutbox     = "outbox"
	SnapProcessed  = "processed"
	SnapCheckpoint = "checkpoint"
	SnapPurgedID   = "purged_id"
	SnapEnd        = "end"
)

// OpSnapshot is the op of a snapshot event.
const OpSnapshot = "snapshot"

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
