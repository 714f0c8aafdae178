package main_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommand builds pconform-vet and runs it, as a user would, over the analyzers' GOPATH
// fixtures: the seed-bug copies must make it exit 3 with each analyzer's finding, and the
// stand-in store must come out clean with exit 0.
func TestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "pconform-vet")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	gopath, err := filepath.Abs(filepath.Join("..", "..", "analysis", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		pkgs     []string
		wantCode int
		wantOut  []string
	}{
		{
			name:     "seed bugs",
			pkgs:     []string{"seedpublisher", "seedconsumer"},
			wantCode: 3,
			wantOut: []string{
				"publisher.go:30:6: error of transaction call p.st.ExecTx is assigned to _",
				"publisher.go:41:2: error of transaction call p.st.ExecTx is discarded",
				"publisher.go:65:2: error of transaction call tx.Commit is discarded",
				"consumer.go:36:5: raw stored attempt count m.Attempts compared with MaxAttempts",
				"consumer.go:41:39: raw stored attempt count m.Attempts reaches retry decision c.policy.Retry",
			},
		},
		{
			name:     "clean store",
			pkgs:     []string{"github.com/pconform/pconform/actordelivery"},
			wantCode: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.pkgs...)
			cmd.Dir = gopath
			cmd.Env = append(os.Environ(), "GOPATH="+gopath, "GO111MODULE=off", "GOFLAGS=", "GOWORK=off")
			out, err := cmd.CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatalf("running pconform-vet: %v", err)
			}
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; output:\n%s", code, tt.wantCode, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if tt.wantOut == nil && len(out) > 0 {
				t.Errorf("unexpected output:\n%s", out)
			}
			for _, w := range tt.wantOut {
				found := false
				for _, l := range lines {
					found = found || strings.Contains(l, w)
				}
				if !found {
					t.Errorf("output lacks %q; got:\n%s", w, out)
				}
			}
			if tt.wantOut != nil && len(lines) != len(tt.wantOut) {
				t.Errorf("got %d findings, want %d:\n%s", len(lines), len(tt.wantOut), out)
			}
		})
	}
}
