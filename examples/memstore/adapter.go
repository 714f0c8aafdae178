package memstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Target is the adapter: it runs the store-level steps of a trace on a Store. Wrap it with
// adapter.WithProtocol for the protocol steps (NewTarget does).
type Target struct {
	st *Store
}

// NewTarget opens an empty store and returns its adapter with the reference protocol steps under
// the store's profile.
func NewTarget() replay.Target {
	st, _ := Open(nil) // an empty store always opens
	return adapter.WithProtocol(&Target{st: st}, Profile())
}

// Capabilities declares what the store lacks: retention, processed marks, checkpoints, redrive,
// its own consumer and publisher, and the time of a dead letter.
func (t *Target) Capabilities() replay.Capabilities {
	return replay.Capabilities{
		Unsupported: []traces.Op{
			traces.OpPurge, traces.OpMarkProcessed, traces.OpSaveCheckpoint, traces.OpLoadCheckpoint,
			traces.OpRedrive, traces.OpListRedrives, traces.OpConsumerFetch, traces.OpConsumerHandle,
			traces.OpPublisherDeliver, traces.OpCrash, traces.OpWake, traces.OpPollTick,
		},
		Unknown: []traces.Column{traces.ColDeadLetterDeadAt},
	}
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

// errKind maps the store's errors to the error kind the op reports.
func errKind(op traces.Op, err error) (string, error) {
	if err == nil {
		return "", nil
	}
	if errors.Is(err, ErrStale) || errors.Is(err, ErrNoRow) {
		return traces.Spec[op].Err, nil
	}
	return "", err
}

func message(m *Message, withToken bool) *replay.Message {
	if m == nil {
		return nil
	}
	out := &replay.Message{ID: m.ID, Attempts: m.Attempts}
	if withToken {
		out.Token = tokenString(m.Token)
	}
	return out
}

// Do runs one store-level step at logical time at.
func (t *Target) Do(_ context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	now := traces.At(at)
	var o replay.Observation
	var err error
	switch op {
	case traces.OpEnqueue:
		o.Duplicate = t.st.Enqueue(Message{Mailbox: a.Mailbox, ID: a.ID, Key: a.Key, Priority: a.Priority,
			Max: a.MaxAttempts, Payload: a.Payload}, now, traces.Duration(a.Delay))
	case traces.OpLease:
		o.Message = message(t.st.Lease(a.Mailbox, now, traces.Duration(a.LeaseFor)), true)
	case traces.OpPeek:
		o.Message = message(t.st.Peek(a.Mailbox, now), false)
	case traces.OpAck:
		err = t.st.Ack(a.ID, token(a.Token))
	case traces.OpNack:
		err = t.st.Nack(a.ID, token(a.Token), now, traces.Duration(a.Delay))
	case traces.OpAckByID:
		err = t.st.AckByID(a.ID)
	case traces.OpNackByID:
		err = t.st.NackByID(a.ID, now, traces.Duration(a.Delay))
	case traces.OpExtend:
		err = t.st.Extend(a.ID, token(a.Token), now, traces.Duration(a.LeaseFor))
	case traces.OpExpire:
		o.Affected = t.st.Expire(now)
	case traces.OpDeadLetter:
		err = t.st.DeadLetter(a.ID, a.Reason)
	case traces.OpOutboxEnqueue:
		maxClaims := a.MaxDeliveryAttempts
		if maxClaims == 0 {
			maxClaims = traces.DefaultMaxDeliveryAttempts
		}
		o.Duplicate = t.st.OutboxEnqueue(Outbox{ID: a.ID, Target: a.Target, Key: a.Key, Priority: a.Priority,
			Max: a.MaxAttempts, MaxClaims: maxClaims, Payload: a.Payload}, now)
	case traces.OpOutboxClaim:
		for _, r := range t.st.OutboxClaim(a.Limit, now, traces.Duration(a.ClaimFor)) {
			o.Claimed = append(o.Claimed, replay.ClaimedRow{ID: r.ID, DeliveryAttempts: r.Claims, Token: tokenString(r.Token)})
		}
	case traces.OpOutboxComplete:
		err = t.st.OutboxComplete(a.ID, token(a.Token))
	case traces.OpOutboxFail:
		err = t.st.OutboxFail(a.ID, token(a.Token), now, traces.Duration(a.Delay))
	case traces.OpOutboxDeadLetter:
		err = t.st.OutboxDeadLetter(a.ID, token(a.Token), a.Reason)
	case traces.OpAdvanceClock:
	default:
		return o, fmt.Errorf("memstore: %w: %s", replay.ErrUnsupported, op)
	}
	o.Err, err = errKind(op, err)
	return o, err
}

// outboxStates maps the store's outbox states to the trace's.
var outboxStates = map[string]string{
	"pending": traces.StatePending, "completed": traces.StateCompleted, "dead": traces.StateDeadLetter,
}

// Snapshot reads every row; times in logical seconds, tokens as strings.
func (t *Target) Snapshot(context.Context) (replay.Snapshot, error) {
	msgs, dead, outbox := t.st.Rows()
	var s replay.Snapshot
	for _, m := range msgs {
		s.Messages = append(s.Messages, replay.MessageRow{
			Mailbox: m.Mailbox, ID: m.ID, Key: m.Key, Priority: m.Priority, Payload: m.Payload,
			State: traces.StateReady, Attempts: m.Attempts, MaxAttempts: m.Max,
			AvailableAt: traces.Seconds(m.AvailableAt), Token: tokenString(m.Token), LeaseUntil: traces.Seconds(m.LeaseUntil),
		})
	}
	for _, d := range dead {
		s.DeadLetters = append(s.DeadLetters, traces.DeadLetterRow{
			Mailbox: d.Mailbox, ID: d.ID, Key: d.Key, Priority: d.Priority, Payload: d.Payload,
			Attempts: d.Attempts, MaxAttempts: d.Max, Reason: d.Reason,
		})
	}
	for _, r := range outbox {
		s.Outbox = append(s.Outbox, replay.OutboxRow{
			ID: r.ID, Target: r.Target, Key: r.Key, Priority: r.Priority, MaxAttempts: r.Max, Payload: r.Payload,
			State: outboxStates[r.State], DeliveryAttempts: r.Claims, AvailableAt: traces.Seconds(r.AvailableAt),
			Token: tokenString(r.Token), ClaimUntil: traces.Seconds(r.ClaimUntil), Reason: r.Reason,
		})
	}
	return s, nil
}
