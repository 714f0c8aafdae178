package properties

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Budgets of TestHuntVariants: every broken variant must be found within huntSequences
// sequences, for each of huntSeeds seeds on SQLite ($PCONFORM_HUNT_SEEDS overrides it) and the
// first huntSeedsPostgres of them on PostgreSQL ($PCONFORM_HUNT_SEEDS_POSTGRES), and shrink to at
// most maxShrunkSteps steps. A PostgreSQL hunt repeats its SQLite twin's search step for step (all
// 320 variant x seed pairs gave the same sequences, failure and shrunk length:
// docs/notes/2026-12-01-gate-cost.md), so its further seeds check the toolkit again, not the
// PostgreSQL variant: five show that each variant is broken and found there too.
const (
	huntSeeds            = 20
	huntSeedsPostgres    = 5
	huntSequences        = DefaultSequences
	maxShrunkSteps       = 12
	huntSeedsEnv         = "PCONFORM_HUNT_SEEDS"
	huntSeedsPostgresEnv = "PCONFORM_HUNT_SEEDS_POSTGRES"
)

// huntSeedCount is the number of seeds each variant is hunted with on SQLite and on PostgreSQL:
// $PCONFORM_HUNT_SEEDS (else huntSeeds), and the smaller of it and
// $PCONFORM_HUNT_SEEDS_POSTGRES (else huntSeedsPostgres). The gate's store tier hunts each
// variant with one seed, its efficacy tier with the defaults (docs/gate.md, "Tiers").
func huntSeedCount(t testing.TB) (sqlite, postgres int64) {
	sqlite = envSeeds(t, huntSeedsEnv, huntSeeds)
	return sqlite, min(sqlite, envSeeds(t, huntSeedsPostgresEnv, huntSeedsPostgres))
}

// envSeeds is the positive integer in the environment variable name, else def.
func envSeeds(t testing.TB, name string, def int64) int64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q is not a positive integer", name, s)
	}
	return n
}

// TestHuntVariants hunts every broken variant of replay's registry (HuntedVariants) with
// huntSeedCount seeds, on SQLite and (with PCONFORM_PG_DSN, fewer seeds) on PostgreSQL, and
// requires that every hunt finds it within the CI budget, that the failure shrinks to at most
// maxShrunkSteps steps, and that the shrunk trace reproduces on its own: the correct store
// matches it, the variant diverges from it (Hunt checks both). A property that never finds a bug
// is worthless, so this is what keeps the generators honest.
//
// Seeds run from -seed (or $PCONFORM_SEED, default 1) upwards; rerun one hunt with
// `go test ./properties/ -run 'TestHuntVariants/^split-write$/^seed-7$' -seed 7 -v`. A seed
// reproduces a hunt only on the same commit. On failure the shrunk trace and the replay evidence
// are kept in a directory whose path is printed.
func TestHuntVariants(t *testing.T) {
	base := baseSeed(t)
	sqliteSeeds, postgresSeeds := huntSeedCount(t)
	type hunt struct {
		variant string
		server  *targets.PGServer
	}
	var hunts []hunt
	for _, variant := range HuntedVariants() {
		hunts = append(hunts, hunt{variant: variant})
	}
	// Every variant is hunted on PostgreSQL too (the rule-changing ones copy its lease query in
	// PostgreSQL's dialect).
	if srv := pgServer(t); srv != nil {
		for _, variant := range HuntedVariants() {
			hunts = append(hunts, hunt{variant: variant, server: srv})
		}
	}
	for _, hu := range hunts {
		variant := hu.variant
		name := variant
		if hu.server != nil {
			name += "@postgres"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var found []int
			steps := map[int]int{}
			seeds := sqliteSeeds
			if hu.server != nil {
				seeds = postgresSeeds
			}
			for seed := base; seed < base+seeds; seed++ {
				t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
					res, err := Hunt(context.Background(), HuntConfig{Variant: variant, Seed: seed, Sequences: huntSequences, Server: hu.server})
					switch {
					case err != nil:
						dir := keepEvidence(t, res, variant)
						t.Fatalf("hunt of %s (seed %d) failed: %v\n%s\nevidence kept in %s\nrerun: %s",
							variant, seed, err, describe(res), dir, rerunHunt(variant, seed))
					case !res.Found:
						t.Fatalf("%s was not found in %d sequences (%d commands) with seed %d\nrerun: %s",
							variant, res.Sequences, res.Commands, seed, rerunHunt(variant, seed))
					case res.ShrunkSteps > maxShrunkSteps:
						dir := keepEvidence(t, res, variant)
						t.Errorf("%s (seed %d) shrank only to %d steps (want <= %d):\n%s\nevidence kept in %s\nrerun: %s",
							variant, seed, res.ShrunkSteps, maxShrunkSteps, describe(res), dir, rerunHunt(variant, seed))
					}
					found = append(found, res.Sequences)
					steps[res.ShrunkSteps]++
					t.Logf("found after %d sequences (%d commands), shrunk %d -> %d steps in %d runs, %v: %s",
						res.Sequences, res.Commands, res.OriginalSteps, res.ShrunkSteps, res.ShrinkRuns,
						res.Elapsed.Round(1e6), checkNames(res.Failure))
				})
			}
			slices.Sort(found)
			if len(found) > 0 {
				t.Logf("%s: found in %d of %d seeds; sequences to find: median %d, max %d; shrunk lengths %v",
					variant, len(found), seeds, found[len(found)/2], found[len(found)-1], steps)
			}
		})
	}
}

