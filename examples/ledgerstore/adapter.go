package ledgerstore

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/pconform/pconform/adapter"
)

//go:embed profile.json
var profileFile []byte

// Profile is the store's declared profile, read from profile.json.
func Profile() adapter.Profile {
	p, err := adapter.ReadProfile(bytes.NewReader(profileFile))
	if err != nil {
		// profile.json is part of the package; TestProfileReads keeps it valid.
		panic("ledgerstore: profile.json: " + err.Error())
	}
	return p
}

// Target is the store-level adapter: it runs a trace's store operations on a Store at the step's
// time, a method per operation (adapter.Adapt). An operation it has no method for (retention,
// processed marks, checkpoints, redrive) is unsupported. The protocol steps run on the store's
// own consumer and publisher (runtime.go).
type Target struct {
	st  *Store
	now time.Time
}

// NewTarget opens an empty store and returns its adapter with the store's own consumer and
// publisher running the protocol steps, under the store's profile.
func NewTarget() adapter.Target {
	t := New()
	return adapter.WithRuntime(t, Profile(), t.Runtime())
}

// New opens an empty store and returns its store-level adapter.
func New() *Target {
	t := &Target{}
	t.st, _ = Open(nil, t.clock) // an empty store always opens
	return t
}

func (t *Target) clock() time.Time { return t.now }

// Reopen writes the store out and reads it back, as a restart would.
func (t *Target) Reopen(context.Context) error {
	disk, err := t.st.Close()
	if err != nil {
		return err
	}
	t.st, err = Open(disk, t.clock)
	return err
}

// Close does nothing: the store lives in memory.
func (t *Target) Close() error { return nil }

// token is the store's token for a trace's token string; 0 (which matches nothing) for a token
// the store never issued.
func token(s string) uint64 {
	n, ok := adapter.ParseToken(s)
	if !ok {
		return 0
	}
	return uint64(n)
}

func tokenString(n uint64) string {
	if n == 0 {
		return ""
	}
	return adapter.FormatToken(int64(n))
}

// denied is the error a step of the store reports: a lost lease or claim, or a missing row, is
// the operation's documented error (adapter.ErrDenied), which changes nothing.
func denied(err error) error {
	if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrClaimLost) {
		return fmt.Errorf("ledgerstore: %w: %w", adapter.ErrDenied, err)
	}
	return err
}

func message(m Message, ok, withToken bool) *adapter.Message {
	if !ok {
		return nil
	}
	out := &adapter.Message{ID: m.ID, Attempts: m.Attempts}
	if withToken {
		out.Token = tokenString(m.Token)
	}
	return out
}

// The store-level operations, one method each (adapter.Adapt), each in a transaction of its own
// at logical time at.

type (
	args = adapter.Args
	obs  = adapter.Observation
)

// update runs fn in a transaction at logical time at; an error of fn rolls it back, so a failed
// fence changes nothing.
func (t *Target) update(at int64, fn func(tx *Tx) error) error {
	t.now = adapter.At(at)
	return denied(t.st.Update(fn))
}

// run runs fn, which reports no error of the store, in a transaction at logical time at.
func (t *Target) run(at int64, fn func(tx *Tx)) error {
	return t.update(at, func(tx *Tx) error { fn(tx); return nil })
}

var d = adapter.Duration

func (t *Target) Enqueue(_ context.Context, at int64, a args) (o obs, err error) {
	err = t.run(at, func(tx *Tx) {
		o.Duplicate = tx.Enqueue(Message{Mailbox: a.Mailbox, ID: a.ID, Key: a.Key, Priority: a.Priority,
			Max: a.MaxAttempts, Payload: a.Payload}, d(a.Delay))
	})
	return o, err
}

func (t *Target) Lease(_ context.Context, at int64, a args) (o obs, err error) {
	err = t.run(at, func(tx *Tx) {
		m, ok := tx.Lease(a.Mailbox, d(a.LeaseFor))
		o.Message = message(m, ok, true)
	})
	return o, err
}

func (t *Target) Peek(_ context.Context, at int64, a args) (o obs, err error) {
	err = t.run(at, func(tx *Tx) {
		m, ok := tx.Peek(a.Mailbox)
		o.Message = message(m, ok, false)
	})
	return o, err
}

func (t *Target) Ack(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, t.update(at, func(tx *Tx) error { return tx.Ack(a.ID, token(a.Token)) })
}

func (t *Target) Nack(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, t.update(at, func(tx *Tx) error { return tx.Nack(a.ID, token(a.Token), d(a.Delay)) })
}

