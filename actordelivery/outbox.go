package actordelivery

import (
	"context"
	"database/sql"
	"sort"
	"time"
)

// OutboxMessage is the delivery an outbox row stands for: a message with id ID for mailbox Target.
type OutboxMessage struct {
	ID          string // non-empty, unique among outbox rows; also the delivered message's id
	Target      string // non-empty mailbox
	Key         string
	Priority    int
	MaxAttempts int // >= 1
	Payload     []byte
	// MaxDeliveryAttempts bounds the claims of the row: once it has been claimed that often and
	// holds no live claim, the next OutboxClaim dead-letters it instead of claiming it again.
	// Zero means DefaultMaxDeliveryAttempts; negative is refused.
	MaxDeliveryAttempts int
}

// DefaultMaxDeliveryAttempts is the delivery attempts an outbox row gets when its
// OutboxMessage.MaxDeliveryAttempts is zero (the original runtime's default).
const DefaultMaxDeliveryAttempts = 10

// ReasonMaxDeliveryAttempts is the reason OutboxClaim, and a publisher whose delivery failed on
// the row's last attempt, write into a dead-lettered outbox row.
const ReasonMaxDeliveryAttempts = "max delivery attempts reached"

// OutboxRow is a stored outbox row.
type OutboxRow struct {
	OutboxMessage        // MaxDeliveryAttempts as stored: never zero
	State         string // StatePending, StateCompleted or StateDeadLetter
	// DeadReason says why the row was dead-lettered; "" unless State is StateDeadLetter.
	DeadReason string
	// DeliveryAttempts counts the claims of the row.
	DeliveryAttempts int
	AvailableAt      time.Time
	// ClaimToken is "" (and ClaimUntil the zero time) when the row carries no claim.
	ClaimToken string
	ClaimUntil time.Time
	Seq        int64
}

func scanOutbox(sc interface{ Scan(...any) error }) (*OutboxRow, error) {
	var (
		r      OutboxRow
		token  sql.NullString
		until  sql.NullInt64
		avail  int64
		reason sql.NullString
	)
	if err := sc.Scan(&r.Seq, &r.ID, &r.Target, &r.Key, &r.Priority, &r.MaxAttempts, &r.Payload,
		&r.State, &avail, &r.DeliveryAttempts, &token, &until, &r.MaxDeliveryAttempts, &reason); err != nil {
		return nil, err
	}
	r.DeadReason = reason.String
	r.AvailableAt = fromMillis(avail)
	if token.Valid {
		r.ClaimToken = token.String
		r.ClaimUntil = fromMillis(until.Int64)
	}
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	return &r, nil
}

