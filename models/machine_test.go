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

func TestMachineStopsAfterAFailedStep(t *testing.T) {
	m := NewMachine(Init(Config{}))
	if _, err := m.Step(traces.OpEnqueue, 5, traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	// Time going backwards is refused before anything changes: the machine goes on.
	if _, err := m.Step(traces.OpAck, 1, traces.Args{ID: "m1", Token: 1}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a step back in time: got %v, want ErrMalformed", err)
	}
	if _, err := m.Step(traces.OpPeek, 6, traces.Args{Mailbox: "a"}); err != nil {
		t.Fatalf("the machine stopped after a refused check: %v", err)
	}
	// A split delivery of an outbox row that does not exist fails inside the transition: the machine stops.
	_, err := m.Step(traces.OpPublisherDeliver, 7, traces.Args{Publisher: 1, ID: "nope", Token: 1, Profile: traces.ProfileSplit, Fault: traces.FaultNone})
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("delivering a missing outbox row: got %v, want ErrMalformed", err)
	}
	if _, err2 := m.Step(traces.OpPeek, 8, traces.Args{Mailbox: "a"}); !errors.Is(err2, ErrMalformed) {
		t.Errorf("after a failed transition the machine went on: %v", err2)
	}
}
