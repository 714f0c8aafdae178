package models_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// TestShutdownRule steps the model through the stop and drain of one worker (docs/semantics.md,
// "Shutdown"): which step sequences it takes and which it refuses as impossible for a correct
// worker group, with the refusal's words.
func TestShutdownRule(t *testing.T) {
	enq := func(id string) traces.Step {
		return traces.Step{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "m", ID: id, MaxAttempts: 3}}
	}
	fetch := traces.Step{Op: traces.OpConsumerFetch, Args: traces.Args{Worker: 1, Mailbox: "m", Profile: traces.ProfileLeased, LeaseFor: 30}}
	handle := traces.Step{Op: traces.OpConsumerHandle, Args: traces.Args{Worker: 1, Mailbox: "m", Profile: traces.ProfileLeased, Outcome: traces.OutcomeOK}}
	stop := traces.Step{Op: traces.OpWorkerStop, Args: traces.Args{Worker: 1}}
	drain := func(outcome string) traces.Step {
		return traces.Step{Op: traces.OpWorkerDrain, Args: traces.Args{Worker: 1, Outcome: outcome}}
	}
	for _, tc := range []struct {
		name  string
		steps []traces.Step
		// refused is the index of the step the model refuses (-1: it takes every one), and why
		// the words it gives.
		refused int
		why     string
	}{
		{"stop while idle, then drain", []traces.Step{enq("a"), stop, drain(traces.OutcomeDrained)}, -1, ""},
		{"fetched before the stop, handled after it", []traces.Step{enq("a"), fetch, stop, handle, drain(traces.OutcomeDrained)}, -1, ""},
		{"the fetch under way at the stop completes", []traces.Step{enq("a"), stop, fetch, handle, drain(traces.OutcomeDrained)}, -1, ""},
		{"a new fetch after the stop", []traces.Step{enq("a"), enq("b"), fetch, stop, handle, fetch}, 5, "started a new fetch after its worker_stop"},
		{"drained holding an unhandled fetch", []traces.Step{enq("a"), fetch, stop, drain(traces.OutcomeDrained)}, 3, "drained holding its fetch"},
		{"the drain timeout abandons the delivery", []traces.Step{enq("a"), fetch, stop, drain(traces.OutcomeTimedOut)}, -1, ""},
		{"a step after the drain", []traces.Step{enq("a"), stop, drain(traces.OutcomeDrained), fetch}, 3, "after its worker_drain"},
		{"a drain without a stop", []traces.Step{enq("a"), drain(traces.OutcomeDrained)}, 1, "without a worker_stop"},
		{"a crash forgets the stop: the restarted worker is new", []traces.Step{enq("a"), stop, drain(traces.OutcomeDrained), {Op: traces.OpCrash}, fetch, handle}, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := models.Init(models.Config{})
			for i, st := range tc.steps {
				n, _, err := models.Step(s, st.Op, 0, st.Args)
				if i == tc.refused {
					if !errors.Is(err, models.ErrMalformed) || !strings.Contains(err.Error(), tc.why) {
						t.Fatalf("step %d (%s): got %v, want a refusal saying %q", i, st.Op, err, tc.why)
					}
					return
				}
				if err != nil {
					t.Fatalf("step %d (%s): %v", i, st.Op, err)
				}
				s = n
			}
			if tc.refused >= 0 {
				t.Fatalf("the model took every step; want it to refuse step %d", tc.refused)
			}
		})
	}
}
