package models

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/traces"
)

// symbolTrace uses token symbols unrelated to the model's tokens: 7 for the claim (model token 1),
// 3 for the first lease (model 2), 4 for the second (model 3); 9 is never bound.
func symbolTrace() *traces.Trace {
	return &traces.Trace{
		Format: traces.Format,
		Name:   "symbols",
		Expect: traces.Expect{DivergesAt: -1},
		Steps: []traces.Step{
			{Op: traces.OpEnqueue, At: 0, Args: traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 3}},
			{Op: traces.OpOutboxEnqueue, At: 0, Args: traces.Args{ID: "o1", Target: "a", MaxAttempts: 3}},
			{Op: traces.OpOutboxClaim, At: 0, Args: traces.Args{Limit: 1, ClaimFor: 10},
				Result: traces.Result{Claimed: []traces.Claimed{{ID: "o1", DeliveryAttempts: 1, Token: 7}}}},
			{Op: traces.OpLease, At: 0, Args: traces.Args{Mailbox: "a", LeaseFor: 10},
				Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 3}}},
			{Op: traces.OpAck, At: 1, Args: traces.Args{ID: "m1", Token: 9}, Result: traces.Result{Err: traces.ErrKindLeaseLost}},
			{Op: traces.OpAck, At: 1, Args: traces.Args{ID: "m1", Token: 7}, Result: traces.Result{Err: traces.ErrKindLeaseLost}},
			{Op: traces.OpPublisherDeliver, At: 1, Args: traces.Args{Publisher: 1, ID: "o1", Token: 7, Profile: fold, Fault: faultNone},
				Result: traces.Result{Action: traces.ActionDelivered}},
			{Op: traces.OpConsumerFetch, At: 2, Args: traces.Args{Worker: 1, Mailbox: "a", Profile: leased, LeaseFor: 10},
				Result: traces.Result{Message: &traces.Message{ID: "o1", Attempts: 1, Token: 4}}},
			{Op: traces.OpExtend, At: 2, Args: traces.Args{ID: "o1", Token: 4, LeaseFor: 20}},
		},
	}
}

func TestRunTraceBindsSymbols(t *testing.T) {
	tr := symbolTrace()
	results, final, err := RunTrace(Config{}, tr)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range tr.Steps {
		if d := cmp.Diff(st.Result, results[i]); d != "" {
			t.Errorf("step #%d %s (-trace +model):\n%s", i, DescribeOp(st.Op, st.Args), d)
		}
	}
	want := traces.Snapshot{
		Messages: []traces.MessageRow{
			{Mailbox: "a", ID: "m1", State: traces.StateReady, Attempts: 1, MaxAttempts: 3, Token: 3, LeaseUntil: 10},
			{Mailbox: "a", ID: "o1", State: traces.StateReady, Attempts: 1, MaxAttempts: 3, AvailableAt: 1, Token: 4, LeaseUntil: 22},
		},
		Outbox:      []traces.OutboxRow{{ID: "o1", Target: "a", MaxAttempts: 3, State: traces.StateCompleted, DeliveryAttempts: 1}},
		DeadLetters: []traces.DeadLetterRow{},
		Effects:     map[string][]string{},
	}
	if d := cmp.Diff(want, final); d != "" {
		t.Errorf("final snapshot (-want +got):\n%s", d)
	}
}

func TestRunTraceShowsMismatchedTokens(t *testing.T) {
	tr := symbolTrace()
	// The trace claims the second lease reuses symbol 3, already bound to the first lease: the
	// model's token is one the trace never bound, so it shows as a negative symbol and the
	// comparison shows the difference.
	tr.Steps[7].Result.Message.Token = 3
	tr.Steps[8].Args.Token = 3
	results, final, err := RunTrace(Config{}, tr)
	if err != nil {
		t.Fatal(err)
	}
	if got := results[7].Message.Token; got != -1 {
		t.Errorf("second lease's token = %d, want the stray symbol -1", got)
	}
	if results[8].Err != traces.ErrKindLeaseLost {
		t.Errorf("extend with the first lease's symbol on the second message: %+v, want lease_lost", results[8])
	}
	if got := final.Messages[1].Token; got != -1 {
		t.Errorf("final token of o1 = %d, want the stray symbol -1", got)
	}

	// A token the model issues where the trace expects no message is a stray too.
	tr = symbolTrace()
	tr.Steps[3].Result.Message = nil
	results, _, err = RunTrace(Config{}, tr)
	if err != nil {
		t.Fatal(err)
	}
	if got := results[3].Message.Token; got != -1 {
		t.Errorf("unexpected lease's token = %d, want the stray symbol -1", got)
	}
}

func TestRunTraceErrors(t *testing.T) {
	if _, _, err := RunTrace(Config{}, nil); !errors.Is(err, ErrNilTrace) {
		t.Errorf("nil trace: %v, want ErrNilTrace", err)
	}
	tr := symbolTrace()
	tr.Steps[4].At = -1
	results, final, err := RunTrace(Config{}, tr)
	wantMalformed(t, err)
	for _, part := range []string{`trace "symbols"`, "step 4", `ack(id="m1", token=9)`} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not mention %q", err, part)
		}
	}
	if len(results) != 4 || len(final.Messages) != 1 || final.Messages[0].Token != 3 {
		t.Errorf("got %d results and final %+v; want the 4 results and the state before step 4", len(results), final)
	}
}

func TestRunTraceMatchesRun(t *testing.T) {
	// A trace whose symbols are the model's own tokens gives the same results through both runners.
	for i := range 50 {
		g := newGen(uint64(i))
		var steps []traces.Step
		s := Init(Config{})
		for range 60 {
			st := g.step()
			next, r, err := Step(s, st.Op, st.At, st.Args)
			if err != nil {
				t.Fatal(err)
			}
			st.Result = r
			steps = append(steps, st)
			g.observe(st, r)
			s = next
		}
		_, viaRun, err := Run(Config{}, steps)
		if err != nil {
			t.Fatal(err)
		}
		viaTrace, final, err := RunTrace(Config{}, &traces.Trace{Steps: steps})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(viaRun, viaTrace); d != "" {
			t.Fatalf("seed %d: RunTrace and Run disagree (-Run +RunTrace):\n%s", i, d)
		}
		if d := cmp.Diff(s.Snapshot(), final); d != "" {
			t.Fatalf("seed %d: final snapshots disagree (-Run +RunTrace):\n%s", i, d)
		}
	}
}
