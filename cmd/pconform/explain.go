package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/timeline"
	"github.com/pconform/pconform/traces"
)

func newExplainCmd() *cobra.Command {
	var f replayFlags
	var htmlPath string
	var noReplay bool
	var window int
	c := &cobra.Command{
		Use:   "explain TRACE",
		Short: "Show a trace as a step-by-step timeline (terminal or HTML)",
		Long: `Explain replays TRACE against a target (the real store by default) and prints a timeline:
for each step its logical time, the lanes it touches (mailboxes, workers, publishers, the outbox),
the operation and its arguments, the result the trace expects, what the target observed, and the
rows it touched as they stood after it. The first divergence is marked ">>" and spelled out at the
end.

Expected is what the trace records. For a counterexample (expect.variant set) that is the broken
variant's behaviour, bug included, with rows from a replay against the variant; observed is what
the target did, the correct store by default. Every row draws its lanes from one side: observed
where the step ran, expected after the divergence. The diverging row shows both.

Steps that lead to the divergence (found by following ids and tokens backwards) are marked "*" and
never collapsed; other steps more than --window away collapse. Lanes no shown step takes part in
fold into one "other lanes" column.

--html FILE also writes the timeline as one self-contained HTML page, with a chooser for the side
each row shows, and, for an observed run, an interval view per worker and publisher.

TRACE may be - for standard input. Exit codes as for replay: 0 the verdict is what the trace claims
(a counterexample's variant reproduces it, the correct store refuses it at the predicted step), 1 a
finding, 2 usage, 3 could not run.`,
		Example: `  pconform explain traces/corpus/tcOutboxSplitWriteCounterexample-s1-1-bad.json --html /tmp/split.html`,
		Args:    exactArgs(1, "one trace file"),
		RunE: func(c *cobra.Command, args []string) error {
			opts, err := f.options()
			if err != nil {
				return err
			}
			t, err := readInput(c.InOrStdin(), args[0])
			if err != nil {
				return err
			}
			if window < 0 && window != -1 {
				return usagef("--window must be >= 0, or -1 for every step; got %d", window)
			}
			if err := checkFits(t, opts); err != nil {
				return err
			}
			in := timeline.Input{Trace: t, Window: window}
			in.BrokenCheck, in.Code = variantCode(t.Expect.Variant)
			var v replay.Verdict
			var j report.Judgement
			if !noReplay {
				if err := explainReplay(c.Context(), t, f, opts, &in); err != nil {
					return err
				}
				v, j = *in.Verdict, *in.Judgement
			}
			tl := timeline.Build(in)
			if err := timeline.WriteText(c.OutOrStdout(), tl); err != nil {
				return err
			}
			if htmlPath != "" {
				if err := os.MkdirAll(filepath.Dir(htmlPath), 0o755); err != nil {
					return err
				}
				out, err := os.Create(htmlPath)
				if err != nil {
					return err
				}
				if err := timeline.WriteHTML(out, tl); err != nil {
					out.Close()
					return fmt.Errorf("writing %s: %w", htmlPath, err)
				}
				if err := out.Close(); err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "\nHTML timeline: %s\n", htmlPath)
			}
			switch {
			case noReplay || j.AsClaimed:
				return nil
			case v.Outcome == replay.Inconclusive:
				return errCannotRun
			}
			return errFinding
		},
	}
	f.register(c)
	c.Flags().StringVar(&htmlPath, "html", "", "also write the timeline as a self-contained HTML page to this file")
	c.Flags().BoolVar(&noReplay, "no-replay", false, "show the trace as recorded, without replaying it")
	c.Flags().IntVar(&window, "window", 0, fmt.Sprintf("steps shown on each side of the divergence (or the predicted step) besides those that lead to it; farther ones collapse (0: %d, -1: show every step)", timeline.DefaultWindow))
	return c
}

// explainReplay replays t for a view: against the chosen target (the observed side) and, when that
// is not already it, against the target the trace claims to match (the expected side), each with
// snapshots for the steps the view shows. Which steps those are depends on the verdict, so a
// replay that moves the focus runs once more.
func explainReplay(ctx context.Context, t *traces.Trace, f replayFlags, opts replay.Options, in *timeline.Input) error {
	shown := timeline.Shown(t, nil, in.Window)
	v, after, err := replayTrace(ctx, t, f, opts, shown)
	if err != nil {
		return err
	}
	if again := timeline.Shown(t, &v, in.Window); !sameSteps(len(t.Steps), shown, again) {
		shown = again
		if v, after, err = replayTrace(ctx, t, f, opts, shown); err != nil {
			return err
		}
	}
	j := report.Judge(t, f.target, v)
	in.Target, in.Verdict, in.After, in.Judgement = f.target, &v, after, &j
	in.ExpectedTarget = timeline.ExpectedTarget(t)
	if in.ExpectedTarget == f.target {
		in.ExpectedAfter = after
		return nil
	}
	ef := f
	ef.target = in.ExpectedTarget
	// The expected side is context, not the verdict: a trace its own target cannot replay still
	// gets a page, with the expected side's rows up to where that replay stopped.
	_, in.ExpectedAfter, err = replayTrace(ctx, t, ef, opts, shown)
	return err
}

// sameSteps reports whether two step filters agree on every one of n steps.
func sameSteps(n int, a, b func(int) bool) bool {
	for i := range n {
		if a(i) != b(i) {
			return false
		}
	}
	return true
}
