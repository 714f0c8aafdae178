package replay_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// committedTraceDirs are the directories of committed trace files, relative to this package.
var committedTraceDirs = []string{
	"../traces/corpus",
	"../traces/hunted",
	"../traces/testdata/good",
}

// bridgeGoldenTraces is the bridge's golden output: several traces, one after the other.
const bridgeGoldenTraces = "../bridge/testdata/golden/green_traces.json"

// readTraceStream reads a file of traces written one after the other.
func readTraceStream(t *testing.T, path string) []*traces.Trace {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []*traces.Trace
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		tr, err := traces.Unmarshal(raw, fmt.Sprintf("%s#%d", path, len(out)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no trace", path)
	}
	return out
}

// committedTrace is a committed trace and the file it came from.
type committedTrace struct {
	tr   *traces.Trace
	path string
	// dir is the entry of committedTraceDirs it came from, or bridgeGoldenTraces.
	dir string
}

// committedTraces reads every committed trace: the files in committedTraceDirs, then the bridge's
// golden traces. A directory without a trace fails the test.
func committedTraces(t *testing.T) []committedTrace {
	t.Helper()
	var all []committedTrace
	for _, dir := range committedTraceDirs {
		ps, err := traces.Walk(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 0 {
			t.Fatalf("%s holds no trace", dir)
		}
		for _, path := range ps {
			tr, err := traces.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, committedTrace{tr, path, dir})
		}
	}
	for _, tr := range readTraceStream(t, bridgeGoldenTraces) {
		all = append(all, committedTrace{tr, bridgeGoldenTraces, bridgeGoldenTraces})
	}
	return all
}

// TestSymbolPathsAgree runs every committed trace through every path that binds token symbols,
// models.RunTrace, Run against the model target and Run against the real store, and requires
// that they agree: the same symbolized result for every step all of them ran, and the same
// verdict (a match, or a divergence at the same step). A binder that maps a symbol differently
// on one path (two namespaces merged, symbol 0 sent as an empty token) shows as a disagreement
// on the trace that exercises it.
//
// One trace: go test ./replay/ -run 'TestSymbolPathsAgree/^<name>$' -v
func TestSymbolPathsAgree(t *testing.T) {
	all := committedTraces(t)
	for _, n := range all {
		tr, path := n.tr, n.path
		t.Run(tr.Name, func(t *testing.T) {
			direct := runTraceVerdict(t, tr)
			model := replayOn(t, tr, targets.Model, actordelivery.BackendSQLite, replay.Options{}).verdict
			store := replayOn(t, tr, targets.Store, actordelivery.BackendSQLite, replay.Options{}).verdict
			paths := []struct {
				name string
				v    pathVerdict
			}{{"replay against the model", verdictOf(model)}, {"replay against the store", verdictOf(store)}}
			for _, p := range paths {
				if p.v.outcome != direct.outcome || p.v.step != direct.step {
					t.Errorf("%s: %s at step %d; models.RunTrace: %s at step %d (%s)",
						p.name, p.v.outcome, p.v.step, direct.outcome, direct.step, filepath.Base(path))
				}
				if d := cmp.Diff(direct.history, p.v.history); d != "" {
					t.Errorf("%s and models.RunTrace bind differently (-RunTrace +%s):\n%s", p.name, p.name, d)
				}
			}
		})
	}
}

// pathVerdict is what one path made of a trace: its symbolized step lines and where it stopped.
type pathVerdict struct {
	outcome replay.Outcome
	step    int
	history []string
}

func verdictOf(v replay.Verdict) pathVerdict {
	return pathVerdict{outcome: v.Outcome, step: v.Step, history: v.History}
}

// runTraceVerdict judges tr by models.RunTrace's results as Run judges a target's: the first
// step whose result differs, else the final snapshot.
func runTraceVerdict(t *testing.T, tr *traces.Trace) pathVerdict {
	t.Helper()
	results, final, err := models.RunTrace(models.Config{}, tr)
	if err != nil {
		t.Fatalf("models.RunTrace: %v", err)
	}
	var v pathVerdict
	for i, st := range tr.Steps {
		v.history = append(v.history, tracefmt.Step(i, st.Op, st.At, st.Args, results[i]))
		if d := cmp.Diff(st.Result, results[i], replay.CmpOptions); d != "" {
			v.outcome, v.step = replay.Diverged, i
			return v
		}
	}
	v.outcome, v.step = replay.Match, len(tr.Steps)
	if tr.Final != nil {
		want := replay.CloneSnapshot(*tr.Final)
		traces.Canonicalize(&want)
		traces.Canonicalize(&final)
		if d := cmp.Diff(want, final, replay.CmpOptions); d != "" {
			v.outcome, v.step = replay.Diverged, replay.FinalStep
		}
	}
	return v
}

func (v pathVerdict) String() string { return fmt.Sprintf("%s at %d", v.outcome, v.step) }

// firstBatchStep is the index of tr's first batch step (docs/semantics.md, "Batches"); ok is
// false when tr has none.
func firstBatchStep(tr *traces.Trace) (int, bool) {
	for i, st := range tr.Steps {
		switch st.Op {
		case traces.OpConsumerFetchBatch, traces.OpConsumerHandleBatch, traces.OpConsumerEffectsBatch, traces.OpPublisherDeliverBatch:
			return i, true
		}
	}
	return 0, false
}
