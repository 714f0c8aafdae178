package bridge_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pconform/pconform/bridge"
)

// The fake P tool's controls (testdata/fakepmodels/p); each step of a test sets all of them.
var fakeVars = []string{"FAKE_P_VERSION", "FAKE_P_EXTRA", "FAKE_P_FAIL", "FAKE_P_BUG", "FAKE_P_NOBUG", "FAKE_P_GARBLED", "FAKE_DOTNET"}

// modelsRepo is a repository of its own for the models stage: a P project with two green tests and
// a counterexample, and the stand-ins for p and dotnet.
type modelsRepo struct {
	root, project, calls string
}

func newModelsRepo(t *testing.T) *modelsRepo {
	t.Helper()
	root := t.TempDir()
	r := &modelsRepo{root: root, project: filepath.Join(root, "models", "p"), calls: filepath.Join(root, "calls")}
	r.write(t, "PConform.pproj", "<Project><ProjectName>PConform</ProjectName></Project>\n")
	r.write(t, "PSrc/Main.p", "machine Main { start state Init { } }\n")
	r.write(t, "PTst/Tests.p", `test tcGreen [main = Main]: assert S in { Main };
test tcOther [main = Main]:
  assert S in { Main };
test tcThingCounterexample [main = Main]: assert S in { Main };
`)
	return r
}

