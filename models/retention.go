package models

import (
	"cmp"
	"maps"
	"slices"
)

// purge is docs/semantics.md's purge(older_than, horizon, limit) at now: up to limit acked
// messages, up to limit dead letters and up to limit final outbox rows (completed or
// dead-lettered) that became final at or
// before now - olderThan are removed, each kind oldest first, then by id. The id of each removed
// message or dead letter is retired until its final time + horizon (not at all if that is not
// after now); then up to limit retired ids whose horizon has passed are forgotten. It returns how many
// rows it removed.
func (s *State) purge(now, olderThan, horizon int64, limit int) int {
	cutoff := now - olderThan
	type aged struct {
		id    string
		final int64
	}
	oldest := func(rows []aged) []aged {
		slices.SortFunc(rows, func(a, b aged) int { return cmp.Or(cmp.Compare(a.final, b.final), cmp.Compare(a.id, b.id)) })
		return rows[:min(len(rows), limit)]
	}
	var acked, dead, final []aged
	for id, m := range s.messages {
		if m.acked && m.ackedAt <= cutoff {
			acked = append(acked, aged{id, m.ackedAt})
		}
	}
	for id, d := range s.dead {
		if d.deadAt <= cutoff {
			dead = append(dead, aged{id, d.deadAt})
		}
	}
	for id, o := range s.outbox {
		if !o.pending() && o.finalAt <= cutoff {
			final = append(final, aged{id, o.finalAt})
		}
	}
	retire := func(r aged) {
		if until := r.final + horizon; until > now {
			s.retired[r.id] = until
		}
	}
	acked, dead, final = oldest(acked), oldest(dead), oldest(final)
	for _, r := range acked {
		delete(s.messages, r.id) // an acked row is in no mailbox's order
		retire(r)
	}
	for _, r := range dead {
		delete(s.dead, r.id)
		retire(r)
	}
	for _, r := range final {
		delete(s.outbox, r.id)
		s.purgedOutbox[r.id] = max(r.final+horizon, now)
	}
	// Then the forgetting, among the retired ids whose horizon has passed (the ones retired just
	// now have not).
	var expired []aged
	for id, until := range s.retired {
		if until <= now {
			expired = append(expired, aged{id, until})
		}
	}
	for _, r := range oldest(expired) {
		delete(s.retired, r.id)
	}
	// Under processed_expiry "until_cleanup" the purge is the cleanup of the expired
	// processed-message records (they are not counted).
	if s.cfg.Profile.ProcessedUntilCleanup {
		maps.DeleteFunc(s.processed, func(_ processedKey, expires int64) bool { return expires <= now })
	}
	return len(acked) + len(dead) + len(final)
}
