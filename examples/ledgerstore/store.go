package ledgerstore

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sort"
	"time"
)

// Errors a transaction's operations return.
var (
	// ErrLeaseLost: the token does not hold the message's lease.
	ErrLeaseLost = errors.New("ledgerstore: lease lost")
	// ErrNotFound: no ready message with that id.
	ErrNotFound = errors.New("ledgerstore: not found")
	// ErrClaimLost: the token does not hold the outbox row's claim.
	ErrClaimLost = errors.New("ledgerstore: claim lost")
)

// Dead-letter reasons the store and its runtime write.
const (
	ReasonMaxAttempts         = "max attempts reached"
	ReasonLeaseExpired        = "lease expired after max attempts"
	ReasonMaxDeliveryAttempts = "max delivery attempts reached"
)

// Message is a ready mailbox message. An ack deletes it.
type Message struct {
	Mailbox, ID, Key, Payload string
	Priority, Attempts, Max   int
	AvailableAt, LeaseUntil   time.Time
	Token                     uint64 // 0: no lease
	Seq                       uint64
}

// Dead is a dead-lettered message: the message as it was moved, why and when.
type Dead struct {
	Message
	Reason string
	DeadAt time.Time
}

// Outbox states.
const (
	Pending   = "pending"
	Completed = "completed"
	DeadState = "dead"
)

// Outbox is an outbox row: a message to enqueue into Target, with the row's own id.
type Outbox struct {
	ID, Target, Key, Payload string
	Priority, Max, MaxClaims int
	Claims                   int
	State, Reason            string
	AvailableAt, ClaimUntil  time.Time
	Token, Seq               uint64
}

// data is everything the store keeps.
type data struct {
	Messages map[string]Message
	Dead     map[string]Dead
	Outbox   map[string]Outbox
	// Ledger is, per mailbox, the ids whose handler effects committed, in commit order.
	Ledger    map[string][]string
	LastToken uint64
	LastSeq   uint64
}

func (d data) clone() data {
	c := d
	c.Messages, c.Dead, c.Outbox = maps.Clone(d.Messages), maps.Clone(d.Dead), maps.Clone(d.Outbox)
	c.Ledger = map[string][]string{}
	for mb, ids := range d.Ledger {
		c.Ledger[mb] = slices.Clip(ids)
	}
	return c
}

// Store is an in-memory mailbox, outbox and ledger. Every change runs in a transaction
// ([Store.Update]) that commits whole or not at all. Its durable state is what [Store.Close]
// returns.
type Store struct {
	d   data
	now func() time.Time
}

// Open opens a store from what an earlier Close returned (nil: an empty store); now is its clock.
func Open(disk []byte, now func() time.Time) (*Store, error) {
	s := &Store{now: now, d: data{Messages: map[string]Message{}, Dead: map[string]Dead{},
		Outbox: map[string]Outbox{}, Ledger: map[string][]string{}}}
	if disk == nil {
		return s, nil
	}
	return s, json.Unmarshal(disk, &s.d)
}

// Close returns the store's durable state.
func (s *Store) Close() ([]byte, error) { return json.Marshal(s.d) }

// Update runs fn in a transaction at the clock's time and commits it when fn returns nil.
func (s *Store) Update(fn func(tx *Tx) error) error {
	tx := &Tx{d: s.d.clone(), Now: s.now()}
	if err := fn(tx); err != nil {
		return err
	}
	s.d = tx.d
	return nil
}

// View runs fn on a read-only copy of the committed state.
func (s *Store) View(fn func(tx *Tx)) { fn(&Tx{d: s.d.clone(), Now: s.now()}) }

// Tx is one transaction.
type Tx struct {
	d   data
	Now time.Time
}

// live: a lease or claim holds until its end time, excluded.
func live(token uint64, until, now time.Time) bool { return token != 0 && until.After(now) }

// Enqueue inserts a ready message; it reports whether the id is taken (a ready or dead message).
func (tx *Tx) Enqueue(m Message, delay time.Duration) (duplicate bool) {
	_, ready := tx.d.Messages[m.ID]
	_, dead := tx.d.Dead[m.ID]
	if ready || dead {
		return true
	}
	tx.d.LastSeq++
	m.Seq, m.AvailableAt, m.Attempts, m.Token, m.LeaseUntil = tx.d.LastSeq, tx.Now.Add(delay), 0, 0, time.Time{}
	tx.d.Messages[m.ID] = m
	return false
}

