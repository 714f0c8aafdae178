package models

import (
	"fmt"
	"strings"

	"github.com/pconform/pconform/traces"
)

// Starting mid-life. A history recorded on a database that already held rows begins in the state
// those rows make, not in the empty one: the recorder states them (actordelivery.SnapshotRow) and a
// checker adds them to a fresh Machine with Adopt before the first step. A later Open of the same
// database states its rows again; Compare then holds them to the state the machine reached.

// The tables of a StartRow.
const (
	StartMessage    = "message"
	StartDeadLetter = "dead_letter"
	StartOutbox     = "outbox"
	StartProcessed  = "processed"
	StartCheckpoint = "checkpoint"
	StartPurgedID   = "purged_id"
)

// StartRow is one durable row of a store's state, in the model's time units: the row a recorder
// states when recording starts on a database that holds it. Table says which kind of row it is
// and which fields it uses (as actordelivery.SnapshotRow's). Leased is set for a message that
// carries a lease token or an outbox row that carries a claim token; Until is then when the lease
// or claim ends. FinalAt is an acked message's acked_at, a dead letter's dead_at, a final outbox
// row's final_at. ExpiresAt is a processed mark's or a purged id's end.
type StartRow struct {
	Table                                        string
	Mailbox, ID, Key, Payload, State             string
	Priority, Attempts, MaxAttempts, MaxDelivery int
	Target, Reason, Consumer, Actor              string
	Version                                      int64
	Leased                                       bool
	// Token, when above 0 on a leased row, is the model token the row carries: one a row
	// adopted before was given (an outbox claim gives one token to every row it claims).
	Token                                  int
	Until, AvailableAt, FinalAt, ExpiresAt int64
}

// Adopt adds r to the machine's state as part of the state it starts from, at time at (the
// snapshot's time, which becomes the machine's time if later). A message or outbox row gets the
// next seq, so rows adopted in the store's creation order keep its delivery order; a leased row
// gets the next token, which Adopt returns (0 for none) so that the caller can bind the store's
// token to it.
//
// Errors: a row that breaks the state's invariants (an id held twice, attempts above the bound, a
// token on an acked row, an unknown table or state); the machine is then unchanged.
func (m *Machine) Adopt(at int64, r StartRow) (token int, err error) {
	s := &m.s
	if err := r.check(); err != nil {
		return 0, err
	}
	switch r.Table {
	case StartMessage, StartDeadLetter:
		if s.has(r.ID) {
			return 0, fmt.Errorf("models: adopt %s %q: the id is held already (a message, a dead letter or a purged id)", r.Table, r.ID)
		}
	case StartOutbox:
		if _, ok := s.outbox[r.ID]; ok {
			return 0, fmt.Errorf("models: adopt outbox row %q: the id is held already", r.ID)
		}
	case StartCheckpoint:
		if _, ok := s.checkpoints[r.Actor]; ok {
			return 0, fmt.Errorf("models: adopt checkpoint %q: stated twice", r.Actor)
		}
	}
	if r.Token > s.lastToken {
		return 0, fmt.Errorf("models: adopt %s %q: token %d was never issued (the last is %d)", r.Table, r.ID, r.Token, s.lastToken)
	}
	s.now = max(s.now, at)
	switch r.Table {
	case StartMessage:
		s.lastSeq++
		msg := message{mailbox: r.Mailbox, id: r.ID, key: r.Key, payload: r.Payload, priority: r.Priority,
			maxAttempts: r.MaxAttempts, attempts: r.Attempts, availableAt: r.AvailableAt, seq: s.lastSeq}
		if r.State == traces.StateAcked {
			msg.acked, msg.ackedAt = true, r.FinalAt
			s.messages[r.ID] = msg
			s.aging.acked.push(agedEntry{r.ID, r.FinalAt})
			return 0, nil
		}
		if r.Leased {
			msg.token, msg.leaseUntil = s.token(r.Token), r.Until
		}
		s.putReady(msg)
		return msg.token, nil
	case StartDeadLetter:
		s.dead[r.ID] = deadLetter{mailbox: r.Mailbox, id: r.ID, attempts: r.Attempts, reason: r.Reason, deadAt: r.FinalAt,
			key: r.Key, priority: r.Priority, maxAttempts: r.MaxAttempts, payload: r.Payload}
		s.aging.dead.push(agedEntry{r.ID, r.FinalAt})
	case StartOutbox:
		s.lastSeq++
		o := outboxRow{id: r.ID, target: r.Target, key: r.Key, payload: r.Payload, priority: r.Priority,
			maxAttempts: r.MaxAttempts, maxDeliveryAttempts: r.MaxDelivery, deliveryAttempts: r.Attempts,
			availableAt: r.AvailableAt, seq: s.lastSeq}
		switch r.State {
		case traces.StateCompleted:
			o.completed, o.finalAt = true, r.FinalAt
		case traces.StateDeadLetter:
			o.deadReason, o.finalAt = r.Reason, r.FinalAt
		}
		if r.Leased {
			o.token, o.claimUntil = s.token(r.Token), r.Until
		}
		s.putOutbox(o)
		return o.token, nil
	case StartProcessed:
		k := processedKey{r.Consumer, r.ID}
		s.processed[k] = r.ExpiresAt
		s.aging.processed.push(processedEntry{k, r.ExpiresAt}, processedFirst)
	case StartCheckpoint:
		if mailbox, isLog := strings.CutPrefix(r.Actor, traces.EffectsActorPrefix); isLog {
			// An effect log's version is the number of its committed effects, whose ids
			// no later step reads: the model keeps the number only.
			if s.effectsForgotten == nil {
				s.effectsForgotten = map[string]int{}
			}
			s.effectsForgotten[mailbox] = int(r.Version)
			return 0, nil
		}
		s.checkpoints[r.Actor] = checkpoint{version: int(r.Version)}
	case StartPurgedID:
		if r.ExpiresAt > s.now {
			s.retired[r.ID] = r.ExpiresAt
			s.aging.retired.push(agedEntry{r.ID, r.ExpiresAt})
		}
	}
	return 0, nil
}

