package conformtest_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/examples/memstore"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// twoBugs has two unrelated bugs no committed trace the child run keeps shows: its peek never
// finds a message, and its expire reports no lease cleared.
type twoBugs struct{ wrapped }

func (b twoBugs) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	o, err := b.Target.Do(ctx, op, at, a)
	switch op {
	case traces.OpPeek:
		o.Message = nil
	case traces.OpExpire:
		o.Affected = 0
	}
	return o, err
}

// TestHuntChild is the child run of TestHuntReportsEachDivergence.
func TestHuntChild(t *testing.T) {
	if os.Getenv("CONFORMTEST_HUNT") == "" {
		t.Skip("the child run of TestHuntReportsEachDivergence")
	}
	conformtest.Check(t, conformtest.Config{Profile: memstore.Profile(), Hunts: 40,
		NewTarget: func(*testing.T) replay.Target { return twoBugs{wrapped{memstore.NewTarget()}} },
		Only:      func(string) bool { return false }})
}

// TestHuntReportsEachDivergence requires the hunt to report each distinct divergence once, as
// its own failing subtest named by the seed that reproduces it alone, and to only log a later
// seed that diverges the same way.
func TestHuntReportsEachDivergence(t *testing.T) {
	if os.Getenv("CONFORMTEST_HUNT") != "" {
		t.Skip("the child run")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHuntChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CONFORMTEST_HUNT=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the hunt passed a store with two bugs:\n%s", out)
	}
	status, text := subtests(string(out))
	failed := map[string]string{} // signature -> subtest
	seed := regexp.MustCompile(`^TestHuntChild/hunt/seed-(\d+)$`)
	sig := regexp.MustCompile(`diverged \(([^)]*)\); shrunk`)
	for name, s := range status {
		m := seed.FindStringSubmatch(name)
		if m == nil || s != "FAIL" {
			continue
		}
		if !strings.Contains(text[name], "Config{Seed: "+m[1]+", Hunts: 1} reproduces it") {
			t.Errorf("%s does not say how to reproduce it alone:\n%s", name, text[name])
		}
		g := sig.FindStringSubmatch(text[name])
		if g == nil {
			t.Errorf("%s does not name its divergence:\n%s", name, text[name])
			continue
		}
		if other, dup := failed[g[1]]; dup {
			t.Errorf("%s and %s report the same divergence %q", name, other, g[1])
		}
		failed[g[1]] = name
	}
	for _, want := range []string{"peek: message", "expire: affected"} {
		if failed[want] == "" {
			t.Errorf("no seed reports the divergence %q; reported: %v\n%s", want, failed, text["TestHuntChild/hunt"])
		}
	}
	if !strings.Contains(text["TestHuntChild/hunt"], "diverged as seed") {
		t.Errorf("no later seed is logged as diverging the same way:\n%s", text["TestHuntChild/hunt"])
	}
}
