package models

import (
	"github.com/pconform/pconform/traces"
)

// The mailbox operations of docs/semantics.md. Each works on a State that Step has already cloned,
// so it may change the receiver in place; each changes nothing when it fails.

// has reports whether id is taken by a message in any mailbox (any state), by a dead letter, or
// by a purged row whose dedup horizon has not passed.
func (s *State) has(id string) bool {
	_, inMailbox := s.messages[id]
	_, dead := s.dead[id]
	// Under the profile choice dead_letter_id "free" a dead letter does not take its id.
	dead = dead && !s.cfg.Profile.DeadLetterIDFree
	until, retired := s.retired[id]
	return inMailbox || dead || (retired && until > s.now)
}

// committedIn reports whether a committed step put message id into mailbox: it is a row of the
// mailbox (ready or acked), a dead letter of it, a purged id inside its dedup horizon (whose
// mailbox the model no longer keeps), or, under Config.LateWakes, a message purged from it within
// that window. A wake for any other message came before the commit that caused it, or for an
// enqueue that never committed (docs/semantics.md, "Wake-ups").
func (s *State) committedIn(mailbox, id string) bool {
	// Under dead_letter_id "free" one id may be both a message and a dead letter.
	if m, ok := s.messages[id]; ok && m.mailbox == mailbox {
		return true
	}
	if d, ok := s.dead[id]; ok && d.mailbox == mailbox {
		return true
	}
	if _, ok := s.messages[id]; ok {
		return false
	}
	if _, ok := s.dead[id]; ok {
		return false
	}
	if until, retired := s.retired[id]; retired && until > s.now {
		return true
	}
	// Under Config.LateWakes: purged in this mailbox within the window.
	p, ok := s.purgedMessages[id]
	return ok && p.mailbox == mailbox && p.until > s.now
}

// enqueue inserts a ready message unless id is taken; it reports whether id was taken.
func (s *State) enqueue(mailbox, id, key string, priority, maxAttempts int, availableAt int64, payload string) (duplicate bool) {
	if s.has(id) {
		return true
	}
	s.lastSeq++
	s.putReady(message{
		mailbox: mailbox, id: id, key: key, payload: payload, priority: priority,
		maxAttempts: maxAttempts, availableAt: availableAt, seq: s.lastSeq,
	})
	return false
}

// lease leases the next message of mailbox: a new token, lease_until = now + leaseFor, attempts + 1.
func (s *State) lease(mailbox string, now, leaseFor int64) *traces.Message {
	m, ok := s.next(mailbox, now)
	if !ok {
		return nil
	}
	s.lastToken++
	m.token = s.lastToken
	m.leaseUntil = now + leaseFor
	m.attempts++
	s.putReady(m)
	return &traces.Message{ID: m.id, Attempts: m.attempts, Token: m.token}
}

// peek returns the next message of mailbox without changing anything.
func (s *State) peek(mailbox string, now int64) *traces.Message {
	m, ok := s.next(mailbox, now)
	if !ok {
		return nil
	}
	return &traces.Message{ID: m.id, Attempts: m.attempts}
}

// holding returns the message id if it exists, is ready and carries exactly token. Token 0 (and
// any token never issued) matches nothing.
func (s *State) holding(id string, token int) (message, bool) {
	m, ok := s.messages[id]
	if !ok || m.acked || m.token == 0 || m.token != token {
		return message{}, false
	}
	return m, true
}

// ready returns the message id if it exists and is ready.
func (s *State) ready(id string) (message, bool) {
	m, ok := s.messages[id]
	if !ok || m.acked {
		return message{}, false
	}
	return m, true
}

func clearLease(m *message) { m.token, m.leaseUntil = 0, 0 }

// ack acks id if it holds token.
func (s *State) ack(id string, token int) bool {
	m, ok := s.holding(id, token)
	if !ok {
		return false
	}
	s.settle(m)
	return true
}

// settle acks the ready message m: acked now, its lease cleared, out of the ready index.
// Under the profile choice ack "deletes" the row is deleted instead, so its id is free again.
func (s *State) settle(m message) {
	if s.cfg.Profile.AckDeletes {
		delete(s.messages, m.id)
		s.dropReady(m)
		return
	}
	m.acked = true
	m.ackedAt = s.now
	s.aging.acked.push(agedEntry{m.id, m.ackedAt})
	clearLease(&m)
	s.messages[m.id] = m
	s.dropReady(m)
}

