package memstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/pconform/pconform/adapter"
)

// Target is the adapter: it runs the store-level steps of a trace on a Store, a method per
// operation (adapter.Adapt). An operation it has no method for (retention, processed marks,
// checkpoints, redrive) is unsupported. Wrap it with adapter.WithProtocol for the protocol steps
// (NewTarget does).
type Target struct {
	st *Store
}

// NewTarget opens an empty store and returns its adapter with the reference protocol steps under
// the store's profile.
func NewTarget() adapter.Target {
	st, _ := Open(nil) // an empty store always opens
	return adapter.WithProtocol(&Target{st: st}, Profile())
}

// Capabilities declares the column the store does not keep: the time of a dead letter.
func (t *Target) Capabilities() adapter.Capabilities {
	return adapter.Capabilities{Unknown: []adapter.Column{adapter.ColDeadLetterDeadAt}}
}

// Reopen writes the store out and reads it back, as a restart would.
func (t *Target) Reopen(context.Context) error {
	disk, err := t.st.Close()
	if err != nil {
		return err
	}
	t.st, err = Open(disk)
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

// denied is the error a step of the store reports: a stale token or a missing row is the
// operation's documented error (adapter.ErrDenied), which changes nothing.
func denied(err error) error {
	if errors.Is(err, ErrStale) || errors.Is(err, ErrNoRow) {
		return fmt.Errorf("memstore: %w: %w", adapter.ErrDenied, err)
	}
	return err
}

func message(m *Message, withToken bool) *adapter.Message {
	if m == nil {
		return nil
	}
	out := &adapter.Message{ID: m.ID, Attempts: m.Attempts}
	if withToken {
		out.Token = tokenString(m.Token)
	}
	return out
}

// The store-level operations, one method each (adapter.Adapt): each runs at logical time at.

type (
	args = adapter.Args
	obs  = adapter.Observation
)

func (t *Target) Enqueue(_ context.Context, at int64, a args) (obs, error) {
	return obs{Duplicate: t.st.Enqueue(Message{Mailbox: a.Mailbox, ID: a.ID, Key: a.Key, Priority: a.Priority,
		Max: a.MaxAttempts, Payload: a.Payload}, adapter.At(at), adapter.Duration(a.Delay))}, nil
}

func (t *Target) Lease(_ context.Context, at int64, a args) (obs, error) {
	return obs{Message: message(t.st.Lease(a.Mailbox, adapter.At(at), adapter.Duration(a.LeaseFor)), true)}, nil
}

func (t *Target) Peek(_ context.Context, at int64, a args) (obs, error) {
	return obs{Message: message(t.st.Peek(a.Mailbox, adapter.At(at)), false)}, nil
}

func (t *Target) Ack(_ context.Context, _ int64, a args) (obs, error) {
	return obs{}, denied(t.st.Ack(a.ID, token(a.Token)))
}

func (t *Target) Nack(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, denied(t.st.Nack(a.ID, token(a.Token), adapter.At(at), adapter.Duration(a.Delay)))
}

func (t *Target) AckByID(_ context.Context, _ int64, a args) (obs, error) {
	return obs{}, denied(t.st.AckByID(a.ID))
}

func (t *Target) NackByID(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, denied(t.st.NackByID(a.ID, adapter.At(at), adapter.Duration(a.Delay)))
}

func (t *Target) Extend(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, denied(t.st.Extend(a.ID, token(a.Token), adapter.At(at), adapter.Duration(a.LeaseFor)))
}

func (t *Target) Expire(_ context.Context, at int64, _ args) (obs, error) {
	return obs{Affected: t.st.Expire(adapter.At(at))}, nil
}

func (t *Target) DeadLetter(_ context.Context, _ int64, a args) (obs, error) {
	return obs{}, denied(t.st.DeadLetter(a.ID, a.Reason))
}

func (t *Target) OutboxEnqueue(_ context.Context, at int64, a args) (obs, error) {
	return obs{Duplicate: t.st.OutboxEnqueue(Outbox{ID: a.ID, Target: a.Target, Key: a.Key, Priority: a.Priority,
		Max: a.MaxAttempts, MaxClaims: a.MaxDeliveryAttempts, Payload: a.Payload}, adapter.At(at))}, nil
}

func (t *Target) OutboxClaim(_ context.Context, at int64, a args) (obs, error) {
	var o obs
	for _, r := range t.st.OutboxClaim(a.Limit, adapter.At(at), adapter.Duration(a.ClaimFor)) {
		o.Claimed = append(o.Claimed, adapter.ClaimedRow{ID: r.ID, DeliveryAttempts: r.Claims, Token: tokenString(r.Token)})
	}
	return o, nil
}

func (t *Target) OutboxComplete(_ context.Context, _ int64, a args) (obs, error) {
	return obs{}, denied(t.st.OutboxComplete(a.ID, token(a.Token)))
}

func (t *Target) OutboxFail(_ context.Context, at int64, a args) (obs, error) {
	return obs{}, denied(t.st.OutboxFail(a.ID, token(a.Token), adapter.At(at), adapter.Duration(a.Delay)))
}

func (t *Target) OutboxDeadLetter(_ context.Context, _ int64, a args) (obs, error) {
	return obs{}, denied(t.st.OutboxDeadLetter(a.ID, token(a.Token), a.Reason))
}

// outboxStates maps the store's outbox states to the trace's.
var outboxStates = map[string]string{
	"pending": adapter.StatePending, "completed": adapter.StateCompleted, "dead": adapter.StateDeadLetter,
}

// Snapshot reads every row; times in logical seconds, tokens as strings.
func (t *Target) Snapshot(context.Context) (adapter.Snapshot, error) {
	msgs, dead, outbox := t.st.Rows()
	var s adapter.Snapshot
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
			Attempts: d.Attempts, MaxAttempts: d.Max, Reason: d.Reason,
		})
	}
	for _, r := range outbox {
		s.Outbox = append(s.Outbox, adapter.OutboxRow{
			ID: r.ID, Target: r.Target, Key: r.Key, Priority: r.Priority, MaxAttempts: r.Max, Payload: r.Payload,
			State: outboxStates[r.State], DeliveryAttempts: r.Claims, AvailableAt: adapter.Seconds(r.AvailableAt),
			Token: tokenString(r.Token), ClaimUntil: adapter.Seconds(r.ClaimUntil), Reason: r.Reason,
		})
	}
	return s, nil
}
