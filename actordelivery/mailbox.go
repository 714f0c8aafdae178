package actordelivery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Message and outbox states, and the reasons the package writes into dead letters. The values
// equal the corresponding constants of the traces package (internal/rulecopies holds them to it).
const (
	StateReady     = "ready"
	StateAcked     = "acked"
	StatePending   = "pending"
	StateCompleted = "completed"
	// StateDeadLetter is an outbox row that will never be delivered (OutboxDeadLetter, or
	// OutboxClaim on a row out of delivery attempts).
	StateDeadLetter = "dead_letter"

	// ReasonMaxAttempts is the reason a consumer dead-letters a message whose effective attempt
	// reached max_attempts.
	ReasonMaxAttempts = "max attempts reached"
	// ReasonHandlerFailed is the dead-letter reason when the retry policy declines and the
	// handler's error has an empty message; otherwise that message is the reason.
	ReasonHandlerFailed = "handler failed"
	// ReasonLeaseExpired is the reason ExpireLeases dead-letters an exhausted message.
	ReasonLeaseExpired = "lease expired after max attempts"
)

// NewMessage is what Enqueue inserts.
type NewMessage struct {
	Mailbox string // non-empty
	ID      string // non-empty; unique across all mailboxes and the dead letters
	Key     string // correlation key; "" means unkeyed
	// Priority: higher is delivered first.
	Priority int
	// MaxAttempts >= 1 bounds the deliveries counted for the message.
	MaxAttempts int
	// Delay >= 0 postpones the message's first eligibility.
	Delay   time.Duration
	Payload []byte
}

// Message is a stored mailbox row.
type Message struct {
	Mailbox, ID, Key string
	Priority         int
	// Attempts is the number of deliveries counted so far; 0 <= Attempts <= MaxAttempts.
	Attempts    int
	MaxAttempts int
	AvailableAt time.Time
	// Token is the current lease's token, "" when the message carries no lease; LeaseUntil is then
	// the zero time.
	Token      string
	LeaseUntil time.Time
	State      string // StateReady or StateAcked
	// Payload is nil when empty.
	Payload   []byte
	Seq       int64
	CreatedAt time.Time
}

// DeadLetter is a message that left its mailbox for good.
type DeadLetter struct {
	Mailbox, ID, Key string
	Priority         int
	// Attempts is the attempt count the message had when it was moved.
	Attempts    int
	MaxAttempts int
	Reason      string
	Payload     []byte
	DeadAt      time.Time
}

func scanMessage(sc interface{ Scan(...any) error }) (*Message, error) {
	var (
		m          Message
		token      sql.NullString
		leaseUntil sql.NullInt64
		avail, crt int64
	)
	if err := sc.Scan(&m.Seq, &m.ID, &m.Mailbox, &m.Key, &m.Priority, &m.MaxAttempts, &m.Attempts,
		&avail, &token, &leaseUntil, &m.State, &m.Payload, &crt); err != nil {
		return nil, err
	}
	m.AvailableAt = fromMillis(avail)
	m.CreatedAt = fromMillis(crt)
	if token.Valid {
		m.Token = token.String
		m.LeaseUntil = fromMillis(leaseUntil.Int64)
	}
	if len(m.Payload) == 0 {
		m.Payload = nil
	}
	return &m, nil
}

