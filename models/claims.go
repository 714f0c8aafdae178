package models

import "maps"

// claimIndex indexes the pending outbox rows for outbox_claim, so that a claim costs time in the
// rows it dead-letters and takes (times log n), not in the pending rows. A publisher that falls
// behind leaves thousands of rows pending, and a log holds a claim every few events: a walk
// over every pending row at each claim made a recorded log's check quadratic.
//
// A claim first dead-letters the exhausted rows (pending, every delivery attempt used) that hold
// no live claim, then takes the claimable rows (pending, attempts left, available, no live
// claim) smallest seq first. So the index keeps:
//   - exhausted: the ids of the exhausted rows. Only a claim bumps the attempts, so a row enters
//     it holding a claim, and the set stays as small as the claims in flight.
//   - waiting: an entry for each row with attempts left, by the time from which a claim may take
//     it (claimableFrom);
//   - ready: the rows a claim could take when they left waiting, by seq.
//
// Like readyIndex, it is derived from the rows (every write goes through putOutbox, which
// pushes an entry for the row as it now is) and Equal does not compare it. Entries are never
// updated in place: each is checked against its row when it reaches the top of its heap and
// dropped if the row no longer is what it recorded, so a stale entry costs one pop.
// TestModelMatchesNaive and the property tests' checkIndexes hold it to the rows.
type claimIndex struct {
	exhausted map[string]struct{}
	waiting   heapOf[claimEntry]
	ready     heapOf[claimEntry]
	// rows and taken are firstClaimable's buffers, kept from one claim to the next: a log holds
	// a claim every few events, and a fresh slice for each was a fifth of a check's garbage.
	// clone leaves them out.
	rows  []outboxRow
	taken []claimEntry
}

// claimEntry is a row as it was pushed: from orders waiting, seq orders ready.
type claimEntry struct {
	id   string
	seq  int64
	from int64
}

func claimableFirst(a, b claimEntry) bool { return a.seq < b.seq }
func dueFirst(a, b claimEntry) bool       { return a.from < b.from }

func (x claimIndex) clone() claimIndex {
	return claimIndex{exhausted: maps.Clone(x.exhausted), waiting: x.waiting.clone(), ready: x.ready.clone()}
}

// exhaustedRow reports whether o has used up its delivery attempts.
func (o outboxRow) exhaustedRow() bool { return o.deliveryAttempts >= o.maxDeliveryAttempts }

// claimableFrom is the first time at which a claim may take the pending row o with attempts left:
// once it is available and its claim, if any, has run out.
func (p profileRules) claimableFrom(o outboxRow) int64 {
	if o.token == 0 {
		return o.availableAt
	}
	return max(o.availableAt, p.leaseEnds(o.claimUntil))
}

// indexOutbox brings the claim index in step with the row o that putOutbox has just written.
func (s *State) indexOutbox(o outboxRow) {
	x := &s.claims
	switch {
	case !o.pending():
		delete(x.exhausted, o.id)
	case o.exhaustedRow():
		if x.exhausted == nil {
			x.exhausted = map[string]struct{}{}
		}
		x.exhausted[o.id] = struct{}{}
	default:
		delete(x.exhausted, o.id)
		x.waiting.push(claimEntry{id: o.id, seq: o.seq, from: s.rules().claimableFrom(o)}, dueFirst)
	}
}

// claimableNow reports whether a claim at now may take the row id.
func (s *State) claimableNow(id string, now int64) (outboxRow, bool) {
	o, ok := s.outbox[id]
	return o, ok && o.pending() && !o.exhaustedRow() && s.rules().claimableFrom(o) <= now
}

// deadLetterExhausted dead-letters every exhausted row that holds no live claim at now, as a
// claim's first statement does.
func (s *State) deadLetterExhausted(now int64) {
	p := s.rules()
	for id := range s.claims.exhausted {
		o := s.outbox[id]
		if p.Held(o.token, o.claimUntil, now) {
			continue
		}
		o.deadReason = p.ReasonMaxDeliveryAttemptsWording()
		o.finalAt = now
		o.token, o.claimUntil = 0, 0
		s.putOutbox(o) // deleting from the set being ranged over is allowed
	}
}

// firstClaimable returns up to n rows a claim at now may take, smallest seq first. With keep
// they stay in the index; without, the caller claims every row returned (putOutbox then indexes
// each anew). The slice returned is the index's buffer: the next call overwrites it.
func (s *State) firstClaimable(now int64, n int, keep bool) []outboxRow {
	x := &s.claims
	p := s.rules()
	for x.waiting.len() > 0 && x.waiting.top().from <= now {
		e := x.waiting.pop(dueFirst)
		if o, ok := s.outbox[e.id]; ok && o.pending() && !o.exhaustedRow() && p.claimableFrom(o) == e.from {
			x.ready.push(e, claimableFirst)
		}
	}
	rows, taken := x.rows[:0], x.taken[:0]
	for x.ready.len() > 0 && len(rows) < n {
		e := x.ready.pop(claimableFirst)
		o, ok := s.claimableNow(e.id, now)
		// A row written twice with the same claimable time has two entries; they pop one after
		// the other, since both carry its seq.
		if !ok || len(taken) > 0 && taken[len(taken)-1].id == e.id {
			continue
		}
		rows = append(rows, o)
		taken = append(taken, e)
	}
	if keep {
		for _, e := range taken {
			x.ready.push(e, claimableFirst)
		}
	}
	x.rows, x.taken = rows, taken
	return rows
}