// OutboxEnqueue records m as a pending outbox row, available now. It joins the transaction in ctx —
// that is the point of an outbox: the row commits or rolls back with the caller's own writes.
// Without a transaction in ctx it commits on its own. A duplicate id changes nothing and reports
// duplicate.
//
// Errors: ErrInvalidArgument (empty ID or Target, MaxAttempts < 1, MaxDeliveryAttempts < 0, an ID,
// Target or Key beyond MaxNameBytes or not valid UTF-8 without NUL, a Payload beyond
// Options.MaxPayloadBytes, read-only transaction), ErrBusy, ErrClosed.
func (s *Store) OutboxEnqueue(ctx context.Context, m OutboxMessage) (duplicate bool, err error) {
	const op = "OutboxEnqueue"
	switch {
	case m.ID == "":
		return false, invalid(op, "id is empty (target %q)", m.Target)
	case m.Target == "":
		return false, invalid(op, "target is empty (row %q)", m.ID)
	case m.MaxAttempts < 1:
		return false, invalid(op, "max_attempts %d of row %q is below 1", m.MaxAttempts, m.ID)
	case m.MaxDeliveryAttempts < 0:
		return false, invalid(op, "max_delivery_attempts %d of row %q is negative", m.MaxDeliveryAttempts, m.ID)
	}
	if err := checkNames(op, "id", m.ID, "target", m.Target, "key", m.Key); err != nil {
		return false, err
	}
	if err := s.checkPayload(op, "payload", m.Payload); err != nil {
		return false, err
	}
	maxDelivery := m.MaxDeliveryAttempts
	if maxDelivery == 0 {
		maxDelivery = DefaultMaxDeliveryAttempts
	}
	err = s.write(ctx, op, func(ts *txState, now int64) error {
		res, err := ts.tx.ExecContext(ctx, qOutboxEnqueue,
			named("id", m.ID), named("target", m.Target), named("key", m.Key),
			named("priority", m.Priority), named("max_attempts", m.MaxAttempts),
			payloadArg(m.Payload), named("now", now), named("max_delivery_attempts", maxDelivery))
		if err != nil {
			return s.dbErr(op+" "+m.ID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return s.dbErr(op+" "+m.ID, err)
		}
		duplicate = n == 0
		ts.record("outbox_enqueue", false, EventArgs{ID: m.ID, Target: m.Target, Key: m.Key, Priority: m.Priority,
			MaxAttempts: m.MaxAttempts, Payload: string(m.Payload), MaxDeliveryAttempts: maxDelivery}, EventResult{Duplicate: duplicate})
		if !duplicate {
			return s.wakeAfterCommit(ctx, ts, topic{outbox: true}, "")
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return duplicate, nil
}

// OutboxClaim first dead-letters, with ReasonMaxDeliveryAttempts, every pending row that has
// used up its delivery attempts (delivery_attempts >= max_delivery_attempts) and carries no live
// claim. Then it claims up to limit pending rows that are available (available_at <= now), carry
// no live claim and have attempts left, smallest seq first: all of them get one fresh token,
// claim_until = now + claimFor and delivery_attempts + 1. The claimed rows are returned in seq
// order, as they are after the claim. Both happen in one transaction.
//
// Errors: ErrInvalidArgument (limit < 1, claimFor outside [0, MaxDuration], read-only transaction), ErrBusy,
// ErrClosed.
func (s *Store) OutboxClaim(ctx context.Context, limit int, claimFor time.Duration) ([]OutboxRow, error) {
	const op = "OutboxClaim"
	if limit < 1 {
		return nil, invalid(op, "limit %d is below 1", limit)
	}
	if err := checkDuration(op, "claim_for", claimFor); err != nil {
		return nil, err
	}
	var out []OutboxRow
	err := s.write(ctx, op, func(ts *txState, now int64) error {
		out = out[:0]
		if _, err := ts.tx.ExecContext(ctx, qOutboxExhausted, named("reason", ReasonMaxDeliveryAttempts),
			named("now", now)); err != nil {
			return s.dbErr(op, err)
		}
		rows, err := ts.tx.QueryContext(ctx, qOutboxClaim, named("token", newToken()),
			named("until", now+durMillis(claimFor)), named("now", now), named("limit", limit))
		if err != nil {
			return s.dbErr(op, err)
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanOutbox(rows)
			if err != nil {
				return s.dbErr(op, err)
			}
			out = append(out, *r)
		}
		if err := rows.Err(); err != nil {
			return s.dbErr(op, err)
		}
		if ts.recording {
			sorted := append([]OutboxRow(nil), out...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
			var claimed []EventClaimed
			for _, r := range sorted {
				claimed = append(claimed, EventClaimed{ID: r.ID, DeliveryAttempts: r.DeliveryAttempts, Token: r.ClaimToken})
			}
			ts.record("outbox_claim", false, EventArgs{Limit: limit, ClaimFor: claimFor}, EventResult{Claimed: claimed})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// OutboxComplete marks the row completed and clears its claim, if it is pending and carries token.
//
// Errors: ErrClaimLost (nothing changed), ErrInvalidArgument (empty id or token), ErrBusy,
// ErrClosed.
func (s *Store) OutboxComplete(ctx context.Context, id, token string) error {
	const op = "OutboxComplete"
	if err := checkIDToken(op, id, token); err != nil {
		return err
	}
	return s.updateRow(ctx, op, id, ErrClaimLost, recordedOp{"outbox_complete", EventArgs{ID: id, Token: token}, "claim_lost"}, func(now int64) (string, []any) {
		return qOutboxComplete, []any{named("id", id), named("token", token), named("now", now)}
	})
}

// OutboxFail clears the claim of the pending row carrying token and makes it available again at
// now + delay.
//
// Errors: ErrClaimLost (nothing changed), ErrInvalidArgument (empty id or token, delay outside [0, MaxDuration]),
// ErrBusy, ErrClosed.
func (s *Store) OutboxFail(ctx context.Context, id, token string, delay time.Duration) error {
	const op = "OutboxFail"
	if err := checkIDToken(op, id, token); err != nil {
		return err
	}
	if err := checkDuration(op, "delay", delay); err != nil {
		return err
	}
	return s.updateRow(ctx, op, id, ErrClaimLost, recordedOp{"outbox_fail", EventArgs{ID: id, Token: token, Delay: delay}, "claim_lost"}, func(now int64) (string, []any) {
		return qOutboxFail, []any{named("id", id), named("token", token), named("available_at", now+durMillis(delay))}
	})
}

// OutboxDeadLetter marks the row dead-lettered with reason and clears its claim, if it is pending
// and carries token: a publisher does this when the row can never be delivered, or its last
// delivery attempt failed.
//
// Errors: ErrClaimLost (nothing changed), ErrInvalidArgument (empty id, token or reason), ErrBusy,
// ErrClosed.
func (s *Store) OutboxDeadLetter(ctx context.Context, id, token, reason string) error {
	const op = "OutboxDeadLetter"
	if err := checkIDToken(op, id, token); err != nil {
		return err
	}
	if reason == "" {
		return invalid(op, "reason of %q is empty", id)
	}
	if err := checkText(op, "reason", reason, MaxReasonBytes); err != nil {
		return err
	}
	return s.updateRow(ctx, op, id, ErrClaimLost, recordedOp{"outbox_dead_letter", EventArgs{ID: id, Token: token, Reason: reason}, "claim_lost"}, func(now int64) (string, []any) {
		return qOutboxDeadLetter, []any{named("id", id), named("token", token), named("reason", reason), named("now", now)}
	})
}

// ListOutbox returns every outbox row, completed ones included, in seq order.
//
// Errors: ErrBusy, ErrClosed.
func (s *Store) ListOutbox(ctx context.Context) ([]OutboxRow, error) {
	return s.listOutbox(ctx, "ListOutbox", qListOutbox)
}

// ListOutboxDeadLetters returns the dead-lettered outbox rows, the ones a Redrive can put back, in
// seq order. It reads only them, however many completed rows retention keeps.
//
// Errors: ErrBusy, ErrClosed.
func (s *Store) ListOutboxDeadLetters(ctx context.Context) ([]OutboxRow, error) {
	return s.listOutbox(ctx, "ListOutboxDeadLetters", qListOutboxDeadLetters)
}

// listOutbox returns the outbox rows query selects, as operation op.
func (s *Store) listOutbox(ctx context.Context, op, query string) ([]OutboxRow, error) {
	var out []OutboxRow
	err := s.read(ctx, op, func(q querier, _ int64) error {
		rows, err := q.QueryContext(ctx, query)
		if err != nil {
			return s.dbErr(op, err)
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanOutbox(rows)
			if err != nil {
				return s.dbErr(op, err)
			}
			out = append(out, *r)
		}
		return s.dbErr(op, rows.Err())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