func (r *modelsRepo) write(t *testing.T, rel, content string) {
	t.Helper()
	path := filepath.Join(r.project, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (r *modelsRepo) appendTo(t *testing.T, rel, content string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.project, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	r.write(t, rel, string(data)+content)
}

// config is the stage's configuration in the repository, one run at a time (the report's order
// does not depend on it, but the calls file's does).
func (r *modelsRepo) config(t *testing.T) bridge.ModelsConfig {
	fake, err := filepath.Abs(filepath.Join("testdata", "fakepmodels"))
	if err != nil {
		t.Fatal(err)
	}
	return bridge.ModelsConfig{ProjectDir: r.project, P: filepath.Join(fake, "p"), Dotnet: filepath.Join(fake, "dotnet"), Jobs: 1,
		RunCache: filepath.Join(r.root, "out", "gate", "pcache"), CompileCache: filepath.Join(r.root, "out", "gate", "pcompile")}
}

// modelsRun is what one CheckModels call did.
type modelsRun struct {
	res              *bridge.ModelsResult
	err              error
	out              string
	compiles, checks int
}

func (r *modelsRepo) run(t *testing.T, cfg bridge.ModelsConfig, env map[string]string) modelsRun {
	t.Helper()
	for _, v := range fakeVars {
		t.Setenv(v, env[v])
	}
	t.Setenv("FAKE_P_CALLS", r.calls)
	if err := os.WriteFile(r.calls, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := bridge.CheckModels(context.Background(), cfg, &out)
	calls, _ := os.ReadFile(r.calls)
	m := modelsRun{res: res, err: err, out: out.String()}
	for _, c := range strings.Split(string(calls), "\n") {
		switch {
		case c == "compile":
			m.compiles++
		case strings.Contains(c, " -tc "):
			m.checks++
		}
	}
	return m
}

// TestCheckModelsCache runs the models stage again and again on one repository with a stand-in
// P tool: an unchanged input reruns nothing, and every input of a run (a source's content, a new
// source, the P tool's version, the .NET runtimes, the seed, the budgets, the timeout, -v) makes
// it run again; the expected tests are the sources' declarations, a failing run is never cached,
// and --logs records the runs the bridge reads. Each step builds on the state the steps before it
// left, as the gate's runs do.
func TestCheckModelsCache(t *testing.T) {
	r := newModelsRepo(t)
	recorded := filepath.Join(r.project, "PCheckerOutput", "recorded")
	type step struct {
		name   string
		before func(t *testing.T)
		cfg    func(c *bridge.ModelsConfig)
		env    map[string]string
		// The verdict, the compiles and the checker runs the step makes, and a line of its report.
		pass             bool
		compiles, checks int
		out              string
		after            func(t *testing.T, m modelsRun)
	}
	seed := func(n int64) func(c *bridge.ModelsConfig) { return func(c *bridge.ModelsConfig) { c.Seed = n } }
	dotnet11 := map[string]string{"FAKE_DOTNET": "11.0.0"}
	var recordedAge string
	steps := []step{
		{name: "first run compiles and runs every declared test", pass: true, compiles: 1, checks: 3, out: `pmodels: PASS: 3 tests, 3 checker runs, 0 reused`},
		{name: "nothing changed: no compile, no run", pass: true, out: `PASS: 3 tests, 0 checker runs, 3 reused`},
		{name: "a source touched but unchanged reruns nothing", pass: true,
			before: func(t *testing.T) {
				later := time.Now()
				if err := os.Chtimes(filepath.Join(r.project, "PSrc", "Main.p"), later, later); err != nil {
					t.Fatal(err)
				}
			},
			after: func(t *testing.T, _ modelsRun) {
				src, _ := os.Stat(filepath.Join(r.project, "PSrc", "Main.p"))
				list, _ := os.Stat(filepath.Join(r.project, "PCheckerOutput", "list.log"))
				if src.ModTime().After(list.ModTime()) {
					t.Error("the listing is older than a source after a run: the bridge would refuse the recorded runs")
				}
			}},
		{name: "a run's directory deleted comes back from the cache", pass: true, out: `tcGreen .* cached +PASS`,
			before: func(t *testing.T) { os.RemoveAll(filepath.Join(r.project, "PCheckerOutput", "tcGreen")) },
			after: func(t *testing.T, _ modelsRun) {
				if _, err := os.Stat(filepath.Join(r.project, "PCheckerOutput", "tcGreen", bridge.RecordedRunFile)); err != nil {
					t.Errorf("tcGreen's run was not restored: %v", err)
				}
			}},
		{name: "a source's content changed: compile and every run again", pass: true, compiles: 1, checks: 3,
			before: func(t *testing.T) { r.appendTo(t, "PSrc/Main.p", "machine Other { start state Init { } }\n") }},
		{name: "a new source: compile and every run again", pass: true, compiles: 1, checks: 3,
			before: func(t *testing.T) { r.write(t, "PSrc/New.p", "machine Third { start state Init { } }\n") }},
		{name: "back to the sources before: no compile (the compile cache), every run from the cache", pass: true, out: `3 reused`,
			before: func(t *testing.T) { os.Remove(filepath.Join(r.project, "PSrc", "New.p")) }},
		{name: "another P version: compile and every run again", pass: true, compiles: 1, checks: 3, env: map[string]string{"FAKE_P_VERSION": "3.1.1"}},
		{name: "and back: nothing compiles or runs", pass: true},
		{name: "other .NET runtimes: compile and every run again", pass: true, compiles: 1, checks: 3, env: dotnet11},
		{name: "another seed: every run again", pass: true, checks: 3, env: dotnet11, cfg: seed(2)},
		{name: "another green budget: the green tests run again", pass: true, checks: 2, env: dotnet11,
			cfg: func(c *bridge.ModelsConfig) { c.Seed, c.Schedules = 2, 500 }},
		{name: "another counterexample budget: the counterexample runs again", pass: true, checks: 1, env: dotnet11,
			cfg: func(c *bridge.ModelsConfig) { c.Seed, c.Schedules, c.CounterexampleSchedules = 2, 500, 50 }},
		{name: "another timeout: every run again", pass: true, checks: 3, env: dotnet11,
			cfg: func(c *bridge.ModelsConfig) {
				c.Seed, c.Schedules, c.CounterexampleSchedules, c.Timeout = 2, 500, 50, 60
			}},
		{name: "back to the defaults: the compile comes from its cache, the runs were pruned (older than the last two full runs)", pass: true, checks: 3},
		{name: "--logs: green tests recorded with -v, the counterexample's run made with -v", pass: true, checks: 3,
			cfg: func(c *bridge.ModelsConfig) { c.Logs = true }, out: `100 recorded per green test`,
			after: func(t *testing.T, _ modelsRun) {
				for _, tc := range []string{"tcGreen", "tcOther", "tcThingCounterexample"} {
					run, _ := os.ReadFile(filepath.Join(recorded, tc, bridge.RecordedRunFile))
					if !strings.Contains(string(run), "verbose:1\n") {
						t.Errorf("--logs recorded no -v run of %s: %q", tc, run)
					}
				}
				if run, _ := os.ReadFile(filepath.Join(recorded, "tcGreen", bridge.RecordedRunFile)); !strings.Contains(string(run), "schedules:100\n") {
					t.Errorf("tcGreen's record is not of 100 schedules: %q", run)
				}
				for _, f := range []string{bridge.RecordedListFile, bridge.RecordedVersionFile, "tcGreen/key", "tcThingCounterexample/key"} {
					if _, err := os.Stat(filepath.Join(recorded, f)); err != nil {
						t.Errorf("the recorded runs have no %s: %v", f, err)
					}
				}
				recordedAge = ages(t, filepath.Join(recorded, "tcGreen", bridge.RecordedRunFile), filepath.Join(recorded, bridge.RecordedListFile))
			}},
		{name: "--logs again: nothing runs, and the recorded files keep their ages", pass: true,
			cfg: func(c *bridge.ModelsConfig) { c.Logs = true },
			after: func(t *testing.T, _ modelsRun) {
				// Their ages are inputs of the Go tests that read them.
				if got := ages(t, filepath.Join(recorded, "tcGreen", bridge.RecordedRunFile), filepath.Join(recorded, bridge.RecordedListFile)); got != recordedAge {
					t.Errorf("--logs again rewrote the recorded runs: %s, then %s", recordedAge, got)
				}
			}},
		{name: "another record budget: the green records run again", pass: true, checks: 2,
			cfg: func(c *bridge.ModelsConfig) { c.Logs, c.RecordSchedules = true, 20 }},
		{name: "a green test with a bug fails the stage", compiles: 0, checks: 3, cfg: seed(3), env: map[string]string{"FAKE_P_BUG": "tcOther"},
			out: `(?s)tcOther .* ran +FAIL +bug found.*Assertion Failed: the fake monitor fails tcOther.*replay: \(cd .* && p check PGenerated/PChecker/net8.0/PConform.dll -tc tcOther --replay PCheckerOutput/tcOther/BugFinding/PConform_0_0.schedule -v\)`},
		{name: "a failing run is not cached", checks: 1, cfg: seed(3), env: map[string]string{"FAKE_P_BUG": "tcOther"}, out: `pmodels: FAIL`},
		{name: "fixed: only the run that failed runs again", pass: true, checks: 1, cfg: seed(3)},
		{name: "a counterexample without a bug fails the stage", checks: 3, cfg: seed(4), env: map[string]string{"FAKE_P_NOBUG": "tcThingCounterexample"},
			out: `tcThingCounterexample +counterexample .* FAIL +no bug within 100 schedules`},
		{name: "a run whose output cannot be read fails the stage", checks: 3, cfg: seed(5), env: map[string]string{"FAKE_P_GARBLED": "tcGreen"},
			out: `(?s)tcGreen .* \? .* FAIL +no result in the checker output \(exit 0\).*No space left on device`},
		{name: "the listing is kept with the compile it was made from", pass: true, cfg: seed(3), env: map[string]string{"FAKE_P_EXTRA": "tcUndeclared"}},
		{name: "a listed test no source declares fails", compiles: 1, checks: 4, env: map[string]string{"FAKE_P_EXTRA": "tcUndeclared"},
			before: func(t *testing.T) { r.appendTo(t, "PSrc/Main.p", "machine Fourth { start state Init { } }\n") },
			out:    `pmodels: FAIL: the checker lists tcUndeclared, which no source in .* declares`},
		{name: "a renamed test runs under its new name", pass: true, compiles: 1, checks: 3, out: `tcRenamed .* PASS`,
			before: func(t *testing.T) {
				data, _ := os.ReadFile(filepath.Join(r.project, "PTst", "Tests.p"))
				r.write(t, "PTst/Tests.p", strings.Replace(string(data), "test tcOther ", "test tcRenamed ", 1))
			}},
		{name: "a compiled project changed behind the stage's back: copied in again", pass: true, out: `compile skipped: .*pcompile`,
			before: func(t *testing.T) {
				r.write(t, "PGenerated/PChecker/net8.0/PConform.dll", "compiled by hand\n")
			}},
		{name: "one test by name checks that test alone", pass: true, out: `PASS: 1 tests, 0 checker runs, 1 reused`,
			cfg: func(c *bridge.ModelsConfig) { c.TestCases = []string{"tcThingCounterexample"} }},
		{name: "an unknown name fails", cfg: func(c *bridge.ModelsConfig) { c.TestCases = []string{"tcNope"} }, out: `pmodels: FAIL: no test named tcNope`},
		{name: "three at a time: the same report", pass: true, cfg: func(c *bridge.ModelsConfig) { c.Jobs = 3; c.Seed = 6 }, checks: 3,
			out: `(?s)tcGreen .*tcRenamed .*tcThingCounterexample .*PASS: 3 tests, 3 checker runs`},
		{name: "the cache off: every run runs, and nothing is cached", pass: true, checks: 3,
			cfg: func(c *bridge.ModelsConfig) { c.RunCache, c.Seed = "", 7 },
			after: func(t *testing.T, m modelsRun) {
				for _, row := range m.res.Rows {
					if _, err := os.Stat(filepath.Join(r.root, "out", "gate", "pcache", row.Key)); err == nil {
						t.Errorf("%s's run is in the cache with the cache off", row.TestCase)
					}
				}
			}},
		{name: "the cache off again: even the runs in place run", pass: true, checks: 3, cfg: func(c *bridge.ModelsConfig) { c.RunCache, c.Seed = "", 7 }},
		{name: "the cache on again: the runs in place are kept", pass: true, cfg: seed(7), out: `tcGreen .* kept +PASS`},
	}
	for _, s := range steps {
		// Steps depend on each other: stop at the first that fails.
		ok := t.Run(s.name, func(t *testing.T) {
			if s.before != nil {
				s.before(t)
			}
			cfg := r.config(t)
			if s.cfg != nil {
				s.cfg(&cfg)
			}
			m := r.run(t, cfg, s.env)
			if m.err != nil {
				t.Fatalf("CheckModels: %v\n%s", m.err, m.out)
			}
			if m.res.Pass() != s.pass || m.compiles != s.compiles || m.checks != s.checks {
				t.Errorf("pass %v, %d compiles, %d checker runs; want %v, %d, %d\n%s", m.res.Pass(), m.compiles, m.checks, s.pass, s.compiles, s.checks, m.out)
			}
			if s.out != "" && !regexp.MustCompile(s.out).MatchString(m.out) {
				t.Errorf("the report does not match %q:\n%s", s.out, m.out)
			}
			if s.after != nil {
				s.after(t, m)
			}
		})
		if !ok {
			break
		}
	}
}

// ages is the modification times and inodes of files, to tell a file left alone from one
// rewritten.
func ages(t *testing.T, files ...string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(info.ModTime().String() + " ")
	}
	return b.String()
}

// TestCheckModelsRelativePaths: the stage run from the repository root with relative paths (as
// pconform-pcheck is) hands the checker output directories that do not depend on where it runs.
func TestCheckModelsRelativePaths(t *testing.T) {
	r := newModelsRepo(t)
	cfg := r.config(t)
	t.Chdir(r.root)
	cfg.ProjectDir, cfg.RunCache, cfg.CompileCache = filepath.Join("models", "p"), filepath.Join("out", "gate", "pcache"), filepath.Join("out", "gate", "pcompile")
	m := r.run(t, cfg, nil)
	if m.err != nil || !m.res.Pass() {
		t.Fatalf("CheckModels: %v\n%s", m.err, m.out)
	}
	for _, tc := range []string{"tcGreen", "tcOther", "tcThingCounterexample"} {
		if _, err := os.Stat(filepath.Join(r.project, "PCheckerOutput", tc, "BugFinding")); err != nil {
			t.Errorf("%s's checker output is not in models/p/PCheckerOutput: %v", tc, err)
		}
	}
}

// TestCheckModelsCannotRun: a stage that cannot run is an error, not a finding: the project does
// not compile (the error names the compiler's error line), or declares no test.
func TestCheckModelsCannotRun(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, r *modelsRepo)
		env   map[string]string
		want  string
	}{
		{"a compile error", nil, map[string]string{"FAKE_P_FAIL": "1"}, `(?s)p compile of .* exited 1.*\[Error:\] \[PTst/Tests.p:1:1\] event eNothing is not declared.*whole compiler output: .*compile.log`},
		{"no test declared", func(t *testing.T, r *modelsRepo) { r.write(t, "PTst/Tests.p", "// none yet\n") }, nil, `declare no test case`},
		{"no project file", func(t *testing.T, r *modelsRepo) { os.Remove(filepath.Join(r.project, "PConform.pproj")) }, nil, `want one .pproj`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newModelsRepo(t)
			if c.setup != nil {
				c.setup(t, r)
			}
			m := r.run(t, r.config(t), c.env)
			if m.err == nil || !regexp.MustCompile(c.want).MatchString(m.err.Error()) {
				t.Errorf("error %v, want one matching %q\n%s", m.err, c.want, m.out)
			}
			if c.name == "a compile error" && !errors.Is(m.err, bridge.ErrChecker) {
				t.Errorf("error %v does not wrap ErrChecker", m.err)
			}
		})
	}
}

