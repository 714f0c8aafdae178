package ledgerstore

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

//go:embed profile.json
var profileFile []byte

// Profile is the store's declared profile, read from profile.json.
func Profile() profile.Profile {
	p, err := profile.Read(bytes.NewReader(profileFile))
	if err != nil {
		// profile.json is part of the package; TestProfileReads keeps it valid.
		panic("ledgerstore: profile.json: " + err.Error())
	}
	return p
}

// Target is the store-level adapter: it runs a trace's store operations on a Store at the step's
// time. The protocol steps run on the store's own consumer and publisher (runtime.go).
type Target struct {
	st  *Store
	now time.Time
}

// NewTarget opens an empty store and returns its adapter with the store's own consumer and
// publisher running the protocol steps, under the store's profile.
func NewTarget() replay.Target {
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

// Capabilities declares what the store lacks: retention, processed marks, checkpoints and
// redrive. The protocol steps are the runtime's (adapter.WithRuntime).
func (t *Target) Capabilities() replay.Capabilities {
	return replay.Capabilities{Unsupported: []traces.Op{
		traces.OpPurge, traces.OpMarkProcessed, traces.OpSaveCheckpoint, traces.OpLoadCheckpoint,
		traces.OpRedrive, traces.OpListRedrives, traces.OpConsumerFetch, traces.OpConsumerHandle,
		traces.OpPublisherDeliver, traces.OpCrash, traces.OpWake, traces.OpPollTick,
	}}
}

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

// errKind maps the store's errors to the error kind op reports.
func errKind(op traces.Op, err error) (string, error) {
	if err == nil {
		return "", nil
	}
	if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrClaimLost) {
		return traces.Spec[op].Err, nil
	}
	return "", err
}

func message(m Message, ok, withToken bool) *replay.Message {
	if !ok {
		return nil
	}
	out := &replay.Message{ID: m.ID, Attempts: m.Attempts}
	if withToken {
		out.Token = tokenString(m.Token)
	}
	return out
}

// Do runs one store-level step at logical time at, in a transaction of its own.
func (t *Target) Do(_ context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	t.now = traces.At(at)
	d := traces.Duration
	var o replay.Observation
	var opErr error
	err := t.st.Update(func(tx *Tx) error {
		switch op {
		case traces.OpEnqueue:
			o.Duplicate = tx.Enqueue(Message{Mailbox: a.Mailbox, ID: a.ID, Key: a.Key, Priority: a.Priority,
				Max: a.MaxAttempts, Payload: a.Payload}, d(a.Delay))
		case traces.OpLease:
			m, ok := tx.Lease(a.Mailbox, d(a.LeaseFor))
			o.Message = message(m, ok, true)
		case traces.OpPeek:
			m, ok := tx.Peek(a.Mailbox)
			o.Message = message(m, ok, false)
		case traces.OpAck:
			opErr = tx.Ack(a.ID, token(a.Token))
		case traces.OpNack:
			opErr = tx.Nack(a.ID, token(a.Token), d(a.Delay))
		case traces.OpAckByID:
			opErr = tx.AckByID(a.ID)
		case traces.OpNackByID:
			opErr = tx.NackByID(a.ID, d(a.Delay))
		case traces.OpExtend:
			opErr = tx.Extend(a.ID, token(a.Token), d(a.LeaseFor))
		case traces.OpExpire:
			o.Affected = tx.Expire()
		case traces.OpDeadLetter:
			opErr = tx.DeadLetter(a.ID, a.Reason)
		case traces.OpOutboxEnqueue:
			o.Duplicate = tx.OutboxEnqueue(Outbox{ID: a.ID, Target: a.Target, Key: a.Key, Priority: a.Priority,
				Max: a.MaxAttempts, MaxClaims: a.MaxDeliveryAttempts, Payload: a.Payload})
		case traces.OpOutboxClaim:
			for _, r := range tx.OutboxClaim(a.Limit, d(a.ClaimFor)) {
				o.Claimed = append(o.Claimed, replay.ClaimedRow{ID: r.ID, DeliveryAttempts: r.Claims, Token: tokenString(r.Token)})
			}
		case traces.OpOutboxComplete:
			opErr = tx.OutboxSettle(a.ID, token(a.Token), Completed, "", 0)
		case traces.OpOutboxFail:
			opErr = tx.OutboxSettle(a.ID, token(a.Token), Pending, "", d(a.Delay))
		case traces.OpOutboxDeadLetter:
			opErr = tx.OutboxSettle(a.ID, token(a.Token), DeadState, a.Reason, 0)
		case traces.OpAdvanceClock:
		default:
			return fmt.Errorf("ledgerstore: %w: %s", replay.ErrUnsupported, op)
		}
		// A failed fence changes nothing: roll the transaction back.
		return opErr
	})
	if err != nil && !errors.Is(err, opErr) {
		return o, err
	}
	o.Err, err = errKind(op, opErr)
	return o, err
}

// outboxStates maps the store's outbox states to the trace's.
var outboxStates = map[string]string{
	Pending: traces.StatePending, Completed: traces.StateCompleted, DeadState: traces.StateDeadLetter,
}

// Snapshot reads every row and the ledger; times in logical seconds, tokens as strings.
func (t *Target) Snapshot(context.Context) (replay.Snapshot, error) {
	var s replay.Snapshot
	t.st.View(func(tx *Tx) {
		msgs, dead, outbox, ledger := tx.Rows()
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
				Attempts: d.Attempts, MaxAttempts: d.Max, Reason: d.Reason, DeadAt: traces.Seconds(d.DeadAt),
			})
		}
		for _, r := range outbox {
			s.Outbox = append(s.Outbox, replay.OutboxRow{
				ID: r.ID, Target: r.Target, Key: r.Key, Priority: r.Priority, MaxAttempts: r.Max, Payload: r.Payload,
				State: outboxStates[r.State], DeliveryAttempts: r.Claims, AvailableAt: traces.Seconds(r.AvailableAt),
				Token: tokenString(r.Token), ClaimUntil: traces.Seconds(r.ClaimUntil), Reason: r.Reason,
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
