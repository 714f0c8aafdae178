package conformtest_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/examples/memstore"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// TestExtraChild is the child run of TestExtraTraces: the kit with Config.Traces set to the
// directory its environment names, on the example store or on its stale-extend breakage.
func TestExtraChild(t *testing.T) {
	dir := os.Getenv("CONFORMTEST_EXTRA_DIR")
	if dir == "" {
		t.Skip("the child run of TestExtraTraces")
	}
	newTarget := func(*testing.T) replay.Target { return memstore.NewTarget() }
	if os.Getenv("CONFORMTEST_EXTRA_TARGET") == "stale-extend" {
		newTarget = func(*testing.T) replay.Target { return staleExtend{wrapped{memstore.NewTarget()}} }
	}
	conformtest.Check(t, conformtest.Config{Profile: memstore.Profile(), Hunts: -1, NewTarget: newTarget,
		Only: func(string) bool { return false }, Traces: []string{dir}})
}

// copyTrace writes the committed trace at name into dir under a new name.
func copyTrace(t *testing.T, dir, name, newName string) {
	t.Helper()
	data, err := fs.ReadFile(traces.Committed(), name)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := traces.Unmarshal(data, name)
	if err != nil {
		t.Fatal(err)
	}
	tr.Name = newName
	if err := traces.WriteFile(filepath.Join(dir, newName+".json"), tr); err != nil {
		t.Fatal(err)
	}
}

// TestExtraTraces requires Config.Traces to run a store's own trace files as the committed ones
// run: a green trace as extra/NAME and reopen/extra/NAME, a counterexample as
// variant/VARIANT/NAME (failing with the variant's name on a store that reproduces it), and a
// file that does not read as a failure naming it.
func TestExtraTraces(t *testing.T) {
	if os.Getenv("CONFORMTEST_EXTRA_DIR") != "" {
		t.Skip("the child run")
	}
	dir := t.TempDir()
	copyTrace(t, dir, "testdata/good/leased-stale-ack.json", "mine")
	copyTrace(t, dir, "hunted/hunt-stale-extend-seed1.json", "mine-bad")
	broken := filepath.Join(t.TempDir(), "broken")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "torn.json"), []byte(`{"format": `), 0o644); err != nil {
		t.Fatal(err)
	}
	const child = "TestExtraChild/"
	for _, c := range []struct {
		name, dir, target string
		want              map[string]string // subtest -> status
		says              string            // words the output must hold
	}{
		{"runs", dir, "", map[string]string{"extra/mine": "PASS", "reopen/extra/mine": "PASS", "variant/stale-extend/mine-bad": "PASS"}, ""},
		{"finds", dir, "stale-extend", map[string]string{"extra/mine": "PASS", "variant/stale-extend/mine-bad": "FAIL"},
			"reproduces broken variant stale-extend: the target does exactly what stale-extend does in mine-bad"},
		{"torn-file", broken, "", map[string]string{}, "torn.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestExtraChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "CONFORMTEST_EXTRA_DIR="+c.dir, "CONFORMTEST_EXTRA_TARGET="+c.target)
			out, err := cmd.CombinedOutput()
			if wantFail := c.says != ""; (err != nil) != wantFail {
				t.Fatalf("child run failed=%v, want %v:\n%s", err != nil, wantFail, out)
			}
			status, _ := subtests(string(out))
			for sub, want := range c.want {
				if status[child+sub] != want {
					t.Errorf("subtest %s: %q, want %s\n%s", sub, status[child+sub], want, out)
				}
			}
			if !strings.Contains(string(out), c.says) {
				t.Errorf("the output does not say %q:\n%s", c.says, out)
			}
		})
	}
}
