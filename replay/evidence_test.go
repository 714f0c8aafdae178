package replay

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
func divergedLeaseTrace(t *testing.T) Evidence {
	answers := leaseAnswers("tokA", "tokB")
	answers[3].Message.Attempts = 2
	target := newScripted(answers...)
	target.snap = Snapshot{Messages: []MessageRow{
		{Mailbox: "a", ID: "m1", State: "ready", Attempts: 1, MaxAttempts: 3, Token: "tokA", LeaseUntil: 11},
		{Mailbox: "a", ID: "m2", State: "ready", Attempts: 2, MaxAttempts: 3, Token: "tokB", LeaseUntil: 11},
	}}
	tr := leaseTrace()
	v := mustRun(t, tr, target, DefaultOptions())
	return Evidence{Trace: tr, TracePath: "traces/corpus/lease-two.json", Target: "fake", Options: DefaultOptions(), Verdict: v}
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
	dir, err := WriteEvidence(t.TempDir(), ev)
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
		"diverged at step #3", "go run ./cmd/pconform replay traces/corpus/lease-two.json --target fake",
		"go test ./replay/ -run 'TestCorpus/^lease-two$' -v", "- #3 @1 lease", "+ #3 @1 lease",
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
	got := DiffLines([]string{"a", "b", "c"}, []string{"a", "x"})
	want := []string{"  a", "- b", "+ x", "- c"}
	if !cmp.Equal(got, want) {
		t.Errorf("DiffLines = %q, want %q", got, want)
	}
}