func checkNames(f *Failure) string {
	if f == nil {
		return "-"
	}
	names := make([]string, len(f.Checks))
	for i, c := range f.Checks {
		names[i] = string(c)
	}
	return strings.Join(names, ",")
}

func rerunHunt(variant string, seed int64) string {
	return fmt.Sprintf("go test ./properties/ -run 'TestHuntVariants/^%s$/^seed-%d$' -seed %d -v", variant, seed, seed)
}

// huntedDir holds the committed example counterexamples.
const huntedDir = "../traces/hunted"

// huntedVariant is the variant a hunted trace catches, from its name "hunt-<variant>-seed<N>".
func huntedVariant(name string) (string, bool) {
	for _, v := range HuntedVariants() {
		if rest, ok := strings.CutPrefix(name, "hunt-"+v+"-seed"); ok && rest != "" {
			return v, true
		}
	}
	return "", false
}

// TestHuntedTraces replays every committed example in traces/hunted, on SQLite and (with
// PCONFORM_PG_DSN) on PostgreSQL: each records the results of the variant it was hunted in, which
// must reproduce them, and the correct store must refuse them at the step the trace predicts, so
// an example keeps reproducing on its own.
// With -rewrite-hunted it first hunts every broken variant again with seed 1 and rewrites the
// examples; review the diff.
func TestHuntedTraces(t *testing.T) {
	if *rewriteHunted {
		for _, v := range HuntedVariants() {
			res, err := Hunt(context.Background(), HuntConfig{Variant: v, Seed: 1, Dir: huntedDir})
			if err != nil || !res.Found {
				t.Fatalf("rewriting the example of %s: found=%v, %v", v, res.Found, err)
			}
			t.Logf("rewrote %s (%d steps)", res.Path, res.ShrunkSteps)
		}
	}
	paths, err := traces.Walk(huntedDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no example traces in %s", huntedDir)
	}
	// servers are the backends each example replays on: SQLite (nil), and PostgreSQL when a
	// server is configured.
	servers := []*targets.PGServer{nil}
	if srv := pgServer(t); srv != nil {
		servers = append(servers, srv)
	}
	covered := map[string]bool{}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			tr, err := traces.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			variant, ok := huntedVariant(tr.Name)
			if !ok {
				t.Fatalf("%s: trace name %q does not name a broken variant (hunt-<variant>-seed<N>)", path, tr.Name)
			}
			covered[variant] = true
			if tr.Origin.Kind != traces.OriginProperty || tr.Origin.Command == "" || tr.Expect.Variant != variant || tr.Expect.Violates == "" {
				t.Errorf("%s: origin %+v, expect %+v: want a property trace with its command, recording variant %s's results and the property it violates", path, tr.Origin, tr.Expect, variant)
			}
			// The trace claims both: the variant reproduces it, the correct store refuses it where
			// expect.diverges_at says.
			for _, target := range []string{targets.Store, variant} {
				for _, srv := range servers {
					v := replayFile(t, tr, target, srv)
					if j := report.Judge(tr, target, v); !j.AsClaimed {
						var text strings.Builder
						_ = v.Report(&text)
						on := "sqlite"
						if srv != nil {
							on = "postgres"
						}
						t.Errorf("replay of %s against %s on %s: %s\n%s\nreproduce: pconform replay %s --target %s --backend %s",
							path, target, on, j.Summary, text.String(), path, target, on)
					}
				}
			}
		})
	}
	for _, v := range HuntedVariants() {
		if !covered[v] {
			t.Errorf("traces/hunted has no example for %s", v)
		}
	}
}

