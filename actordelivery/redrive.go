package actordelivery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The kinds of dead letter a redrive moves (Redrive.Kind).
const (
	// RedriveMessage: a mailbox dead letter, moved back into its mailbox.
	RedriveMessage = "message"
	// RedriveOutbox: a dead-lettered outbox row, made pending again.
	RedriveOutbox = "outbox"
)

// Redrive is the record of one dead letter moved back to ready.
type Redrive struct {
	ID string
	// Kind is RedriveMessage or RedriveOutbox.
	Kind string
	// Mailbox is the message's mailbox, or the outbox row's target.
	Mailbox string
	// Attempts is the attempt count (for an outbox row, the delivery-attempt count) the dead
	// letter had before the redrive reset it.
	Attempts int
	// DeadReason is why it had been dead-lettered; Reason why it was redriven.
	DeadReason, Reason string
	// At is when it was redriven.
	At time.Time
}

// Redrive sends the dead letter id back to ready once its cause is fixed, and records when and
// why (ListRedrives). A mailbox dead letter leaves the dead-letter table and re-enters its mailbox
// as a ready message with attempts 0, available at once, behind every message already there (a
// new seq); its id, key, priority, max_attempts and payload are kept. A dead-lettered outbox row
// becomes pending with delivery attempts 0, available at once, without a reason. When both a
// mailbox dead letter and a dead-lettered outbox row carry id, both go back, in one transaction.
// It joins the transaction in ctx; subscribers are signalled after the commit.
//
// Errors: ErrNotFound (id names no dead letter: no such id, a ready, acked or pending row, or a
// dead letter Purge removed), ErrInvalidArgument (empty id or reason, a read-only transaction),
// ErrBusy, ErrClosed.
func (s *Store) Redrive(ctx context.Context, id, reason string) error {
	const op = "Redrive"
	if id == "" {
		return invalid(op, "id is empty")
	}
	if reason == "" {
		return invalid(op, "reason for %q is empty", id)
	}
	if err := checkName(op, "id", id); err != nil {
		return err
	}
	if err := checkText(op, "reason", reason, MaxReasonBytes); err != nil {
		return err
	}
	return s.write(ctx, op, func(ts *txState, now int64) error {
		args := EventArgs{ID: id, Reason: reason}
		found := false
		for _, k := range []struct {
			record, move string
			extra        []string
			wake         func(mailbox string) topic
		}{
			{qRedriveRecordMessage, qRedriveMessage, []string{qRedriveDeleteDead}, func(mb string) topic { return topic{mailbox: mb} }},
			{qRedriveRecordOutbox, qRedriveOutbox, nil, func(string) topic { return topic{outbox: true} }},
		} {
			var mailbox string
			err := ts.tx.QueryRowContext(ctx, k.record, named("id", id), named("reason", reason), named("now", now)).Scan(&mailbox)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return s.dbErr(op+" "+id, err)
			}
			found = true
			for _, q := range append([]string{k.move}, k.extra...) {
				if _, err := ts.tx.ExecContext(ctx, q, named("id", id), named("now", now)); err != nil {
					return s.dbErr(op+" "+id, err)
				}
			}
			if err := s.wakeAfterCommit(ctx, ts, k.wake(mailbox), id); err != nil {
				return err
			}
		}
		if !found {
			// Nothing moved: the transaction commits nothing of the call, and the event says so.
			ts.record("redrive", true, args, EventResult{Err: "not_found"})
			return fmt.Errorf("actordelivery: %s %q: %w", op, id, ErrNotFound)
		}
		ts.record("redrive", false, args, EventResult{})
		return nil
	})
}

// ListRedrives returns the redrive records of id (of every id when id is ""), oldest first.
//
// Errors: ErrBusy, ErrClosed.
func (s *Store) ListRedrives(ctx context.Context, id string) ([]Redrive, error) {
	const op = "ListRedrives"
	if err := checkName(op, "id", id); err != nil {
		return nil, err
	}
	var out []Redrive
	err := s.read(ctx, op, func(q querier, _ int64) error {
		rows, err := q.QueryContext(ctx, qListRedrives, named("id", id))
		if err != nil {
			return s.dbErr(op, err)
		}
		defer rows.Close()
		for rows.Next() {
			var r Redrive
			var at int64
			if err := rows.Scan(&r.ID, &r.Kind, &r.Mailbox, &r.Attempts, &r.DeadReason, &r.Reason, &at); err != nil {
				return s.dbErr(op, err)
			}
			r.At = fromMillis(at)
			out = append(out, r)
		}
		return s.dbErr(op, rows.Err())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
