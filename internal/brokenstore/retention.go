package brokenstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// buildRetention makes the copies of the store's purge and redrive statements with e.rules
// applied. PurgeForgetsIDs changes no statement: purge skips the retiring one.
func (e *Eligibility) buildRetention(b *builder) {
	e.qPurgeAcked = b.from("qPurgeAcked")
	e.qPurgeDead = b.from("qPurgeDeadLetters")
	e.qPurgeOutbox = b.from("qPurgeOutbox")
	e.qRetire = b.from("qPurgedIDInsert")
	e.qForgetExpired = b.from("qPurgeExpiredIDs")

	// The store's redrive: each record statement writes the history row and returns the mailbox,
	// then the move. RedriveRecordsReset records the attempt count the move leaves (0) instead
	// of the dead letter's.
	const storeRecorded, storeRecordedDelivery = `'message', mailbox, attempts, reason,`, `'outbox', target, delivery_attempts, dead_reason,`
	recorded, recordedDelivery := storeRecorded, storeRecordedDelivery
	if e.rules.RedriveRecordsReset {
		recorded, recordedDelivery = `'message', mailbox, 0, reason,`, `'outbox', target, 0, dead_reason,`
	}
	e.qRedriveRecordMessage = b.from("qRedriveRecordMessage", edit{storeRecorded, recorded})
	// The store puts the dead letter back with attempts 0; RedriveKeepsAttempts keeps the count
	// it died with.
	const storeAttempts = `max_attempts, 0, CAST(:now AS BIGINT)`
	attempts := storeAttempts
	if e.rules.RedriveKeepsAttempts {
		attempts = `max_attempts, attempts, CAST(:now AS BIGINT)`
	}
	e.qRedriveMessage = b.from("qRedriveMessage", edit{storeAttempts, attempts})
	e.qRedriveDeleteDead = b.from("qRedriveDeleteDead")
	e.qRedriveRecordOutbox = b.from("qRedriveRecordOutbox", edit{storeRecordedDelivery, recordedDelivery})
	e.qRedriveOutbox = b.from("qRedriveOutbox")
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
		out, err := e.purgeIDs(ctx, tx, e.qPurgeOutbox, cutoff, batch)
		if err != nil {
			return err
		}
		res.Outbox = len(out)
		if _, err := e.exec(ctx, tx, e.qForgetExpired, sql.Named("now", ms), sql.Named("limit", batch)); err != nil {
			return fmt.Errorf("brokenstore: purge: forget expired ids: %w", err)
		}
		return nil
	}()
	return res, err
}

// purgeIDs runs one of the purge statements and returns the removed ids with the time
// each became final.
func (e *Eligibility) purgeIDs(ctx context.Context, tx *sql.Tx, query string, cutoff int64, batch int) (map[string]int64, error) {
	// Every purge starts before every row, as the store's Purge does: its statements take the
	// bound PurgeAll resumes from, and the store's bound before every row is (MinInt64, "").
	rows, err := e.query(ctx, tx, query, sql.Named("cutoff", cutoff), sql.Named("limit", batch),
		sql.Named("after_at", int64(math.MinInt64)), sql.Named("after_id", ""))
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