func invalid(op, format string, args ...any) error {
	return fmt.Errorf("actordelivery: %s: %w: %s", op, ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// MaxDuration is the longest duration the store accepts for a delay, a lease, a claim, a TTL or
// an option: 1e9 seconds, about 31.7 years. Anything longer is refused with ErrInvalidArgument,
// never clamped: a deadline that far out is a unit mistake (nanoseconds where seconds were meant,
// an overflowed conversion), and a silently shortened or wrapped one would turn into an early
// retry or an expiry in the past. It is the trace format's bound too (traces.MaxSeconds).
const MaxDuration = 1_000_000_000 * time.Second

func checkDuration(op, name string, d time.Duration) error {
	switch {
	case d < 0:
		return invalid(op, "%s %v is negative", name, d)
	case d > MaxDuration:
		return invalid(op, "%s %v is above the maximum %v (MaxDuration)", name, d, MaxDuration)
	}
	return nil
}

func named(name string, v any) sql.NamedArg { return sql.Named(name, v) }

// payloadArg stores an empty payload as an empty blob, so a row never holds NULL there.
func payloadArg(p []byte) sql.NamedArg {
	if p == nil {
		p = []byte{}
	}
	return sql.Named("payload", p)
}

// Enqueue inserts m as a ready message with attempts 0, available at now + m.Delay. If m.ID is
// already used — by a message of any mailbox in any state, by a dead letter, or by a row Purge
// removed less than its dedup horizon ago — nothing changes and duplicate is true. It joins the transaction in ctx; subscribers of m.Mailbox are signalled after
// the commit.
//
// Errors: ErrInvalidArgument (empty Mailbox or ID, MaxAttempts < 1, Delay outside [0, MaxDuration],
// a Mailbox, ID or Key beyond MaxNameBytes or not valid UTF-8 without NUL, a Payload beyond
// Options.MaxPayloadBytes, or called in a read-only transaction), ErrBusy, ErrClosed.
func (s *Store) Enqueue(ctx context.Context, m NewMessage) (duplicate bool, err error) {
	const op = "Enqueue"
	if err := s.checkNewMessage(op, m); err != nil {
		return false, err
	}
	if s.d.backend == BackendPostgres && s.rec == nil && s.txFrom(ctx) == nil {
		return s.enqueueAlone(ctx, m)
	}
	err = s.write(ctx, op, func(ts *txState, now int64) error {
		if err := s.enqueue(ctx, ts, now, m, &duplicate); err != nil {
			return err
		}
		ts.record("enqueue", false, enqueueArgs(m), EventResult{Duplicate: duplicate})
		return nil
	})
	if err != nil {
		return false, err
	}
	return duplicate, nil
}

// checkNewMessage is Enqueue's check of m's fields, for op.
func (s *Store) checkNewMessage(op string, m NewMessage) error {
	switch {
	case m.Mailbox == "":
		return invalid(op, "mailbox is empty (message %q)", m.ID)
	case m.ID == "":
		return invalid(op, "id is empty (mailbox %q)", m.Mailbox)
	case m.MaxAttempts < 1:
		return invalid(op, "max_attempts %d of message %q is below 1", m.MaxAttempts, m.ID)
	}
	if err := checkDuration(op, "delay", m.Delay); err != nil {
		return fmt.Errorf("%w (message %q)", err, m.ID)
	}
	if err := checkNames(op, "mailbox", m.Mailbox, "id", m.ID, "key", m.Key); err != nil {
		return err
	}
	return s.checkPayload(op, "payload", m.Payload)
}

// enqueue is Enqueue's work in ts: it sets *duplicate, and schedules the mailbox's wake-up when
// the message was inserted.
func (s *Store) enqueue(ctx context.Context, ts *txState, now int64, m NewMessage, duplicate *bool) error {
	const op = "Enqueue"
	res, err := ts.tx.ExecContext(ctx, qEnqueue, enqueueParams(m, now)...)
	if err != nil {
		return s.dbErr(op+" "+m.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.dbErr(op+" "+m.ID, err)
	}
	*duplicate = n == 0
	if *duplicate {
		return nil
	}
	t := topic{mailbox: m.Mailbox}
	if s.d.backend != BackendPostgres {
		s.wakeLocal(ts, t, m.ID)
		return nil
	}
	// SQLite's writer lock makes the insert's dead-letter guard and the insert one step.
	// PostgreSQL's row locks do not: a concurrent DeadLetter of this id may have committed after
	// the guard's snapshot (the insert then waited for its delete). Checking again in a new
	// statement sees any such move, and the insert is undone. The check carries the transaction's
	// NOTIFY for the mailbox when it is the first wake of the mailbox and the insert stands: an
	// undone insert wakes nobody, here or in other processes.
	var dead bool
	var sent sql.NullString
	err = ts.tx.QueryRowContext(ctx, qDeadLetterRecheckNotify, named("id", m.ID), named("notify", !ts.woken[t]),
		named("channel", s.channel()), named("payload", s.notifyPayload(t, m.ID))).Scan(&dead, &sent)
	if err != nil {
		return s.dbErr(op+" "+m.ID, err)
	}
	if !dead {
		s.wakeLocal(ts, t, m.ID)
	}
	if dead {
		if _, err := ts.tx.ExecContext(ctx, qDeadLetterDelete, named("id", m.ID)); err != nil {
			return s.dbErr(op+" "+m.ID, err)
		}
		*duplicate = true
	}
	return nil
}

// enqueueParams are qEnqueue's arguments for m at now.
func enqueueParams(m NewMessage, now int64) []any {
	return []any{named("id", m.ID), named("mailbox", m.Mailbox), named("key", m.Key),
		named("priority", m.Priority), named("max_attempts", m.MaxAttempts),
		named("available_at", now+durMillis(m.Delay)), payloadArg(m.Payload), named("now", now)}
}

func enqueueArgs(m NewMessage) EventArgs {
	return EventArgs{Mailbox: m.Mailbox, ID: m.ID, Key: m.Key, Priority: m.Priority,
		MaxAttempts: m.MaxAttempts, Delay: m.Delay, Payload: string(m.Payload)}
}

// eventMessage is m as an event shows it; nil for none.
func eventMessage(m *Message) *EventMessage {
	if m == nil {
		return nil
	}
	return &EventMessage{ID: m.ID, Attempts: m.Attempts, Token: m.Token}
}

// Lease takes mailbox's next eligible message (see docs/semantics.md for eligibility and order):
// it gets a fresh token, lease_until = now + leaseFor, and attempts + 1. The returned message shows
// the row after the change. It returns nil, nil when no message is eligible.
//
// Errors: ErrInvalidArgument (empty mailbox, leaseFor outside [0, MaxDuration], read-only transaction), ErrBusy,
// ErrClosed.
func (s *Store) Lease(ctx context.Context, mailbox string, leaseFor time.Duration) (*Message, error) {
	const op = "Lease"
	if mailbox == "" {
		return nil, invalid(op, "mailbox is empty")
	}
	if err := checkName(op, "mailbox", mailbox); err != nil {
		return nil, err
	}
	if err := checkDuration(op, "lease_for", leaseFor); err != nil {
		return nil, err
	}
	var got *Message
	err := s.write(ctx, op, func(ts *txState, now int64) error {
		row := ts.tx.QueryRowContext(ctx, qLease, named("mailbox", mailbox), named("now", now),
			named("token", newToken()), named("until", now+durMillis(leaseFor)))
		m, err := scanMessage(row)
		if errors.Is(err, sql.ErrNoRows) {
			m, err = nil, nil
		}
		if err != nil {
			return s.dbErr(op+" "+mailbox, err)
		}
		got = m
		ts.record("lease", false, EventArgs{Mailbox: mailbox, LeaseFor: leaseFor}, EventResult{Message: eventMessage(m)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// Peek returns mailbox's next eligible message without changing anything, or nil, nil. Outside a
// transaction it reads through the reader pool and never takes SQLite's writer lock.
//
// Errors: ErrInvalidArgument (empty mailbox), ErrBusy, ErrClosed.
func (s *Store) Peek(ctx context.Context, mailbox string) (*Message, error) {
	return s.peek(ctx, mailbox, false)
}

// peek is Peek; with onWriter, outside a transaction it reads on the writer connection instead of
// the reader pool. That connection wrote the last commit of this store, so its page cache is
// still valid, whereas a reader connection discards its whole cache whenever the database
// changed since its last read and reads every page of the probe again (for a draining consumer,
// which acknowledges between two peeks, that is every peek). The read takes no SQLite lock beyond
// a reader's, but it holds the store's one writer connection while it runs, so only a consumer
// that is draining its mailbox asks for it (Consumer.Fetch), never an idle poll.
func (s *Store) peek(ctx context.Context, mailbox string, onWriter bool) (*Message, error) {
	const op = "Peek"
	if mailbox == "" {
		return nil, invalid(op, "mailbox is empty")
	}
	if err := checkName(op, "mailbox", mailbox); err != nil {
		return nil, err
	}
	if s.rec != nil && s.txFrom(ctx) == nil {
		// A recording store peeks under the commit lock, so the peek has an exact place in the
		// commit order (docs/observed.md).
		var got *Message
		err := s.execTx(ctx, op, false, false, func(ctx context.Context) error {
			var err error
			got, err = s.peek(ctx, mailbox, false)
			return err
		})
		if err != nil {
			return nil, err
		}
		return got, nil
	}
	pool := s.rdb
	if onWriter {
		pool = s.wdb
	}
	var got *Message
	err := s.readOn(ctx, op, pool, func(q querier, now int64) error {
		m, err := scanMessage(q.QueryRowContext(ctx, qPeek, named("mailbox", mailbox), named("now", now)))
		if errors.Is(err, sql.ErrNoRows) {
			m, err = nil, nil
		}
		if err != nil {
			return s.dbErr(op+" "+mailbox, err)
		}
		got = m
		s.txFrom(ctx).record("peek", true, EventArgs{Mailbox: mailbox}, EventResult{Message: peekedMessage(m)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// leasedWork reports whether a leased fetch of mailbox would change anything now: expired, some
// lease on a ready message has run out (ExpireLeases would clear it); candidate, mailbox has an
// eligible message (Lease would take it). It is a read: outside a transaction it takes no writer
// lock (SQLite) and no row lock (PostgreSQL).
//
// Errors: ErrBusy, ErrClosed.
func (s *Store) leasedWork(ctx context.Context, mailbox string) (expired, candidate bool, err error) {
	const op = "leasedWork"
	err = s.read(ctx, op, func(q querier, now int64) error {
		if err := q.QueryRowContext(ctx, qLeasedWork, named("mailbox", mailbox), named("now", now)).Scan(&expired, &candidate); err != nil {
			return s.dbErr(op+" "+mailbox, err)
		}
		return nil
	})
	return expired, candidate, err
}

// execOne runs a single-row update and reports whether it changed a row. ev, when the store
// records, is the operation's event; it reports errKind when no row changed. Outside a
// transaction, on a SQLite store that does not record, the update runs as a statement of its own
// (autocommitOne): it is the whole write, and SQLite commits it as one transaction. With group
// commit it runs as a transaction instead, so that it can share a COMMIT.
func (s *Store) execOne(ctx context.Context, op string, ev recordedOp, fn func(now int64) (string, []any)) (bool, error) {
	if s.rec == nil && s.d.backend == BackendSQLite && s.group == nil && s.txFrom(ctx) == nil {
		query, args := fn(s.nowMillis())
		return s.autocommitOne(ctx, op, query, args)
	}
	var changed bool
	err := s.write(ctx, op, func(ts *txState, now int64) error {
		query, args := fn(now)
		res, err := ts.tx.ExecContext(ctx, query, args...)
		if err != nil {
			return s.dbErr(op, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return s.dbErr(op, err)
		}
		changed = n > 0
		var r EventResult
		if !changed {
			r.Err = ev.errKind
		}
		ts.record(ev.op, false, ev.args, r)
		return nil
	})
	return changed, err
}

// recordedOp is how a single-row update shows as an event: the trace operation, its arguments,
// and the error kind it reports when no row matched.
type recordedOp struct {
	op      string
	args    EventArgs
	errKind string
}

// updateRow runs one single-row update (see execOne) on the row id and reports missing, wrapped
// with the operation and the id, when no row matched: a stale token or a row in the wrong state.
func (s *Store) updateRow(ctx context.Context, op, id string, missing error, ev recordedOp, fn func(now int64) (string, []any)) error {
	ok, err := s.execOne(ctx, op, ev, fn)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("actordelivery: %s %q: %w", op, id, missing)
	}
	return nil
}

func checkIDToken(op, id, token string) error {
	if id == "" {
		return invalid(op, "id is empty")
	}
	if token == "" {
		return invalid(op, "token of %q is empty", id)
	}
	return checkNames(op, "id", id, "token", token)
}

// Ack marks the message acked and clears its lease, if it is ready and carries token. The lease
// need not be live: a token expire has not cleared yet still matches.
//
// Errors: ErrLeaseLost (nothing changed), ErrInvalidArgument (empty id or token), ErrBusy, ErrClosed.
func (s *Store) Ack(ctx context.Context, id, token string) error {
	const op = "Ack"
	if err := checkIDToken(op, id, token); err != nil {
		return err
	}
	return s.updateRow(ctx, op, id, ErrLeaseLost, recordedOp{"ack", EventArgs{ID: id, Token: token}, "lease_lost"}, func(now int64) (string, []any) {
		return qAck, []any{named("id", id), named("token", token), named("now", now)}
	})
}

// Nack clears the lease of the message carrying token and makes it available at now + delay. The
// attempt count stays: the lease counted it.
//
// Errors: ErrLeaseLost (nothing changed), ErrInvalidArgument (empty id or token, delay outside [0, MaxDuration]),
// ErrBusy, ErrClosed.
func (s *Store) Nack(ctx context.Context, id, token string, delay time.Duration) error {
	const op = "Nack"
	if err := checkIDToken(op, id, token); err != nil {
		return err
	}
	if err := checkDuration(op, "delay", delay); err != nil {
		return err
	}
	return s.updateRow(ctx, op, id, ErrLeaseLost, recordedOp{"nack", EventArgs{ID: id, Token: token, Delay: delay}, "lease_lost"}, func(now int64) (string, []any) {
		return qNack, []any{named("id", id), named("token", token), named("available_at", now+durMillis(delay))}
	})
}

// AckByID marks a ready message acked and clears any lease, without a token (the leaseless path).
//
// Errors: ErrNotFound (no ready message with that id), ErrInvalidArgument, ErrBusy, ErrClosed.
func (s *Store) AckByID(ctx context.Context, id string) error {
	const op = "AckByID"
	if id == "" {
		return invalid(op, "id is empty")
	}
	if err := checkName(op, "id", id); err != nil {
		return err
	}
	return s.updateRow(ctx, op, id, ErrNotFound, recordedOp{"ack_by_id", EventArgs{ID: id}, "not_found"}, func(now int64) (string, []any) {
		return qAckByID, []any{named("id", id), named("now", now)}
	})
}

// NackByID counts a delivery of a ready message without a token: attempts + 1 (capped at
// max_attempts), any lease cleared, available at now + delay.
//
// Errors: ErrNotFound, ErrInvalidArgument (empty id, delay outside [0, MaxDuration]), ErrBusy, ErrClosed.
func (s *Store) NackByID(ctx context.Context, id string, delay time.Duration) error {
	const op = "NackByID"
	if id == "" {
		return invalid(op, "id is empty")
	}
	if err := checkName(op, "id", id); err != nil {
		return err
	}
	if err := checkDuration(op, "delay", delay); err != nil {
		return err
	}
	return s.updateRow(ctx, op, id, ErrNotFound, recordedOp{"nack_by_id", EventArgs{ID: id, Delay: delay}, "not_found"}, func(now int64) (string, []any) {
		return qNackByID, []any{named("id", id), named("available_at", now+durMillis(delay))}
	})
}

// ExtendLease sets lease_until = now + leaseFor on the message carrying token.
//
// Errors: ErrLeaseLost (nothing changed), ErrInvalidArgument (empty id or token,
// leaseFor outside [0, MaxDuration]), ErrBusy, ErrClosed.
func (s *Store) ExtendLease(ctx context.Context, id, token string, leaseFor time.Duration) error {
	const op = "ExtendLease"
	if err := checkIDToken(op, id, token); err != nil {
		return err
	}
	if err := checkDuration(op, "lease_for", leaseFor); err != nil {
		return err
	}
	return s.updateRow(ctx, op, id, ErrLeaseLost, recordedOp{"extend", EventArgs{ID: id, Token: token, LeaseFor: leaseFor}, "lease_lost"}, func(now int64) (string, []any) {
		return qExtend, []any{named("id", id), named("token", token), named("until", now+durMillis(leaseFor))}
	})
}

// holdsLease reports ErrLeaseLost unless the ready message id carries token. Inside a write
// transaction the answer stays true until the transaction ends.
func (s *Store) holdsLease(ctx context.Context, id, token string) error {
	const op = "holdsLease"
	var ok bool
	err := s.write(ctx, op, func(ts *txState, _ int64) error {
		if err := ts.tx.QueryRowContext(ctx, qHoldsLease, named("id", id), named("token", token)).Scan(&ok); err != nil {
			return s.dbErr(op, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("actordelivery: lease of %q: %w", id, ErrLeaseLost)
	}
	return nil
}

// readyAttempts returns the stored attempt count of the ready message id, read inside the
// caller's write transaction so that the decision taken from it commits against the same row: on
// PostgreSQL the read locks the row (FOR UPDATE), so a concurrent NackByID waits for the decision's
// transaction instead of slipping in between the read and the write; on SQLite the writer lock
// already excludes it.
//
// Errors: ErrNotFound (no ready message id), ErrInvalidArgument (read-only transaction), ErrBusy,
// ErrClosed.
func (s *Store) readyAttempts(ctx context.Context, id string) (int, error) {
	const op = "readyAttempts"
	var attempts int
	err := s.write(ctx, op, func(ts *txState, _ int64) error {
		err := ts.tx.QueryRowContext(ctx, qReadyAttempts, named("id", id)).Scan(&attempts)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("actordelivery: message %q is not ready: %w", id, ErrNotFound)
		}
		if err != nil {
			return s.dbErr(op+" "+id, err)
		}
		return nil
	})
	return attempts, err
}

// ExpireLeases clears every lease with lease_until <= now on a ready message; each message that
// then has attempts >= max_attempts is dead-lettered with ReasonLeaseExpired, in the same
// transaction. It returns the number of leases cleared (dead-lettered ones included).
//
// Errors: ErrInvalidArgument (read-only transaction), ErrBusy, ErrClosed.
func (s *Store) ExpireLeases(ctx context.Context) (cleared int, err error) {
	const op = "ExpireLeases"
	err = s.write(ctx, op, func(ts *txState, now int64) error {
		rows, err := ts.tx.QueryContext(ctx, qExpire, named("now", now))
		if err != nil {
			return s.dbErr(op, err)
		}
		var exhausted []string
		n := 0
		for rows.Next() {
			var id string
			var done bool
			if err := rows.Scan(&id, &done); err != nil {
				_ = rows.Close()
				return s.dbErr(op, err)
			}
			n++
			if done {
				exhausted = append(exhausted, id)
			}
		}
		if err := rows.Err(); err != nil {
			return s.dbErr(op, err)
		}
		if err := rows.Close(); err != nil {
			return s.dbErr(op, err)
		}
		for _, id := range exhausted {
			if err := s.moveToDeadLetters(ctx, ts, op, id, ReasonLeaseExpired, now); err != nil {
				return err
			}
		}
		cleared = n
		ts.record("expire", false, EventArgs{}, EventResult{Affected: n})
		return nil
	})
	if err != nil {
		return 0, err
	}
	return cleared, nil
}

func (s *Store) moveToDeadLetters(ctx context.Context, ts *txState, op, id, reason string, now int64) error {
	res, err := ts.tx.ExecContext(ctx, qDeadLetterInsert, named("id", id), named("reason", reason), named("now", now))
	if err != nil {
		return s.dbErr(op+" "+id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.dbErr(op+" "+id, err)
	}
	if n == 0 {
		return fmt.Errorf("actordelivery: %s %q: %w", op, id, ErrNotFound)
	}
	if _, err := ts.tx.ExecContext(ctx, qDeadLetterDelete, named("id", id)); err != nil {
		return s.dbErr(op+" "+id, err)
	}
	return nil
}

// DeadLetter moves a ready message, with its attempt count and reason, from its mailbox into the
// dead-letter table in one transaction. Its id stays taken: a later Enqueue of it is a duplicate.
//
// Errors: ErrNotFound (no ready message with that id), ErrInvalidArgument (empty id or reason),
// ErrBusy, ErrClosed.
func (s *Store) DeadLetter(ctx context.Context, id, reason string) error {
	const op = "DeadLetter"
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
		err := s.moveToDeadLetters(ctx, ts, op, id, reason, now)
		if errors.Is(err, ErrNotFound) {
			// Nothing moved: the transaction commits nothing of the call, and the event says so.
			ts.record("dead_letter", true, EventArgs{ID: id, Reason: reason}, EventResult{Err: "not_found"})
			return err
		}
		if err == nil {
			ts.record("dead_letter", false, EventArgs{ID: id, Reason: reason}, EventResult{})
		}
		return err
	})
}

// GetMessage returns the mailbox row with that id, ready or acked (dead letters are not mailbox
// rows).
//
// Errors: ErrNotFound, ErrInvalidArgument (empty id), ErrBusy, ErrClosed.
func (s *Store) GetMessage(ctx context.Context, id string) (*Message, error) {
	const op = "GetMessage"
	if id == "" {
		return nil, invalid(op, "id is empty")
	}
	if err := checkName(op, "id", id); err != nil {
		return nil, err
	}
	var got *Message
	err := s.read(ctx, op, func(q querier, _ int64) error {
		m, err := scanMessage(q.QueryRowContext(ctx, qGetMessage, named("id", id)))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("actordelivery: %s %q: %w", op, id, ErrNotFound)
		}
		if err != nil {
			return s.dbErr(op+" "+id, err)
		}
		got = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// MessageMailbox returns the mailbox of the message (ready or acked) or mailbox dead letter with
// this id. A publisher asks it when the enqueue of an outbox row's message found the id taken, to
// tell its own earlier delivery (the id is in the row's target) from an id collision (the id is a
// message of another mailbox; docs/semantics.md, "Id collisions"). It joins the transaction in
// ctx, so inside a delivery it reads what the delivery's own enqueue saw.
//
// Errors: ErrNotFound (no message and no dead letter has the id: unknown, or purged and retired),
// ErrInvalidArgument (empty id, an id beyond MaxNameBytes or not valid UTF-8 without NUL), ErrBusy,
// ErrClosed.
func (s *Store) MessageMailbox(ctx context.Context, id string) (string, error) {
	const op = "MessageMailbox"
	if id == "" {
		return "", invalid(op, "id is empty")
	}
	if err := checkName(op, "id", id); err != nil {
		return "", err
	}
	var mailbox string
	err := s.read(ctx, op, func(q querier, _ int64) error {
		err := q.QueryRowContext(ctx, qMessageMailbox, named("id", id)).Scan(&mailbox)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("actordelivery: %s %q: %w", op, id, ErrNotFound)
		}
		return s.dbErr(op+" "+id, err)
	})
	if err != nil {
		return "", err
	}
	return mailbox, nil
}

// QueueDepth returns how many messages of mailbox are ready (not acked: eligible now, later, or
// leased), read without the writer lock.
//
// Errors: ErrInvalidArgument (empty mailbox), ErrBusy, ErrClosed.
func (s *Store) QueueDepth(ctx context.Context, mailbox string) (int64, error) {
	const op = "QueueDepth"
	if mailbox == "" {
		return 0, invalid(op, "mailbox is empty")
	}
	if err := checkName(op, "mailbox", mailbox); err != nil {
		return 0, err
	}
	var n int64
	err := s.read(ctx, op, func(q querier, _ int64) error {
		return s.dbErr(op+" "+mailbox, q.QueryRowContext(ctx, qQueueDepth, named("mailbox", mailbox)).Scan(&n))
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ListMessages returns the rows of mailbox ("" for every mailbox), acked ones included, in seq
// order.
//
// Errors: ErrBusy, ErrClosed.
func (s *Store) ListMessages(ctx context.Context, mailbox string) ([]Message, error) {
	const op = "ListMessages"
	if err := checkName(op, "mailbox", mailbox); err != nil {
		return nil, err
	}
	var out []Message
	err := s.read(ctx, op, func(q querier, _ int64) error {
		rows, err := q.QueryContext(ctx, qListMessages, named("mailbox", mailbox))
		if err != nil {
			return s.dbErr(op, err)
		}
		defer rows.Close()
		for rows.Next() {
			m, err := scanMessage(rows)
			if err != nil {
				return s.dbErr(op, err)
			}
			out = append(out, *m)
		}
		return s.dbErr(op, rows.Err())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListDeadLetters returns every dead letter in the order they were moved.
//
// Errors: ErrBusy, ErrClosed.
func (s *Store) ListDeadLetters(ctx context.Context) ([]DeadLetter, error) {
	const op = "ListDeadLetters"
	var out []DeadLetter
	err := s.read(ctx, op, func(q querier, _ int64) error {
		rows, err := q.QueryContext(ctx, qListDeadLetters)
		if err != nil {
			return s.dbErr(op, err)
		}
		defer rows.Close()
		for rows.Next() {
			var d DeadLetter
			var dead int64
			if err := rows.Scan(&d.Mailbox, &d.ID, &d.Key, &d.Priority, &d.Attempts, &d.MaxAttempts,
				&d.Reason, &d.Payload, &dead); err != nil {
				return s.dbErr(op, err)
			}
			d.DeadAt = fromMillis(dead)
			if len(d.Payload) == 0 {
				d.Payload = nil
			}
			out = append(out, d)
		}
		return s.dbErr(op, rows.Err())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
