package bridge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/bridge"
)

// recordRuns lays out, in a fresh directory, the tiny project's committed checker logs as
// scripts/pmodels.sh --logs records runs: list.log, version.log and per test case its output,
// run.txt and the checker's output directory. The green run is recorded with -s 4 (its log holds
// four schedules), the counterexample's with a budget of 4 (it found its bug at schedule 1).
func recordRuns(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, bridge.RecordedListFile),
		".. List of test cases (total 2)\ntcBridgeGreen\ntcLeaselessRawAttemptsCounterexample\n. Done\n")
	mustWrite(t, filepath.Join(dir, bridge.RecordedVersionFile), "P version 0.0.0-fake\n")
	for _, run := range []struct {
		tc, bugs, schedules, exit string
		logs                      map[string]string // fixture -> name in BugFinding/
	}{
		{"tcBridgeGreen", "0", "4", "0", map[string]string{"green_verbose.json": "Tiny_0_verbose.trace.json"}},
		{"tcLeaselessRawAttemptsCounterexample", "1", "1", "1", map[string]string{
			"bad_verbose.json": "Tiny_0_verbose.trace.json", "bad_bug.json": "Tiny_0_0.trace.json"}},
	} {
		bugDir := filepath.Join(dir, run.tc, "BugFinding")
		if err := os.MkdirAll(bugDir, 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(dir, run.tc, bridge.RecordedRunFile),
			fmt.Sprintf("test_case:%s\nseed:1\nschedules:4\nverbose:1\nexit:%s\n", run.tc, run.exit))
		setResult(run.tc, run.bugs, run.schedules)(t, dir)
		for fixture, name := range run.logs {
			data, err := readFixtureFile(fixture)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, filepath.Join(bugDir, name), string(data))
		}
	}
	return dir
}

// TestRecordedRuns makes corpora from recorded runs (Config.FromRuns) and checks they are what
// running the checker gives, also for fewer schedules than were recorded.
func TestRecordedRuns(t *testing.T) {
	ctx := context.Background()
	project := copyTree(t, filepath.Join("testdata", "pproject"))
	live := bridge.Config{ProjectDir: project, P: fakeP(t, "replay"), Seed: 1, Schedules: 4, CounterexampleSchedules: 4, PerTest: 3}
	want, err := bridge.RunChecker(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	runs := recordRuns(t)
	fromRuns := live
	fromRuns.P = filepath.Join(t.TempDir(), "no-p-here") // recorded runs must not need the checker
	fromRuns.FromRuns = runs
	got, err := bridge.RunChecker(ctx, fromRuns)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded runs give another corpus than the checker (-checker +recorded):\n%s", diff)
	}

	// Fewer schedules: the first two of the four recorded, and the command says -s 2.
	fewer := fromRuns
	fewer.Schedules = 2
	short, err := bridge.RunChecker(ctx, fewer)
	if err != nil {
		t.Fatal(err)
	}
	green := short.Runs[0]
	if green.Schedules != 2 || green.Observed != 2 || green.Command != bridge.CheckCommand("tcBridgeGreen", 1, 2) {
		t.Errorf("green run from 2 of 4 recorded schedules: %+v", green)
	}
	var kept []string
	for _, tr := range short.Traces {
		if tr.Origin.TestCase == "tcBridgeGreen" {
			kept = append(kept, tr.Name)
			if tr.Origin.Schedule > 2 {
				t.Errorf("%s comes from schedule %d, beyond the 2 asked for", tr.Name, tr.Origin.Schedule)
			}
		}
	}
	if len(kept) != green.Distinct || len(kept) == 0 {
		t.Errorf("kept %v, want the %d distinct traces of the first two schedules", kept, green.Distinct)
	}
}

// TestRecordedRunsRefused edits a recorded run in every way that makes it unable to stand in for
// the run asked for.
func TestRecordedRunsRefused(t *testing.T) {
	ctx := context.Background()
	project := copyTree(t, filepath.Join("testdata", "pproject"))
	const green, bad = "tcBridgeGreen", "tcLeaselessRawAttemptsCounterexample"
	for _, tc := range []struct {
		name   string
		edit   func(t *testing.T, runs string)
		config func(*bridge.Config)
		want   string
	}{
		{name: "other seed", edit: editRun(green, "seed:1", "seed:2"), want: "run with --seed 2, want 1"},
		{name: "without -v", edit: editRun(green, "verbose:1", "verbose:0"), want: "run without -v"},
		{name: "too few schedules", config: func(c *bridge.Config) { c.Schedules = 5 }, want: "run with -s 4, fewer than the 5 schedules wanted"},
		{name: "other test case", edit: editRun(green, "test_case:"+green, "test_case:tcOther"), want: `records test case "tcOther"`},
		{name: "no exit code", edit: editRun(green, "exit:0\n", ""), want: `has no "exit" line`},
		{name: "no run file", edit: func(t *testing.T, runs string) {
			if err := os.Remove(filepath.Join(runs, green, bridge.RecordedRunFile)); err != nil {
				t.Fatal(err)
			}
		}, want: "scripts/pmodels.sh --logs"},
		{name: "no list", edit: func(t *testing.T, runs string) {
			if err := os.Remove(filepath.Join(runs, bridge.RecordedListFile)); err != nil {
				t.Fatal(err)
			}
		}, want: "scripts/pmodels.sh --logs"},
		{name: "green run exits 1", edit: editRun(green, "exit:0", "exit:1"), want: "exit 1 but no bug found"},
		{name: "green run found a bug", edit: setResult(green, "1", "4"), want: "bug found"},
		{name: "summary disagrees", edit: func(t *testing.T, runs string) {
			mustWrite(t, filepath.Join(runs, green, "BugFinding", "Tiny_pchecker_summary.txt"), "bugs:0\nschedules:5\n")
		}, want: "summary file disagrees with the checker output"},
		{name: "bug beyond the budget", config: func(c *bridge.Config) { c.CounterexampleSchedules = 1 },
			edit: setResult(bad, "1", "3"), want: "counterexample found no bug in 1 schedules (the recorded run found it at schedule 3)"},
		{name: "log shorter than the result", edit: setResult(green, "0", "5"), want: "verbose log holds 4 schedules, the checker says 5"},
		{name: "models changed since", edit: func(t *testing.T, runs string) {
			source := filepath.Join(project, "PSrc", "Tiny.p")
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(source, later, later); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { earlier := time.Now().Add(-time.Hour); os.Chtimes(source, earlier, earlier) })
		}, want: "older than"},
		{name: "compile asked for", config: func(c *bridge.Config) { c.Compile = true }, want: "exclude each other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := recordRuns(t)
			if tc.edit != nil {
				tc.edit(t, runs)
			}
			cfg := bridge.Config{ProjectDir: project, P: filepath.Join(t.TempDir(), "no-p-here"), FromRuns: runs,
				Seed: 1, Schedules: 4, CounterexampleSchedules: 4, PerTest: 3}
			if tc.config != nil {
				tc.config(&cfg)
			}
			_, err := bridge.RunChecker(ctx, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if tc.name != "compile asked for" && !errors.Is(err, bridge.ErrChecker) {
				t.Errorf("got %v, want it to wrap ErrChecker", err)
			}
		})
	}
}

