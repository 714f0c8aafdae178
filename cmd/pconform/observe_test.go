package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestObserveAndCheck runs pconform observe on the correct store (exit 0, a trace written that
// pconform check accepts), on the raw-attempts variant (exit 1: the model refuses its first
// leaseless retry), and converts the recorded events with convert --events.
func TestObserveAndCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the workload for seconds")
	}
	dir := t.TempDir()
	ok, events := filepath.Join(dir, "ok.json"), filepath.Join(dir, "ok.jsonl")
	var out, errOut bytes.Buffer
	if code := run([]string{"observe", "--seed", "2", "--budget", "1500ms", "--out", ok, "--events", events}, &out, &errOut); code != exitPass {
		t.Fatalf("observe on the correct store exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "model oracle: agrees with all") {
		t.Fatalf("observe printed:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"check", ok}, &out, &errOut); code != exitPass {
		t.Fatalf("check exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run([]string{"convert", "--events", events, "--out", dir}, &out, &errOut); code != exitPass || !strings.Contains(out.String(), "ok.json") {
		t.Fatalf("convert --events exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	// The events with one line dropped from the middle: a gap, refused naming it.
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	var cut []string
	dropped := false
	for _, l := range lines {
		if !dropped && strings.Contains(l, `"seq":5,`) && !strings.Contains(l, `"read":true`) {
			dropped = true
			continue
		}
		cut = append(cut, l)
	}
	gap := filepath.Join(dir, "gap.jsonl")
	if err := os.WriteFile(gap, []byte(strings.Join(cut, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if code := run([]string{"convert", "--events", gap, "--out", dir}, &out, &errOut); code != exitCannotRun || !strings.Contains(errOut.String(), "seq 5 missing") {
		t.Fatalf("convert of a log with a gap exited %d:\n%s", code, errOut.String())
	}

	out.Reset()
	bad := filepath.Join(dir, "raw.json")
	if code := run([]string{"observe", "--target", "raw-attempts", "--seed", "2", "--budget", "2s", "--out", bad}, &out, &errOut); code != exitFinding {
		t.Fatalf("observe on raw-attempts exited %d, want %d:\n%s%s", code, exitFinding, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "FINDING model oracle") || !strings.Contains(out.String(), "leaseless") {
		t.Fatalf("observe on raw-attempts printed:\n%s", out.String())
	}
}
