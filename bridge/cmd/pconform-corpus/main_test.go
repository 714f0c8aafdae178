package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeP is the bridge's stand-in for the P tool; in "replay" mode it serves the committed logs of
// the tiny fixture project, so the command runs end to end without dotnet.
func fakeP(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "fakep", "p"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCommand(t *testing.T) {
	t.Setenv("FAKE_P_MODE", "replay")
	models := filepath.Join("..", "..", "testdata", "pproject")
	corpus := filepath.Join(t.TempDir(), "corpus")
	common := []string{"-p", fakeP(t), "-models", models, "-out", corpus, "-compile=false", "-schedules", "4", "-ce-schedules", "4"}

	code, stdout, stderr := runCmd(t, common...)
	if code != 0 || !strings.Contains(stdout, "wrote 5 traces (") {
		t.Fatalf("regenerate: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if code, stdout, stderr = runCmd(t, append(common, "-check")...); code != 0 || !strings.Contains(stdout, "is up to date") {
		t.Fatalf("check of a fresh corpus: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	victim := filepath.Join(corpus, "tcBridgeGreen-s1-1-ok.json")
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr = runCmd(t, append(common, "-check")...); code != 1 || !strings.Contains(stderr, "missing tcBridgeGreen-s1-1-ok.json") {
		t.Fatalf("check of a stale corpus: exit %d, want 1\nstderr: %s", code, stderr)
	}
	if _, err := os.Stat(victim); !os.IsNotExist(err) {
		t.Error("-check wrote into the corpus")
	}
	// The per-test bound reaches the files.
	if code, stdout, stderr = runCmd(t, append(common, "-per-test", "1")...); code != 0 || !strings.Contains(stdout, "wrote 2 traces (") {
		t.Fatalf("regenerate with -per-test 1: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

func TestCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		mode string
		want string
	}{
		{"unknown flag", []string{"-nope"}, "", "flag provided but not defined"},
		{"extra argument", []string{"corpus"}, "", "unexpected arguments"},
		{"checker failure", []string{"-tests", "tcA", "-compile=false", "-models", filepath.Join("..", "..", "testdata", "pproject")}, "internal", "exit code 2"},
		{"checker failure in -check", []string{"-tests", "tcA", "-check", "-compile=false", "-models", filepath.Join("..", "..", "testdata", "pproject")}, "internal", "exit code 2"},
		{"-from with -compile", []string{"-from", "runs", "-compile"}, "", "-compile and -from exclude each other"},
		{"-from without recorded runs", []string{"-from", "no-such-runs", "-check", "-models", filepath.Join("..", "..", "testdata", "pproject")}, "", "scripts/pmodels.sh --logs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FAKE_P_MODE", tc.mode)
			args := append([]string{"-p", fakeP(t), "-out", t.TempDir()}, tc.args...)
			code, _, stderr := runCmd(t, args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}
