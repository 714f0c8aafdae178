package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/properties"
)

func newHuntCmd() *cobra.Command {
	var cfg properties.HuntConfig
	var noProgress, quiet bool
	c := &cobra.Command{
		Use:   "hunt",
		Short: "Hunt for a counterexample with the property tests and shrink it into a trace",
		Long: `Hunt generates random sequences of store operations and consumer/publisher steps, runs each
against the chosen variant of the real store with the reference model as the oracle, and stops at
the first sequence that breaks a result or an invariant. It shrinks that sequence to a minimal one
and writes it as a counterexample trace (expect.variant names the variant). The trace records what
the variant did, bug included: 'pconform replay' against the variant matches it, and the correct
store refuses the bug at the step the trace predicts (expect.diverges_at). 'pconform explain' shows
both sides of that step.

The seed fixes every random choice; a seed reproduces a hunt only on the same commit.

Exit codes: 0 nothing was found within the budget, 1 a counterexample was found, 2 usage error,
3 the hunt could not run.`,
		Example: `  pconform hunt --variant raw-attempts --seed 7 --out /tmp/hunt   # exit 1: it finds the bug
  pconform hunt --variant store --sequences 200 --seed 1 --out /tmp/hunt`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			known := append([]string{"store"}, targets.BrokenVariants()...)
			if !slices.Contains(known, cfg.Variant) {
				return usagef("unknown --variant %q (known: %s)", cfg.Variant, strings.Join(known, ", "))
			}
			if cfg.Sequences < 0 {
				return usagef("--sequences must be >= 0, got %d", cfg.Sequences)
			}
			if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			out := c.OutOrStdout()
			// The bar redraws one line in place: only on a terminal, never into a log.
			bar := !noProgress && !quiet && isTerminal(c.ErrOrStderr())
			if bar {
				cfg.Progress = progressBar(c.ErrOrStderr())
			}
			cfg.Command = fmt.Sprintf("pconform hunt --variant %s --seed %d --sequences %d", cfg.Variant, cfg.Seed, cfg.Sequences)
			fmt.Fprintf(out, "hunting %s with seed %d\n", cfg.Variant, cfg.Seed)
			res, err := properties.Hunt(c.Context(), cfg)
			if bar {
				fmt.Fprintln(c.ErrOrStderr())
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "ran %d sequences (%d commands) in %s\n", res.Sequences, res.Commands, res.Elapsed.Round(time.Millisecond))
			if !res.Found {
				fmt.Fprintf(out, "no counterexample found in %s\n", cfg.Variant)
				return nil
			}
			fmt.Fprintf(out, "counterexample found: %d steps, shrunk to %d steps\n", res.OriginalSteps, res.ShrunkSteps)
			if res.Failure != nil {
				fmt.Fprintf(out, "failure: %v\n", res.Failure)
			}
			fmt.Fprintf(out, "against the correct store: %s\n", res.Store)
			fmt.Fprintf(out, "against %s: %s\n", cfg.Variant, res.Variant)
			if res.Path != "" {
				fmt.Fprintf(out, "trace: %s\n", res.Path)
				fmt.Fprintf(out, "explain: pconform explain %s --html %s\n", res.Path, strings.TrimSuffix(res.Path, ".json")+".html")
			}
			fmt.Fprintf(out, "rerun: %s\n", cfg.Command)
			return errFinding
		},
	}
	c.Flags().StringVar(&cfg.Variant, "variant", "store", "what to hunt in: store, or a broken variant ("+strings.Join(targets.BrokenVariants(), ", ")+")")
	c.Flags().Int64Var(&cfg.Seed, "seed", time.Now().UnixNano()%1_000_000, "seed of every random choice (printed, so a run can be repeated)")
	c.Flags().IntVar(&cfg.Sequences, "sequences", properties.DefaultSequences, "budget of generated sequences")
	c.Flags().StringVar(&cfg.Dir, "out", ".", "directory for the shrunk counterexample trace")
	c.Flags().BoolVar(&noProgress, "no-progress", false, "do not draw the progress bar (it is drawn only when stderr is a terminal)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	return c
}

// progressBar draws a one-line bar on w, redrawn in place.
func progressBar(w io.Writer) func(done, total int) {
	return func(done, total int) {
		if total <= 0 {
			return
		}
		const width = 30
		filled := min(width, done*width/total)
		fmt.Fprintf(w, "\r[%s%s] %d/%d sequences", strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total)
	}
}
