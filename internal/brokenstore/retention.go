package brokenstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// buildRetention writes the copies of the store's purge and redrive statements (actordelivery's
// sqlite_queries.go and, for the redrive records, postgres_queries.go) with e.rules applied. The
// prefix is substituted by build.
func (e *Eligibility) buildRetention(pg bool) {
	e.qPurgeAcked = `DELETE FROM {p}messages WHERE id IN (
    SELECT id FROM {p}messages WHERE state = 'acked' AND lease_until IS NULL AND acked_at <= :cutoff
    ORDER BY lease_until, acked_at, id LIMIT :limit)
RETURNING id, acked_at`
	e.qPurgeDead = `DELETE FROM {p}dead_letters WHERE id IN (
    SELECT id FROM {p}dead_letters WHERE dead_at <= :cutoff
    ORDER BY dead_at, id LIMIT :limit)
RETURNING id, dead_at`
	e.qPurgeOutbox = `DELETE FROM {p}outbox WHERE id IN (
    SELECT id FROM {p}outbox WHERE state <> 'pending' AND final_at <= :cutoff
    ORDER BY final_at, id LIMIT :limit)`
	e.qRetire = `INSERT INTO {p}purged_ids (id, expires_at) VALUES (:id, :expires_at)
ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at`
	e.qForgetExpired = `DELETE FROM {p}purged_ids WHERE id IN (
    SELECT id FROM {p}purged_ids WHERE expires_at <= :now ORDER BY expires_at, id LIMIT :limit)`

	// The store's redrive: each record statement writes the history row and returns the mailbox
	// (PostgreSQL locks the dead letter it records), then the move.
	lock := ""
	if pg {
		lock = "\nFOR UPDATE"
	}
	// RedriveRecordsReset records the attempt count the move leaves (0) instead of the dead
	// letter's.
	recorded, recordedDelivery := `attempts`, `delivery_attempts`
	if e.rules.RedriveRecordsReset {
		recorded, recordedDelivery = `0`, `0`
	}
	e.qRedriveRecordMessage = `INSERT INTO {p}redrives (id, kind, mailbox, attempts, dead_reason, reason, redriven_at)
SELECT id, 'message', mailbox, ` + recorded + `, reason, CAST(:reason AS TEXT), CAST(:now AS BIGINT)
FROM {p}dead_letters WHERE id = :id` + lock + `
RETURNING mailbox`
	// The store puts the dead letter back with attempts 0; RedriveKeepsAttempts keeps the count
	// it died with.
	attempts := `0`
	if e.rules.RedriveKeepsAttempts {
		attempts = `attempts`
	}
	e.qRedriveMessage = `INSERT INTO {p}messages
    (id, mailbox, key, priority, max_attempts, attempts, available_at, state, payload, created_at)
SELECT id, mailbox, key, priority, max_attempts, ` + attempts + `, CAST(:now AS BIGINT), 'ready', payload, CAST(:now AS BIGINT)
FROM {p}dead_letters WHERE id = :id`
	e.qRedriveDeleteDead = `DELETE FROM {p}dead_letters WHERE id = :id`
	e.qRedriveRecordOutbox = `INSERT INTO {p}redrives (id, kind, mailbox, attempts, dead_reason, reason, redriven_at)
SELECT id, 'outbox', target, ` + recordedDelivery + `, dead_reason, CAST(:reason AS TEXT), CAST(:now AS BIGINT)
FROM {p}outbox WHERE id = :id AND state = 'dead_letter'` + lock + `
RETURNING mailbox`
	e.qRedriveOutbox = `UPDATE {p}outbox
SET state = 'pending', dead_reason = NULL, delivery_attempts = 0, available_at = :now, final_at = NULL
WHERE id = :id AND state = 'dead_letter'`
}

// Purge is the store's Purge at now, run from the copied statements in one transaction: it
// returns the rows removed. With PurgeForgetsIDs it retires no id.
func (e *Eligibility) Purge(ctx context.Context, now time.Time, olderThan, horizon time.Duration, batch int) (actordelivery.PurgeResult, error) {
	if olderThan < 0 || horizon < 0 || batch < 1 {
		return actordelivery.PurgeResult{}, fmt.Errorf("brokenstore: purge (older than %v, horizon %v, batch %d): %w",
			olderThan, horizon, batch, actordelivery.ErrInvalidArgument)
	}
	var res actordelivery.PurgeResult
	err := e.tx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = e.purge(ctx, tx, now, olderThan, horizon, batch)
		return err
	})
	if err != nil {
		return actordelivery.PurgeResult{}, err
	}
	return res, nil
}

// PurgeRecorded is Purge in a recorded transaction (see Recording), recorded as a purge with the
// number of rows it removed, as the store records it.
func (e *Eligibility) PurgeRecorded(ctx context.Context, r Recording, olderThan, horizon time.Duration, batch int) (actordelivery.PurgeResult, error) {
	if olderThan < 0 || horizon < 0 || batch < 1 {
		return actordelivery.PurgeResult{}, fmt.Errorf("brokenstore: purge (older than %v, horizon %v, batch %d): %w",
			olderThan, horizon, batch, actordelivery.ErrInvalidArgument)
	}
	var res actordelivery.PurgeResult
	err := e.recorded(ctx, r, func(tx *sql.Tx, now time.Time) ([]actordelivery.Event, error) {
		var err error
		if res, err = e.purge(ctx, tx, now, olderThan, horizon, batch); err != nil {
			return nil, err
		}
		return []actordelivery.Event{{Op: "purge", Args: actordelivery.EventArgs{Limit: batch, OlderThan: olderThan, Horizon: horizon},
			Result: actordelivery.EventResult{Affected: res.Total()}}}, nil
	})
	if err != nil {
		return actordelivery.PurgeResult{}, err
	}
	return res, nil
}

