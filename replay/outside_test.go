package replay_test

import (
	"path/filepath"
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// outsideTraces are the corpus's traces of tcEffectOutsideFoldCounterexample: a handler effect
// written outside the fold's transaction, as a consumer_effects_batch step of its own before the
// handle.
const outsideTraces = "../traces/corpus/tcEffectOutsideFoldCounterexample-*.json"

// TestOutsideFoldTraces replays the write-outside-the-fold counterexample. It must match the
// effect-outside-fold variant, and the reference model must diverge from it at exactly
// expect.diverges_at: the first effect committed apart from its acknowledgement, which the
// correct consumer never owes. The store refuses such a write (ErrOutsideTransaction): its
// consumer_effects_batch commits nothing and lists no effect, so its replay diverges at that same
// step.
//
// One trace: go test ./replay/ -run 'TestOutsideFoldTraces/^<name>$' -v
func TestOutsideFoldTraces(t *testing.T) {
	paths, err := filepath.Glob(outsideTraces)
	if err != nil || len(paths) == 0 {
		t.Fatalf("%s: %d traces, err %v", outsideTraces, len(paths), err)
	}
	for _, path := range paths {
		tr, err := traces.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tr.Name, func(t *testing.T) {
			if tr.Expect.Variant != targets.EffectOutsideFold {
				t.Fatalf("expect.variant %q, want %s", tr.Expect.Variant, targets.EffectOutsideFold)
			}
			at := tr.Expect.DivergesAt
			if at < 0 || tr.Steps[at].Op != traces.OpConsumerEffectsBatch || len(tr.Steps[at].Result.Effects) == 0 {
				t.Fatalf("expect.diverges_at %d is not an effect committed outside the fold", at)
			}
			for _, c := range []struct {
				target  string
				outcome replay.Outcome
				step    int
			}{
				{targets.EffectOutsideFold, replay.Match, -1},
				{targets.Model, replay.Diverged, at},
				{targets.Store, replay.Diverged, at},
			} {
				v := replayOn(t, tr, c.target, actordelivery.BackendSQLite, replay.Options{}).verdict
				if v.Outcome != c.outcome || (c.outcome != replay.Match && v.Step != c.step) {
					t.Errorf("replay against %s: %s at step %d, want %s at step %d\n%s",
						c.target, v.Outcome, v.Step, c.outcome, c.step, v)
				}
			}
		})
	}
}
