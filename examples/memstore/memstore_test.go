package memstore_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/examples/memstore"
)

func newTarget(*testing.T) adapter.Target { return memstore.NewTarget() }

// TestConformance is the example store through the kit under its own profile: every trace it can
// run passes.
func TestConformance(t *testing.T) {
	if os.Getenv("MEMSTORE_DEFAULT_PROFILE") != "" {
		// The child run of TestFailsUnderDefaultProfile: the same store, judged by the default
		// semantics, on the trace the variable names ("all": every trace).
		conformtest.Check(t, conformtest.Config{NewTarget: newTarget, Hunts: -1,
			Only: func(name string) bool {
				return os.Getenv("MEMSTORE_DEFAULT_PROFILE") == "all" || name == os.Getenv("MEMSTORE_DEFAULT_PROFILE")
			}})
		return
	}
	conformtest.Run(t, newTarget, memstore.Profile())
}

func TestProfileReads(t *testing.T) {
	p := memstore.Profile()
	if p.IsDefault() {
		t.Fatal("the example's profile is the default; it should settle lease_at_until and ack otherwise")
	}
	if v, _ := p.Value("lease_at_until"); v != "live" {
		t.Errorf("lease_at_until = %q, want live", v)
	}
	if v, _ := p.Value("ack"); v != "deletes" {
		t.Errorf("ack = %q, want deletes", v)
	}
}

// TestFailsUnderDefaultProfile runs the kit under the default profile in a child process (a
// failing test is its output) and requires it to fail at the rule the store settles otherwise.
func TestFailsUnderDefaultProfile(t *testing.T) {
	if os.Getenv("MEMSTORE_DEFAULT_PROFILE") != "" {
		t.Skip("the child run")
	}
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	for _, tc := range []struct{ trace, rule string }{
		{"leased-stale-ack", `rule lease_at_until: the target follows lease_at_until = "live" where the profile says "expired"`},
		{"tcLeaselessWorker-s1-1-ok", `rule ack: the target follows ack = "deletes" where the profile says "keeps"`},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConformance$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MEMSTORE_DEFAULT_PROFILE="+tc.trace)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("the kit passed the store under the default profile on %s:\n%s", tc.trace, out)
		}
		if !strings.Contains(string(out), tc.rule) {
			t.Errorf("the failure on %s does not name the rule (want %q):\n%s", tc.trace, tc.rule, out)
		}
	}
}