// replayFile replays tr against target on SQLite (srv nil) or on the PostgreSQL server srv.
func replayFile(t *testing.T, tr *traces.Trace, target string, srv *targets.PGServer) replay.Verdict {
	t.Helper()
	db := targets.StoreDB{Dir: t.TempDir()}
	if srv != nil {
		db = targets.StoreDB{Backend: actordelivery.BackendPostgres, Server: srv}
	}
	tg, err := targets.NewOn(target, db)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	v, err := replay.Run(context.Background(), tr, tg, replay.Options{})
	if err != nil {
		t.Fatalf("replay against %s could not run: %v", target, err)
	}
	return v
}

// TestHuntKnownIssues replays the reproduction of every issue the properties found (a divergence
// between the store and the model). An issue still listed in KnownIssues must still diverge (when
// it matches, it is fixed and its entry must go); a fixed issue must match, as a regression test.
func TestHuntKnownIssues(t *testing.T) {
	repro := map[string][]*cmd{
		"split-commit-fails-duplicate": {
			{serial: 1, op: traces.OpEnqueue, args: traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 1}},
			{serial: 2, op: traces.OpOutboxEnqueue, args: traces.Args{ID: "m1", Target: "a", MaxAttempts: 1}},
			{serial: 3, op: traces.OpPublisherDeliver, tok: 3, args: traces.Args{
				ID: "m1", Publisher: 1, Profile: traces.ProfileSplit, Fault: traces.FaultCommitFails}},
		},
		"batch-delivery-fault-claim-lost": {
			{serial: 1, op: traces.OpOutboxEnqueue, args: traces.Args{ID: "m1", Target: "a", MaxAttempts: 1}},
			{serial: 2, op: traces.OpOutboxEnqueue, args: traces.Args{ID: "m2", Target: "b", MaxAttempts: 1}},
			{serial: 3, op: traces.OpPublisherDeliverBatch, tok: 3, args: traces.Args{
				IDs: []string{"m1", "m2"}, Publisher: 1, Fault: traces.FaultCommitFails}},
		},
		"batch-delivery-crash-claim-lost": {
			{serial: 1, op: traces.OpOutboxEnqueue, args: traces.Args{ID: "m1", Target: "a", MaxAttempts: 1}},
			{serial: 2, op: traces.OpOutboxEnqueue, args: traces.Args{ID: "m2", Target: "b", MaxAttempts: 1}},
			{serial: 3, op: traces.OpPublisherDeliverBatch, tok: 3, args: traces.Args{
				IDs: []string{"m1", "m2"}, Publisher: 1, Fault: traces.FaultCrashBetween}},
		},
	}
	known := map[string]KnownIssue{}
	for _, k := range KnownIssues() {
		if _, ok := repro[k.Name]; !ok {
			t.Errorf("known issue %s has no reproduction here", k.Name)
		}
		known[k.Name] = k
	}
	for name, cmds := range repro {
		t.Run(name, func(t *testing.T) {
			h := &hunter{cfg: HuntConfig{Variant: targets.Store, Seed: 1}.filled(), set: newSetup(DefaultMix(), nil)}
			k, open := known[name]
			if open {
				w := newWorld(h.set)
				for _, c := range cmds[:len(cmds)-1] {
					w, _ = w.apply(c)
				}
				if !k.matches(w, cmds[len(cmds)-1]) {
					t.Errorf("the reproduction's last step is not a step of %s", name)
				}
			}
			tr, err := h.trace(cmds)
			if err != nil {
				t.Fatal(err)
			}
			v := replayFile(t, tr, targets.Store, nil)
			switch {
			case open && v.Outcome == replay.Diverged:
				t.Logf("still present: %s\n%s", v, k.Description)
			case open && v.Outcome == replay.Match:
				t.Errorf("known issue %s is fixed (the store matches the model's trace): remove it from KnownIssues", name)
			case !open && v.Outcome != replay.Match:
				t.Errorf("fixed issue %s is back: the store no longer matches the model's trace: %s", name, v)
			}
		})
	}
}

