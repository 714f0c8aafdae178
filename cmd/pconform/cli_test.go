package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func itoa(i int) string { return strconv.Itoa(i) }

const (
	okTrace  = "../../traces/testdata/good/leased-stale-ack.json"
	rawTrace = "../../traces/testdata/good/leaseless-raw-attempts-stranded.json"
)

// TestExitCodes runs the CLI in-process: 0 pass, 1 finding, 2 usage error, each with a message a
// user can act on.
func TestExitCodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	cases := []struct {
		name       string
		args       []string
		code       int
		wantOut    string
		wantErrOut string
	}{
		{"match", []string{"replay", okTrace}, exitPass, "match", ""},
		{"match with crashes", []string{"replay", okTrace, "--crash-every-step"}, exitPass, "match", ""},
		{"variant reproduces", []string{"replay", rawTrace, "--target", "raw-attempts"}, exitPass, "match", ""},
		{"correct store diverges", []string{"replay", rawTrace}, exitFinding, "diverged at step #2", ""},
		{"model diverges too", []string{"replay", rawTrace, "--target", "model"}, exitFinding, "rerun: go run ./cmd/pconform replay", ""},
		{"explain text", []string{"explain", okTrace}, exitPass, "lanes: orders", ""},
		{"explain without replay", []string{"explain", rawTrace, "--no-replay"}, exitPass, "#6", ""},
		{"unknown target", []string{"replay", okTrace, "--target", "nope"}, exitUsage, "", `unknown --target "nope"`},
		{"conflicting crash flags", []string{"replay", okTrace, "--crash-before", "2", "--crash-every-step"}, exitUsage, "", "exclude each other"},
		{"missing argument", []string{"replay"}, exitUsage, "", "expected one trace file"},
		{"unknown flag", []string{"replay", okTrace, "--frobnicate"}, exitUsage, "", "unknown flag"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", "unknown command"},
		{"missing file", []string{"replay", missing}, exitFinding, "", "missing.json"},
		{"convert needs a test case", []string{"convert", missing}, exitUsage, "", "--test-case is required"},
		{"hunt unknown variant", []string{"hunt", "--variant", "nope"}, exitUsage, "", `unknown --variant "nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tc.args, &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantOut, out.String())
			}
			if !strings.Contains(errOut.String(), tc.wantErrOut) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErrOut, errOut.String())
			}
		})
	}
}

func TestExplainWritesHTML(t *testing.T) {
	page := filepath.Join(t.TempDir(), "t.html")
	var out, errOut bytes.Buffer
	if code := run([]string{"explain", rawTrace, "--html", page}, &out, &errOut); code != exitFinding {
		t.Fatalf("exit %d, want %d: %s", code, exitFinding, errOut.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `id="divergence"`) || !strings.Contains(out.String(), "HTML timeline: "+page) {
		t.Errorf("explain --html did not write a page with the divergence, or did not say where")
	}
}

func TestHelpForEveryCommand(t *testing.T) {
	for _, cmd := range []string{"replay", "explain", "convert", "hunt"} {
		var out, errOut bytes.Buffer
		if code := run([]string{cmd, "--help"}, &out, &errOut); code != exitPass {
			t.Errorf("%s --help exited %d", cmd, code)
		}
		if !strings.Contains(out.String(), "Usage:") || !strings.Contains(out.String(), "pconform "+cmd) {
			t.Errorf("%s --help does not show usage:\n%s", cmd, out.String())
		}
	}
}
