package memstore

import (
	"encoding/json"
	"errors"
	"sort"
	"time"
)

// Errors the store returns; the adapter maps them to the trace's error kinds.
var (
	// ErrStale: the token does not match the row's current lease or claim.
	ErrStale = errors.New("memstore: stale token")
	// ErrNoRow: no ready row with that id.
	ErrNoRow = errors.New("memstore: no such row")
)

// Message is a mailbox row. A row exists while it is ready: Ack deletes it.
type Message struct {
	Mailbox, ID, Key, Payload string
	Priority, Attempts, Max   int
	AvailableAt, LeaseUntil   time.Time
	Token                     uint64 // 0: no lease
	Seq                       uint64
}

// Dead is a dead-lettered message: what it had when it was moved, and why. The store does not
// keep when.
type Dead struct {
	Message
	Reason string
}

// Outbox is an outbox row.
type Outbox struct {
	ID, Target, Key, Payload string
	Priority, Max, MaxClaims int
	Claims                   int
	State, Reason            string // "pending", "completed", "dead"
	AvailableAt, ClaimUntil  time.Time
	Token, Seq               uint64
}

// data is everything the store keeps; Close writes it out and Open reads it back.
type data struct {
	Messages  map[string]*Message
	Dead      map[string]*Dead
	Outbox    map[string]*Outbox
	LastToken uint64
	LastSeq   uint64
}

// Store is a small in-memory mailbox and outbox with two deliberate choices of its own: a lease
// or claim is still live at its end time, and an ack deletes the row (so an acked id can be
// enqueued again). Its durable state is the byte slice Close returns.
type Store struct {
	d data
}

// Open opens a store from what an earlier Close returned; nil opens an empty store.
func Open(disk []byte) (*Store, error) {
	s := &Store{d: data{Messages: map[string]*Message{}, Dead: map[string]*Dead{}, Outbox: map[string]*Outbox{}}}
	if disk == nil {
		return s, nil
	}
	return s, json.Unmarshal(disk, &s.d)
}

// Close returns the store's durable state.
func (s *Store) Close() ([]byte, error) { return json.Marshal(s.d) }

// live is this store's rule: a lease or claim is live until and including its end time.
func live(token uint64, until, now time.Time) bool { return token != 0 && !until.Before(now) }

func (s *Store) taken(id string) bool { return s.d.Messages[id] != nil || s.d.Dead[id] != nil }

// Enqueue inserts a ready message; it reports whether the id was taken.
func (s *Store) Enqueue(m Message, now time.Time, delay time.Duration) (duplicate bool) {
	if s.taken(m.ID) {
		return true
	}
	s.d.LastSeq++
	m.Seq, m.AvailableAt, m.Attempts, m.Token = s.d.LastSeq, now.Add(delay), 0, 0
	s.d.Messages[m.ID] = &m
	return false
}

// next is the mailbox's next deliverable message: highest priority, then earliest available,
// then first enqueued; a keyed row blocks its later same-key rows while it has attempts left or
// a live lease.
func (s *Store) next(mailbox string, now time.Time) *Message {
	var rows []*Message
	for _, m := range s.d.Messages {
		if m.Mailbox == mailbox {
			rows = append(rows, m)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Seq < rows[j].Seq })
	var best *Message
	blocked := map[string]bool{}
	for _, m := range rows {
		held := live(m.Token, m.LeaseUntil, now)
		ok := !m.AvailableAt.After(now) && !held && m.Attempts < m.Max && !blocked[m.Key]
		if m.Key != "" && (m.Attempts < m.Max || held) {
			blocked[m.Key] = true
		}
		if ok && (best == nil || m.Priority > best.Priority ||
			m.Priority == best.Priority && m.AvailableAt.Before(best.AvailableAt)) {
			best = m
		}
	}
	return best
}

// Lease takes the next message under a new token for d.
func (s *Store) Lease(mailbox string, now time.Time, d time.Duration) *Message {
	m := s.next(mailbox, now)
	if m == nil {
		return nil
	}
	s.d.LastToken++
	m.Token, m.LeaseUntil = s.d.LastToken, now.Add(d)
	m.Attempts++
	c := *m
	return &c
}

// Peek returns the next message without leasing it.
func (s *Store) Peek(mailbox string, now time.Time) *Message {
	m := s.next(mailbox, now)
	if m == nil {
		return nil
	}
	c := *m
	c.Token = 0
	return &c
}

func (s *Store) held(id string, token uint64) (*Message, error) {
	m := s.d.Messages[id]
	if m == nil || m.Token == 0 || m.Token != token {
		return nil, ErrStale
	}
	return m, nil
}

// Ack deletes the message if token still holds it.
func (s *Store) Ack(id string, token uint64) error {
	if _, err := s.held(id, token); err != nil {
		return err
	}
	delete(s.d.Messages, id)
	return nil
}

// Nack releases the lease and makes the message available again after delay.
func (s *Store) Nack(id string, token uint64, now time.Time, delay time.Duration) error {
	m, err := s.held(id, token)
	if err != nil {
		return err
	}
	m.Token, m.LeaseUntil, m.AvailableAt = 0, time.Time{}, now.Add(delay)
	return nil
}

