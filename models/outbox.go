package models

import "github.com/pconform/pconform/traces"

// The outbox operations of docs/semantics.md, on a State that Step has already cloned.

// outboxEnqueue inserts a pending row, available now, unless id is taken; it reports whether it
// was, as a duplicate or, under the profile choice outbox_duplicate "refused", as a refusal.
// maxDelivery 0 means traces.DefaultMaxDeliveryAttempts.
func (s *State) outboxEnqueue(id, target, key string, priority, maxAttempts, maxDelivery int, payload string, now int64) (duplicate, refused bool) {
	if _, ok := s.outbox[id]; ok {
		if s.cfg.Profile.OutboxDuplicateRefused {
			return false, true
		}
		return true, false
	}
	if maxDelivery == 0 {
		maxDelivery = traces.DefaultMaxDeliveryAttempts
	}
	s.lastSeq++
	s.putOutbox(outboxRow{
		id: id, target: target, key: key, payload: payload, priority: priority,
		maxAttempts: maxAttempts, maxDeliveryAttempts: maxDelivery, availableAt: now, seq: s.lastSeq,
	})
	return false, false
}

// putOutbox writes the outbox row o and keeps the claim index and the aging index in step with
// it.
func (s *State) putOutbox(o outboxRow) {
	s.outbox[o.id] = o
	s.indexOutbox(o)
	if !o.pending() {
		s.aging.final.push(agedEntry{o.id, o.finalAt})
	}
}

// outboxClaim first dead-letters every pending row that has used up its delivery attempts and
// carries no live claim (reason "max delivery attempts reached"); then it claims up to limit
// pending rows that are available at now, carry no live claim and have attempts left, smallest
// seq first, all under one new token. An empty batch issues no token.
func (s *State) outboxClaim(limit int, now, claimFor int64) []traces.Claimed {
	s.deadLetterExhausted(now)
	rows := s.firstClaimable(now, limit, false)
	if len(rows) == 0 {
		return nil
	}
	s.lastToken++
	claimed := make([]traces.Claimed, 0, len(rows))
	for _, o := range rows {
		o.token = s.lastToken
		o.claimUntil = now + claimFor
		o.deliveryAttempts++
		s.putOutbox(o)
		claimed = append(claimed, traces.Claimed{ID: o.id, DeliveryAttempts: o.deliveryAttempts, Token: o.token})
	}
	return claimed
}

// claimHolding returns the outbox row id if it exists, is pending and carries exactly token.
func (s *State) claimHolding(id string, token int) (outboxRow, bool) {
	o, ok := s.outbox[id]
	if !ok || !o.pending() || o.token == 0 || o.token != token {
		return outboxRow{}, false
	}
	return o, true
}

// outboxComplete completes id if it holds token.
func (s *State) outboxComplete(id string, token int) bool {
	o, ok := s.claimHolding(id, token)
	if !ok {
		return false
	}
	o.completed = true
	o.finalAt = s.now
	// Under the profile choice completed_claim "kept" the completed row keeps its claim; only a
	// pending row's claim is ever checked, so it fences nothing.
	if !s.cfg.Profile.CompletedClaimKept {
		o.token, o.claimUntil = 0, 0
	}
	s.putOutbox(o)
	return true
}

// outboxFail releases id's claim, if it holds token, and makes it available at availableAt.
func (s *State) outboxFail(id string, token int, availableAt int64) bool {
	o, ok := s.claimHolding(id, token)
	if !ok {
		return false
	}
	o.token, o.claimUntil = 0, 0
	o.availableAt = availableAt
	s.putOutbox(o)
	return true
}

// outboxDeadLetter dead-letters id with reason and clears its claim, if it holds token.
func (s *State) outboxDeadLetter(id string, token int, reason string) bool {
	o, ok := s.claimHolding(id, token)
	if !ok {
		return false
	}
	o.deadReason = reason
	o.finalAt = s.now
	o.token, o.claimUntil = 0, 0
	s.putOutbox(o)
	return true
}
