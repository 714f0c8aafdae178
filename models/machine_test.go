package models

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/traces"
)

// TestMachineMatchesStep runs the same generated steps through Step and through a Machine: every
// result and every state must be the same, and the states handed out by Machine.State must not
// change as the machine goes on.
func TestMachineMatchesStep(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		g := newGen(seed)
		s := Init(Config{})
		m := NewMachine(s)
		var earlier []State
		var earlierDesc []string
		for i := range 300 {
			st := g.step()
			next, want, err := Step(s, st.Op, st.At, st.Args)
			if err != nil {
				t.Fatalf("seed %d step #%d: Step refused a generated step: %v", seed, i, err)
			}
			got, err := m.Step(st.Op, st.At, st.Args)
			if err != nil {
				t.Fatalf("seed %d step #%d: Machine refused a step Step accepts: %v", seed, i, err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("seed %d step #%d %s: results differ (-Step +Machine):\n%s", seed, i, DescribeOp(st.Op, st.Args), d)
			}
			if !Equal(next, m.State()) {
				t.Fatalf("seed %d step #%d %s: states differ:\nStep:\n%sMachine:\n%s", seed, i, DescribeOp(st.Op, st.Args), DescribeState(next), DescribeState(m.State()))
			}
			if i%50 == 0 {
				earlier = append(earlier, m.State())
				earlierDesc = append(earlierDesc, DescribeState(next))
			}
			g.observe(st, want)
			s = next
		}
		for k, e := range earlier {
			if DescribeState(e) != earlierDesc[k] {
				t.Fatalf("seed %d: a state Machine.State returned changed as the machine went on", seed)
			}
		}
	}
}

// TestMalformedStepChangesNothing runs every malformed transition the model refuses inside a
// step (not in its argument check) on a machine, and checks that the state after it equals the
// state before, clock and stop marks included, and that the machine goes on.
func TestMalformedStepChangesNothing(t *testing.T) {
	enq := traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 3}
	fetch := func(w int) traces.Args {
		return traces.Args{Worker: w, Mailbox: "a", LeaseFor: 30, Profile: traces.ProfileLeased}
	}
	type step struct {
		op traces.Op
		a  traces.Args
	}
	for _, tc := range []struct {
		name  string
		setup []step
		bad   step
	}{
		{"fetch while holding a fetch", []step{{traces.OpEnqueue, enq}, {traces.OpConsumerFetch, fetch(1)}},
			step{traces.OpConsumerFetch, fetch(1)}},
		{"handle of another mailbox", []step{{traces.OpEnqueue, enq}, {traces.OpConsumerFetch, fetch(1)}},
			step{traces.OpConsumerHandle, traces.Args{Worker: 1, Mailbox: "b", Outcome: traces.OutcomeOK, Profile: traces.ProfileLeased}}},
		{"first handle after a stop, on the other path", []step{{traces.OpEnqueue, enq}, {traces.OpConsumerFetch, fetch(1)}, {traces.OpWorkerStop, traces.Args{Worker: 1}}},
			step{traces.OpConsumerHandle, traces.Args{Worker: 1, Mailbox: "a", Outcome: traces.OutcomeOK, Profile: traces.ProfileLeaseless}}},
		{"fetch after a drain", []step{{traces.OpWorkerStop, traces.Args{Worker: 1}}, {traces.OpWorkerDrain, traces.Args{Worker: 1, Outcome: traces.OutcomeDrained}}},
			step{traces.OpConsumerFetch, fetch(1)}},
		{"drain without a stop", nil, step{traces.OpWorkerDrain, traces.Args{Worker: 1, Outcome: traces.OutcomeDrained}}},
		{"batch fetch while holding a fetch", []step{{traces.OpEnqueue, enq}, {traces.OpConsumerFetch, fetch(1)}},
			step{traces.OpConsumerFetchBatch, traces.Args{Worker: 1, Mailbox: "a", Profile: traces.ProfileLeased, Size: 2, LeaseFor: 5}}},
		{"fetch while holding a batch", []step{{traces.OpEnqueue, enq}, {traces.OpConsumerFetchBatch, traces.Args{Worker: 1, Mailbox: "a", Profile: traces.ProfileLeased, Size: 2, LeaseFor: 5}}},
			step{traces.OpConsumerFetch, fetch(1)}},
		{"batch handle with too few outcomes", []step{{traces.OpEnqueue, enq}, {traces.OpEnqueue, traces.Args{Mailbox: "a", ID: "m2", MaxAttempts: 2}},
			{traces.OpConsumerFetchBatch, traces.Args{Worker: 1, Mailbox: "a", Profile: traces.ProfileLeased, Size: 2, LeaseFor: 5}}},
			step{traces.OpConsumerHandleBatch, traces.Args{Worker: 1, Mailbox: "a", Profile: traces.ProfileLeased, Outcomes: []string{traces.OutcomeOK}, Fault: traces.FaultNone}}},
		{"batch drained unhandled", []step{{traces.OpEnqueue, enq}, {traces.OpConsumerFetchBatch, traces.Args{Worker: 1, Mailbox: "a", Profile: traces.ProfileLeased, Size: 2, LeaseFor: 5}},
			{traces.OpWorkerStop, traces.Args{Worker: 1}}},
			step{traces.OpWorkerDrain, traces.Args{Worker: 1, Outcome: traces.OutcomeDrained}}},
		{"batch delivery of a row never enqueued", []step{{traces.OpOutboxEnqueue, traces.Args{ID: "o1", Target: "a", MaxAttempts: 1}},
			{traces.OpOutboxClaim, traces.Args{Limit: 1, ClaimFor: 5}}},
			step{traces.OpPublisherDeliverBatch, traces.Args{Publisher: 1, IDs: []string{"o1", "nope"}, Token: 1, Fault: traces.FaultNone}}},
		{"split delivery of a row never enqueued", nil,
			step{traces.OpPublisherDeliver, traces.Args{Publisher: 1, ID: "nope", Token: 1, Profile: traces.ProfileSplit, Fault: traces.FaultNone}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(Init(Config{}))
			at := int64(1)
			for _, s := range tc.setup {
				if _, err := m.Step(s.op, at, s.a); err != nil {
					t.Fatalf("setup %s: %v", s.op, err)
				}
				at++
			}
			before := m.State()
			if _, err := m.Step(tc.bad.op, at+5, tc.bad.a); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s: got %v, want ErrMalformed", tc.bad.op, err)
			}
			if after := m.State(); !Equal(before, after) || after.Now() != before.Now() {
				t.Fatalf("the malformed %s changed the state:\nbefore %s\nafter  %s", tc.bad.op, DescribeState(before), DescribeState(after))
			}
			if _, err := m.Step(traces.OpPeek, at+6, traces.Args{Mailbox: "a"}); err != nil {
				t.Fatalf("the machine stopped after a malformed step: %v", err)
			}
		})
	}
}
