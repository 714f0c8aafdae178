package properties

import (
	"context"
	"testing"

	"github.com/pconform/pconform/internal/targets"
)

// propertyCase is one target the properties must hold on.
type propertyCase struct {
	name, target string
	// postgres runs the store-backed target on PostgreSQL.
	postgres bool
	// budget is the default number of sequences (PCONFORM_SEQUENCES overrides it).
	budget int
}

// TestPropertyStore runs random sequences against the real SQLite store, with the reference model
// as the oracle, and requires that none fails: every result and state equals the model's and every
// invariant holds after every step. It prints how many sequences and commands ran.
//
// The budget is $PCONFORM_SEQUENCES (default 200) sequences of 5 to 40 steps. Rerun with
// `go test ./properties/ -run TestPropertyStore -seed N` (or PCONFORM_SEED=N); a seed reproduces a
// run only on the same commit. On failure the shrunk trace and the replay evidence are kept in a
// directory whose path is printed, with the commands that reproduce them.
func TestPropertyStore(t *testing.T) {
	checkProperty(t, propertyCase{name: "TestPropertyStore", target: targets.Store, budget: DefaultSequences})
}

// TestPropertyStorePostgres is TestPropertyStore on PostgreSQL (PCONFORM_PG_DSN; skipped without
// it, failed without it under CI=true). Rerun as TestPropertyStore.
func TestPropertyStorePostgres(t *testing.T) {
	checkProperty(t, propertyCase{name: "TestPropertyStorePostgres", target: targets.Store, budget: DefaultSequences, postgres: true})
}

// TestPropertyModel runs the properties against the reference model itself as the system under
// test: its results trivially agree with the oracle, so what this checks is that the model's own
// states satisfy every invariant. Rerun as TestPropertyStore.
func TestPropertyModel(t *testing.T) {
	checkProperty(t, propertyCase{name: "TestPropertyModel", target: targets.Model, budget: DefaultSequences})
}

// TestPropertyEligibilityCopy runs the properties against the copy of the store's eligibility SQL
// that the rule-changing variants (lease-boundary, lease-early, fifo-overtake) start from, with
// the store's own rules: it must pass like the store, which shows that those variants differ
// from the store only by the rule they change. Rerun as TestPropertyStore.
func TestPropertyEligibilityCopy(t *testing.T) {
	checkProperty(t, propertyCase{name: "TestPropertyEligibilityCopy", target: targets.EligibilityCopy, budget: DefaultSequences / 2})
}

// TestPropertyEligibilityCopyPostgres is TestPropertyEligibilityCopy on PostgreSQL, where the
// copy is written in PostgreSQL's dialect (PCONFORM_PG_DSN; skipped without it, failed without
// it under CI=true).
func TestPropertyEligibilityCopyPostgres(t *testing.T) {
	checkProperty(t, propertyCase{name: "TestPropertyEligibilityCopyPostgres", target: targets.EligibilityCopy, budget: DefaultSequences / 2, postgres: true})
}

func checkProperty(t *testing.T, pc propertyCase) {
	seed := baseSeed(t)
	cfg := HuntConfig{
		Variant: pc.target, Seed: seed, Sequences: sequences(t, pc.budget),
		TestCase: pc.name, Command: rerun(pc.name+"$", seed),
	}
	if pc.postgres {
		cfg.Server = pgServer(t)
	}
	res, err := Hunt(context.Background(), cfg)
	t.Logf("%s: seed %d: %d sequences, %d commands in %v", pc.target, seed, res.Sequences, res.Commands, res.Elapsed.Round(1e6))
	if err != nil && !res.Found {
		t.Fatalf("the property run could not run: %v", err)
	}
	if !res.Found {
		return
	}
	dir := keepEvidence(t, res, pc.target)
	t.Errorf("%s fails the properties after %d sequences (seed %d); shrunk from %d to %d steps:\n%s\n%s\n"+
		"replay error: %v\nevidence kept in %s\nrerun: %s\nreplay: pconform replay %s/%s.json --target %s",
		pc.target, res.Sequences, seed, res.OriginalSteps, res.ShrunkSteps, res.Failure, describe(res),
		err, dir, rerun(pc.name+"$", seed), dir, res.Shrunk.Name, pc.target)
}