// next is the mailbox's next deliverable message: highest priority, then earliest available,
// then first enqueued. A keyed message waits while an earlier one of its key has attempts left
// or a live lease.
func (tx *Tx) next(mailbox string) (Message, bool) {
	var rows []Message
	for _, m := range tx.d.Messages {
		if m.Mailbox == mailbox {
			rows = append(rows, m)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Seq < rows[j].Seq })
	var best Message
	found, blocked := false, map[string]bool{}
	for _, m := range rows {
		held := live(m.Token, m.LeaseUntil, tx.Now)
		ok := !m.AvailableAt.After(tx.Now) && !held && m.Attempts < m.Max && !blocked[m.Key]
		if m.Key != "" && (m.Attempts < m.Max || held) {
			blocked[m.Key] = true
		}
		if ok && (!found || m.Priority > best.Priority || m.Priority == best.Priority && m.AvailableAt.Before(best.AvailableAt)) {
			best, found = m, true
		}
	}
	return best, found
}

// Lease takes the mailbox's next message under a new token for d and counts the attempt.
func (tx *Tx) Lease(mailbox string, d time.Duration) (Message, bool) {
	m, ok := tx.next(mailbox)
	if !ok {
		return m, false
	}
	tx.d.LastToken++
	m.Token, m.LeaseUntil = tx.d.LastToken, tx.Now.Add(d)
	m.Attempts++
	tx.d.Messages[m.ID] = m
	return m, true
}

// Peek returns the mailbox's next message without leasing it.
func (tx *Tx) Peek(mailbox string) (Message, bool) { return tx.next(mailbox) }

// Get returns the ready message id.
// MailboxOf returns the mailbox of the message or dead letter with id, "" when there is none.
func (tx *Tx) MailboxOf(id string) string {
	if m, ok := tx.d.Messages[id]; ok {
		return m.Mailbox
	}
	if d, ok := tx.d.Dead[id]; ok {
		return d.Mailbox
	}
	return ""
}

func (tx *Tx) Get(id string) (Message, bool) {
	m, ok := tx.d.Messages[id]
	return m, ok
}

// Held returns the message token leases.
func (tx *Tx) Held(id string, token uint64) (Message, error) {
	m, ok := tx.d.Messages[id]
	if !ok || m.Token == 0 || m.Token != token {
		return m, ErrLeaseLost
	}
	return m, nil
}

// Ack deletes the message token leases.
func (tx *Tx) Ack(id string, token uint64) error {
	if _, err := tx.Held(id, token); err != nil {
		return err
	}
	delete(tx.d.Messages, id)
	return nil
}

// Nack ends token's lease; the message is available again after delay.
func (tx *Tx) Nack(id string, token uint64, delay time.Duration) error {
	m, err := tx.Held(id, token)
	if err == nil {
		m.Token, m.LeaseUntil, m.AvailableAt = 0, time.Time{}, tx.Now.Add(delay)
		tx.d.Messages[id] = m
	}
	return err
}

// AckByID deletes a ready message whatever lease it carries.
func (tx *Tx) AckByID(id string) error {
	if _, ok := tx.d.Messages[id]; !ok {
		return ErrNotFound
	}
	delete(tx.d.Messages, id)
	return nil
}

// NackByID counts an attempt (at most Max), ends any lease, and makes the message available
// after delay.
func (tx *Tx) NackByID(id string, delay time.Duration) error {
	m, ok := tx.d.Messages[id]
	if !ok {
		return ErrNotFound
	}
	m.Attempts = min(m.Attempts+1, m.Max)
	m.Token, m.LeaseUntil, m.AvailableAt = 0, time.Time{}, tx.Now.Add(delay)
	tx.d.Messages[id] = m
	return nil
}

// Extend moves token's lease end to now + d.
func (tx *Tx) Extend(id string, token uint64, d time.Duration) error {
	m, err := tx.Held(id, token)
	if err == nil {
		m.LeaseUntil = tx.Now.Add(d)
		tx.d.Messages[id] = m
	}
	return err
}

