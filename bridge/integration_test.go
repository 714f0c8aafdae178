package bridge_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/traces"
)

// modelsDir is the real P project, relative to this package.
var modelsDir = filepath.Join("..", "models", "p")

// TestIntegrationModels is the bridge's one test that runs the real checker on the real P models:
// a few schedules per test case, and every test case must give traces (but a broken model
// machine's counterexample, which gives none), every trace must validate and read back as
// written, and each counterexample's trace must name its variant and divergence.
//
// The gate runs it in its corpus stage with PCONFORM_RECORDED_RUNS naming the runs its models
// stage recorded (scripts/pmodels.sh --logs, in models/p/PCheckerOutput/recorded): it then checks
// the project the models stage compiled, and that a corpus made from the recorded runs (100
// schedules each) is the corpus this fresh, shorter run gives. That is what lets one checker run
// per test case serve the model verdicts and every corpus. Without the variable it compiles a
// copy of the models first (a minute or more); -short skips it.
func TestIntegrationModels(t *testing.T) {
	requireP(t)
	if testing.Short() {
		t.Skip("-short: skipping the checker run on the real P models")
	}
	if matches, _ := filepath.Glob(filepath.Join(modelsDir, "*.pproj")); len(matches) == 0 {
		t.Skipf("no .pproj in %s yet; skipping the checker run on the real P models", modelsDir)
	}
	recorded := os.Getenv("PCONFORM_RECORDED_RUNS")
	cfg := bridge.Config{Seed: 1, Schedules: 3, PerTest: 2}
	if recorded != "" {
		cfg.ProjectDir = modelsDir
	} else {
		cfg.ProjectDir = copyTree(t, modelsDir)
		if err := os.RemoveAll(filepath.Join(cfg.ProjectDir, "PGenerated")); err != nil {
			t.Fatal(err)
		}
		cfg.Compile = true
	}
	corpus, err := bridge.RunChecker(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(corpus.Runs) == 0 {
		t.Fatal("the models list no test cases")
	}
	if recorded != "" {
		fromRuns := cfg
		fromRuns.FromRuns = recorded
		again, err := bridge.RunChecker(context.Background(), fromRuns)
		if err != nil {
			t.Fatalf("corpus from the recorded runs in %s: %v", recorded, err)
		}
		if diff := cmp.Diff(corpus, again); diff != "" {
			t.Errorf("the recorded runs in %s give another corpus than a fresh run with -s %d (-fresh +recorded):\n%s", recorded, cfg.Schedules, diff)
		}
	}
	perTest := map[string]int{}
	names := map[string]bool{}
	for _, tr := range corpus.Traces {
		perTest[tr.Origin.TestCase]++
		if names[tr.Name] {
			t.Errorf("two traces named %s", tr.Name)
		}
		names[tr.Name] = true
		if err := traces.Validate(tr); err != nil {
			t.Errorf("%s: %v", tr.Name, err)
			continue
		}
		data, err := traces.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		back, err := traces.Unmarshal(data, tr.Name)
		if err != nil {
			t.Fatalf("%s does not read back: %v", tr.Name, err)
		}
		if diff := cmp.Diff(tr, back); diff != "" {
			t.Errorf("%s changes on a round trip (-written +read):\n%s", tr.Name, diff)
		}
		counterexample := bridge.IsCounterexample(tr.Origin.TestCase)
		switch {
		case counterexample && (tr.Expect.Variant == "" || tr.Expect.DivergesAt < 0 || !strings.HasSuffix(tr.Name, "-bad")):
			t.Errorf("%s: counterexample trace with expect %+v", tr.Name, tr.Expect)
		case !counterexample && (tr.Expect.Variant != "" || tr.Final == nil || !strings.HasSuffix(tr.Name, "-ok")):
			t.Errorf("%s: green trace with expect %+v, final %v", tr.Name, tr.Expect, tr.Final != nil)
		}
	}
	for _, run := range corpus.Runs {
		least, most := 1, cfg.PerTest
		switch {
		case run.Counterexample && run.Variant == "":
			least, most = 0, 0 // a broken model machine's bug (bridge.Variant): no trace
		case run.Untraced != "":
			least, most = 0, 0 // judged, but its steps have no trace op yet (bridge.Untraced)
		case run.Counterexample:
			most = 1
		}
		if n := perTest[run.TestCase]; n < least || n > most {
			t.Errorf("%s: %d traces kept, want %d to %d", run.TestCase, n, least, most)
		}
		t.Logf("%s: %d schedules, %d distinct, kept %v", run.TestCase, run.Schedules, run.Distinct, run.Kept)
	}
}

// TestCommittedCorpus reads every generated trace of the committed corpus (without running the
// checker) and checks the README lists exactly those files.
func TestCommittedCorpus(t *testing.T) {
	dir := filepath.Join("..", "traces", "corpus")
	readme, err := os.ReadFile(filepath.Join(dir, bridge.ReadmeName))
	if os.IsNotExist(err) {
		t.Skipf("no corpus README in %s yet", dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	files, err := traces.Walk(dir)
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, path := range files {
		// Traces from other sources may share the directory; only the bridge's are checked here.
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			Origin struct {
				Kind string `json:"kind"`
			} `json:"origin"`
		}
		if json.Unmarshal(data, &head) != nil || head.Origin.Kind != bridge.OriginKind {
			continue
		}
		tr, err := traces.Unmarshal(data, path)
		if err != nil {
			t.Error(err)
			continue
		}
		listed++
		if filepath.Base(path) != tr.Name+".json" {
			t.Errorf("%s holds trace %q", path, tr.Name)
		}
		if !strings.Contains(string(readme), "| "+tr.Name+".json |") {
			t.Errorf("README does not list %s", tr.Name)
		}
	}
	if n := strings.Count(string(readme), ".json | "); n != listed {
		t.Errorf("README lists %d files, the corpus holds %d generated traces", n, listed)
	}
}
