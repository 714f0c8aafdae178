package models

import (
	"slices"
	"testing"

	"github.com/pconform/pconform/traces"
)

// TestEffectOutsideFold runs the write outside the fold (Config.EffectOutsideFold) against the
// correct consumer: the effect commits in its own consumer_effects_batch step before the handle,
// so it is not committed again by the ack, and it stays when the ack is fenced off; the correct
// consumer owes no such step and commits the effect only with its ack.
func TestEffectOutsideFold(t *testing.T) {
	fetch := func(w int, at int64) traces.Step {
		return traces.Step{Op: traces.OpConsumerFetch, At: at,
			Args: traces.Args{Worker: w, Mailbox: "a", Profile: traces.ProfileLeased, LeaseFor: 2}}
	}
	effects := func(w int, at int64) traces.Step {
		return traces.Step{Op: traces.OpConsumerEffectsBatch, At: at, Args: traces.Args{Worker: w, Mailbox: "a", Fault: traces.FaultNone}}
	}
	handle := func(w int, at int64) traces.Step {
		return traces.Step{Op: traces.OpConsumerHandle, At: at,
			Args: traces.Args{Worker: w, Mailbox: "a", Profile: traces.ProfileLeased, Outcome: traces.OutcomeOK}}
	}
	enq := traces.Step{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 3}}
	run := func(t *testing.T, cfg Config, steps []traces.Step) ([]traces.Result, traces.Snapshot) {
		t.Helper()
		m := NewMachine(Init(cfg))
		var rs []traces.Result
		for i, s := range steps {
			r, err := m.Step(s.Op, s.At, s.Args)
			if err != nil {
				t.Fatalf("step %d (%s): %v", i, s.Op, err)
			}
			rs = append(rs, r)
		}
		return rs, m.Snapshot()
	}
	for _, c := range []struct {
		name  string
		steps []traces.Step
		// effectsStep is the index of the first effect step; want the variant's effect log at the
		// end, and wantCorrect the correct consumer's.
		effectsStep       int
		want, wantCorrect []string
	}{
		{"acked once", []traces.Step{enq, fetch(1, 0), effects(1, 0), handle(1, 0)}, 2,
			[]string{"m1"}, []string{"m1"}},
		// Worker 1's lease runs out; worker 2 takes m1 over. Worker 1's early effect stays although
		// its ack is lease_lost, and worker 2's commits the effect again.
		{"fenced off", []traces.Step{enq, fetch(1, 0), traces.Step{Op: traces.OpAdvanceClock, At: 2}, fetch(2, 2),
			effects(1, 2), handle(1, 2), effects(2, 2), handle(2, 2)}, 4,
			[]string{"m1", "m1"}, []string{"m1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, snap := run(t, Config{EffectOutsideFold: true}, c.steps)
			if !slices.Equal(rs[c.effectsStep].Effects, []string{"m1"}) || !slices.Equal(snap.Effects["a"], c.want) {
				t.Errorf("outside the fold: effects step %q, effect log %q; want [m1] and %q", rs[c.effectsStep].Effects, snap.Effects["a"], c.want)
			}
			rs, snap = run(t, Config{}, c.steps)
			if len(rs[c.effectsStep].Effects) != 0 || !slices.Equal(snap.Effects["a"], c.wantCorrect) {
				t.Errorf("correct consumer: effects step %q, effect log %q; want none owed and %q", rs[c.effectsStep].Effects, snap.Effects["a"], c.wantCorrect)
			}
		})
	}
}
