package conformtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Config configures [Check]. Only NewTarget is required; the zero value of every other field means
// the obvious thing.
type Config struct {
	// NewTarget returns a fresh, empty target; the kit closes it.
	NewTarget func(t *testing.T) replay.Target
	// Profile is the semantics the target declares; the zero Profile is the default.
	Profile profile.Profile
	// Hunts is the number of random traces the hunt subtest tries, one per seed: 0 means 20, a
	// negative number none.
	Hunts int
	// Seed is the hunt's first seed; 0 means 1. The hunt draws its traces from seeds Seed to
	// Seed+Hunts-1. A seed reproduces its trace on the same commit.
	Seed int64
	// Only, when set, limits the committed traces to those it accepts (by name), for a quick run.
	Only func(name string) bool
	// Traces lists trace files of the store's own (or directories, walked for *.json files) to
	// run like the committed ones: a green trace as extra/NAME and reopen/extra/NAME, a
	// counterexample as variant/VARIANT/NAME, each re-expected under Profile unless it was
	// expected under the same choices. Only does not apply to them. A file that does not read is
	// a failure naming it.
	Traces []string

	_ struct{}
}

// Run checks the target newTarget builds against pconform's committed traces, their reopen
// variants, the broken variants' counterexamples and a small hunt, under profile p. See the
// package documentation for the subtests.
func Run(t *testing.T, newTarget func(t *testing.T) replay.Target, p profile.Profile) {
	t.Helper()
	Check(t, Config{NewTarget: newTarget, Profile: p})
}

// Check is [Run] with a [Config].
func Check(t *testing.T, c Config) {
	t.Helper()
	if c.NewTarget == nil {
		t.Fatal("conformtest: Config.NewTarget is nil")
	}
	all, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	k := &kit{c: c, all: all}
	// Every subtest needs the declaration, so it is read here, not in the capabilities subtest
	// that a -run pattern may leave out.
	first := k.target(t)
	k.caps, k.owners = replay.CapabilitiesOf(first), adapter.OwnersOf(first)
	if err := k.caps.Check(); err != nil {
		t.Fatal(err)
	}
	t.Run("capabilities", k.capabilities)
	for _, tr := range all {
		if c.Only != nil && !c.Only(tr.Name) {
			continue
		}
		if !tr.Expect.Profile.IsDefault() {
			// A per-profile P corpus (traces/profiles): only for a target with that profile.
			if sameChoices(tr.Expect.Profile, c.Profile) {
				name := "profile/" + tr.Expect.Profile.Name + "/" + tr.Name
				if tr.Expect.Variant != "" {
					// A replacement counterexample (pconform profile corpus): the P model's bug
					// trace under this profile, for a committed one the profile moves off its path.
					t.Run("variant/"+tr.Expect.Variant+"/"+name, func(t *testing.T) { k.variant(t, tr) })
					continue
				}
				t.Run(name, func(t *testing.T) { k.green(t, tr, replay.Options{}) })
				t.Run("reopen/"+name, func(t *testing.T) { k.green(t, tr, replay.Options{ReopenEveryStep: true}) })
			}
			continue
		}
		if tr.Expect.Variant == "" {
			t.Run(family(tr)+"/"+tr.Name, func(t *testing.T) { k.green(t, tr, replay.Options{}) })
			t.Run("reopen/"+tr.Name, func(t *testing.T) { k.green(t, tr, replay.Options{ReopenEveryStep: true}) })
		} else {
			t.Run("variant/"+tr.Expect.Variant+"/"+tr.Name, func(t *testing.T) { k.variant(t, tr) })
		}
	}
	k.extra(t)
	hunts := c.Hunts
	if hunts == 0 {
		hunts = 20
	}
	seed := c.Seed
	if seed == 0 {
		seed = 1
	}
	if hunts > 0 {
		t.Run("hunt", func(t *testing.T) { k.hunt(t, seed, hunts) })
	}
}

// family is the subtest family of a green committed trace: "hand" for a hand-written one, else
// "corpus" (the P checker's traces and the rest).
func family(tr *traces.Trace) string {
	if tr.Origin.Kind == traces.OriginHand {
		return "hand"
	}
	return "corpus"
}