// token is t, or the next token when t is 0.
func (s *State) token(t int) int {
	if t > 0 {
		return t
	}
	s.lastToken++
	return s.lastToken
}

// check refuses a row that no store state holds.
func (r StartRow) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("models: adopt %s %q: %s", r.Table, r.ID+r.Actor, fmt.Sprintf(format, args...))
	}
	switch r.Table {
	case StartMessage, StartDeadLetter, StartOutbox:
		switch {
		case r.ID == "":
			return bad("no id")
		case r.MaxAttempts < 1:
			return bad("max_attempts %d is below 1", r.MaxAttempts)
		case r.Attempts < 0:
			return bad("attempts %d is negative", r.Attempts)
		}
	}
	switch r.Table {
	case StartMessage:
		switch {
		case r.Mailbox == "":
			return bad("no mailbox")
		case r.State != traces.StateReady && r.State != traces.StateAcked:
			return bad("state %q is neither ready nor acked", r.State)
		case r.Attempts > r.MaxAttempts:
			return bad("attempts %d exceed max_attempts %d", r.Attempts, r.MaxAttempts)
		case r.Leased && r.State != traces.StateReady:
			return bad("an acked row carries a lease")
		}
	case StartDeadLetter:
		if r.Mailbox == "" {
			return bad("no mailbox")
		}
	case StartOutbox:
		switch {
		case r.Target == "":
			return bad("no target")
		case r.MaxDelivery < 1:
			return bad("max_delivery_attempts %d is below 1", r.MaxDelivery)
		case r.State != traces.StatePending && r.State != traces.StateCompleted && r.State != traces.StateDeadLetter:
			return bad("state %q is not pending, completed or dead_letter", r.State)
		case r.Leased && r.State != traces.StatePending:
			return bad("a %s row carries a claim", r.State)
		case (r.State == traces.StateDeadLetter) != (r.Reason != ""):
			return bad("a reason belongs on exactly a dead_letter row")
		}
	case StartProcessed:
		if r.Consumer == "" && r.ID == "" {
			return bad("no consumer and no message id")
		}
	case StartCheckpoint:
		if r.Actor == "" || r.Version < 1 {
			return bad("actor %q at version %d (want an actor at version 1 or more)", r.Actor, r.Version)
		}
	case StartPurgedID:
		if r.ID == "" {
			return bad("no id")
		}
	default:
		return fmt.Errorf("models: adopt: unknown table %q", r.Table)
	}
	return nil
}

