package replay_test

import (
	"path/filepath"
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// batchTraces are the corpus's traces of the P model's batch test cases: the green schedules of
// tcBatchLeasedWorkers, tcBatchLeaselessWorker and tcBatchPublisherFold, and one counterexample
// of each batch variant.
const batchTraces = "../traces/corpus/tcBatch*.json"

// TestBatchTraces replays the batch traces. A green trace must match the reference model; a
// counterexample must match its variant's target and diverge from the model at exactly
// expect.diverges_at, so replay reproduces each batch bug and the correct rules refuse it. The
// store runs the batch steps on its own batch code (FetchBatch, HandleBatch, DeliverBatch): a green
// trace must match it too, and a counterexample must diverge from it at expect.diverges_at, as
// from the model.
//
// One trace: go test ./replay/ -run 'TestBatchTraces/^<name>$' -v
func TestBatchTraces(t *testing.T) {
	paths, err := filepath.Glob(batchTraces)
	if err != nil || len(paths) == 0 {
		t.Fatalf("%s: %d traces, err %v", batchTraces, len(paths), err)
	}
	seen := map[string]bool{}
	for _, path := range paths {
		tr, err := traces.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		seen[tr.Expect.Variant] = true
		t.Run(tr.Name, func(t *testing.T) {
			want := func(target string, outcome replay.Outcome, step int) {
				t.Helper()
				v := replayOn(t, tr, target, actordelivery.BackendSQLite, replay.Options{}).verdict
				if v.Outcome != outcome || (outcome != replay.Match && v.Step != step) {
					t.Errorf("replay of %s against %s: %s at step %d, want %s at step %d\n%s",
						filepath.Base(path), target, v.Outcome, v.Step, outcome, step, v)
				}
			}
			if _, ok := firstBatchStep(tr); !ok {
				t.Fatalf("%s holds no batch step", path)
			}
			if tr.Expect.Variant == "" {
				want(targets.Model, replay.Match, -1)
				want(targets.Store, replay.Match, -1)
			} else {
				name, ok := targets.ForVariant(tr.Expect.Variant)
				if !ok {
					t.Fatalf("variant %q has no target", tr.Expect.Variant)
				}
				want(name, replay.Match, -1)
				want(targets.Model, replay.Diverged, tr.Expect.DivergesAt)
				want(targets.Store, replay.Diverged, tr.Expect.DivergesAt)
			}
		})
	}
	for _, v := range []string{targets.BatchAckBeforeEffects, targets.BatchAcksFailed, targets.BatchSkipsKeyHead} {
		if !seen[v] {
			t.Errorf("%s holds no counterexample of variant %s", batchTraces, v)
		}
	}
}
