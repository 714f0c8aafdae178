package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/internal/reach"
	"github.com/pconform/pconform/internal/variants"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// ReplacedInfix joins a replacement counterexample's name to the name of the committed one it
// stands in for: <original>-replaced-s<seed>-<schedule>.
const replacedInfix = "-replaced-"

// profileCorpusFlags are the flags of profile corpus.
type profileCorpusFlags struct {
	out       string
	seed      int64
	seeds     int
	schedules int
	models    string
	cache     string
	p         string
}

func newProfileCorpusCmd() *cobra.Command {
	var f profileCorpusFlags
	c := &cobra.Command{
		Use:   "corpus PROFILE",
		Short: "Make replacement counterexamples for those the profile moves off their bug's path",
		Long: `Corpus takes every committed counterexample (traces/corpus, traces/hunted) and asks whether it
reaches its bug under the profile: whether a correct store under the profile follows the broken
variant up to the bug's step and refuses the bug there. One that does not (the kit reports it as
"not exercised under this profile") and whose bug no other committed counterexample reaches
under the profile gets a replacement: the P model compiled under the profile (cached, as for
profile check) runs the variant's counterexample test case, seed after seed, until a buggy
schedule's trace reaches the bug. The replacement is written into --out as
<original>-replaced-s<seed>-<schedule>.json; the kit replays it for a store with the profile's
choices and names it in the original's report.

When no seed's schedules violate the test case's monitor, the report says that the bug cannot
happen under this profile and names the profile's choices that take it away (each one, set back
to the default, puts the original back on the bug's path).

Exit codes: 0 the report was made (whatever it says), 2 usage error, 3 could not run (no P tool, a
compile that failed).`,
		Example: `  pconform profile corpus profiles/live-at-until-ack-deletes.json --out traces/profiles/live-at-until-ack-deletes`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cobraUsage{fmt.Errorf("expected one PROFILE file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return profileCorpus(c.Context(), args[0], f, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	c.Flags().StringVar(&f.out, "out", "", "the profile's corpus directory (default: traces/profiles/NAME beside the P project)")
	c.Flags().Int64Var(&f.seed, "seed", bridge.DefaultSeed, "the first checker --seed")
	c.Flags().IntVar(&f.seeds, "seeds", 5, "seeds to try per counterexample test case")
	c.Flags().IntVar(&f.schedules, "schedules", bridge.DefaultCounterexampleSchedules, "schedules per seed (the run stops at its first bug)")
	c.Flags().StringVar(&f.models, "models", "", "the P project (default: models/p of the repository holding the current directory)")
	c.Flags().StringVar(&f.cache, "cache", "", "directory of compiled profile projects (default: pconform/profile-check in the user cache directory)")
	c.Flags().StringVar(&f.p, "p", "p", "the p executable")
	return c
}

// committedCounterexamples reads every committed counterexample the kit replays under the
// default profile, in path order.
func committedCounterexamples() ([]*traces.Trace, error) {
	all, err := traces.ReadCommitted("corpus", "hunted")
	if err != nil {
		return nil, err
	}
	var out []*traces.Trace
	for _, tr := range all {
		if tr.Expect.Variant != "" && tr.Expect.Profile.IsDefault() {
			out = append(out, tr)
		}
	}
	return out, nil
}

func profileCorpus(ctx context.Context, file string, f profileCorpusFlags, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := profile.ReadFile(file)
	if err != nil {
		return usageError{err}
	}
	if f.seeds < 1 || f.schedules < 1 {
		return usagef("--seeds %d, --schedules %d: want at least 1 of each", f.seeds, f.schedules)
	}
	dir, err := oracleFlags{models: f.models}.modelsDir()
	if err != nil {
		return err
	}
	out := f.out
	if out == "" {
		out = filepath.Join(dir, "..", "..", "traces", "profiles", fileSafe(p.Name))
	}
	all, err := committedCounterexamples()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "profile %s\n", p)
	// reached maps a variant to a trace that reaches its bug under p: a committed one, or a
	// replacement written below.
	reached := map[string]string{}
	var missed []*traces.Trace
	verdicts := map[string]reach.Verdict{}
	for _, tr := range all {
		v, err := reach.Exercised(tr, p, -1)
		if err != nil {
			return err
		}
		verdicts[tr.Name] = v
		if v.Reached {
			if reached[tr.Expect.Variant] == "" {
				reached[tr.Expect.Variant] = tr.Name
			}
			continue
		}
		fmt.Fprintf(stdout, "%s: not exercised under this profile: %s\n", tr.Name, v.Why)
		missed = append(missed, tr)
	}
	if err := removeReplacements(out); err != nil {
		return err
	}
	// An example profile's directory holds replacements only: one that needs none now goes.
	defer os.Remove(out)
	if len(missed) == 0 {
		fmt.Fprintf(stdout, "every committed counterexample reaches its bug under %s: no replacement needed\n", p.Name)
		return nil
	}
	// A P checker counterexample is replaced by its own test case's run under p, whatever else
	// reaches its variant's bug; a hunted one only when no trace of its variant does. So the P
	// checker ones go first, after those whose bug p allows (they need no P run).
	order := func(tr *traces.Trace) int {
		switch {
		case verdicts[tr.Name].Allowed:
			return 0
		case tr.Origin.Kind == traces.OriginPChecker:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(missed, func(a, b *traces.Trace) int { return order(a) - order(b) })
	testCases := map[string]string{}
	for tc, v := range variants.ByPTestCase() {
		testCases[v] = tc
	}
	var (
		project string
		written int
	)
	for _, tr := range missed {
		variant, fromP := tr.Expect.Variant, tr.Origin.Kind == traces.OriginPChecker
		if cover := reached[variant]; cover != "" && !fromP {
			fmt.Fprintf(stdout, "%s: covered by %s, which reaches the bug of %s under this profile\n", tr.Name, cover, variant)
			continue
		}
		if verdicts[tr.Name].Allowed {
			fmt.Fprintf(stdout, "%s: the bug cannot happen under this profile: %s (a correct store under it does what %s does)\n", tr.Name, blameLine(tr, p), variant)
			continue
		}
		tc := testCases[variant]
		if fromP {
			tc = tr.Origin.TestCase
		}
		if tc == "" {
			fmt.Fprintf(stdout, "%s: no P test case runs broken variant %s: no replacement can be made\n", tr.Name, variant)
			continue
		}
		if project == "" {
			if _, err := exec.LookPath(f.p); err != nil {
				return fmt.Errorf("the P tool %q is not on PATH (. scripts/env.sh puts it there): %w", f.p, err)
			}
			if project, _, err = compileUnder(ctx, dir, p, profileCheckFlags{cache: f.cache, p: f.p}, stderr); err != nil {
				return err
			}
		}
		name, err := replace(ctx, bridge.Config{ProjectDir: project, P: f.p, CounterexampleSchedules: f.schedules}, tc, p, tr, f, out, stdout)
		if err != nil {
			return err
		}
		if name != "" {
			written++
			if reached[variant] == "" {
				reached[variant] = name
			}
		}
	}
	fmt.Fprintf(stdout, "%d replacements written to %s\n", written, out)
	return nil
}

// replace searches seeds for a buggy schedule of tc, run under p, whose trace reaches its bug
// under p, and writes it into out named after first, the counterexample it stands in for. It
// returns the replacement's name, or "" after saying why none was made.
func replace(ctx context.Context, cfg bridge.Config, tc string, p profile.Profile, first *traces.Trace, f profileCorpusFlags, out string, w io.Writer) (string, error) {
	bugs := 0
	var why []string
	for s := f.seed; s < f.seed+int64(f.seeds); s++ {
		cfg.Seed = s
		o, err := bridge.CheckCounterexample(ctx, cfg, tc, p)
		if err != nil {
			return "", err
		}
		if !o.Bug {
			continue
		}
		bugs++
		v, err := reach.Exercised(o.Trace, p, -1)
		if err != nil {
			return "", err
		}
		if !v.Reached {
			why = append(why, fmt.Sprintf("seed %d schedule %d: %s", s, o.Schedules, v.Why))
			continue
		}
		o.Trace.Name = fmt.Sprintf("%s%ss%d-%d", first.Name, replacedInfix, s, o.Schedules)
		if err := os.MkdirAll(out, 0o755); err != nil {
			return "", err
		}
		file := filepath.Join(out, o.Trace.Name+".json")
		if err := traces.WriteFile(file, o.Trace); err != nil {
			return "", err
		}
		fmt.Fprintf(w, "%s: replaced by %s (%s, %d steps, the bug at step %s: %s)\n", first.Name, file, o.Command, len(o.Trace.Steps), reach.StepName(o.Trace.Expect.DivergesAt), o.Violates)
		return o.Trace.Name, nil
	}
	budget := fmt.Sprintf("%s, seeds %d to %d, %d schedules each", tc, f.seed, f.seed+int64(f.seeds)-1, f.schedules)
	if bugs == 0 {
		fmt.Fprintf(w, "%s: the bug cannot happen under this profile: %s (the P model under it violates no monitor in %s)\n", first.Name, blameLine(first, p), budget)
		return "", nil
	}
	fmt.Fprintf(w, "%s: no replacement: the P model under this profile fails %d times in %s, but no bug trace reaches the bug on the Go model (%s)\n", first.Name, bugs, budget, strings.Join(why, "; "))
	return "", nil
}

// blameLine names the choices of p that take tr's bug away (reach.Blame), with their meaning.
func blameLine(tr *traces.Trace, p profile.Profile) string {
	blamed := reach.Blame(tr, p)
	if len(blamed) == 0 {
		return "no single choice of the profile, nor any two, put the original back on the bug's path"
	}
	var words []string
	for _, s := range blamed {
		c, _ := profile.Lookup(s.Choice)
		words = append(words, fmt.Sprintf("%s=%s (%s)", s.Choice, s.Value, strings.TrimSuffix(c.Doc, ".")))
	}
	return strings.Join(words, "; ")
}

// removeReplacements deletes the replacements an earlier run wrote into dir, so that one no longer
// needed does not stay.
func removeReplacements(dir string) error {
	found, err := filepath.Glob(filepath.Join(dir, "*"+replacedInfix+"*.json"))
	if err != nil {
		return err
	}
	for _, f := range found {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