// sameChoices reports whether p and q settle every choice alike, whatever their names and
// descriptions.
func sameChoices(p, q profile.Profile) bool { return slices.Equal(p.Changed(), q.Changed()) }

// kit is one Check's state.
type kit struct {
	c Config
	// caps is what the target declares, read once before the subtests.
	caps replay.Capabilities
	// owners is whose consumer and publisher run the protocol steps, read with caps.
	owners adapter.Owners
	// all is every committed trace, for the replacement that covers a counterexample the
	// profile moves off its bug's path.
	all []*traces.Trace
}

// committed reads every committed trace the kit replays, in path order.
func committed() ([]*traces.Trace, error) {
	out, err := traces.ReadCommitted("corpus", "testdata/good", "hunted", "profiles/*")
	if err != nil {
		return nil, fmt.Errorf("conformtest: embedded trace: %w", err)
	}
	return out, nil
}

// target makes a fresh target that the test closes.
func (k *kit) target(t *testing.T) replay.Target {
	t.Helper()
	tg := k.c.NewTarget(t)
	if tg == nil {
		t.Fatal("conformtest: NewTarget returned nil")
	}
	t.Cleanup(func() {
		if err := tg.Close(); err != nil {
			t.Errorf("conformtest: closing the target: %v", err)
		}
	})
	return tg
}

