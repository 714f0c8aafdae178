package replay_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

var (
	seedFlag   = flag.Uint64("seed", 1, "seed for TestRandomTraces; 0 picks one from the clock (printed on failure)")
	tracesFlag = flag.Int("random-traces", 24, "number of random traces TestRandomTraces replays")
)

// TestRandomTraces replays traces generated from the reference model (genTrace) against the
// store, and every fourth one also with a reopen before every step: the store must agree with
// the model on every step and on the final state. All traces derive from one seed; rerun a
// failure with
//
//	go test ./replay/ -run TestRandomTraces -seed <seed>
//
// A seed reproduces a run only on the same commit.
func TestRandomTraces(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	backends := testBackends(t)
	n := *tracesFlag
	if testing.Short() {
		n = 4
	}
	for i := range n {
		name := fmt.Sprintf("random-%d-%d", seed, i)
		tr, err := genTrace(rng, name, 20+rng.IntN(60))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		opts := replay.Options{}
		opts.ReopenEveryStep = i%4 == 3
		for _, b := range backends {
			sub := name
			if b != actordelivery.BackendSQLite {
				sub += "@" + string(b)
			}
			t.Run(sub, func(t *testing.T) { replayRandom(t, tr, b, opts, seed, i) })
		}
	}
}

func replayRandom(t *testing.T, tr *traces.Trace, b actordelivery.Backend, opts replay.Options, seed uint64, i int) {
	r := replayOn(t, tr, targets.Store, b, opts)
	if r.verdict.Outcome == replay.Match {
		return
	}
	ev := report.Evidence{Trace: tr, Target: targets.Store, Backend: b, Options: opts, Verdict: r.verdict}
	dir, err := report.WriteEvidence(os.TempDir(), ev)
	if err != nil {
		t.Errorf("keeping the evidence failed: %v", err)
	}
	t.Errorf("seed %d trace %d on %s: %s\nevidence (with trace.json) kept in %s\nrerun: go test ./replay/ -run TestRandomTraces -seed %d -backends %s", seed, i, b, r.verdict, dir, seed, b)
}
