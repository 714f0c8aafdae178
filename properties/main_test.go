package properties

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

var (
	seedFlag = flag.Int64("seed", 0, "base seed of the property tests and hunts (default: $PCONFORM_SEED, else 1)")
	// rewriteHunted regenerates traces/hunted from seed 1 of every broken variant.
	rewriteHunted = flag.Bool("rewrite-hunted", false, "hunt every broken variant again and rewrite traces/hunted")
)

// baseSeed is the seed the tests start from: -seed, else $PCONFORM_SEED, else 1. A fixed default
// keeps the gate deterministic; set PCONFORM_SEED=$(date +%s) to explore.
func baseSeed(t testing.TB) int64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if s := os.Getenv("PCONFORM_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("PCONFORM_SEED=%q is not an integer: %v", s, err)
		}
		return n
	}
	return 1
}

// sequences is the property budget: $PCONFORM_SEQUENCES, else def.
func sequences(t testing.TB, def int) int {
	s := os.Getenv("PCONFORM_SEQUENCES")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("PCONFORM_SEQUENCES=%q is not a positive integer", s)
	}
	return n
}

// rerun is the command that reruns a test with a seed, keeping a non-default budget.
func rerun(test string, seed int64) string {
	env := ""
	if s := os.Getenv("PCONFORM_SEQUENCES"); s != "" {
		env = "PCONFORM_SEQUENCES=" + s + " "
	}
	return fmt.Sprintf("%sgo test ./properties/ -run '%s' -seed %d -v", env, test, seed)
}

// keepEvidence writes a failing hunt's shrunk trace and the replay report of its divergence to a
// new directory that outlives the test, and returns the directory.
func keepEvidence(t testing.TB, res HuntResult, target string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pconform-property-")
	if err != nil {
		t.Errorf("keeping the evidence failed: %v", err)
		return ""
	}
	if res.Shrunk == nil {
		return dir
	}
	path := filepath.Join(dir, res.Shrunk.Name+".json")
	if err := traces.WriteFile(path, res.Shrunk); err != nil {
		t.Errorf("keeping the trace failed: %v", err)
	}
	// A trace of the variant's own results diverges on the correct store; one of the model's
	// results on the hunted target.
	v := res.Variant
	if res.Shrunk.Expect.Variant != "" {
		v, target = res.Store, targets.Store
	}
	if v.Outcome == replay.Diverged {
		if _, err := report.WriteEvidence(dir, report.Evidence{
			Trace: res.Shrunk, TracePath: path, Target: target, Options: replay.Options{}, Verdict: v,
		}); err != nil {
			t.Errorf("keeping the replay evidence failed: %v", err)
		}
	}
	return dir
}

// describe renders a hunt's shrunk trace for a failure message: one line per step.
func describe(res HuntResult) string {
	if res.Shrunk == nil {
		return "(no trace)"
	}
	return strings.Join(tracefmt.History(res.Shrunk), "\n")
}