func (t *Target) AckByID(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, t.update(at, func(tx *Tx) error { return tx.AckByID(a.ID) })
}

func (t *Target) NackByID(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, t.update(at, func(tx *Tx) error { return tx.NackByID(a.ID, d(a.Delay)) })
}

func (t *Target) Extend(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, t.update(at, func(tx *Tx) error { return tx.Extend(a.ID, token(a.Token), d(a.LeaseFor)) })
}

func (t *Target) Expire(_ context.Context, at int64, _ args) (o obs, err error) {
	err = t.run(at, func(tx *Tx) { o.Affected = tx.Expire() })
	return o, err
}

func (t *Target) DeadLetter(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, t.update(at, func(tx *Tx) error { return tx.DeadLetter(a.ID, a.Reason) })
}

func (t *Target) OutboxEnqueue(_ context.Context, at int64, a args) (o obs, err error) {
	err = t.run(at, func(tx *Tx) {
		o.Duplicate = tx.OutboxEnqueue(Outbox{ID: a.ID, Target: a.Target, Key: a.Key, Priority: a.Priority,
			Max: a.MaxAttempts, MaxClaims: a.MaxDeliveryAttempts, Payload: a.Payload})
	})
	return o, err
}

func (t *Target) OutboxClaim(_ context.Context, at int64, a args) (o obs, err error) {
	err = t.run(at, func(tx *Tx) {
		for _, r := range tx.OutboxClaim(a.Limit, d(a.ClaimFor)) {
			o.Claimed = append(o.Claimed, adapter.ClaimedRow{ID: r.ID, DeliveryAttempts: r.Claims, Token: tokenString(r.Token)})
		}
	})
	return o, err
}

func (t *Target) OutboxComplete(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, t.update(at, func(tx *Tx) error { return tx.OutboxSettle(a.ID, token(a.Token), Completed, "", 0) })
}

func (t *Target) OutboxFail(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, t.update(at, func(tx *Tx) error { return tx.OutboxSettle(a.ID, token(a.Token), Pending, "", d(a.Delay)) })
}

func (t *Target) OutboxDeadLetter(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, t.update(at, func(tx *Tx) error {
		return tx.OutboxSettle(a.ID, token(a.Token), DeadState, a.Reason, 0)
	})
}

// outboxStates maps the store's outbox states to the trace's.
var outboxStates = map[string]string{
	Pending: adapter.StatePending, Completed: adapter.StateCompleted, DeadState: adapter.StateDeadLetter,
}

// Snapshot reads every row and the ledger; times in logical seconds, tokens as strings.
func (t *Target) Snapshot(context.Context) (adapter.Snapshot, error) {
	var s adapter.Snapshot
	t.st.View(func(tx *Tx) {
		msgs, dead, outbox, ledger := tx.Rows()
		for _, m := range msgs {
			s.Messages = append(s.Messages, adapter.MessageRow{
				Mailbox: m.Mailbox, ID: m.ID, Key: m.Key, Priority: m.Priority, Payload: m.Payload,
				State: adapter.StateReady, Attempts: m.Attempts, MaxAttempts: m.Max,
				AvailableAt: adapter.Seconds(m.AvailableAt), Token: tokenString(m.Token), LeaseUntil: adapter.Seconds(m.LeaseUntil),
			})
		}
		for _, d := range dead {
			s.DeadLetters = append(s.DeadLetters, adapter.DeadLetterRow{
				Mailbox: d.Mailbox, ID: d.ID, Key: d.Key, Priority: d.Priority, Payload: d.Payload,
				Attempts: d.Attempts, MaxAttempts: d.Max, Reason: d.Reason, DeadAt: adapter.Seconds(d.DeadAt),
			})
		}
		for _, r := range outbox {
			s.Outbox = append(s.Outbox, adapter.OutboxRow{
				ID: r.ID, Target: r.Target, Key: r.Key, Priority: r.Priority, MaxAttempts: r.Max, Payload: r.Payload,
				State: outboxStates[r.State], DeliveryAttempts: r.Claims, AvailableAt: adapter.Seconds(r.AvailableAt),
				Token: tokenString(r.Token), ClaimUntil: adapter.Seconds(r.ClaimUntil), Reason: r.Reason,
			})
		}
		s.Effects = map[string][]string{}
		for mb, ids := range ledger {
			if len(ids) > 0 {
				s.Effects[mb] = ids
			}
		}
	})
	return s, nil
}