// Compare reports how r, a row a store stated at time at, differs from the machine's state ("" when
// it holds r as stated) and the model token of the row's lease or claim (0 for none), for the
// caller to check against its binding of the store's token. A processed mark or purged id that has
// ended by at is not compared: both sides may still keep one until a cleanup.
func (m *Machine) Compare(at int64, r StartRow) (token int, diff string) {
	s := &m.s
	if err := r.check(); err != nil {
		return 0, err.Error()
	}
	show := func(got, want any) string { return fmt.Sprintf("the store states %+v, the model holds %+v", got, want) }
	switch r.Table {
	case StartMessage:
		msg, ok := s.messages[r.ID]
		if !ok {
			return 0, "the model holds no message " + r.ID
		}
		want := message{mailbox: r.Mailbox, id: r.ID, key: r.Key, payload: r.Payload, priority: r.Priority,
			maxAttempts: r.MaxAttempts, attempts: r.Attempts, availableAt: r.AvailableAt, seq: msg.seq,
			acked: r.State == traces.StateAcked, token: msg.token}
		if want.acked {
			want.ackedAt = r.FinalAt
		}
		if r.Leased {
			want.leaseUntil = r.Until
		}
		if r.Leased != (msg.token != 0) || want != msg {
			return 0, show(r, msg)
		}
		return msg.token, ""
	case StartDeadLetter:
		d, ok := s.dead[r.ID]
		want := deadLetter{mailbox: r.Mailbox, id: r.ID, attempts: r.Attempts, reason: r.Reason, deadAt: r.FinalAt,
			key: r.Key, priority: r.Priority, maxAttempts: r.MaxAttempts, payload: r.Payload}
		if !ok || d != want {
			return 0, show(r, d)
		}
	case StartOutbox:
		o, ok := s.outbox[r.ID]
		if !ok {
			return 0, "the model holds no outbox row " + r.ID
		}
		want := outboxRow{id: r.ID, target: r.Target, key: r.Key, payload: r.Payload, priority: r.Priority,
			maxAttempts: r.MaxAttempts, maxDeliveryAttempts: r.MaxDelivery, deliveryAttempts: r.Attempts,
			availableAt: r.AvailableAt, seq: o.seq, completed: r.State == traces.StateCompleted,
			deadReason: r.Reason, token: o.token}
		if r.State != traces.StatePending {
			want.finalAt = r.FinalAt
		}
		if r.Leased {
			want.claimUntil = r.Until
		}
		if r.Leased != (o.token != 0) || want != o {
			return 0, show(r, o)
		}
		return o.token, ""
	case StartProcessed:
		if r.ExpiresAt <= at {
			return 0, ""
		}
		if exp, ok := s.processed[processedKey{r.Consumer, r.ID}]; !ok || exp != r.ExpiresAt {
			return 0, show(r, exp)
		}
	case StartCheckpoint:
		if mailbox, isLog := strings.CutPrefix(r.Actor, traces.EffectsActorPrefix); isLog {
			if v := s.effectsForgotten[mailbox] + len(s.effects[mailbox]); int64(v) != r.Version {
				return 0, fmt.Sprintf("the store states effect log %q at version %d, the model at %d", r.Actor, r.Version, v)
			}
			return 0, ""
		}
		if cp, ok := s.checkpoints[r.Actor]; !ok || int64(cp.version) != r.Version {
			return 0, fmt.Sprintf("the store states checkpoint %q at version %d, the model at %d", r.Actor, r.Version, cp.version)
		}
	case StartPurgedID:
		if r.ExpiresAt <= at {
			return 0, ""
		}
		if until, ok := s.retired[r.ID]; !ok || until != r.ExpiresAt {
			return 0, show(r, until)
		}
	}
	return 0, ""
}

// StartCounts counts what a store's snapshot states, table by table, as Compare compares it:
// processed marks and purged ids only while live at the snapshot's time, checkpoints but the
// effect logs.
type StartCounts struct {
	Messages, DeadLetters, Outbox, Processed, Checkpoints, PurgedIDs int
}

// Add counts r, stated at time at.
func (c *StartCounts) Add(at int64, r StartRow) {
	switch r.Table {
	case StartMessage:
		c.Messages++
	case StartDeadLetter:
		c.DeadLetters++
	case StartOutbox:
		c.Outbox++
	case StartProcessed:
		if r.ExpiresAt > at {
			c.Processed++
		}
	case StartCheckpoint:
		// An effect log is compared by its version alone: the model counts effects, not rows.
		if !strings.HasPrefix(r.Actor, traces.EffectsActorPrefix) {
			c.Checkpoints++
		}
	case StartPurgedID:
		if r.ExpiresAt > at {
			c.PurgedIDs++
		}
	}
}

// Counts is what the machine holds at time at, counted as StartCounts counts a snapshot.
func (m *Machine) Counts(at int64) StartCounts {
	s := &m.s
	c := StartCounts{Messages: len(s.messages), DeadLetters: len(s.dead), Outbox: len(s.outbox), Checkpoints: len(s.checkpoints)}
	for _, exp := range s.processed {
		if exp > at {
			c.Processed++
		}
	}
	for _, until := range s.retired {
		if until > at {
			c.PurgedIDs++
		}
	}
	return c
}
