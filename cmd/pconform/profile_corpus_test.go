package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileCorpusNoneNeeded: under a profile whose choices move no committed counterexample
// off its bug's path, profile corpus runs no P checker, says so, writes nothing, and removes a
// stale replacement an earlier run left.
func TestProfileCorpusNoneNeeded(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "default.json")
	if err := os.WriteFile(prof, []byte(`{"name": "plain"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "corpus")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(out, "tcUnfencedAckCounterexample-s1-2-bad-replaced-s1-2.json")
	if err := os.WriteFile(stale, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	f := profileCorpusFlags{out: out, seed: 1, seeds: 1, schedules: 1, models: filepath.Join("..", "..", "models", "p"), p: "no-such-p-tool"}
	if err := profileCorpus(context.Background(), prof, f, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "every committed counterexample reaches its bug under plain") {
		t.Errorf("report:\n%s", stdout.String())
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale replacement's directory is still there (%v)", err)
	}
}

// TestProfileCorpusAllowed: under a profile that allows what a variant does, the report says the
// bug cannot happen and names the choice, before any P run (here none can run).
func TestProfileCorpusAllowed(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "live.json")
	if err := os.WriteFile(prof, []byte(`{"name": "live", "lease_at_until": "live"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	f := profileCorpusFlags{out: filepath.Join(dir, "corpus"), seed: 1, seeds: 1, schedules: 1, models: filepath.Join("..", "..", "models", "p"), p: "no-such-p-tool"}
	err := profileCorpus(context.Background(), prof, f, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "not on PATH") {
		t.Errorf("err = %v, want the missing P tool named (replacements are needed)", err)
	}
	for _, want := range []string{
		"tcUnfencedAckCounterexample-s1-2-bad: not exercised under this profile",
		"hunt-lease-boundary-seed1: the bug cannot happen under this profile: lease_at_until=live",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
}
