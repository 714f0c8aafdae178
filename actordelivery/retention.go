package actordelivery

import (
	"context"
	"time"
)

// PurgeResult counts the rows one Purge call removed, by kind.
type PurgeResult struct {
	// Acked counts acked messages, DeadLetters dead letters, Outbox final outbox rows (completed
	// or dead-lettered).
	Acked, DeadLetters, Outbox int
}

// Total is the number of rows removed.
func (r PurgeResult) Total() int { return r.Acked + r.DeadLetters + r.Outbox }

// Purge removes, in one short write transaction, up to batch rows of each kind that became final
// at least olderThan ago (at or before now - olderThan): acked messages (by the time of their
// acknowledgement), dead letters (by the time of the move) and final outbox rows, completed or
// dead-lettered (by the time of the completion or the dead-lettering), oldest first, then by id. Ready messages and pending outbox rows are never
// touched.
//
// Dedup horizon: a message id stays a duplicate until horizon after its message became final,
// whether its row is still there or not. So the id of each acked message or dead letter removed
// here is kept, without its row, until final time + horizon (not at all when that has passed),
// and an Enqueue of it until then reports duplicate; afterwards the id is free again. Each call
// also forgets up to batch kept ids whose horizon has passed. The ids of purged outbox rows are
// not kept: an outbox id is free once its final row is purged.
//
// A caller purges a backlog by calling Purge until Total() is 0; each call holds the writer lock
// (SQLite) or its rows' locks (PostgreSQL) only for its own batch, so consumers and enqueues go on
// between calls.
//
// Errors: ErrInvalidArgument (olderThan or horizon outside [0, MaxDuration], batch below 1, a
// read-only transaction), ErrBusy, ErrClosed.
func (s *Store) Purge(ctx context.Context, olderThan, horizon time.Duration, batch int) (PurgeResult, error) {
	const op = "Purge"
	if err := checkDuration(op, "older_than", olderThan); err != nil {
		return PurgeResult{}, err
	}
	if err := checkDuration(op, "horizon", horizon); err != nil {
		return PurgeResult{}, err
	}
	if batch < 1 {
		return PurgeResult{}, invalid(op, "batch %d is below 1", batch)
	}
	var res PurgeResult
	err := s.write(ctx, op, func(ts *txState, now int64) error {
		res = PurgeResult{}
		cutoff := now - durMillis(olderThan)
		for _, q := range []struct {
			query string
			n     *int
		}{{qPurgeAcked, &res.Acked}, {qPurgeDeadLetters, &res.DeadLetters}} {
			retired, err := s.purgeIDs(ctx, ts, q.query, cutoff, batch)
			if err != nil {
				return err
			}
			*q.n = len(retired)
			for _, r := range retired {
				expires := r.final + durMillis(horizon)
				if expires <= now {
					continue
				}
				if _, err := ts.tx.ExecContext(ctx, qPurgedIDInsert, named("id", r.id), named("expires_at", expires)); err != nil {
					return s.dbErr(op+" "+r.id, err)
				}
			}
		}
		out, err := ts.tx.ExecContext(ctx, qPurgeOutbox, named("cutoff", cutoff), named("limit", batch))
		if err != nil {
			return s.dbErr(op, err)
		}
		n, err := out.RowsAffected()
		if err != nil {
			return s.dbErr(op, err)
		}
		res.Outbox = int(n)
		if _, err := ts.tx.ExecContext(ctx, qPurgeExpiredIDs, named("now", now), named("limit", batch)); err != nil {
			return s.dbErr(op, err)
		}
		ts.record("purge", false, EventArgs{Limit: batch, OlderThan: olderThan, Horizon: horizon}, EventResult{Affected: res.Total()})
		return nil
	})
	if err != nil {
		return PurgeResult{}, err
	}
	return res, nil
}

type retiredID struct {
	id    string
	final int64
}

func (s *Store) purgeIDs(ctx context.Context, ts *txState, query string, cutoff int64, batch int) ([]retiredID, error) {
	rows, err := ts.tx.QueryContext(ctx, query, named("cutoff", cutoff), named("limit", batch))
	if err != nil {
		return nil, s.dbErr("Purge", err)
	}
	defer rows.Close()
	var out []retiredID
	for rows.Next() {
		var r retiredID
		if err := rows.Scan(&r.id, &r.final); err != nil {
			return nil, s.dbErr("Purge", err)
		}
		out = append(out, r)
	}
	return out, s.dbErr("Purge", rows.Err())
}

// PurgeAll calls Purge until a call removes nothing, and returns the sum. Between two calls it
// waits as long as the previous call took, so it holds the writer lock (SQLite) at most half of
// the time and consumers' and producers' transactions get their turn between batches: their
// latency grows by at most about one batch's duration. A small batch (a hundred rows) keeps that
// short. It stops early, with what it removed so far, when ctx ends (returning ctx's error).
//
// Errors: those of Purge, and ctx's error.
func (s *Store) PurgeAll(ctx context.Context, olderThan, horizon time.Duration, batch int) (PurgeResult, error) {
	var sum PurgeResult
	for {
		start := time.Now()
		r, err := s.Purge(ctx, olderThan, horizon, batch)
		if err != nil {
			return sum, err
		}
		sum.Acked += r.Acked
		sum.DeadLetters += r.DeadLetters
		sum.Outbox += r.Outbox
		if r.Total() == 0 {
			return sum, nil
		}
		t := time.NewTimer(time.Since(start))
		select {
		case <-ctx.Done():
			t.Stop()
			return sum, ctx.Err()
		case <-t.C:
		}
	}
}
