package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func itoa(i int) string { return strconv.Itoa(i) }

const (
	okTrace  = "../../traces/testdata/good/leased-stale-ack.json"
	rawTrace = "../../traces/testdata/good/leaseless-raw-attempts-stranded.json"
	// wrongTrace expects a second enqueue of one id to be no duplicate: a real finding.
	wrongTrace = "testdata/wrong-duplicate.json"
	// garbageTrace is cut off in the middle.
	garbageTrace = "testdata/unreadable/garbage.json"
)

// TestExitCodes runs the CLI in-process: 0 the verdict is what the trace claims, 1 a finding, 2 a
// usage error, 3 could not run; each with a message a user can act on.
func TestExitCodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	cases := []struct {
		name       string
		args       []string
		code       int
		wantOut    string
		wantErrOut string
	}{
		{"match", []string{"replay", okTrace}, exitPass, "as recorded: store matches the trace", ""},
		{"match with crashes", []string{"replay", okTrace, "--crash-every-step"}, exitPass, "match", ""},
		{"variant reproduces its bug", []string{"replay", rawTrace, "--target", "raw-attempts"}, exitPass, `as recorded: raw-attempts reproduces the bug of variant "raw-attempts"`, ""},
		{"correct store refuses the bug as predicted", []string{"replay", rawTrace}, exitPass, "as predicted: the correct store refuses the bug of variant \"raw-attempts\" at step #2", ""},
		{"model refuses it too, with rerun commands", []string{"replay", rawTrace, "--target", "model"}, exitPass, "rerun: scripts/pconform replay", ""},
		{"a divergence the trace does not predict", []string{"replay", wrongTrace}, exitFinding, "finding: store diverges from the trace at step #1", ""},
		{"a variant the trace says nothing about", []string{"replay", rawTrace, "--target", "split-write"}, exitPass, "no claim about this target", ""},
		{"explain text", []string{"explain", okTrace}, exitPass, "lanes: orders", ""},
		{"explain a counterexample against the store", []string{"explain", rawTrace}, exitPass, "verdict: as predicted", ""},
		{"explain without replay", []string{"explain", rawTrace, "--no-replay"}, exitPass, "#6", ""},
		{"unknown target", []string{"replay", okTrace, "--target", "nope"}, exitUsage, "", `unknown --target "nope"`},
		{"conflicting crash flags", []string{"replay", okTrace, "--crash-before", "2", "--crash-every-step"}, exitUsage, "", "exclude each other"},
		{"missing argument", []string{"replay"}, exitUsage, "", "expected one or more trace files"},
		{"stdin twice", []string{"replay", "-", "-"}, exitUsage, "", "it can be read once"},
		{"unknown flag", []string{"replay", okTrace, "--frobnicate"}, exitUsage, "", "unknown flag"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", "unknown command"},
		{"missing file", []string{"replay", missing}, exitCannotRun, "", "could not run: traces: open " + missing},
		{"garbage input", []string{"replay", garbageTrace}, exitCannotRun, "", "garbage.json:1:41"},
		{"explain a missing file", []string{"explain", missing}, exitCannotRun, "", "missing.json"},
		{"convert needs a test case", []string{"convert", missing}, exitUsage, "", "--test-case is required"},
		{"hunt unknown variant", []string{"hunt", "--variant", "nope"}, exitUsage, "", `unknown --variant "nope"`},
		{"observe tick without events-only", []string{"observe", "--tick", "2ms", "--out", missing}, exitUsage, "", "--tick goes with --events-only"},
		{"observe negative tick", []string{"observe", "--events-only", "--tick", "-1ms", "--events", missing}, exitUsage, "", "--tick -1ms is negative"},
		{"observe batch too large", []string{"observe", "--batch", "1001", "--out", missing}, exitUsage, "", "--batch 1001 is outside [0, 1000]"},
		{"version", []string{"--version"}, exitPass, "pconform ", ""},
		{"no command", nil, exitUsage, "", "no command given"},
		{"a usage error names the subcommand's help", []string{"replay", okTrace, "--frobnicate"}, exitUsage, "", "Run 'pconform replay --help' for usage."},
		{"a crash past the end", []string{"replay", okTrace, "--crash-before", "99"}, exitUsage, "", "--crash-before 99 is past the end of leased-stale-ack, whose steps are #0 to #20"},
		{"a crash without a database", []string{"replay", okTrace, "--crash-every-step", "--target", "model"}, exitUsage, "", "--target model keeps no database"},
		{"explain a crash without a database", []string{"explain", okTrace, "--crash-before", "1", "--target", "model"}, exitUsage, "", "Run 'pconform explain --help'"},
		{"an unknown expect.variant", []string{"replay", "testdata/unknown-variant.json"}, exitUsage, "", `expect.variant "nosuchvariant" is not a known broken variant`},
		{"explain an unknown expect.variant", []string{"explain", "testdata/unknown-variant.json"}, exitUsage, "", `"nosuchvariant"`},
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
	if code := run([]string{"explain", rawTrace, "--html", page}, &out, &errOut); code != exitPass {
		t.Fatalf("exit %d, want %d: %s", code, exitPass, errOut.String())
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
	for _, cmd := range []string{"replay", "explain", "convert", "hunt", "upgrade"} {
		var out, errOut bytes.Buffer
		if code := run([]string{cmd, "--help"}, &out, &errOut); code != exitPass {
			t.Errorf("%s --help exited %d", cmd, code)
		}
		if !strings.Contains(out.String(), "Usage:") || !strings.Contains(out.String(), "pconform "+cmd) {
			t.Errorf("%s --help does not show usage:\n%s", cmd, out.String())
		}
	}
}

// TestEveryCounterexamplePageLinksItsCode: the explain page of every counterexample (the corpus's
// -bad traces and the hunted ones) names the broken check in words and links the variant's Go
// code as file:line, and that line exists.
func TestEveryCounterexamplePageLinksItsCode(t *testing.T) {
	var paths []string
	for _, glob := range []string{"../../traces/corpus/*-bad.json", "../../traces/hunted/*.json"} {
		m, _ := filepath.Glob(glob)
		paths = append(paths, m...)
	}
	if len(paths) < 20 {
		t.Fatalf("only %d counterexamples", len(paths))
	}
	link := regexp.MustCompile(`class="mono code-link">([a-z/_]+\.go):(\d+) `)
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "page.html")
			var out, errOut bytes.Buffer
			if code := run([]string{"explain", p, "--html", page}, &out, &errOut); code != exitPass {
				t.Fatalf("explain exited %d\n%s", code, errOut.String())
			}
			b, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `id="broken-check"`) {
				t.Error("the page does not name the broken check")
			}
			m := link.FindAllStringSubmatch(string(b), -1)
			if len(m) == 0 {
				t.Fatal("the page links no Go file:line")
			}
			for _, l := range m {
				src, err := os.ReadFile(filepath.Join("../..", l[1]))
				if err != nil {
					t.Fatalf("the page links %s, which does not exist: %v", l[1], err)
				}
				if n, _ := strconv.Atoi(l[2]); n < 1 || n > strings.Count(string(src), "\n")+1 {
					t.Errorf("the page links %s:%s, past the file's end", l[1], l[2])
				}
			}
		})
	}
}
