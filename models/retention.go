package models

// purge is docs/semantics.md's purge(older_than, horizon, limit) at now: up to limit acked
// messages, up to limit dead letters and up to limit final outbox rows (completed or
// dead-lettered) that became final at or
// before now - olderThan are removed, each kind oldest first, then by id. The id of each removed
// message or dead letter is retired until its final time + horizon (not at all if that is not
// after now); then up to limit retired ids whose horizon has passed are forgotten. It returns how many
// rows it removed.
//
// The rows come from the aging index, oldest first, so a purge costs time in the rows it removes
// and the stale entries it passes, not in the rows the state holds.
func (s *State) purge(now, olderThan, horizon int64, limit int) int {
	return s.purgeLimits(now, olderThan, horizon, [3]int{limit, limit, limit}, limit)
}

// purgeLimits is purge with a limit of its own for each of the three tables (acked messages,
// dead letters, final outbox rows) and for the retired ids it forgets: a check split into
// partitions (share.go) purges each partition's share of one purge.
func (s *State) purgeLimits(now, olderThan, horizon int64, limits [3]int, limit int) int {
	cutoff := now - olderThan
	retire := func(e agedEntry) {
		if until := e.at + horizon; until > now {
			s.retired[e.id] = until
			s.aging.retired.push(agedEntry{e.id, until})
		}
	}
	n := takeAged(&s.aging.acked, cutoff, limits[0], s.ackedAged, func(e agedEntry) {
		s.rememberPurged(s.messages[e.id].mailbox, e.id, now)
		delete(s.messages, e.id) // an acked row is in no mailbox's order
		retire(e)
	})
	n += takeAged(&s.aging.dead, cutoff, limits[1], s.deadAged, func(e agedEntry) {
		s.rememberPurged(s.dead[e.id].mailbox, e.id, now)
		delete(s.dead, e.id)
		retire(e)
	})
	n += takeAged(&s.aging.final, cutoff, limits[2], s.finalAged, func(e agedEntry) {
		delete(s.outbox, e.id)
		until := max(e.at+horizon, now)
		s.purgedOutbox[e.id] = until
		s.aging.purged.push(agedEntry{e.id, until})
	})
	// Then the forgetting, among the retired ids whose horizon has passed (the ones retired just
	// now have not).
	takeAged(&s.aging.retired, now, limit, s.retiredUntil, func(e agedEntry) { delete(s.retired, e.id) })
	// Under processed_expiry "until_cleanup" the purge is the cleanup of the expired
	// processed-message records (they are not counted).
	if s.cfg.Profile.ProcessedUntilCleanup {
		s.dropExpiredProcessed(now)
	}
	return n
}

// purgedMessage is a purged message's mailbox and the end of its late-wake window.
type purgedMessage struct {
	mailbox string
	until   int64
}

// rememberPurged keeps, under Config.LateWakes, the mailbox of message id purged at now, so that
// a late wake for it is still judged for a committed message (committedIn).
func (s *State) rememberPurged(mailbox, id string, now int64) {
	if s.cfg.LateWakes <= 0 {
		return
	}
	if s.purgedMessages == nil {
		s.purgedMessages = map[string]purgedMessage{}
	}
	until := now + s.cfg.LateWakes
	s.purgedMessages[id] = purgedMessage{mailbox: mailbox, until: until}
	s.aging.lateWakes.push(agedEntry{id, until})
}

// forgetLateWakes drops the purged messages whose late-wake window ended at or before now.
func (s *State) forgetLateWakes(now int64) {
	takeAged(&s.aging.lateWakes, now, -1, func(e agedEntry) bool {
		p, ok := s.purgedMessages[e.id]
		return ok && p.until == e.at
	}, func(e agedEntry) { delete(s.purgedMessages, e.id) })
}

// ackedAged reports whether e is the acked message's current entry in aging.acked.
func (s *State) ackedAged(e agedEntry) bool {
	m, ok := s.messages[e.id]
	return ok && m.acked && m.ackedAt == e.at
}

// deadAged reports whether e is the dead letter's current entry in aging.dead.
func (s *State) deadAged(e agedEntry) bool {
	d, ok := s.dead[e.id]
	return ok && d.deadAt == e.at
}

// finalAged reports whether e is the final outbox row's current entry in aging.final.
func (s *State) finalAged(e agedEntry) bool {
	o, ok := s.outbox[e.id]
	return ok && !o.pending() && o.finalAt == e.at
}

// retiredUntil reports whether e is the id's current retirement.
func (s *State) retiredUntil(e agedEntry) bool {
	until, ok := s.retired[e.id]
	return ok && until == e.at
}

// dropExpiredProcessed removes the processed-message records that expired at or before now.
func (s *State) dropExpiredProcessed(now int64) {
	h := &s.aging.processed
	for h.len() > 0 && h.top().at <= now {
		e := h.pop(processedFirst)
		if exp, ok := s.processed[e.key]; ok && exp == e.at {
			delete(s.processed, e.key)
		}
	}
}
