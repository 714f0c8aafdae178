package brokenstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// buildDedup makes the copies of the store's processed-message and checkpoint statements with
// e.rules applied.
func (e *Eligibility) buildDedup(b *builder) {
	// The store: a record whose ttl ran out counts as absent, so the upsert renews only an
	// expired record and a live one is a duplicate.
	const storeRenew = `WHERE {p}processed.expires_at <= :now`
	renew := storeRenew
	if e.rules.ProcessedTTLInverted {
		renew = `WHERE {p}processed.expires_at > :now`
	}
	e.qMarkProcessed = b.from("qMarkProcessed", edit{storeRenew, renew})
	// The store: a first save (expected version 0) inserts version 1 and changes nothing when the
	// actor already has a checkpoint.
	const storeOnConflict = `ON CONFLICT (actor) DO NOTHING`
	onConflict := storeOnConflict
	if e.rules.CheckpointFirstSaveResets {
		onConflict = `ON CONFLICT (actor) DO UPDATE SET state = excluded.state, version = 1, updated_at = excluded.updated_at`
	}
	e.qInsertCheckpoint = b.from("qInsertCheckpoint", edit{storeOnConflict, onConflict})
	e.qUpdateCheckpoint = b.from("qUpdateCheckpoint")
}

// MarkProcessed is the store's MarkProcessed at now, run from the copied statement: already is
// true when the statement changed no row.
func (e *Eligibility) MarkProcessed(ctx context.Context, now time.Time, consumer, messageID string, ttl time.Duration) (already bool, err error) {
	err = e.tx(ctx, func(tx *sql.Tx) error {
		already, err = e.markProcessed(ctx, tx, now, consumer, messageID, ttl)
		return err
	})
	return already, err
}

func (e *Eligibility) markProcessed(ctx context.Context, tx *sql.Tx, now time.Time, consumer, messageID string, ttl time.Duration) (already bool, err error) {
	ms := now.UnixMilli()
	res, err := e.exec(ctx, tx, e.qMarkProcessed, sql.Named("consumer", consumer), sql.Named("message_id", messageID),
		sql.Named("expires_at", ms+ttl.Milliseconds()), sql.Named("now", ms))
	if err != nil {
		return false, fmt.Errorf("brokenstore: mark processed %q: %w", messageID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("brokenstore: mark processed %q: %w", messageID, err)
	}
	return n == 0, nil
}

// MarkProcessedRecorded is MarkProcessed in a recorded transaction (see Recording), recorded as
// a mark_processed.
func (e *Eligibility) MarkProcessedRecorded(ctx context.Context, r Recording, consumer, messageID string, ttl time.Duration) (already bool, err error) {
	err = e.recorded(ctx, r, func(tx *sql.Tx, now time.Time) ([]actordelivery.Event, error) {
		var err error
		if already, err = e.markProcessed(ctx, tx, now, consumer, messageID, ttl); err != nil {
			return nil, err
		}
		return []actordelivery.Event{{Op: "mark_processed", Args: actordelivery.EventArgs{Consumer: consumer, ID: messageID, TTL: ttl},
			Result: actordelivery.EventResult{Duplicate: already}}}, nil
	})
	return already, err
}

// SaveCheckpoint is the store's SaveCheckpoint at now, run from the copied statements: the new
// version, or an error wrapping actordelivery.ErrVersionConflict when no row changed.
func (e *Eligibility) SaveCheckpoint(ctx context.Context, now time.Time, actor string, state []byte, expectVersion int64) (int64, error) {
	var saved bool
	err := e.tx(ctx, func(tx *sql.Tx) error {
		var err error
		saved, err = e.saveCheckpoint(ctx, tx, now, actor, state, expectVersion)
		return err
	})
	return savedVersion(actor, expectVersion, saved, err)
}

// SaveCheckpointRecorded is SaveCheckpoint in a recorded transaction (see Recording), recorded as
// a save_checkpoint (version_conflict when it changed nothing, as the store records it).
func (e *Eligibility) SaveCheckpointRecorded(ctx context.Context, r Recording, actor string, state []byte, expectVersion int64) (int64, error) {
	var saved bool
	err := e.recorded(ctx, r, func(tx *sql.Tx, now time.Time) ([]actordelivery.Event, error) {
		var err error
		if saved, err = e.saveCheckpoint(ctx, tx, now, actor, state, expectVersion); err != nil {
			return nil, err
		}
		ev := actordelivery.Event{Op: "save_checkpoint", Args: actordelivery.EventArgs{Actor: actor, ExpectVersion: expectVersion, Payload: string(state)},
			Result: actordelivery.EventResult{Version: expectVersion + 1}}
		if !saved {
			ev.Result = actordelivery.EventResult{Err: "version_conflict"}
		}
		return []actordelivery.Event{ev}, nil
	})
	return savedVersion(actor, expectVersion, saved, err)
}

func savedVersion(actor string, expectVersion int64, saved bool, err error) (int64, error) {
	switch {
	case err != nil:
		return 0, err
	case !saved:
		return 0, fmt.Errorf("brokenstore: save checkpoint %q: expected version %d: %w", actor, expectVersion, actordelivery.ErrVersionConflict)
	}
	return expectVersion + 1, nil
}

func (e *Eligibility) saveCheckpoint(ctx context.Context, tx *sql.Tx, now time.Time, actor string, state []byte, expectVersion int64) (bool, error) {
	if state == nil {
		state = []byte{}
	}
	args := []any{sql.Named("actor", actor), sql.Named("state", state), sql.Named("now", now.UnixMilli())}
	q := e.qInsertCheckpoint
	if expectVersion != 0 {
		q = e.qUpdateCheckpoint
		args = append(args, sql.Named("version", expectVersion))
	}
	res, err := e.exec(ctx, tx, q, args...)
	if err != nil {
		return false, fmt.Errorf("brokenstore: save checkpoint %q: %w", actor, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("brokenstore: save checkpoint %q: %w", actor, err)
	}
	return n > 0, nil
}
