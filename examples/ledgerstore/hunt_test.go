package ledgerstore

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/conformtest"
)

// huntOnly is the kit's configuration that runs the hunt alone, with its default budget and
// seeds: no committed trace runs, so whatever fails was found by the hunt.
func huntOnly(newTarget func(*testing.T) adapter.Target) conformtest.Config {
	return conformtest.Config{NewTarget: newTarget, Profile: Profile(), Only: func(string) bool { return false }}
}

// TestHuntClean: the correct store, with its own consumer and publisher, hunts clean.
func TestHuntClean(t *testing.T) {
	if bugUnderTest() != "" {
		t.Skip("the child run of TestHuntFindsBugs")
	}
	conformtest.Check(t, huntOnly(func(*testing.T) adapter.Target { return NewTarget() }))
}

// TestHuntChild is the child run of TestHuntFindsBugs: the hunt alone on the broken runtime
// LEDGERSTORE_HUNT names.
func TestHuntChild(t *testing.T) {
	broken := brokenRuntimes[os.Getenv("LEDGERSTORE_HUNT")]
	if broken == nil {
		t.Skip("the child run of TestHuntFindsBugs")
	}
	conformtest.Check(t, huntOnly(func(*testing.T) adapter.Target {
		tg := New()
		return adapter.WithRuntime(tg, Profile(), broken(tg))
	}))
}

// TestHuntFindsBugs runs the hunt alone, in a child process, on the broken runtimes whose bug
// is in the store's own publisher or retry decision, and requires it to report a divergence at
// the step the bug breaks, as a failing subtest hunt/seed-N. It logs the seeds that find it.
func TestHuntFindsBugs(t *testing.T) {
	if bugUnderTest() != "" || os.Getenv("LEDGERSTORE_HUNT") != "" {
		t.Skip("the child run")
	}
	seed := regexp.MustCompile(`(?m)^\s*--- FAIL: TestHuntChild/hunt/seed-(\d+)`)
	for bug, step := range map[string]string{
		// The enqueue commit fails, and the broken publisher completes the row all the same.
		"split-write": `diverged (publisher_deliver(split): action "delivered", not "commit_failed"`,
		// The leaseless retry decision is handed the stored count, one less than the attempt.
		"raw-attempts": `diverged (consumer_handle(leaseless): `,
	} {
		t.Run(bug, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHuntChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "LEDGERSTORE_HUNT="+bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the hunt passed the %s runtime:\n%s", bug, out)
			}
			var seeds []string
			for _, m := range seed.FindAllStringSubmatch(string(out), -1) {
				seeds = append(seeds, m[1])
			}
			if len(seeds) == 0 || !strings.Contains(string(out), step) {
				t.Fatalf("the hunt reports no divergence %q of the %s runtime (failing seeds: %v):\n%s", step, bug, seeds, out)
			}
			t.Logf("the hunt finds %s: failing seeds %s (Config{Seed: N, Hunts: 1} reruns one)", bug, strings.Join(seeds, ", "))
		})
	}
}
