package bridge_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/traces"
)

func TestModelHash(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("M.pproj", "<Project/>")
	write("PSrc/A.p", "machine A {}")
	h1, err := bridge.ModelHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h1, "sha256:") || len(h1) != len("sha256:")+64 {
		t.Errorf("hash %q", h1)
	}
	// Generated code, checker output, hidden directories and non-source files do not count.
	write("PGenerated/PChecker/M.cs", "class M {}")
	write("PCheckerOutput/BugFinding/M_0_0.txt", "bug")
	write(".cache/x.p", "machine X {}")
	write("README.md", "notes")
	if h, _ := bridge.ModelHash(dir); h != h1 {
		t.Errorf("hash changed from %s to %s on a non-source file", h1, h)
	}
	write("PSrc/A.p", "machine A { }")
	h2, _ := bridge.ModelHash(dir)
	if h2 == h1 {
		t.Error("hash did not change when a source changed")
	}
	// Moving content between files changes the hash even though the bytes are the same.
	write("PSrc/A.p", "")
	write("PSrc/B.p", "machine A { }")
	if h3, _ := bridge.ModelHash(dir); h3 == h2 {
		t.Error("hash did not change when a source moved")
	}
	if _, err := bridge.ModelHash(t.TempDir()); err == nil {
		t.Error("no error for a directory without sources")
	}
}

// requireP skips the test when the P tool is not on PATH.
func requireP(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("p"); err != nil {
		t.Skip("the P tool `p` is not on PATH (run `. scripts/env.sh` after scripts/bootstrap.sh); skipping a test that runs the checker")
	}
}

