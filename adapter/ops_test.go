package adapter_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/traces"
)

// opsStore has a method for enqueue and ack, a wrongly typed one for peek, and none for the rest.
type opsStore struct{ acks int }

func (s *opsStore) Snapshot(context.Context) (adapter.Snapshot, error) {
	return adapter.Snapshot{}, nil
}
func (s *opsStore) Reopen(context.Context) error { return nil }
func (s *opsStore) Close() error                 { return nil }

func (s *opsStore) Enqueue(_ context.Context, _ int64, a adapter.Args) (adapter.Observation, error) {
	return adapter.Observation{Duplicate: a.ID == "dup"}, nil
}

func (s *opsStore) Ack(_ context.Context, _ int64, a adapter.Args) (adapter.Observation, error) {
	s.acks++
	if a.Token != "1" {
		return adapter.Observation{}, errors.New("wrapped: " + adapter.ErrDenied.Error())
	}
	return adapter.Observation{}, nil
}

func (s *opsStore) NackByID(_ context.Context, _ int64, a adapter.Args) (adapter.Observation, error) {
	return adapter.Observation{}, wrapDenied(a.ID)
}

func wrapDenied(id string) error { return errors.Join(errors.New("no row "+id), adapter.ErrDenied) }

// Peek has the wrong type: it takes no Args.
func (s *opsStore) Peek(context.Context, int64) (adapter.Observation, error) {
	return adapter.Observation{}, nil
}

func TestAdapt(t *testing.T) {
	ctx := context.Background()
	tg := adapter.Adapt(&opsStore{})
	caps := tg.(interface{ Capabilities() adapter.Capabilities }).Capabilities()
	for _, op := range []traces.Op{traces.OpLease, traces.OpPurge, traces.OpConsumerFetch} {
		if !slices.Contains(caps.Unsupported, op) {
			t.Errorf("%s has no method but is not declared unsupported: %v", op, caps.Unsupported)
		}
	}
	for _, op := range []traces.Op{traces.OpEnqueue, traces.OpAck, traces.OpPeek, traces.OpAdvanceClock} {
		if slices.Contains(caps.Unsupported, op) {
			t.Errorf("%s is declared unsupported", op)
		}
	}
	for _, tc := range []struct {
		op        traces.Op
		a         adapter.Args
		wantErr   string // a substring of the step's error; "" for none
		wantKind  string
		duplicate bool
	}{
		{op: traces.OpEnqueue, a: adapter.Args{ID: "dup"}, duplicate: true},
		{op: traces.OpNackByID, a: adapter.Args{ID: "m1"}, wantKind: traces.ErrKindNotFound},
		// An error that only mentions ErrDenied's words does not wrap it: it fails the step.
		{op: traces.OpAck, a: adapter.Args{Token: "2"}, wantErr: "wrapped"},
		{op: traces.OpAck, a: adapter.Args{Token: "1"}},
		{op: traces.OpPeek, wantErr: "has type"},
		{op: traces.OpLease, wantErr: "has no method Lease"},
		{op: traces.OpAdvanceClock},
	} {
		o, err := tg.Do(ctx, tc.op, 0, tc.a)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.op, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", tc.op, err, tc.wantErr)
		case o.Err != tc.wantKind || o.Duplicate != tc.duplicate:
			t.Errorf("%s: got err %q duplicate %v, want %q %v", tc.op, o.Err, o.Duplicate, tc.wantKind, tc.duplicate)
		}
	}
}

func TestMethodName(t *testing.T) {
	for op, want := range map[traces.Op]string{
		traces.OpEnqueue: "Enqueue", traces.OpAckByID: "AckByID", traces.OpOutboxDeadLetter: "OutboxDeadLetter",
		traces.OpConsumerFetch: "ConsumerFetch", traces.OpListRedrives: "ListRedrives",
	} {
		if got := adapter.MethodName(op); got != want {
			t.Errorf("MethodName(%s) = %s, want %s", op, got, want)
		}
	}
}

// TestUnknowableColumns keeps the column constants of this package in step with the trace format.
func TestUnknowableColumns(t *testing.T) {
	mine := []adapter.Column{
		adapter.ColMessageKey, adapter.ColMessagePriority, adapter.ColMessagePayload, adapter.ColMessageMaxAttempts,
		adapter.ColOutboxKey, adapter.ColOutboxPriority, adapter.ColOutboxPayload, adapter.ColOutboxMaxAttempts,
		adapter.ColOutboxReason, adapter.ColDeadLetterKey, adapter.ColDeadLetterPriority, adapter.ColDeadLetterPayload,
		adapter.ColDeadLetterMaxAttempts, adapter.ColDeadLetterDeadAt,
	}
	for _, c := range traces.Unknowable {
		if !slices.Contains(mine, c) {
			t.Errorf("traces.Unknowable has %s, which adapter does not name", c)
		}
	}
}

// countingConsumer fetches m1 for worker 1 and nothing for any other worker, and counts handles.
type countingConsumer struct{ handles int }

func (c *countingConsumer) Fetch(_ context.Context, _ int64, a adapter.Args) (*adapter.Message, error) {
	if a.Worker == 1 {
		return &adapter.Message{ID: "m1", Attempts: 1, Token: "1"}, nil
	}
	return nil, nil
}

func (c *countingConsumer) Handle(context.Context, int64, adapter.Args) (adapter.Observation, error) {
	c.handles++
	return adapter.Observation{Action: traces.ActionAcked}, nil
}

func (c *countingConsumer) Crash() {}

// TestRuntimeAnswersIdle: the store's Handle is called only for a worker holding a delivery.
func TestRuntimeAnswersIdle(t *testing.T) {
	ctx := context.Background()
	c := &countingConsumer{}
	tg := adapter.WithRuntime(&opsStore{}, adapter.Profile{}, adapter.Runtime{Consumer: c})
	steps := []struct {
		op     traces.Op
		worker int
		action string
	}{
		{traces.OpConsumerHandle, 1, traces.ActionIdle}, // nothing fetched yet
		{traces.OpConsumerFetch, 2, ""},                 // fetches nothing
		{traces.OpConsumerHandle, 2, traces.ActionIdle},
		{traces.OpConsumerFetch, 1, ""},
		{traces.OpConsumerHandle, 1, traces.ActionAcked},
		{traces.OpConsumerHandle, 1, traces.ActionIdle}, // handled already
		{traces.OpConsumerFetch, 1, ""},
		{traces.OpCrash, 0, ""},
		{traces.OpConsumerHandle, 1, traces.ActionIdle}, // the crash forgot it
	}
	for i, s := range steps {
		o, err := tg.Do(ctx, s.op, int64(i), adapter.Args{Worker: s.worker, Mailbox: "mb", Profile: traces.ProfileLeased, Outcome: traces.OutcomeOK})
		if err != nil {
			t.Fatalf("step %d %s: %v", i, s.op, err)
		}
		if s.op == traces.OpConsumerHandle && o.Action != s.action {
			t.Errorf("step %d: worker %d's handle reports %q, want %q", i, s.worker, o.Action, s.action)
		}
	}
	if c.handles != 1 {
		t.Errorf("the store's Handle ran %d times, want 1", c.handles)
	}
}