// capabilities reports what the target declares and checks that it keeps to it: each operation
// it declares unsupported must be answered with replay.ErrUnsupported.
func (k *kit) capabilities(t *testing.T) {
	var ops []string
	for _, op := range k.caps.Unsupported {
		ops = append(ops, string(op))
	}
	var cols []string
	for _, col := range k.caps.Unknown {
		cols = append(cols, string(col))
	}
	t.Logf("profile: %s", k.c.Profile)
	k.logOwners(t)
	t.Logf("unsupported operations: %s", orNone(ops))
	t.Logf("snapshot columns it cannot report (compared as unknown): %s", orNone(cols))
	var results []string
	for _, u := range k.caps.Unreported {
		results = append(results, string(u.Op)+" "+u.Field)
	}
	t.Logf("results it cannot report (not compared; each verdict lists where): %s", orNone(results))
	for _, op := range k.caps.Unsupported {
		_, err := k.target(t).Do(context.Background(), op, 0, replay.Args{})
		if !errors.Is(err, replay.ErrUnsupported) {
			t.Errorf("the target declares %s unsupported but runs it (Do returned %v, not an error wrapping replay.ErrUnsupported)", op, err)
		}
	}
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// expected is tr's expectation for a correct store under the kit's profile: tr itself for a green
// trace expected under the same choices (the default corpus, or a per-profile P corpus), else tr re-expected by the reference model (models.Reexpect),
// which keeps tr's steps and token symbols and replaces its results and final state.
func (k *kit) expected(tr *traces.Trace) (*traces.Trace, error) {
	if tr.Expect.Variant == "" && sameChoices(tr.Expect.Profile, k.c.Profile) {
		return tr, nil // the P model's own expectation under this profile
	}
	out, err := models.Reexpect(modelConfig(k.c.Profile), tr)
	if errors.Is(err, models.ErrUnfit) {
		// The steps do not fit this profile (a worker fetches again while it holds a message it
		// did not get under the default): the trace says nothing about it.
		return nil, errNotUnderProfile{err}
	}
	if err != nil {
		return nil, fmt.Errorf("conformtest: re-expecting %s under profile %s: %w", tr.Name, k.c.Profile, err)
	}
	return out, nil
}

// errNotUnderProfile is a trace whose steps the reference model cannot run under the profile.
type errNotUnderProfile struct{ err error }

func (e errNotUnderProfile) Error() string { return e.err.Error() }

// modelConfig is the reference model's configuration under p.
func modelConfig(p profile.Profile) models.Config { return models.Config{Profile: p} }

// replayOn replays tr against a fresh target and turns the run's bad input into failures.
func (k *kit) replayOn(t *testing.T, tr *traces.Trace, opts replay.Options) replay.Verdict {
	t.Helper()
	v, err := replay.Run(context.Background(), tr, k.target(t), opts)
	if err != nil {
		t.Fatalf("the replay could not run: %v", err)
	}
	if v.Outcome == replay.Inconclusive && v.Step < len(tr.Steps) && k.caps.Supports(tr.Steps[v.Step].Op) {
		t.Fatalf("step #%d (%s): the target answered %q, but its Capabilities do not declare %s unsupported; declare it, or run it",
			v.Step, tr.Steps[v.Step].Op, v.Reason, tr.Steps[v.Step].Op)
	}
	return v
}

// green checks one committed green trace. A trace with a step the target does not support is
// replayed up to that step, then skipped saying how far it ran.
func (k *kit) green(t *testing.T, tr *traces.Trace, opts replay.Options) {
	want, _, stopped := k.plan(t, tr)
	v := k.replayOn(t, want, opts)
	if len(v.NotCompared) > 0 {
		t.Logf("not compared (results the target declares it does not report):\n  %s", strings.Join(v.NotCompared, "\n  "))
	}
	if v.Outcome != replay.Match {
		k.fail(t, want, v, opts, "")
	}
	if stopped != "" {
		t.Skip(stopped)
	}
}

// variant checks one counterexample: the target must do what the correct store does under the
// profile; doing what the broken variant does is the named failure. A counterexample that the
// profile moves off the bug's path before the bug's step (or a step the target does not
// support cuts short) is replayed all the same, and then skipped as not exercised under this
// profile: it is never a pass.
func (k *kit) variant(t *testing.T, tr *traces.Trace) {
	want, n, stopped := k.plan(t, tr)
	reached, why, err := k.exercised(tr, n)
	if err != nil {
		t.Fatal(err)
	}
	k.noteReference(t, tr)
	v := k.replayOn(t, want, replay.Options{})
	if v.Outcome != replay.Match {
		k.variantFailed(t, tr, want, v, n, reached)
	}
	switch {
	case !reached:
		t.Skipf("not exercised under this profile: %s; the steps it ran matched; %s", why, k.coveredBy(tr))
	case stopped != "":
		t.Logf("%s; the bug's step came before it", stopped)
	}
}

// variantFailed reports a counterexample's divergence: as the broken variant when the target does
// exactly what it does (and the trace reaches the bug under the profile), else as a plain
// divergence.
func (k *kit) variantFailed(t *testing.T, tr, want *traces.Trace, v replay.Verdict, n int, reached bool) {
	t.Helper()
	bugRun := tr
	if n >= 0 {
		bugRun, _ = cut(tr, n, false)
	}
	prefix := ""
	if reached {
		prefix = fmt.Sprintf("neither the correct store's behaviour nor broken variant %s's; ", tr.Expect.Variant)
		if bug := k.replayOn(t, bugRun, replay.Options{}); bug.Outcome == replay.Match {
			violates := tr.Expect.Violates
			if violates == "" {
				violates = "(not stated)"
			}
			t.Fatalf("reproduces broken variant %s: the target does exactly what %s does in %s, which violates: %s\n%s",
				tr.Expect.Variant, tr.Expect.Variant, tr.Name, violates, k.whose())
		}
	}
	k.fail(t, want, v, replay.Options{}, prefix)
}

// fail reports a divergence of a replay with opts: the verdict's report, the rule it comes from
// when one does, and the expected trace kept in a file.
func (k *kit) fail(t *testing.T, want *traces.Trace, v replay.Verdict, opts replay.Options, prefix string) {
	t.Helper()
	var b strings.Builder
	_ = v.Report(&b)
	where := keep(t, want)
	if why := k.explain(t, want, v, opts); why != "" {
		prefix += why + "\n"
	}
	t.Fatalf("%s%s\n%s\n%s\nthe expected trace is kept in %s (profile %s); rerun with: go test -run '%s'",
		prefix, v, b.String(), k.whose(), where, k.c.Profile, t.Name())
}

// keep writes tr to a directory that outlives the test and returns its path.
func keep(t *testing.T, tr *traces.Trace) string {
	dir, err := os.MkdirTemp("", "conformtest-")
	if err != nil {
		return "(not kept: " + err.Error() + ")"
	}
	p := filepath.Join(dir, sanitize(tr.Name)+".json")
	if err := traces.WriteFile(p, tr); err != nil {
		return "(not kept: " + err.Error() + ")"
	}
	return p
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || slices.Contains([]rune(`\:*?"<>|`), r) {
			return '_'
		}
		return r
	}, s)
}
