package replay_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// rewrite is datadriven's -rewrite flag: one flag regenerates the scripts and the golden files.
func rewrite() bool {
	f := flag.Lookup("rewrite")
	return f != nil && f.Value.String() == "true"
}

// golden compares got with testdata/name. go-cmp deliberately makes its diff text unstable by
// sometimes writing non-breaking spaces; they are normalized to spaces first.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, "\u00a0", " ")
	path := filepath.Join("testdata", name)
	if rewrite() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got); run with -rewrite and review the diff:\n%s", path, diff)
	}
}

// divergedLeaseTrace replays leaseTrace against a target whose second lease reports attempts 2.
func divergedLeaseTrace(t *testing.T) report.Evidence {
	answers := leaseAnswers("tokA", "tokB")
	answers[3].Message.Attempts = 2
	target := newScripted(answers...)
	target.snap = replay.Snapshot{Messages: []replay.MessageRow{
		{Mailbox: "a", ID: "m1", State: "ready", Attempts: 1, MaxAttempts: 3, Token: "tokA", LeaseUntil: 11},
		{Mailbox: "a", ID: "m2", State: "ready", Attempts: 2, MaxAttempts: 3, Token: "tokB", LeaseUntil: 11},
	}}
	tr := leaseTrace()
	v := mustRun(t, tr, target, replay.Options{})
	return report.Evidence{Trace: tr, TracePath: "traces/corpus/lease-two.json", Target: "fake", Options: replay.Options{}, Verdict: v}
}

func TestReportGolden(t *testing.T) {
	var b strings.Builder
	if err := divergedLeaseTrace(t).WriteReport(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.golden", b.String())
}

func TestWriteEvidence(t *testing.T) {
	ev := divergedLeaseTrace(t)
	dir, err := report.WriteEvidence(t.TempDir(), ev)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if got := strings.Count(read("expected.history"), "\n"); got != 6 {
		t.Errorf("expected.history has %d lines, want one per step (6)", got)
	}
	obs := read("observed.history")
	if !strings.HasPrefix(obs, "#0 ") || !strings.Contains(obs, "#3 @1 lease mailbox=a lease_for=10 -> message={id=m2 attempts=2 token=2}") {
		t.Errorf("observed.history does not end at the diverging step:\n%s", obs)
	}
	div := read("divergence.txt")
	for _, want := range []string{
		"diverged at step #3", "scripts/pconform replay traces/corpus/lease-two.json --target fake",
		"go test ./replay/ -run '^TestCorpus$/^lease-two$' -v", "- #3 @1 lease", "+ #3 @1 lease",
	} {
		if !strings.Contains(div, want) {
			t.Errorf("divergence.txt lacks %q:\n%s", want, div)
		}
	}
	if !strings.Contains(read("trace.json"), `"name": "lease-two"`) {
		t.Errorf("trace.json is not the replayed trace")
	}
	if !strings.Contains(read("target.txt"), "fake") {
		t.Errorf("target.txt does not name the target")
	}
}

func TestDiffLines(t *testing.T) {
	got := tracefmt.DiffLines([]string{"a", "b", "c"}, []string{"a", "x"})
	want := []string{"  a", "- b", "+ x", "- c"}
	if !cmp.Equal(got, want) {
		t.Errorf("DiffLines = %q, want %q", got, want)
	}
}

func TestRerunCommands(t *testing.T) {
	tr := &traces.Trace{Name: "tcX-s1-1-bad"}
	abs, err := filepath.Abs("/tmp/hunt")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		opts       replay.Options
		cli, test  string
	}{
		{"corpus trace", "traces/corpus/tcX-s1-1-bad.json", replay.Options{},
			"scripts/pconform replay traces/corpus/tcX-s1-1-bad.json --target store",
			"go test ./replay/ -run '^TestCorpus$/^tcX-s1-1-bad$' -v"},
		{"trace elsewhere names its directory", "/tmp/hunt/tcX-s1-1-bad.json", replay.Options{ReopenBefore: []int{2}},
			"scripts/pconform replay /tmp/hunt/tcX-s1-1-bad.json --target store --crash-before 2",
			"go test ./replay/ -run '^TestCorpus$/^tcX-s1-1-bad$' -v -corpus " + abs},
		{"path with a space is quoted", "my traces/t.json", replay.Options{},
			"scripts/pconform replay 'my traces/t.json' --target store", "-corpus '"},
		{"stdin", "-", replay.Options{},
			"scripts/pconform replay '<trace.json in this directory>' --target store",
			"go test ./replay/ -run '^TestCorpus$/^tcX-s1-1-bad$' -v"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := report.Evidence{Trace: tr, TracePath: tc.path, Target: targets.Store, Options: tc.opts}.RerunCommands()
			if got[0] != tc.cli {
				t.Errorf("cli command\n got %s\nwant %s", got[0], tc.cli)
			}
			if !strings.HasPrefix(got[1], tc.test) && !strings.Contains(got[1], tc.test) {
				t.Errorf("test command\n got %s\nwant %s", got[1], tc.test)
			}
		})
	}
}

// TestWriteEvidenceMakesItsDirectory: a missing evidence directory is created, and a trace read
// from stdin is rerun from the copy kept in the evidence.
func TestWriteEvidenceMakesItsDirectory(t *testing.T) {
	ev := divergedLeaseTrace(t)
	ev.TracePath = "-"
	root := filepath.Join(t.TempDir(), "not", "yet")
	dir, err := report.WriteEvidence(root, ev)
	if err != nil {
		t.Fatal(err)
	}
	rerun, err := os.ReadFile(filepath.Join(dir, "rerun.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "scripts/pconform replay " + filepath.Join(dir, "trace.json"); !strings.Contains(string(rerun), want) {
		t.Errorf("rerun.sh does not replay the kept copy (%s):\n%s", want, rerun)
	}
	if _, err := traces.ReadFile(filepath.Join(dir, "trace.json")); err != nil {
		t.Errorf("the kept trace does not read back: %v", err)
	}
}

func TestDiffFields(t *testing.T) {
	cases := []struct {
		name               string
		expected, observed []string
		want               []string
	}{
		{"equal", []string{"a", "b"}, []string{"a", "b"}, nil},
		{"changed field", []string{"action=delivered"}, []string{"action=commit_failed"}, []string{"- action=delivered", "+ action=commit_failed"}},
		{"extra observed row in the middle", []string{"a", "c"}, []string{"a", "b", "c"}, []string{"+ b"}},
		{"missing row", []string{"a", "b", "c"}, []string{"a", "c"}, []string{"- b"}},
		{"both empty", nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tracefmt.DiffFields(tc.expected, tc.observed); !cmp.Equal(got, tc.want, cmpopts.EquateEmpty()) {
				t.Errorf("DiffFields = %q, want %q", got, tc.want)
			}
		})
	}
}