// TestHuntDeterministic hunts one variant twice with the same seed: the shrunk traces must be
// identical, the whole point of a seed.
func TestHuntDeterministic(t *testing.T) {
	var hashes []string
	for range 2 {
		res, err := Hunt(context.Background(), HuntConfig{Variant: targets.RawAttempts, Seed: baseSeed(t)})
		if err != nil || !res.Found {
			t.Fatalf("found=%v, %v", res.Found, err)
		}
		h, err := traces.Hash(res.Shrunk)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h)
	}
	if hashes[0] != hashes[1] {
		t.Errorf("two hunts with one seed shrank to different traces: %s", hashes)
	}
}

// TestHuntErrors covers the hunts that cannot run.
func TestHuntErrors(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		cfg  HuntConfig
		want error
		text string
	}{
		{"unknown variant", context.Background(), HuntConfig{Variant: "no-such"}, targets.ErrUnknown, `"no-such"`},
		{"no variant", context.Background(), HuntConfig{}, nil, "Variant is empty"},
		{"bad steps", context.Background(), HuntConfig{Variant: "store", MinSteps: 9, MaxSteps: 3}, nil, "steps [9, 3]"},
		{"bad mix", context.Background(), HuntConfig{Variant: "store", Mix: Mix{"fly": 1}}, nil, `"fly"`},
		{"canceled", canceled, HuntConfig{Variant: "store", Sequences: 3}, context.Canceled, "stopped"},
		{"no scratch directory", context.Background(), HuntConfig{Variant: "store", Sequences: 2, WorkDir: filepath.Join(t.TempDir(), "missing")}, nil, "scratch directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Hunt(c.ctx, c.cfg)
			if err == nil {
				t.Fatalf("no error; result %+v", res)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v does not wrap %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("error %q does not mention %q", err, c.text)
			}
		})
	}
}

// TestHuntWritesTrace checks the written trace: it reads back equal, names its origin, and
// carries the model's results (no expect.variant).
func TestHuntWritesTrace(t *testing.T) {
	dir := t.TempDir()
	seed := baseSeed(t)
	var calls, last, total int
	res, err := Hunt(context.Background(), HuntConfig{Variant: targets.SplitWrite, Seed: seed, Dir: dir,
		Progress: func(done, of int) { calls, last, total = calls+1, done, of }})
	if err != nil || !res.Found {
		t.Fatalf("found=%v, %v", res.Found, err)
	}
	if calls != res.Sequences || last != res.Sequences || total != DefaultSequences {
		t.Errorf("progress: %d calls, last (%d of %d); want one call per sequence up to %d of %d", calls, last, total, res.Sequences, DefaultSequences)
	}
	if res.Path != filepath.Join(dir, fmt.Sprintf("hunt-split-write-seed%d.json", seed)) {
		t.Errorf("path %q", res.Path)
	}
	got, err := traces.ReadFile(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := traces.Marshal(res.Shrunk)
	back, _ := traces.Marshal(got)
	if string(want) != string(back) {
		t.Errorf("the written trace reads back different:\n%s\nvs\n%s", want, back)
	}
	o := got.Origin
	if o.Kind != traces.OriginProperty || o.Seed != seed || o.TestCase != "Hunt/split-write" || !strings.Contains(o.Command, fmt.Sprintf("-seed %d", seed)) {
		t.Errorf("origin %+v", o)
	}
	e := got.Expect
	if e.Variant != targets.SplitWrite || e.DivergesAt < 0 || got.Final == nil ||
		!strings.Contains(e.Violates, res.Failure.Checks[0].Statement()) {
		t.Errorf("expect %+v, final %v: want the variant's results, the step the store refuses and the failure's property (%s)", e, got.Final, res.Failure)
	}
	if res.Store.Outcome != replay.Diverged || res.Store.Step != e.DivergesAt || res.Variant.Outcome != replay.Match {
		t.Errorf("verdicts: store %s, variant %s; want the store to diverge at #%d and the variant to match", res.Store, res.Variant, e.DivergesAt)
	}
	var report strings.Builder
	if err := res.Report(&report); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sequences", fmt.Sprintf("shrank to %d", res.ShrunkSteps), res.Path, "publisher_deliver", "diverged",
		fmt.Sprintf("the results of variant split-write; the correct store refuses them at step #%d", e.DivergesAt)} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("the report does not mention %q:\n%s", want, report.String())
		}
	}
}