// copyTree copies src to a fresh temporary directory, skipping checker output.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if d.Name() == "PCheckerOutput" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestRunCheckerFixtures runs RunChecker end to end on the tiny fixture project's recorded checker
// logs, served by the fake p (testdata/fakep/p, "replay" mode; pproject/mklogs.sh records them
// with the real checker): list, one run per test case, conversion, dedup, the per-test bound, and
// determinism across runs. The real checker runs in TestIntegrationModels only.
func TestRunCheckerFixtures(t *testing.T) {
	ctx := context.Background()
	dir := copyTree(t, filepath.Join("testdata", "pproject"))
	cfg := bridge.Config{ProjectDir: dir, P: fakeP(t, "replay"), Seed: 1, Schedules: 4, CounterexampleSchedules: 4, PerTest: 2}
	c1, err := bridge.RunChecker(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(c1.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(c1.Runs))
	}
	green, bad := c1.Runs[0], c1.Runs[1]
	if green.TestCase != "tcBridgeGreen" || green.Schedules != 4 || green.Observed != 4 || len(green.Kept) != 2 || green.Distinct < 2 {
		t.Errorf("green run %+v: want 4 schedules observed, at least 2 distinct, 2 kept", green)
	}
	if bad.TestCase != "tcLeaselessRawAttemptsCounterexample" || bad.Variant != "raw-attempts" || len(bad.Kept) != 1 {
		t.Errorf("counterexample run %+v", bad)
	}
	if len(c1.Traces) != 3 {
		t.Fatalf("%d traces, want 3", len(c1.Traces))
	}
	last := c1.Traces[2]
	if last.Name != "tcLeaselessRawAttemptsCounterexample-s1-1-bad" || last.Expect.DivergesAt < 0 || last.Final != nil {
		t.Errorf("bug trace %s: expect %+v, final %v", last.Name, last.Expect, last.Final)
	}
	for _, tr := range c1.Traces {
		o := tr.Origin
		if o.Model != c1.Model || o.Kind != bridge.OriginKind || o.Seed != 1 || o.Command != bridge.CheckCommand(o.TestCase, 1, 4) {
			t.Errorf("%s: origin %+v", tr.Name, o)
		}
		if err := traces.Validate(tr); err != nil {
			t.Errorf("%s: %v", tr.Name, err)
		}
	}
	if c1.Traces[0].Name == c1.Traces[1].Name {
		t.Error("two kept traces share a name")
	}

	c2, err := bridge.RunChecker(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c1, c2); diff != "" {
		t.Errorf("two runs with the same seed differ (-first +second):\n%s", diff)
	}

	t.Run("unknown test case", func(t *testing.T) {
		cfg := cfg
		cfg.TestCases = []string{"tcBridge"} // only a prefix of a real name
		if _, err := bridge.RunChecker(ctx, cfg); !errors.Is(err, bridge.ErrChecker) || !strings.Contains(err.Error(), `no test case "tcBridge"`) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("uncompiled project", func(t *testing.T) {
		cfg := cfg
		cfg.P = fakeP(t, "uncompiled")
		if _, err := bridge.RunChecker(ctx, cfg); !errors.Is(err, bridge.ErrChecker) || !strings.Contains(err.Error(), "compiled") {
			t.Errorf("got %v, want ErrChecker saying the project is not compiled", err)
		}
	})
}

// TestRunCheckerFailures drives RunChecker with a fake p (testdata/fakep/p) through the checker
// runs it must refuse.
func TestRunCheckerFailures(t *testing.T) {
	fake := fakeP(t, "")
	project := filepath.Join("testdata", "pproject") // only hashed; the fake never reads it
	for _, tc := range []struct {
		mode, testCase string
		sentinel       error
		want           string
	}{
		{"prefix", "tcA", bridge.ErrAmbiguousTestCase, `"tcA" is a prefix of "tcAB"`},
		{"internal", "tcA", bridge.ErrChecker, "exit code 2"},
		{"green-bug", "tcA", bridge.ErrChecker, "bug found (exit code 1)"},
		{"no-bug", "tcFifoOvertakeCounterexample", bridge.ErrChecker, "no bug within 3 schedules (exit code 0)"},
		{"no-bug", "tcBCounterexample", bridge.ErrUnknownTestCase, `"tcBCounterexample"`},
		{"no-summary", "tcA", bridge.ErrChecker, "want one *_pchecker_summary.txt in the checker output, found 0"},
		{"silent", "tcA", bridge.ErrChecker, "did not report running tcA"},
		{"no-log", "tcA", bridge.ErrChecker, "want one *_verbose.trace.json in the checker output, found 0"},
	} {
		t.Run(tc.mode+"/"+tc.testCase, func(t *testing.T) {
			t.Setenv("FAKE_P_MODE", tc.mode)
			_, err := bridge.RunChecker(context.Background(), bridge.Config{ProjectDir: project, P: fake, TestCases: []string{tc.testCase}})
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %v containing %q", err, tc.sentinel, tc.want)
			}
		})
	}
	t.Run("no p", func(t *testing.T) {
		_, err := bridge.RunChecker(context.Background(), bridge.Config{ProjectDir: project, P: filepath.Join(t.TempDir(), "p")})
		if err == nil || !strings.Contains(err.Error(), "running p") {
			t.Errorf("got %v, want an error saying p could not be run", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := bridge.RunChecker(ctx, bridge.Config{ProjectDir: project, P: fake})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
}

// fakeP returns the fake P tool of testdata/fakep in the given mode.
func fakeP(t *testing.T, mode string) string {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the fake p")
	}
	t.Setenv("FAKE_P_MODE", mode)
	fake, err := filepath.Abs(filepath.Join("testdata", "fakep", "p"))
	if err != nil {
		t.Fatal(err)
	}
	return fake
}

// TestRegenerateAndCheck writes a corpus from the tiny project's committed logs (served by the
// fake p), checks it is up to date and removes only its own stale files, and that edits and model
// changes are caught.
func TestRegenerateAndCheck(t *testing.T) {
	ctx := context.Background()
	dir := copyTree(t, filepath.Join("testdata", "pproject"))
	out := t.TempDir()
	cfg := bridge.Config{ProjectDir: dir, P: fakeP(t, "replay"), Seed: 1, Schedules: 4, CounterexampleSchedules: 4, PerTest: 3}

	// A file from an earlier generation and a file that is not the bridge's.
	stale := filepath.Join(out, "tcGone-s1-1-ok.json")
	foreign := filepath.Join(out, "hand-ok.json")
	mustWrite(t, stale, `{"origin":{"kind":"p-checker"}}`)
	mustWrite(t, foreign, `{"origin":{"kind":"hand"}}`)

	corpus, err := bridge.Regenerate(ctx, out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale generated file survived: %v", err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("foreign file removed: %v", err)
	}
	first := snapshotDir(t, out)
	if len(first) != len(corpus.Traces)+2 { // the traces, README.md, hand-ok.json
		t.Errorf("corpus dir holds %d files for %d traces", len(first), len(corpus.Traces))
	}
	for _, tr := range corpus.Traces {
		back, err := traces.ReadFile(filepath.Join(out, tr.Name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tr, back); diff != "" {
			t.Errorf("%s does not read back as written (-written +read):\n%s", tr.Name, diff)
		}
	}
	readme := string(first[bridge.ReadmeName])
	for _, want := range []string{corpus.Model, corpus.PVersion, "`p check -tc tcBridgeGreen -s 4 --seed 1 -v`", "tcLeaselessRawAttemptsCounterexample-s1-1-bad.json"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README lacks %q:\n%s", want, readme)
		}
	}

	// A regeneration into a second directory must give the same bytes: CheckUpToDate does
	// exactly that.
	if err := bridge.CheckUpToDate(ctx, out, cfg); err != nil {
		t.Fatalf("fresh corpus reported stale: %v", err)
	}

	// Edit a trace, delete another, change the model: all three are reported.
	var names []string
	for name := range first {
		if strings.HasPrefix(name, "tcBridgeGreen-") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) < 2 {
		t.Fatalf("want at least 2 green traces, have %v", names)
	}
	mustWrite(t, filepath.Join(out, names[0]), strings.Replace(string(first[names[0]]), `"at": 0`, `"at": 1`, 1))
	if err := os.Remove(filepath.Join(out, names[1])); err != nil {
		t.Fatal(err)
	}
	// The hash covers the sources, so a changed source counts as a model change even before
	// anything is recompiled.
	mustWrite(t, filepath.Join(dir, "PSrc", "Extra.p"), "event eUnused;\n")
	err = bridge.CheckUpToDate(ctx, out, cfg)
	if !errors.Is(err, bridge.ErrCorpusStale) {
		t.Fatalf("got %v, want ErrCorpusStale", err)
	}
	for _, want := range []string{"P models changed", "changed " + names[0], "missing " + names[1], "changed README.md", bridge.RegenerateCommand} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("staleness report lacks %q:\n%v", want, err)
		}
	}
}

func mustWrite(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func snapshotDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = bytes.Clone(data)
	}
	return out
}
