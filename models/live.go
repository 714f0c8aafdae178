package models

import "github.com/pconform/pconform/traces"

// What a streaming checker asks of a long-running Machine. A checker that reads a history as a
// stream (observe.Check) keeps bindings and row histories of its own beside the model; these let
// it forget what no later step can refer to, so its memory follows the live rows, not the
// history's length.

// Forget drops the state entries that mean nothing any more at the machine's current time: the
// processed marks that have expired (an expired mark counts as absent) and the purged ids whose
// dedup horizon has passed (they are no longer duplicates). Times never go back, so no later step
// can tell a forgotten entry from an absent one. It also drops the ids of the committed effects
// and keeps their number, which is all a later step reads of them (an effect log's version).
// Every later result is the same; the snapshot's effect lists then hold only the effects
// committed since.
//
// One exception bounds what purge leaves behind: the ids of purged outbox rows are dropped once
// the purge's dedup horizon for them has passed (strictly before the current time). Until then a
// publisher's stale delivery of one is claim_lost; after, the model knows the id no more and
// refuses such a delivery as malformed, as for an id it never held. So a streaming checker
// reports a stale delivery that comes later than the horizon. It returns how many entries remain. A call costs time in the entries it
// drops (the aging index gives them oldest first), not in those that remain.
func (m *Machine) Forget() int {
	now := m.s.now
	for mailbox, ids := range m.s.effects {
		if m.s.effectsForgotten == nil {
			m.s.effectsForgotten = map[string]int{}
		}
		m.s.effectsForgotten[mailbox] += len(ids)
		delete(m.s.effects, mailbox)
	}
	// The aging index gives the entries whose time has come, oldest first.
	m.s.dropExpiredProcessed(now)
	takeAged(&m.s.aging.retired, now, -1, m.s.retiredUntil, func(e agedEntry) { delete(m.s.retired, e.id) })
	m.s.forgetLateWakes(now)
	takeAged(&m.s.aging.purged, now-1, -1, func(e agedEntry) bool {
		until, ok := m.s.purgedOutbox[e.id]
		return ok && until == e.at
	}, func(e agedEntry) { delete(m.s.purgedOutbox, e.id) })
	return len(m.s.processed) + len(m.s.retired) + len(m.s.purgedOutbox) + len(m.s.purgedMessages)
}

// HeldTokens calls held for every token a row or an unhandled fetch still carries, in its
// namespace, perhaps more than once. A token no row carries can only be stale: a later step
// naming it fails as a token that matches nothing would.
//
// A checker prunes its bindings with it every so many events, and a long history keeps most of
// its rows finished: it asks the indexes, not every row. Only a ready message carries a lease
// token, and each has an entry in the ready index's lease heap; only a pending outbox row carries
// a claim token, and each is in the claim index (checkIndexes holds both to the rows), unless
// the profile's completed_claim is "kept": then a completed row keeps its token, and every outbox
// row is walked. So a call costs time in the leases and pending outbox rows, not in the rows
// kept.
func (m *Machine) HeldTokens(held func(space traces.TokenSpace, token int)) {
	s := &m.s
	for _, e := range s.idx.leases.items {
		if msg := s.messages[e.id]; msg.token != 0 {
			held(traces.LeaseTokens, msg.token)
		}
	}
	claimed := func(id string) {
		if o := s.outbox[id]; o.token != 0 {
			held(traces.ClaimTokens, o.token)
		}
	}
	if s.cfg.Profile.CompletedClaimKept {
		for id := range s.outbox {
			claimed(id)
		}
	} else {
		for id := range s.claims.exhausted {
			claimed(id)
		}
		for _, e := range s.claims.waiting.items {
			claimed(e.id)
		}
		for _, e := range s.claims.ready.items {
			claimed(e.id)
		}
	}
	for _, d := range s.inflight {
		if d.token != 0 {
			held(traces.LeaseTokens, d.token)
		}
	}
	for _, b := range s.batches {
		for _, d := range b {
			if d.token != 0 {
				held(traces.LeaseTokens, d.token)
			}
		}
	}
}

// Holds reports whether id names a row the machine keeps: a message (ready or acked), a dead
// letter, an outbox row, or a purged id inside its dedup horizon.
func (m *Machine) Holds(id string) bool {
	_, outbox := m.s.outbox[id]
	return outbox || m.s.has(id)
}

// Rows is the number of rows the machine keeps: messages, dead letters and outbox rows.
func (m *Machine) Rows() int { return len(m.s.messages) + len(m.s.dead) + len(m.s.outbox) }