// purge is Purge in the transaction tx.
func (e *Eligibility) purge(ctx context.Context, tx *sql.Tx, now time.Time, olderThan, horizon time.Duration, batch int) (actordelivery.PurgeResult, error) {
	ms := now.UnixMilli()
	cutoff := ms - olderThan.Milliseconds()
	var res actordelivery.PurgeResult
	err := func() error {
		for _, q := range []struct {
			query string
			n     *int
		}{{e.qPurgeAcked, &res.Acked}, {e.qPurgeDead, &res.DeadLetters}} {
			removed, err := e.purgeIDs(ctx, tx, q.query, cutoff, batch)
			if err != nil {
				return err
			}
			*q.n = len(removed)
			for id, final := range removed {
				expires := final + horizon.Milliseconds()
				if expires <= ms || e.rules.PurgeForgetsIDs {
					continue
				}
				if _, err := e.exec(ctx, tx, e.qRetire, sql.Named("id", id), sql.Named("expires_at", expires)); err != nil {
					return fmt.Errorf("brokenstore: purge: retire %q: %w", id, err)
				}
			}
		}
		out, err := e.exec(ctx, tx, e.qPurgeOutbox, sql.Named("cutoff", cutoff), sql.Named("limit", batch))
		if err != nil {
			return fmt.Errorf("brokenstore: purge outbox: %w", err)
		}
		n, err := out.RowsAffected()
		if err != nil {
			return fmt.Errorf("brokenstore: purge outbox: %w", err)
		}
		res.Outbox = int(n)
		if _, err := e.exec(ctx, tx, e.qForgetExpired, sql.Named("now", ms), sql.Named("limit", batch)); err != nil {
			return fmt.Errorf("brokenstore: purge: forget expired ids: %w", err)
		}
		return nil
	}()
	return res, err
}

// purgeIDs runs one of the deleting purge statements and returns the removed ids with the time
// each became final.
func (e *Eligibility) purgeIDs(ctx context.Context, tx *sql.Tx, query string, cutoff int64, batch int) (map[string]int64, error) {
	rows, err := e.query(ctx, tx, query, sql.Named("cutoff", cutoff), sql.Named("limit", batch))
	if err != nil {
		return nil, fmt.Errorf("brokenstore: purge: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var final int64
		if err := rows.Scan(&id, &final); err != nil {
			return nil, fmt.Errorf("brokenstore: purge: %w", err)
		}
		out[id] = final
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("brokenstore: purge: %w", err)
	}
	return out, nil
}

// Redrive is the store's Redrive at now, run from the copied statements in one transaction: a
// mailbox dead letter id goes back into its mailbox (with RedriveKeepsAttempts, with the attempts
// it died with), a dead-lettered outbox row id back to pending, each with its history record. It
// returns an error wrapping actordelivery.ErrNotFound when id names neither.
func (e *Eligibility) Redrive(ctx context.Context, now time.Time, id, reason string) error {
	if id == "" || reason == "" {
		return fmt.Errorf("brokenstore: redrive %q (reason %q): id and reason must not be empty: %w", id, reason, actordelivery.ErrInvalidArgument)
	}
	return e.tx(ctx, func(tx *sql.Tx) error {
		found, err := e.redrive(ctx, tx, now, id, reason)
		if err == nil && !found {
			err = fmt.Errorf("brokenstore: redrive %q: %w", id, actordelivery.ErrNotFound)
		}
		return err
	})
}

// RedriveRecorded is Redrive in a recorded transaction (see Recording), recorded as a redrive
// (a read with not_found when id names no dead letter, as the store records it).
func (e *Eligibility) RedriveRecorded(ctx context.Context, r Recording, id, reason string) error {
	if id == "" || reason == "" {
		return fmt.Errorf("brokenstore: redrive %q (reason %q): id and reason must not be empty: %w", id, reason, actordelivery.ErrInvalidArgument)
	}
	var found bool
	err := e.recorded(ctx, r, func(tx *sql.Tx, now time.Time) ([]actordelivery.Event, error) {
		var err error
		if found, err = e.redrive(ctx, tx, now, id, reason); err != nil {
			return nil, err
		}
		ev := actordelivery.Event{Op: "redrive", Args: actordelivery.EventArgs{ID: id, Reason: reason}}
		if !found {
			ev.Read, ev.Result.Err = true, "not_found"
		}
		return []actordelivery.Event{ev}, nil
	})
	if err == nil && !found {
		err = fmt.Errorf("brokenstore: redrive %q: %w", id, actordelivery.ErrNotFound)
	}
	return err
}

// redrive is Redrive in the transaction tx; found is false when id names no dead letter.
func (e *Eligibility) redrive(ctx context.Context, tx *sql.Tx, now time.Time, id, reason string) (bool, error) {
	ms := now.UnixMilli()
	found := false
	err := func() error {
		for _, k := range []struct {
			record string
			moves  []string
		}{
			{e.qRedriveRecordMessage, []string{e.qRedriveMessage, e.qRedriveDeleteDead}},
			{e.qRedriveRecordOutbox, []string{e.qRedriveOutbox}},
		} {
			var mailbox string
			err := e.queryRow(ctx, tx, k.record, sql.Named("id", id), sql.Named("reason", reason), sql.Named("now", ms)).Scan(&mailbox)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("brokenstore: redrive %q: %w", id, err)
			}
			found = true
			for _, q := range k.moves {
				if _, err := e.exec(ctx, tx, q, sql.Named("id", id), sql.Named("now", ms)); err != nil {
					return fmt.Errorf("brokenstore: redrive %q: %w", id, err)
				}
			}
		}
		return nil
	}()
	return found, err
}