// nack releases id's lease if it holds token; attempts stay as the lease counted them.
func (s *State) nack(id string, token int, availableAt int64) bool {
	m, ok := s.holding(id, token)
	if !ok {
		return false
	}
	clearLease(&m)
	m.availableAt = availableAt
	s.putReady(m)
	return true
}

// ackByID acks id if it is ready, whatever lease it carries.
func (s *State) ackByID(id string) bool {
	m, ok := s.ready(id)
	if !ok {
		return false
	}
	s.settle(m)
	return true
}

// nackByID counts one more attempt on id (capped at max_attempts, unless the profile's nack_by_id
// is "uncapped") and makes it available at
// availableAt, if it is ready.
func (s *State) nackByID(id string, availableAt int64) bool {
	m, ok := s.ready(id)
	if !ok {
		return false
	}
	m.attempts++
	if !s.cfg.Profile.NackByIDUncapped {
		m.attempts = min(m.attempts, m.maxAttempts)
	}
	clearLease(&m)
	m.availableAt = availableAt
	s.putReady(m)
	return true
}

// extend moves id's lease end to until if it holds token.
func (s *State) extend(id string, token int, until int64) bool {
	m, ok := s.holding(id, token)
	if !ok {
		return false
	}
	m.leaseUntil = until
	s.putReady(m)
	return true
}

// expire clears every lease that has run out at now and dead-letters the rows it leaves with no
// attempts left. It returns the number of leases cleared. Only ready rows carry leases; the
// ready index finds the ones that have run out (readyIndex).
func (s *State) expire(now int64) int {
	// Sorted ids keep the walk deterministic; the outcome does not depend on the order.
	ran := s.expired(now)
	for _, id := range ran {
		m := s.messages[id]
		clearLease(&m)
		s.putReady(m)
		if m.attempts >= m.maxAttempts {
			s.deadLetter(id, s.cfg.Profile.ReasonLeaseExpiredWording())
		}
	}
	return len(ran)
}

// deadLetter moves id, if ready, from its mailbox to the dead letters with its attempts and reason.
func (s *State) deadLetter(id, reason string) bool {
	m, ok := s.ready(id)
	if !ok {
		return false
	}
	delete(s.messages, id)
	s.dropReady(m)
	s.dead[id] = deadLetter{mailbox: m.mailbox, id: id, attempts: m.attempts, reason: reason, deadAt: s.now,
		key: m.key, priority: m.priority, maxAttempts: m.maxAttempts, payload: m.payload}
	s.aging.dead.push(agedEntry{id, s.now})
	return true
}

// redrive is docs/semantics.md's redrive(id, reason): the mailbox dead letter id, if any, goes
// back into its mailbox as a ready message with attempts 0, available at now and a new seq; the
// outbox row id, if dead-lettered, becomes pending with delivery attempts 0, available at now and
// no reason. Each move appends a record to the redrive history with what the row had before it
// (the message's first). It reports whether it moved anything.
func (s *State) redrive(id, reason string) bool {
	found := false
	// Under dead_letter_id "free" a message may hold the dead letter's id: the dead letter then
	// stays where it is, since its id is taken in the mailbox.
	_, clash := s.messages[id]
	if d, ok := s.dead[id]; ok && !clash {
		s.redrives = append(s.redrives, traces.RedriveRecord{
			ID: id, Kind: traces.RedriveKindMessage, Mailbox: d.mailbox, Attempts: d.attempts,
			DeadReason: d.reason, Reason: reason, At: s.now,
		})
		delete(s.dead, id)
		s.lastSeq++
		s.putReady(message{
			mailbox: d.mailbox, id: id, key: d.key, payload: d.payload, priority: d.priority,
			maxAttempts: d.maxAttempts, availableAt: s.now, seq: s.lastSeq,
		})
		found = true
	}
	if o, ok := s.outbox[id]; ok && o.deadReason != "" {
		s.redrives = append(s.redrives, traces.RedriveRecord{
			ID: id, Kind: traces.RedriveKindOutbox, Mailbox: o.target, Attempts: o.deliveryAttempts,
			DeadReason: o.deadReason, Reason: reason, At: s.now,
		})
		o.deadReason, o.deliveryAttempts, o.availableAt, o.finalAt = "", 0, s.now, 0
		s.putOutbox(o)
		found = true
	}
	return found
}

// listRedrives is docs/semantics.md's list_redrives(id): the redrive records of id, or of every
// id when id is "", oldest first (nil when there are none).
func (s *State) listRedrives(id string) []traces.RedriveRecord {
	var out []traces.RedriveRecord
	for _, r := range s.redrives {
		if id == "" || r.ID == id {
			out = append(out, r)
		}
	}
	return out
}
