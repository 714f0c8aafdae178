package conformtest_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/examples/memstore"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// liar is the example store's target with a declaration that does not fit what it does.
type liar struct {
	replay.Target
	caps replay.Capabilities
}

func (l liar) Capabilities() replay.Capabilities { return l.caps }

// badTargets are targets that break their own declarations, by name.
var badTargets = map[string]func() replay.Target{
	// It reports outbox rows' max_attempts although it declares them unknown.
	"reports-unknown": func() replay.Target {
		t := memstore.NewTarget()
		c := replay.CapabilitiesOf(t)
		c.Unknown = append(slices.Clone(c.Unknown), traces.ColOutboxMaxAttempts)
		return liar{t, c}
	},
	// It declares expire unsupported but runs it.
	"runs-unsupported": func() replay.Target {
		t := memstore.NewTarget()
		c := replay.CapabilitiesOf(t)
		c.Unsupported = append(slices.Clone(c.Unsupported), traces.OpExpire)
		return liar{t, c}
	},
	// It answers ErrUnsupported for purge without declaring it.
	"undeclared-unsupported": func() replay.Target {
		t := memstore.NewTarget()
		c := replay.CapabilitiesOf(t)
		c.Unsupported = slices.DeleteFunc(slices.Clone(c.Unsupported), func(op traces.Op) bool { return op == traces.OpPurge })
		return liar{t, c}
	},
}

// TestBadTargetsChild is the child run of TestBadTargets: the kit on the bad target its
// environment names, on the traces that show the lie.
func TestBadTargetsChild(t *testing.T) {
	name := os.Getenv("CONFORMTEST_BAD_TARGET")
	if name == "" {
		t.Skip("the child run of TestBadTargets")
	}
	conformtest.Check(t, conformtest.Config{Profile: memstore.Profile(), Hunts: -1,
		NewTarget: func(*testing.T) replay.Target { return badTargets[name]() },
		Only:      func(tr string) bool { return tr == "outbox-fold-stale-publisher" || tr == "purge-dedup-horizon" }})
}

// TestBadTargets requires the kit to fail, naming the lie, for a target that reports a column it
// declared unknown, runs an operation it declared unsupported, or answers ErrUnsupported for one
// it did not declare.
func TestBadTargets(t *testing.T) {
	if os.Getenv("CONFORMTEST_BAD_TARGET") != "" {
		t.Skip("the child run")
	}
	want := map[string]string{
		"reports-unknown":        "the target's snapshot states [outbox.max_attempts], which its Capabilities declare unknown",
		"runs-unsupported":       "the target declares expire unsupported but runs it",
		"undeclared-unsupported": "but its Capabilities do not declare purge unsupported",
	}
	for name, msg := range want {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBadTargetsChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "CONFORMTEST_BAD_TARGET="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the kit passed a target that breaks its declaration:\n%s", out)
			}
			if !strings.Contains(string(out), msg) {
				t.Errorf("the failure does not say %q:\n%s", msg, out)
			}
		})
	}
}

// TestCapabilitiesCheckNamesTheLie checks a declaration of an operation or column the format does
// not know.
func TestCapabilitiesCheckNamesTheLie(t *testing.T) {
	for _, c := range []struct {
		caps replay.Capabilities
		want string
	}{
		{replay.Capabilities{Unsupported: []traces.Op{"frobnicate"}}, `"frobnicate" is not an operation`},
		{replay.Capabilities{Unknown: []traces.Column{"messages.state"}}, `"messages.state" is not one a snapshot may leave unknown`},
	} {
		err := c.caps.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check() = %v, want an error saying %q", err, c.want)
		}
	}
	if _, err := replay.Run(context.Background(), &traces.Trace{Format: traces.Format, Name: "x", Origin: traces.Origin{Kind: traces.OriginHand}, Expect: traces.Expect{DivergesAt: -1}},
		liar{memstore.NewTarget(), replay.Capabilities{Unknown: []traces.Column{"messages.state"}}}, replay.Options{}); err == nil {
		t.Error("replay.Run accepted a target with a bad declaration")
	}
}
