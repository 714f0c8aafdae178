package actordelivery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SaveCheckpoint stores actor's state blob optimistically. expectVersion is the version the caller
// last loaded, 0 for "no checkpoint yet"; the write succeeds only if the stored version still
// equals it, and returns the new version (expectVersion + 1). It joins the transaction in ctx, so a
// handler's state change commits or rolls back with the message's acknowledgement.
//
// Errors: ErrVersionConflict (nothing changed), ErrInvalidArgument (empty actor, negative
// expectVersion, read-only transaction), ErrBusy, ErrClosed.
func (s *Store) SaveCheckpoint(ctx context.Context, actor string, state []byte, expectVersion int64) (newVersion int64, err error) {
	const op = "SaveCheckpoint"
	if actor == "" {
		return 0, invalid(op, "actor is empty")
	}
	if expectVersion < 0 {
		return 0, invalid(op, "expected version %d of actor %q is negative", expectVersion, actor)
	}
	if err := checkName(op, "actor", actor); err != nil {
		return 0, err
	}
	if err := s.checkPayload(op, "state", state); err != nil {
		return 0, err
	}
	if state == nil {
		state = []byte{}
	}
	var ok bool
	err = s.write(ctx, op+" "+actor, func(ts *txState, now int64) error {
		q, args := qInsertCheckpoint, []any{named("actor", actor), named("state", state), named("now", now)}
		if expectVersion != 0 {
			q, args = qUpdateCheckpoint, append(args, named("version", expectVersion))
		}
		res, err := ts.tx.ExecContext(ctx, q, args...)
		if err != nil {
			return s.dbErr(op+" "+actor, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return s.dbErr(op+" "+actor, err)
		}
		ok = n > 0
		r := EventResult{Version: expectVersion + 1}
		if !ok {
			r = EventResult{Err: "version_conflict"}
		}
		ts.record("save_checkpoint", false, EventArgs{Actor: actor, ExpectVersion: expectVersion, Payload: string(state)}, r)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("actordelivery: %s %q: expected version %d: %w", op, actor, expectVersion, ErrVersionConflict)
	}
	return expectVersion + 1, nil
}

// LoadCheckpoint returns actor's state blob (nil when empty) and its version.
//
// Errors: ErrNotFound (no checkpoint), ErrInvalidArgument (empty actor), ErrBusy, ErrClosed.
func (s *Store) LoadCheckpoint(ctx context.Context, actor string) (state []byte, version int64, err error) {
	const op = "LoadCheckpoint"
	if actor == "" {
		return nil, 0, invalid(op, "actor is empty")
	}
	if err := checkName(op, "actor", actor); err != nil {
		return nil, 0, err
	}
	if s.rec != nil && s.txFrom(ctx) == nil {
		// A recording store loads under the commit lock, as it peeks, so the load has an exact
		// place in the commit order (docs/observed.md).
		err = s.execTx(ctx, op, false, false, func(ctx context.Context) error {
			var err error
			state, version, err = s.LoadCheckpoint(ctx, actor)
			return err
		})
		return state, version, err
	}
	err = s.read(ctx, op, func(q querier, _ int64) error {
		err := q.QueryRowContext(ctx, qLoadCheckpoint, named("actor", actor)).Scan(&state, &version)
		if errors.Is(err, sql.ErrNoRows) {
			s.txFrom(ctx).record("load_checkpoint", true, EventArgs{Actor: actor}, EventResult{Err: "not_found"})
			return fmt.Errorf("actordelivery: %s %q: %w", op, actor, ErrNotFound)
		}
		if err == nil {
			s.txFrom(ctx).record("load_checkpoint", true, EventArgs{Actor: actor}, EventResult{Version: version})
		}
		return s.dbErr(op+" "+actor, err)
	})
	if err != nil {
		return nil, 0, err
	}
	if len(state) == 0 {
		state = nil
	}
	return state, version, nil
}

// MarkProcessed records that consumer processed messageID, for ttl. already is true when a live
// record exists (then nothing changes); a record whose ttl ran out counts as absent and is renewed.
// Called from a handler's Effects (inside the acknowledgement's transaction), it makes the
// handler's effect idempotent across redeliveries, and rolls back with it.
//
// Errors: ErrInvalidArgument (empty consumer or messageID, ttl <= 0, read-only transaction),
// ErrBusy, ErrClosed.
func (s *Store) MarkProcessed(ctx context.Context, consumer, messageID string, ttl time.Duration) (already bool, err error) {
	const op = "MarkProcessed"
	switch {
	case consumer == "":
		return false, invalid(op, "consumer is empty")
	case messageID == "":
		return false, invalid(op, "message id is empty (consumer %q)", consumer)
	case ttl <= 0 || ttl > MaxDuration:
		return false, invalid(op, "ttl %v for %q is not in (0, %v]", ttl, messageID, MaxDuration)
	}
	if err := checkNames(op, "consumer", consumer, "message id", messageID); err != nil {
		return false, err
	}
	var changed bool
	err = s.write(ctx, op+" "+messageID, func(ts *txState, now int64) error {
		res, err := ts.tx.ExecContext(ctx, qMarkProcessed, named("consumer", consumer), named("message_id", messageID),
			named("expires_at", now+durMillis(ttl)), named("now", now))
		if err != nil {
			return s.dbErr(op+" "+messageID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return s.dbErr(op+" "+messageID, err)
		}
		changed = n > 0
		ts.record("mark_processed", false, EventArgs{Consumer: consumer, ID: messageID, TTL: ttl}, EventResult{Duplicate: !changed})
		return nil
	})
	if err != nil {
		return false, err
	}
	return !changed, nil
}

// PurgeProcessed deletes the processed-message records whose ttl ran out and returns how many.
//
// Errors: ErrInvalidArgument (read-only transaction), ErrBusy, ErrClosed.
func (s *Store) PurgeProcessed(ctx context.Context) (int, error) {
	const op = "PurgeProcessed"
	var n int64
	err := s.write(ctx, op, func(ts *txState, now int64) error {
		res, err := ts.tx.ExecContext(ctx, qPurgeProcessed, named("now", now))
		if err != nil {
			return s.dbErr(op, err)
		}
		n, err = res.RowsAffected()
		return s.dbErr(op, err)
	})
	if err != nil {
		return 0, err
	}
	return int(n), nil
}
