package brokenstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// buildDedup writes the copies of the store's processed-message and checkpoint statements
// (actordelivery's sqlite_queries.go; PostgreSQL runs the same text) with e.rules applied. The
// prefix is substituted by build.
func (e *Eligibility) buildDedup() {
	// The store: a record whose ttl ran out counts as absent, so the upsert renews only an
	// expired record and a live one is a duplicate.
	renew := `{p}processed.expires_at <= :now`
	if e.rules.ProcessedTTLInverted {
		renew = `{p}processed.expires_at > :now`
	}
	e.qMarkProcessed = `INSERT INTO {p}processed (consumer, message_id, expires_at)
VALUES (:consumer, :message_id, :expires_at)
ON CONFLICT (consumer, message_id) DO UPDATE SET expires_at = excluded.expires_at
WHERE ` + renew
	// The store: a first save (expected version 0) inserts version 1 and changes nothing when the
	// actor already has a checkpoint.
	onConflict := `ON CONFLICT (actor) DO NOTHING`
	if e.rules.CheckpointFirstSaveResets {
		onConflict = `ON CONFLICT (actor) DO UPDATE SET state = excluded.state, version = 1, updated_at = excluded.updated_at`
	}
	e.qInsertCheckpoint = `INSERT INTO {p}checkpoints (actor, state, version, updated_at)
VALUES (:actor, :state, 1, :now)
` + onConflict
	e.qUpdateCheckpoint = `UPDATE {p}checkpoints SET state = :state, version = version + 1, updated_at = :now
WHERE actor = :actor AND version = :version`
}

// MarkProcessed is the store's MarkProcessed at now, run from the copied statement: already is
// true when the statement changed no row.
func (e *Eligibility) MarkProcessed(ctx context.Context, now time.Time, consumer, messageID string, ttl time.Duration) (already bool, err error) {
	ms := now.UnixMilli()
	var n int64
	err = e.tx(ctx, func(tx *sql.Tx) error {
		res, err := e.exec(ctx, tx, e.qMarkProcessed, sql.Named("consumer", consumer), sql.Named("message_id", messageID),
			sql.Named("expires_at", ms+ttl.Milliseconds()), sql.Named("now", ms))
		if err != nil {
			return fmt.Errorf("brokenstore: mark processed %q: %w", messageID, err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 0, err
}

// SaveCheckpoint is the store's SaveCheckpoint at now, run from the copied statements: the new
// version, or an error wrapping actordelivery.ErrVersionConflict when no row changed.
func (e *Eligibility) SaveCheckpoint(ctx context.Context, now time.Time, actor string, state []byte, expectVersion int64) (int64, error) {
	if state == nil {
		state = []byte{}
	}
	args := []any{sql.Named("actor", actor), sql.Named("state", state), sql.Named("now", now.UnixMilli())}
	q := e.qInsertCheckpoint
	if expectVersion != 0 {
		q = e.qUpdateCheckpoint
		args = append(args, sql.Named("version", expectVersion))
	}
	var n int64
	err := e.tx(ctx, func(tx *sql.Tx) error {
		res, err := e.exec(ctx, tx, q, args...)
		if err != nil {
			return fmt.Errorf("brokenstore: save checkpoint %q: %w", actor, err)
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("brokenstore: save checkpoint %q: expected version %d: %w", actor, expectVersion, actordelivery.ErrVersionConflict)
	}
	return expectVersion + 1, nil
}
