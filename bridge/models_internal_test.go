package bridge

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDeclaredTests: a test declaration is `test NAME [` at the start of a line, whatever the
// spacing; a word "test" elsewhere declares nothing.
func TestDeclaredTests(t *testing.T) {
	got := declaredTests(map[string][]byte{
		"PTst/A.p": []byte("test tcB [main = M]: assert S in { M };\n  test\ttcA[main=M]:\n  assert S in { M };\n"),
		"PTst/B.p": []byte("// test tcComment is not [a declaration] here\nvar test: int;\ntest tcA [main = M]: x;\n"),
	})
	if want := []string{"tcA", "tcB"}; !slices.Equal(got, want) {
		t.Errorf("declared %v, want %v", got, want)
	}
}

// TestListingProblems: every declared test must be listed and nothing else; a named test must be
// listed.
func TestListingProblems(t *testing.T) {
	cases := []struct {
		name             string
		declared, listed []string
		want             []string
	}{
		{"the same", []string{"tcA", "tcB"}, []string{"tcA", "tcB"}, nil},
		{"a declared test not listed", []string{"tcA", "tcB"}, []string{"tcA"}, []string{"test tcB is declared in p but not in the checker's listing (tcA)"}},
		{"a stale listing", []string{"tcA"}, []string{"tcA", "tcOld"}, []string{"the checker lists tcOld, which no source in p declares (declared: tcA; a stale compile?)"}},
	}
	for _, c := range cases {
		if got := listingProblems("p", c.declared, c.listed); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	tests, problems := selectTests([]string{"tcA", "tcB"}, []string{"tcB", "tcC"})
	if !slices.Equal(tests, []string{"tcB"}) || len(problems) != 1 || !strings.Contains(problems[0], "no test named tcC") {
		t.Errorf("selectTests: %v, %q", tests, problems)
	}
}

// TestPlanModels: each test's verdict run with its budget; with a record budget, a green test's
// recorded run with -v beside it and a counterexample's verdict run with -v; keys that change with
// every flag but the output directory.
func TestPlanModels(t *testing.T) {
	p := modelsPlan{CompileKey: "k", DLL: "PGenerated/X.dll", Seed: 1, Timeout: 600, Schedules: 1000, CounterexampleSchedules: 100,
		OutDir: "out", RecordedDir: "rec"}
	type job struct {
		tc, what, dir string
		budget        int
		verbose       bool
	}
	summary := func(jobs []modelsJob) []job {
		var out []job
		for _, j := range jobs {
			out = append(out, job{j.Run.TestCase, j.What, j.Dir, j.Run.Schedules, j.Run.Verbose})
		}
		return out
	}
	tests := []string{"tcA", "tcBCounterexample"}
	if diff := cmp.Diff([]job{
		{"tcA", runVerdict, filepath.Join("out", "tcA"), 1000, false},
		{"tcBCounterexample", runVerdict, filepath.Join("out", "tcBCounterexample"), 100, false},
	}, summary(planModels(p, tests)), cmp.AllowUnexported(job{})); diff != "" {
		t.Errorf("without records (-want +got):\n%s", diff)
	}
	p.Record = 20
	recorded := planModels(p, tests)
	if diff := cmp.Diff([]job{
		{"tcA", runVerdict, filepath.Join("out", "tcA"), 1000, false},
		{"tcA", runRecord, filepath.Join("rec", "tcA"), 20, true},
		{"tcBCounterexample", runVerdictRecord, filepath.Join("out", "tcBCounterexample"), 100, true},
	}, summary(recorded), cmp.AllowUnexported(job{})); diff != "" {
		t.Errorf("with records (-want +got):\n%s", diff)
	}
	for _, j := range recorded {
		if !j.Run.FailOnMaxSteps || j.Run.OutDir != j.Dir {
			t.Errorf("%s %s: %+v", j.Run.TestCase, j.What, j.Run)
		}
	}

	base := CheckRun{DLL: "d", TestCase: "tcA", Schedules: 10, Seed: 1, Timeout: 60, FailOnMaxSteps: true}
	key := runKey("k", base)
	moved := base
	moved.OutDir = "elsewhere"
	if runKey("k", moved) != key {
		t.Error("the output directory changes the run's key")
	}
	for name, change := range map[string]func(r *CheckRun){
		"test":      func(r *CheckRun) { r.TestCase = "tcB" },
		"budget":    func(r *CheckRun) { r.Schedules = 11 },
		"seed":      func(r *CheckRun) { r.Seed = 2 },
		"timeout":   func(r *CheckRun) { r.Timeout = 61 },
		"-v":        func(r *CheckRun) { r.Verbose = true },
		"DLL":       func(r *CheckRun) { r.DLL = "e" },
		"max steps": func(r *CheckRun) { r.FailOnMaxSteps = false },
	} {
		r := base
		change(&r)
		if runKey("k", r) == key {
			t.Errorf("another %s keeps the run's key", name)
		}
	}
	if runKey("other compile", base) == key {
		t.Error("another compile keeps the run's key")
	}
}

// TestKeepInCache: a prune removes the entries the kept lists do not name, and only those.
func TestKeepInCache(t *testing.T) {
	got := keepInCache([]string{"a", "b", "c", "d"}, []string{"a", "c", "x"})
	if want := []string{"b", "d"}; !slices.Equal(got, want) {
		t.Errorf("removes %v, want %v", got, want)
	}
}

// TestModelsPartsSplitTheRuns: the two parts of the runs share none and together make every run;
// the records' part holds exactly what the bridge reads.
func TestModelsPartsSplitTheRuns(t *testing.T) {
	p := modelsPlan{CompileKey: "k", DLL: "d", Seed: 1, Timeout: 600, Schedules: 1000, CounterexampleSchedules: 100,
		Record: 100, OutDir: "out", RecordedDir: "rec"}
	for _, j := range planModels(p, []string{"tcA", "tcB", "tcCCounterexample"}) {
		records, verdicts := ModelsRecords.holds(j), ModelsVerdicts.holds(j)
		if records == verdicts || !ModelsAll.holds(j) {
			t.Errorf("%s %s: in records %v, in verdicts %v, in all %v", j.Run.TestCase, j.What, records, verdicts, ModelsAll.holds(j))
		}
		if records != (j.What == runRecord || j.What == runVerdictRecord) {
			t.Errorf("%s %s: in records %v", j.Run.TestCase, j.What, records)
		}
	}
}

// TestPruneRunCacheKeepsEveryPart: a part's run keeps what it and its own run before used, and
// never deletes what the other part uses.
func TestPruneRunCacheKeepsEveryPart(t *testing.T) {
	cache := t.TempDir()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if err := os.Mkdir(filepath.Join(cache, k), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		part ModelsPart
		used []string
		kept []string
	}{
		{ModelsRecords, []string{"a"}, []string{"a"}},
		{ModelsVerdicts, []string{"b"}, []string{"a", "b"}},
		{ModelsRecords, []string{"c"}, []string{"a", "b", "c"}},
		{ModelsRecords, []string{"c"}, []string{"b", "c"}},
		{ModelsAll, []string{"d"}, []string{"b", "c", "d"}},
	}
	for i, s := range steps {
		for _, k := range s.used { // the run made or restored them
			if err := os.MkdirAll(filepath.Join(cache, k), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := pruneRunCache(cache, s.part, s.used); err != nil {
			t.Fatal(err)
		}
		var kept []string
		entries, err := os.ReadDir(cache)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				kept = append(kept, e.Name())
			}
		}
		if !slices.Equal(kept, s.kept) {
			t.Errorf("step %d (%s uses %v): kept %v, want %v", i+1, s.part, s.used, kept, s.kept)
		}
	}
}
