package conformtest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/internal/modeltarget"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// TestChoicesChild is the child run of TestChoiceTracesUnderKit: the kit, under the profile the
// environment names, on the reference model as the store (under that profile, or under the
// default when CONFORMTEST_CHOICES_STORE is "default"; or, when it is "countless", a store that
// reports neither purge's count, nor enqueue's duplicate flag, nor redrive's not_found, and says
// so), with Config.Traces the file the environment names.
func TestChoicesChild(t *testing.T) {
	file := os.Getenv("CONFORMTEST_CHOICES_TRACE")
	if file == "" {
		t.Skip("the child run of TestChoiceTracesUnderKit")
	}
	tr, err := traces.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p := tr.Expect.Profile
	newTarget := func(*testing.T) replay.Target { return modeltarget.New(models.Config{Profile: p}) }
	switch os.Getenv("CONFORMTEST_CHOICES_STORE") {
	case "default":
		newTarget = func(*testing.T) replay.Target { return modeltarget.New(models.Config{}) }
	case "countless":
		newTarget = func(*testing.T) replay.Target {
			return countless{Target: modeltarget.New(models.Config{Profile: p}), caps: replay.Capabilities{Unreported: []replay.UnreportedResult{
				{Op: traces.OpPurge, Field: "affected"}, {Op: traces.OpEnqueue, Field: "duplicate"},
				{Op: traces.OpRedrive, Field: "err"},
			}}}
		}
	}
	conformtest.Check(t, conformtest.Config{Profile: p, Hunts: -1, NewTarget: newTarget,
		Only: func(string) bool { return false }, Traces: []string{file}})
}

// countless drops three results its API does not return: purge's count, enqueue's duplicate flag
// and redrive's not_found.
type countless struct {
	replay.Target
	caps replay.Capabilities
}

func (c countless) Capabilities() replay.Capabilities { return c.caps }

func (c countless) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	o, err := c.Target.Do(ctx, op, at, a)
	switch op {
	case traces.OpPurge:
		o.Affected = 0
	case traces.OpEnqueue:
		o.Duplicate = false
	case traces.OpRedrive:
		o.Err = ""
	}
	return o, err
}

// TestChoiceTracesUnderKit runs each choice trace (traces/testdata/choices) through the kit as a
// store's own trace under its profile: a store that makes the choice passes, one that ignores it
// (the model under the default profile) fails, the kit naming the rule. And a store that declares results it does not
// report passes a trace that expects them, the kit saying what it did not compare.
func TestChoiceTracesUnderKit(t *testing.T) {
	if os.Getenv("CONFORMTEST_CHOICES_TRACE") != "" {
		t.Skip("the child run")
	}
	files, err := filepath.Glob(filepath.Join("..", "traces", "testdata", "choices", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no choice traces (%v)", err)
	}
	type run struct {
		name, file, store string
		fail              bool
		says              []string
	}
	var runs []run
	for _, f := range files {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, choice := tr.Name, tr.Expect.Profile.Changed()[0].Choice
		// The kit names the rule the store ignores.
		runs = append(runs, run{name: name + "/kept", file: f, says: []string{"--- PASS: TestChoicesChild/extra/" + name}},
			run{name: name + "/ignored", file: f, store: "default", fail: true,
				says: []string{"--- FAIL: TestChoicesChild/extra/" + name, "rule " + choice + ": the target follows " + choice}})
	}
	runs = append(runs, run{name: "countless", file: filepath.Join("..", "traces", "testdata", "good", "redrive.json"), store: "countless",
		says: []string{"results it cannot report (not compared; each verdict lists where): purge affected, enqueue duplicate, redrive err",
			"(purge): affected (expected 2, observed 0)", "--- PASS: TestChoicesChild/extra/redrive"}})
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChoicesChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "CONFORMTEST_CHOICES_TRACE="+r.file, "CONFORMTEST_CHOICES_STORE="+r.store)
			out, err := cmd.CombinedOutput()
			if (err != nil) != r.fail {
				t.Fatalf("child run failed=%v, want %v:\n%s", err != nil, r.fail, out)
			}
			for _, s := range r.says {
				if !strings.Contains(string(out), s) {
					t.Errorf("the output does not say %q:\n%s", s, out)
				}
			}
		})
	}
}