// Expire ends every lease that ran out and dead-letters the messages left with no attempts; it
// returns the leases it ended.
func (tx *Tx) Expire() int {
	n := 0
	for id, m := range tx.d.Messages {
		if m.Token == 0 || live(m.Token, m.LeaseUntil, tx.Now) {
			continue
		}
		n++
		m.Token, m.LeaseUntil = 0, time.Time{}
		tx.d.Messages[id] = m
		if m.Attempts >= m.Max {
			_ = tx.DeadLetter(id, ReasonLeaseExpired)
		}
	}
	return n
}

// DeadLetter moves a ready message to the dead letters, as it is.
func (tx *Tx) DeadLetter(id, reason string) error {
	m, ok := tx.d.Messages[id]
	if !ok {
		return ErrNotFound
	}
	delete(tx.d.Messages, id)
	m.Token, m.LeaseUntil = 0, time.Time{}
	tx.d.Dead[id] = Dead{Message: m, Reason: reason, DeadAt: tx.Now}
	return nil
}

// Record appends id to mailbox's ledger: a handler's effect.
func (tx *Tx) Record(mailbox, id string) {
	tx.d.Ledger[mailbox] = append(slices.Clip(tx.d.Ledger[mailbox]), id)
}

// OutboxEnqueue inserts a pending outbox row (MaxClaims 0: 10); it reports whether the id is taken.
func (tx *Tx) OutboxEnqueue(o Outbox) (duplicate bool) {
	if _, ok := tx.d.Outbox[o.ID]; ok {
		return true
	}
	if o.MaxClaims == 0 {
		o.MaxClaims = 10
	}
	tx.d.LastSeq++
	o.Seq, o.State, o.AvailableAt, o.Claims, o.Token = tx.d.LastSeq, Pending, tx.Now, 0, 0
	tx.d.Outbox[o.ID] = o
	return false
}

// OutboxClaim dead-letters the unclaimed rows without claims left, then claims up to limit
// available rows, oldest first, under one new token for d.
func (tx *Tx) OutboxClaim(limit int, d time.Duration) []Outbox {
	var rows []Outbox
	for id, o := range tx.d.Outbox {
		switch {
		case o.State != Pending || live(o.Token, o.ClaimUntil, tx.Now):
		case o.Claims >= o.MaxClaims:
			o.State, o.Reason, o.Token, o.ClaimUntil = DeadState, ReasonMaxDeliveryAttempts, 0, time.Time{}
			tx.d.Outbox[id] = o
		case !o.AvailableAt.After(tx.Now):
			rows = append(rows, o)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Seq < rows[j].Seq })
	tx.d.LastToken++
	rows = rows[:min(limit, len(rows))]
	for i := range rows {
		rows[i].Token, rows[i].ClaimUntil = tx.d.LastToken, tx.Now.Add(d)
		rows[i].Claims++
		tx.d.Outbox[rows[i].ID] = rows[i]
	}
	return rows
}

// Claimed returns the outbox row token claims.
func (tx *Tx) Claimed(id string, token uint64) (Outbox, error) {
	o, ok := tx.d.Outbox[id]
	if !ok || o.State != Pending || o.Token == 0 || o.Token != token {
		return o, ErrClaimLost
	}
	return o, nil
}

// OutboxRow returns outbox row id.
func (tx *Tx) OutboxRow(id string) (Outbox, bool) {
	o, ok := tx.d.Outbox[id]
	return o, ok
}

// OutboxSettle ends token's claim on row id: completed (state Completed), dead-lettered
// (DeadState, with reason) or released (Pending, available again after delay).
func (tx *Tx) OutboxSettle(id string, token uint64, state, reason string, delay time.Duration) error {
	o, err := tx.Claimed(id, token)
	if err != nil {
		return err
	}
	o.State, o.Reason, o.Token, o.ClaimUntil = state, reason, 0, time.Time{}
	if state == Pending {
		o.AvailableAt = tx.Now.Add(delay)
	}
	tx.d.Outbox[id] = o
	return nil
}

// Rows returns every message, dead letter, outbox row and ledger.
func (tx *Tx) Rows() ([]Message, []Dead, []Outbox, map[string][]string) {
	return slices.Collect(maps.Values(tx.d.Messages)), slices.Collect(maps.Values(tx.d.Dead)),
		slices.Collect(maps.Values(tx.d.Outbox)), tx.d.Ledger
}
