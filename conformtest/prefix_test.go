package conformtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/examples/memstore"
	"github.com/pconform/pconform/replay"
)

// prefixTrace has four steps the example store runs, then a redrive, which it does not support.
// unfitTrace's step #25 does not fit the example store's profile (a worker fetches while it still
// holds a message it did not get under the default).
const (
	prefixTrace = "leased-exhausted-after-redrive"
	unfitTrace  = "tcPipeline-s1-2-ok"
)

// TestPrefixChild is the child run of TestUnsupportedStepCutsTheTrace: the example store that
// forgets everything on reopen, on one trace with an unsupported step.
func TestPrefixChild(t *testing.T) {
	if os.Getenv("CONFORMTEST_PREFIX") == "" {
		t.Skip("the child run of TestUnsupportedStepCutsTheTrace")
	}
	conformtest.Check(t, conformtest.Config{Profile: memstore.Profile(), Hunts: -1,
		NewTarget: func(*testing.T) replay.Target { return &forgetful{wrapped{memstore.NewTarget()}} },
		Only:      func(name string) bool { return name == prefixTrace || name == unfitTrace }})
}

// TestUnsupportedStepCutsTheTrace requires a trace with a step the target does not support, or
// one that does not fit the profile, to be replayed up to that step: its prefix runs, a
// divergence in it fails (here the reopen run of a store that forgets on reopen), and a prefix
// that matches is skipped saying how far it ran.
func TestUnsupportedStepCutsTheTrace(t *testing.T) {
	if os.Getenv("CONFORMTEST_PREFIX") != "" {
		t.Skip("the child run")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPrefixChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CONFORMTEST_PREFIX=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the kit passed a store that forgets on reopen:\n%s", out)
	}
	status, text := subtests(string(out))
	hand, reopen := "TestPrefixChild/hand/"+prefixTrace, "TestPrefixChild/reopen/"+prefixTrace
	if status[reopen] != "FAIL" || !strings.Contains(text[reopen], "diverged") {
		t.Errorf("%s: %q, want a divergence in the steps before the redrive:\n%s", reopen, status[reopen], text[reopen])
	}
	const ran = "replayed up to step #4 of 8 (its first 4 steps and the state after them matched); step #4 is redrive"
	if status[hand] != "SKIP" || !strings.Contains(text[hand], ran) {
		t.Errorf("%s: %q, want a skip saying %q:\n%s", hand, status[hand], ran, text[hand])
	}
	corpus, reopenUnfit := "TestPrefixChild/corpus/"+unfitTrace, "TestPrefixChild/reopen/"+unfitTrace
	const unfit = "replayed up to step #25 of 26 (its first 25 steps and the state after them matched); its steps do not fit profile memstore from step #25 on"
	if status[corpus] != "SKIP" || !strings.Contains(text[corpus], unfit) {
		t.Errorf("%s: %q, want a skip saying %q:\n%s", corpus, status[corpus], unfit, text[corpus])
	}
	if status[reopenUnfit] != "FAIL" {
		t.Errorf("%s: %q, want a divergence in the steps that fit:\n%s", reopenUnfit, status[reopenUnfit], text[reopenUnfit])
	}
}