// setResult makes a test case's recorded run report bugs and schedules, in its output and its
// summary file alike.
func setResult(tc, bugs, schedules string) func(t *testing.T, runs string) {
	return func(t *testing.T, runs string) {
		t.Helper()
		mustWrite(t, filepath.Join(runs, tc, tc+".log"),
			fmt.Sprintf(".. Test case :: %s\n..... Found %s bugs.\n... Explored %s schedules\n", tc, bugs, schedules))
		mustWrite(t, filepath.Join(runs, tc, "BugFinding", "Tiny_pchecker_summary.txt"), fmt.Sprintf("bugs:%s\nschedules:%s\n", bugs, schedules))
	}
}

// editRun replaces old by new in a test case's recorded run.txt.
func editRun(tc, old, new string) func(t *testing.T, runs string) {
	return func(t *testing.T, runs string) {
		t.Helper()
		path := filepath.Join(runs, tc, bridge.RecordedRunFile)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("%s holds no %q", path, old)
		}
		mustWrite(t, path, strings.Replace(string(data), old, new, 1))
	}
}

// TestReadVerboseLogPrefix reads the first n schedules of the real four-schedule log: they are
// ReadVerboseLog's first n, and the total counts all four.
func TestReadVerboseLogPrefix(t *testing.T) {
	data, err := readFixtureFile("green_verbose.json")
	if err != nil {
		t.Fatal(err)
	}
	all, err := bridge.ReadVerboseLog(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{-1, 0, 1, 3, 4, 9} {
		got, total, err := bridge.ReadVerboseLogPrefix(bytes.NewReader(data), n)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		want := all
		if n >= 0 && n < len(all) {
			want = all[:n]
		}
		if total != len(all) || len(got) != len(want) {
			t.Errorf("n=%d: %d schedules of %d, want %d of %d", n, len(got), total, len(want), len(all))
		}
		if diff := cmp.Diff(want, got); len(got) > 0 && diff != "" {
			t.Errorf("n=%d: schedules differ from ReadVerboseLog's (-want +got):\n%s", n, diff)
		}
	}
	// Brackets and escaped quotes inside strings do not confuse the count.
	tricky := `[[{"type":"A","details":{}}], [{"type":"B","details":{"log":"]] \\\" [["}}] ,[]]`
	if _, total, err := bridge.ReadVerboseLogPrefix(strings.NewReader(tricky), 1); err != nil || total != 3 {
		t.Errorf("tricky strings: total %d, err %v; want 3 schedules", total, err)
	}
	// Schedules past n are not decoded, but they must still be arrays, and the log well formed.
	for _, tc := range []struct{ name, log, want string }{
		{"object after the prefix", `[[{"type":"A","details":{}}],{"type":"B"}]`, "schedule 2: malformed checker log: want an array of entries"},
		{"string after the prefix", `[[{"type":"A","details":{}}],[],"x"]`, "schedule 3: malformed checker log: want an array of entries"},
		{"truncated after the prefix", `[[{"type":"A","details":{}}],[{"type":"B"`, "schedule 2: malformed checker log: unexpected end of input"},
		{"truncated string", `[[{"type":"A","details":{}}],[{"type":"B]]`, "schedule 2: malformed checker log: unexpected end of input"},
		{"invalid JSON inside", `[[{"type":"A","details":{}}],[{"type":}]]`, "schedule 2: malformed checker log: not valid JSON"},
		{"missing comma", `[[{"type":"A","details":{}}],[] []]`, "schedule 2: malformed checker log: want a comma"},
		{"two commas", `[[{"type":"A","details":{}}],,[]]`, "schedule 2: malformed checker log: want an array of entries"},
		{"trailing comma", `[[{"type":"A","details":{}}],[],]`, "schedule 3: malformed checker log: want an array of entries"},
		{"trailing data", `[[{"type":"A","details":{}}],[]] x`, "trailing data after the log"},
		{"bug log", `[{"type":"A","details":{}}]`, "want a verbose log"},
	} {
		_, _, err := bridge.ReadVerboseLogPrefix(strings.NewReader(tc.log), 1)
		if !errors.Is(err, bridge.ErrMalformedLog) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrMalformedLog containing %q", tc.name, err, tc.want)
		}
	}
}
