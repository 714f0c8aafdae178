package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpgrade upgrades a directory holding a v1 file of the first shape, a current file and an
// unreadable one: --check lists the v1 file and writes nothing (exit 1), the upgrade rewrites it
// to the golden upgrade and reports the unreadable one (exit 3), and a second upgrade finds
// nothing to do.
func TestUpgrade(t *testing.T) {
	dir := t.TempDir()
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("../../traces/testdata/versions/v1-leased-stale-ack.json", "old.json")
	copyFile(okTrace, "current.json")
	before, _ := os.ReadFile(filepath.Join(dir, "old.json"))

	var out, errOut bytes.Buffer
	if code := run([]string{"upgrade", "--check", dir}, &out, &errOut); code != exitFinding {
		t.Fatalf("--check exit %d, want %d: %s%s", code, exitFinding, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "old.json: would upgrade (pconform.trace/v1 -> pconform.trace/v2)") || strings.Contains(out.String(), "current.json") {
		t.Errorf("--check output:\n%s", out.String())
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "old.json")); !bytes.Equal(after, before) {
		t.Error("--check wrote the file")
	}

	copyFile(garbageTrace, "garbage.json")
	out.Reset()
	errOut.Reset()
	if code := run([]string{"upgrade", dir}, &out, &errOut); code != exitCannotRun {
		t.Fatalf("upgrade exit %d, want %d: %s%s", code, exitCannotRun, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "garbage.json:1:41") || !strings.Contains(out.String(), "upgraded 1, 1 already pconform.trace/v2, 1 unreadable") {
		t.Errorf("upgrade output:\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	got, _ := os.ReadFile(filepath.Join(dir, "old.json"))
	want, err := os.ReadFile("../../traces/testdata/versions/upgraded/v1-leased-stale-ack.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("upgraded file differs from the golden upgrade:\n%s", got)
	}

	os.Remove(filepath.Join(dir, "garbage.json"))
	out.Reset()
	if code := run([]string{"upgrade", dir}, &out, &errOut); code != exitPass || !strings.Contains(out.String(), "upgraded 0, 2 already") {
		t.Errorf("second upgrade exit %d:\n%s", code, out.String())
	}
}

func TestUpgradeRefusesUnknownVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "future.json")
	if err := os.WriteFile(path, []byte(`{"format": "pconform.trace/v9", "name": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"upgrade", path}, &out, &errOut); code != exitCannotRun {
		t.Fatalf("exit %d, want %d", code, exitCannotRun)
	}
	if !strings.Contains(errOut.String(), `unknown format version "pconform.trace/v9"`) {
		t.Errorf("stderr does not name the version:\n%s", errOut.String())
	}
}
