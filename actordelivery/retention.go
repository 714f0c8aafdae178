package actordelivery

import (
	"context"
	"math"
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
	res, _, err := s.purge(ctx, olderThan, horizon, batch, purgeCursor{})
	return res, err
}

// purgeKey is where a kind's oldest-first walk stands: the (final time, id) of the last row
// removed. The zero value stands for noBound (orStart), before every row.
type purgeKey struct {
	final int64
	id    string
}

// noBound is before every row: final times are milliseconds of the store's clock, far above the
// smallest int64, and ids are never empty.
var noBound = purgeKey{final: math.MinInt64}

// after reports whether k comes after o in the purge order (final time, then id, compared as
// bytes: SQLite's order; on PostgreSQL a collation other than "C" may order ids differently, which
// only moves where the next batch starts, see PurgeAll).
func (k purgeKey) after(o purgeKey) bool {
	return k.final > o.final || (k.final == o.final && k.id > o.id)
}

// purgeCursor holds, per kind, where PurgeAll's next batch starts. The zero value starts every
// kind at the beginning, which makes a batch the purge operation of docs/semantics.md.
type purgeCursor struct {
	acked, dead, outbox purgeKey
}

// orStart is k, or noBound for the zero key.
func (k purgeKey) orStart() purgeKey {
	if k == (purgeKey{}) {
		return noBound
	}
	return k
}

// purge is Purge's transaction, each kind starting after from's key for it; it returns where each
// kind stopped (from's key for a kind that removed nothing).
func (s *Store) purge(ctx context.Context, olderThan, horizon time.Duration, batch int, from purgeCursor) (PurgeResult, purgeCursor, error) {
	const op = "Purge"
	var res PurgeResult
	var next purgeCursor
	err := s.write(ctx, op, func(ts *txState, now int64) error {
		res, next = PurgeResult{}, from
		cutoff := now - durMillis(olderThan)
		for _, q := range []struct {
			query  string
			n      *int
			at     *purgeKey
			retire bool
		}{
			{qPurgeAcked, &res.Acked, &next.acked, true},
			{qPurgeDeadLetters, &res.DeadLetters, &next.dead, true},
			{qPurgeOutbox, &res.Outbox, &next.outbox, false},
		} {
			removed, err := s.purgeRows(ctx, ts, q.query, cutoff, batch, q.at.orStart())
			if err != nil {
				return err
			}
			*q.n = len(removed)
			for _, r := range removed {
				if r.after(q.at.orStart()) {
					*q.at = r
				}
				if !q.retire {
					continue
				}
				expires := r.final + durMillis(horizon)
				if expires <= now {
					continue
				}
				if _, err := ts.tx.ExecContext(ctx, qPurgedIDInsert, named("id", r.id), named("expires_at", expires)); err != nil {
					return s.dbErr(op+" "+r.id, err)
				}
			}
		}
		if _, err := ts.tx.ExecContext(ctx, qPurgeExpiredIDs, named("now", now), named("limit", batch)); err != nil {
			return s.dbErr(op, err)
		}
		ts.record("purge", false, EventArgs{Limit: batch, OlderThan: olderThan, Horizon: horizon}, EventResult{Affected: res.Total()})
		return nil
	})
	if err != nil {
		return PurgeResult{}, from, err
	}
	return res, next, nil
}

// purgeRows runs one kind's purge statement, starting after after, and returns the rows removed.
func (s *Store) purgeRows(ctx context.Context, ts *txState, query string, cutoff int64, batch int, after purgeKey) ([]purgeKey, error) {
	rows, err := ts.tx.QueryContext(ctx, query, named("cutoff", cutoff), named("limit", batch),
		named("after_at", after.final), named("after_id", after.id))
	if err != nil {
		return nil, s.dbErr("Purge", err)
	}
	defer rows.Close()
	var out []purgeKey
	for rows.Next() {
		var r purgeKey
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
// Each call after the first starts every kind where the previous call's batch of that kind
// ended, instead of at the oldest row: on PostgreSQL the rows removed earlier leave index entries
// behind until VACUUM, and a batch starting at the oldest row would read all of them again (see
// sqlite_queries.go, "Why the bound"). A row that became final behind that point meanwhile (an
// acknowledgement that took its time before the purge did but committed after it) is not lost:
// when a resumed call removes nothing, PurgeAll makes one call from the oldest row, and stops only
// when such a call removes nothing, as it did before. So it removes exactly what repeated Purge
// calls remove. A recording store (Options.Recorder, CommitLog) always calls Purge itself, since
// every call it records must be the purge operation of docs/semantics.md.
//
// Errors: those of Purge, and ctx's error.
func (s *Store) PurgeAll(ctx context.Context, olderThan, horizon time.Duration, batch int) (PurgeResult, error) {
	return s.purgeAllFrom(ctx, olderThan, horizon, batch, purgeCursor{})
}

// purgeAllFrom is PurgeAll with its first call starting at from.
func (s *Store) purgeAllFrom(ctx context.Context, olderThan, horizon time.Duration, batch int, from purgeCursor) (PurgeResult, error) {
	var sum PurgeResult
	for {
		if s.rec != nil {
			from = purgeCursor{}
		}
		start := time.Now()
		r, next, err := s.purge(ctx, olderThan, horizon, batch, from)
		if err != nil {
			return sum, err
		}
		sum.Acked += r.Acked
		sum.DeadLetters += r.DeadLetters
		sum.Outbox += r.Outbox
		if r.Total() == 0 {
			if from == (purgeCursor{}) {
				return sum, nil
			}
			// Resumed calls found nothing more: one call from the oldest row takes any row that
			// became final behind where they stood.
			from = purgeCursor{}
			continue
		}
		from = next
		t := time.NewTimer(time.Since(start))
		select {
		case <-ctx.Done():
			t.Stop()
			return sum, ctx.Err()
		case <-t.C:
		}
	}
}