// TestModelsConfigFromEnv: the gate's environment variables, their defaults, and the values the
// stage refuses.
func TestModelsConfigFromEnv(t *testing.T) {
	def := bridge.ModelsConfig{Schedules: 1000, CounterexampleSchedules: 100, RecordSchedules: 100, Seed: 1, Jobs: 4, Timeout: 600, RunCache: "cache"}
	cases := []struct {
		name string
		env  map[string]string
		want func(c *bridge.ModelsConfig)
		err  string
	}{
		{"defaults", nil, func(*bridge.ModelsConfig) {}, ""},
		{"every budget", map[string]string{"PCONFORM_SCHEDULES": "500", "PCONFORM_CE_SCHEDULES": "50", "PCONFORM_RECORD_SCHEDULES": "20",
			"PCONFORM_SEED": "7", "PCONFORM_JOBS": "3", "PCONFORM_TEST_TIMEOUT": "60", "PCONFORM_P_CACHE": "elsewhere"},
			func(c *bridge.ModelsConfig) {
				c.Schedules, c.CounterexampleSchedules, c.RecordSchedules, c.Seed, c.Jobs, c.Timeout, c.RunCache = 500, 50, 20, 7, 3, 60, "elsewhere"
			}, ""},
		{"the cache off", map[string]string{"PCONFORM_P_CACHE": "off"}, func(c *bridge.ModelsConfig) { c.RunCache = "" }, ""},
		{"no jobs run one at a time", map[string]string{"PCONFORM_JOBS": "0"}, func(c *bridge.ModelsConfig) { c.Jobs = 1 }, ""},
		{"not a number", map[string]string{"PCONFORM_SCHEDULES": "many"}, nil, "PCONFORM_SCHEDULES must be a non-negative integer, got 'many'"},
		{"negative", map[string]string{"PCONFORM_JOBS": "-1"}, nil, "PCONFORM_JOBS must be a non-negative integer"},
		{"seed 0", map[string]string{"PCONFORM_SEED": "0"}, nil, "PCONFORM_SEED must be at least 1"},
		{"timeout 0", map[string]string{"PCONFORM_TEST_TIMEOUT": "0"}, nil, "PCONFORM_TEST_TIMEOUT must be at least 1"},
		{"a record past the budget", map[string]string{"PCONFORM_SCHEDULES": "50"}, nil, "PCONFORM_RECORD_SCHEDULES (100) exceeds PCONFORM_SCHEDULES (50)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := bridge.ModelsConfigFromEnv(func(k string) string { return c.env[k] }, "cache")
			if c.err != "" {
				if !errors.Is(err, bridge.ErrModelsUsage) || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want ErrModelsUsage saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := def
			c.want(&want)
			if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(bridge.ModelsConfig{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadmeNamesADeclaredTest: the README's one-test command (`scripts/pmodels.sh TEST`) names a
// test case the models declare.
func TestReadmeNamesADeclaredTest(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ *scripts/pmodels\.sh (tc[A-Za-z0-9]*)$`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no line 'scripts/pmodels.sh TEST'")
	}
	decl := regexp.MustCompile(`(?m)^[ \t]*test[ \t]+` + string(m[1]) + `[ \t]*\[`)
	found := false
	err = filepath.WalkDir(modelsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".p") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			found = found || decl.Match(src)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Errorf("the README's 'scripts/pmodels.sh %s' names no test of models/p", m[1])
	}
}

// TestModelsOnTheChecker is the models stage's one test with the real P tool: on a copy of the
// tiny project (testdata/pproject) it compiles, runs the green test and the counterexample with
// --logs, and the bridge makes a corpus from the recorded runs; a second run takes everything
// from the caches. It compiles a project (a minute or more), so the gate runs it in its toolkit
// stage; -short skips it.
func TestModelsOnTheChecker(t *testing.T) {
	requireP(t)
	if testing.Short() {
		t.Skip("-short: skipping the models stage on the real checker")
	}
	root := t.TempDir()
	project := filepath.Join(root, "p")
	if err := os.CopyFS(project, os.DirFS(filepath.Join("testdata", "pproject"))); err != nil {
		t.Fatal(err)
	}
	cfg := bridge.ModelsConfig{ProjectDir: project, Schedules: 4, CounterexampleSchedules: 10, RecordSchedules: 4, Logs: true,
		RunCache: filepath.Join(root, "pcache"), CompileCache: filepath.Join(root, "pcompile")}
	for i, want := range []struct {
		compiled    bool
		ran, reused int
	}{{true, 3, 0}, {false, 0, 3}} {
		var out bytes.Buffer
		res, err := bridge.CheckModels(context.Background(), cfg, &out)
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, out.String())
		}
		ran, reused := res.Ran()
		if !res.Pass() || res.Compiled != want.compiled || ran != want.ran || reused != want.reused {
			t.Fatalf("run %d: pass %v, compiled %v, %d ran, %d reused; want a pass, %v, %d, %d\n%s",
				i+1, res.Pass(), res.Compiled, ran, reused, want.compiled, want.ran, want.reused, out.String())
		}
	}
	corpus, err := bridge.RunChecker(context.Background(), bridge.Config{ProjectDir: project, Seed: 1, Schedules: 4, PerTest: 2,
		FromRuns: filepath.Join(project, "PCheckerOutput", "recorded")})
	if err != nil {
		t.Fatalf("a corpus from the recorded runs: %v", err)
	}
	if len(corpus.Runs) != 2 || len(corpus.Traces) == 0 {
		t.Errorf("the recorded runs give %d runs and %d traces; want 2 runs and some traces", len(corpus.Runs), len(corpus.Traces))
	}
}
