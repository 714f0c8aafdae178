package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetIn(strings.NewReader(stdin))
	code = runRoot(root, args, &errOut)
	return code, out.String(), errOut.String()
}

// TestReplaySeveralTracesPrintsATable: files and a directory in one call, a summary table, and
// the exit code of the worst trace (a finding beats a trace that could not run).
func TestReplaySeveralTracesPrintsATable(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{okTrace, rawTrace} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCLI(t, "", "replay", dir, "--quiet")
	if code != exitPass {
		t.Fatalf("a directory of traces that behave as claimed exited %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"TRACE", "as claimed", "diverged at step #2", "2 traces: 2 as claimed, 0 findings, 0 could not run"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "", "replay", dir, garbageTrace, "-q")
	if code != exitCannotRun || !strings.Contains(out, "COULD NOT RUN") {
		t.Errorf("with an unreadable trace: exit %d, want %d, and a COULD NOT RUN row:\n%s", code, exitCannotRun, out)
	}
	code, out, _ = runCLI(t, "", "replay", garbageTrace, wrongTrace, dir, "-q")
	if code != exitFinding || !strings.Contains(out, "FINDING") || !strings.Contains(out, "4 traces: 2 as claimed, 1 findings, 1 could not run") {
		t.Errorf("with a finding: exit %d, want %d:\n%s", code, exitFinding, out)
	}
}

// TestReplayJSONFromStdin: - reads the trace from standard input, --json prints one document
// with the verdict read against the trace's claim.
func TestReplayJSONFromStdin(t *testing.T) {
	data, err := os.ReadFile(rawTrace)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, string(data), "replay", "-", "--json", "--evidence", filepath.Join(t.TempDir(), "new", "dir"))
	if code != exitPass {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var doc struct {
		Results []traceResult `json:"results"`
		Exit    int           `json:"exit"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	if len(doc.Results) != 1 || doc.Exit != exitPass {
		t.Fatalf("want one result and exit 0, got %+v", doc)
	}
	r := doc.Results[0]
	if r.File != "-" || r.Outcome != "diverged" || r.Step == nil || *r.Step != 2 || r.Claim != "refuse" || !r.AsClaimed || r.Variant != "raw-attempts" {
		t.Errorf("result does not say the store refused the raw-attempts bug at step #2: %+v", r)
	}
	if r.Evidence == "" {
		t.Fatalf("--evidence was given but no evidence was written")
	}
	if _, err := os.Stat(filepath.Join(r.Evidence, "trace.json")); err != nil {
		t.Errorf("evidence directory (created on demand) lacks the trace: %v", err)
	}
	if len(r.Rerun) == 0 || !strings.Contains(r.Rerun[0], filepath.Join(r.Evidence, "trace.json")) {
		t.Errorf("the rerun command of a trace from stdin must name the kept copy: %q", r.Rerun)
	}
}

// TestReplayOutputIsStableAndShort: a passing replay prints a summary without the history (-v
// adds it), and the same command prints the same bytes every time.
func TestReplayOutputIsStableAndShort(t *testing.T) {
	_, short, _ := runCLI(t, "", "replay", okTrace)
	_, long, _ := runCLI(t, "", "replay", okTrace, "-v")
	if strings.Contains(short, "history") || !strings.Contains(long, "history (observed):") {
		t.Errorf("history should appear only with -v\nwithout:\n%s\nwith:\n%s", short, long)
	}
	if n := strings.Count(short, "\n"); n > 3 {
		t.Errorf("a passing replay printed %d lines, want a summary:\n%s", n, short)
	}
	ev := t.TempDir()
	first := ""
	for i := range 4 {
		_, out, _ := runCLI(t, "", "replay", wrongTrace, "--evidence", ev)
		// The evidence directory's name is random by design; everything else must repeat.
		out = strings.Join(dropLinesWith(out, ev), "\n")
		if i == 0 {
			first = out
		} else if out != first {
			t.Fatalf("run %d printed different bytes:\n%s\nfirst:\n%s", i, out, first)
		}
	}
}

func dropLinesWith(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

func TestDescribeBuild(t *testing.T) {
	info := func(settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.26.10", Main: debug.Module{Path: "github.com/pconform/pconform", Version: "v0.0.0-20261130-abc"}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	cases := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"stamped", info("vcs.revision", "e26aa97", "vcs.time", "2026-11-30T04:52:58Z", "vcs.modified", "false"), true,
			"pconform v0.0.0-20261130-abc revision e26aa97 (2026-11-30T04:52:58Z) go1.26.10"},
		{"modified work tree", info("vcs.revision", "e26aa97", "vcs.modified", "true"), true, "pconform v0.0.0-20261130-abc revision e26aa97+modified go1.26.10"},
		{"go run", info(), true, "pconform v0.0.0-20261130-abc revision unknown (no VCS stamp: go run, a test binary, or a build outside a git clone) go1.26.10"},
		{"no build info", nil, false, "pconform (no build information)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeBuild(tc.info, tc.ok); got != tc.want {
				t.Errorf("describeBuild\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestHuntDrawsNoProgressIntoALog: the progress bar redraws a line in place, so it appears only
// on a terminal; redirected output (here a buffer) gets none.
func TestHuntDrawsNoProgressIntoALog(t *testing.T) {
	code, out, errOut := runCLI(t, "", "hunt", "--variant", "store", "--sequences", "2", "--seed", "1", "--out", filepath.Join(t.TempDir(), "made", "on", "demand"))
	if code != exitPass {
		t.Fatalf("a short hunt of the correct store exited %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(errOut, "\r") || strings.Contains(errOut, "sequences") {
		t.Errorf("the progress bar went into a non-terminal stderr: %q", errOut)
	}
}