// AckByID deletes a ready message whatever lease it carries.
func (s *Store) AckByID(id string) error {
	if s.d.Messages[id] == nil {
		return ErrNoRow
	}
	delete(s.d.Messages, id)
	return nil
}

// NackByID counts an attempt (at most max) and makes the message available after delay.
func (s *Store) NackByID(id string, now time.Time, delay time.Duration) error {
	m := s.d.Messages[id]
	if m == nil {
		return ErrNoRow
	}
	m.Attempts = min(m.Attempts+1, m.Max)
	m.Token, m.LeaseUntil, m.AvailableAt = 0, time.Time{}, now.Add(delay)
	return nil
}

// Extend moves the lease's end to now + d if token still holds it.
func (s *Store) Extend(id string, token uint64, now time.Time, d time.Duration) error {
	m, err := s.held(id, token)
	if err != nil {
		return err
	}
	m.LeaseUntil = now.Add(d)
	return nil
}

// Expire clears every lease that is no longer live and dead-letters a row left with no attempts.
func (s *Store) Expire(now time.Time) int {
	n := 0
	for _, m := range s.d.Messages {
		if m.Token != 0 && !live(m.Token, m.LeaseUntil, now) {
			n++
			m.Token, m.LeaseUntil = 0, time.Time{}
			if m.Attempts >= m.Max {
				s.DeadLetter(m.ID, "lease expired after max attempts")
			}
		}
	}
	return n
}

// DeadLetter moves a ready message to the dead letters.
func (s *Store) DeadLetter(id, reason string) error {
	m := s.d.Messages[id]
	if m == nil {
		return ErrNoRow
	}
	delete(s.d.Messages, id)
	s.d.Dead[id] = &Dead{Message: *m, Reason: reason}
	return nil
}

// OutboxEnqueue inserts a pending outbox row; it reports whether the id was taken.
func (s *Store) OutboxEnqueue(o Outbox, now time.Time) (duplicate bool) {
	if s.d.Outbox[o.ID] != nil {
		return true
	}
	s.d.LastSeq++
	o.Seq, o.State, o.AvailableAt, o.Claims, o.Token = s.d.LastSeq, "pending", now, 0, 0
	s.d.Outbox[o.ID] = &o
	return false
}

// OutboxClaim dead-letters the unclaimed rows without claims left, then claims up to limit
// available rows, oldest first, under one new token.
func (s *Store) OutboxClaim(limit int, now time.Time, d time.Duration) []Outbox {
	var rows []*Outbox
	for _, o := range s.d.Outbox {
		switch {
		case o.State != "pending" || live(o.Token, o.ClaimUntil, now):
		case o.Claims >= o.MaxClaims:
			o.State, o.Reason, o.Token, o.ClaimUntil = "dead", "max delivery attempts reached", 0, time.Time{}
		case !o.AvailableAt.After(now):
			rows = append(rows, o)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Seq < rows[j].Seq })
	s.d.LastToken++
	var out []Outbox
	for _, o := range rows[:min(limit, len(rows))] {
		o.Token, o.ClaimUntil = s.d.LastToken, now.Add(d)
		o.Claims++
		out = append(out, *o)
	}
	return out
}

func (s *Store) claimed(id string, token uint64) (*Outbox, error) {
	o := s.d.Outbox[id]
	if o == nil || o.State != "pending" || o.Token == 0 || o.Token != token {
		return nil, ErrStale
	}
	return o, nil
}

// OutboxComplete marks the row delivered if token still claims it.
func (s *Store) OutboxComplete(id string, token uint64) error {
	o, err := s.claimed(id, token)
	if err == nil {
		o.State, o.Token, o.ClaimUntil = "completed", 0, time.Time{}
	}
	return err
}

// OutboxFail releases the claim and makes the row available again after delay.
func (s *Store) OutboxFail(id string, token uint64, now time.Time, delay time.Duration) error {
	o, err := s.claimed(id, token)
	if err == nil {
		o.Token, o.ClaimUntil, o.AvailableAt = 0, time.Time{}, now.Add(delay)
	}
	return err
}

// OutboxDeadLetter dead-letters the row with reason if token still claims it.
func (s *Store) OutboxDeadLetter(id string, token uint64, reason string) error {
	o, err := s.claimed(id, token)
	if err == nil {
		o.State, o.Reason, o.Token, o.ClaimUntil = "dead", reason, 0, time.Time{}
	}
	return err
}

// Rows returns copies of every row, for the adapter's snapshot.
func (s *Store) Rows() (msgs []Message, dead []Dead, outbox []Outbox) {
	for _, m := range s.d.Messages {
		msgs = append(msgs, *m)
	}
	for _, d := range s.d.Dead {
		dead = append(dead, *d)
	}
	for _, o := range s.d.Outbox {
		outbox = append(outbox, *o)
	}
	return msgs, dead, outbox
}