// TestHuntKeepsTheHarm: the split-write hunt at seed 1 (-seed moves it) shrinks keeping the harm
// its catalogue row names, no-loss: the first failing sequence and the shrunk one both break it,
// and the witness shows it: an outbox row completed in the final state while no mailbox and no
// dead letter holds its message. Before the harm was kept, this hunt shrank to a delivery of a
// row that was never claimed (claim_lost against commit_failed), which loses nothing.
func TestHuntKeepsTheHarm(t *testing.T) {
	seed := baseSeed(t)
	res, err := Hunt(context.Background(), HuntConfig{Variant: targets.SplitWrite, Seed: seed})
	if err != nil || !res.Found {
		t.Fatalf("found=%v, %v\nrerun: %s", res.Found, err, rerunHunt(targets.SplitWrite, seed))
	}
	harm := variantHarm[targets.SplitWrite]
	if harm != CheckNoLoss {
		t.Fatalf("the catalogue names %q as split-write's harm, want %q", harm, CheckNoLoss)
	}
	for name, f := range map[string]*Failure{"first failure": res.Original, "shrunk failure": res.Failure} {
		if f == nil || !slices.Contains(f.Checks, harm) {
			t.Fatalf("the %s %s does not break %s\nrerun: %s", name, f, harm, rerunHunt(targets.SplitWrite, seed))
		}
	}
	if !strings.Contains(res.Shrunk.Expect.Violates, CheckNoLoss.Statement()) {
		t.Errorf("expect.violates %q does not name no-loss", res.Shrunk.Expect.Violates)
	}
	final := res.Shrunk.Final
	if final == nil {
		t.Fatal("the witness has no final state")
	}
	lost := ""
	for _, o := range final.Outbox {
		if o.State != "completed" {
			continue
		}
		held := slices.ContainsFunc(final.Messages, func(m traces.MessageRow) bool { return m.ID == o.ID }) ||
			slices.ContainsFunc(final.DeadLetters, func(d traces.DeadLetterRow) bool { return d.ID == o.ID })
		if !held {
			lost = o.ID
		}
	}
	if lost == "" {
		t.Fatalf("the witness shows no completed outbox row whose message is missing:\n%s", strings.Join(tracefmt.History(res.Shrunk), "\n"))
	}
	t.Logf("witness (%d steps, from %d): row %s completed, its message in no mailbox\n%s", res.ShrunkSteps, res.OriginalSteps, lost,
		strings.Join(tracefmt.History(res.Shrunk), "\n"))
}

// TestHarmKept: a shrinking candidate keeps a failure's harm only when it breaks every invariant
// the failure broke; the comparisons with the model (result, state) are no harm.
func TestHarmKept(t *testing.T) {
	first := &Failure{Checks: []Check{CheckResult, CheckNoLoss, CheckState}}
	harm := first.harm()
	if !slices.Equal(harm, []Check{CheckNoLoss}) {
		t.Fatalf("harm of %v: %v", first.Checks, harm)
	}
	for _, tc := range []struct {
		checks []Check
		keeps  bool
	}{
		{[]Check{CheckResult}, false},
		{[]Check{CheckResult, CheckState}, false},
		{[]Check{CheckNoLoss}, true},
		{[]Check{CheckResult, CheckExactlyOnce, CheckNoLoss}, true},
	} {
		if got := (&Failure{Checks: tc.checks}).keepsHarm(harm); got != tc.keeps {
			t.Errorf("%v keeps %v: %v, want %v", tc.checks, harm, got, tc.keeps)
		}
	}
	if !(&Failure{Checks: []Check{CheckResult}}).keepsHarm((&Failure{Checks: []Check{CheckResult}}).harm()) {
		t.Error("a divergence with no harm is kept by any failure")
	}
	// Every harm the catalogue names is a check, of a variant the properties hunt.
	for v, c := range variantHarm {
		if !slices.Contains(allChecks(), c) || !slices.Contains(HuntedVariants(), v) {
			t.Errorf("variant %s: harm %q is not a check of a hunted variant (checks %v)", v, c, allChecks())
		}
	}
}
