package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/properties"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

type replayFlags struct {
	target         string
	crashBefore    int
	crashEveryStep bool
	evidence       string
}

func (f *replayFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&f.target, "target", replay.TargetStore, fmt.Sprintf("what to replay against: %v", properties.Targets()))
	c.Flags().IntVar(&f.crashBefore, "crash-before", -1, "close and reopen the database before step N (durability check)")
	c.Flags().BoolVar(&f.crashEveryStep, "crash-every-step", false, "close and reopen the database before every step")
}

func (f *replayFlags) options() (replay.Options, error) {
	if f.crashBefore >= 0 && f.crashEveryStep {
		return replay.Options{}, usagef("--crash-before and --crash-every-step exclude each other")
	}
	if !slices.Contains(properties.Targets(), f.target) {
		return replay.Options{}, usagef("unknown --target %q (known: %v)", f.target, properties.Targets())
	}
	opts := replay.DefaultOptions()
	opts.CrashBefore = f.crashBefore
	opts.CrashEveryStep = f.crashEveryStep
	return opts, nil
}

func newReplayCmd() *cobra.Command {
	var f replayFlags
	c := &cobra.Command{
		Use:   "replay TRACE",
		Short: "Replay a trace against a target and report the first divergence",
		Long: `Replay drives TRACE step by step against a target — the real store (running the real
consumer and publisher), the reference model, or a known-broken variant — and reports the first
step whose result differs from the trace, with the expected and observed values and the rows
involved. On a divergence it writes an evidence directory (trace, histories, report) and prints
the command that reruns it.

Exit 0 when the target matches the trace, 1 when it diverges.`,
		Example: `  pconform replay traces/corpus/tcOutboxSplitWriteCounterexample-s1-1-bad.json --target split-write
  pconform replay traces/corpus/tcLeaselessWorker-s1-1-ok.json --crash-every-step`,
		Args: exactArgs(1, "one trace file"),
		RunE: func(c *cobra.Command, args []string) error {
			opts, err := f.options()
			if err != nil {
				return err
			}
			t, err := traces.ReadFile(args[0])
			if err != nil {
				return err
			}
			v, _, err := replayTrace(c.Context(), t, f.target, opts, false)
			if err != nil {
				return err
			}
			return reportVerdict(c.OutOrStdout(), args[0], t, f.target, opts, v, f.evidence)
		},
	}
	f.register(c)
	c.Flags().StringVar(&f.evidence, "evidence", "", "directory for the evidence of a divergence (default: a new temporary directory)")
	return c
}

// replayTrace runs t against a fresh target in a temporary directory. With snapshots it also
// returns the target's state after every step that ran.
func replayTrace(ctx context.Context, t *traces.Trace, target string, opts replay.Options, snapshots bool) (replay.Verdict, []traces.Snapshot, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	dir, err := os.MkdirTemp("", "pconform-replay-")
	if err != nil {
		return replay.Verdict{}, nil, err
	}
	defer os.RemoveAll(dir)
	tg, err := properties.NewTarget(target, dir)
	if err != nil {
		return replay.Verdict{}, nil, err
	}
	defer tg.Close()
	var after []traces.Snapshot
	if snapshots {
		opts.AfterStep = func(_ int, s traces.Snapshot) { after = append(after, s) }
	}
	v, err := replay.Run(ctx, t, tg, opts)
	return v, after, err
}

// reportVerdict prints the verdict and, on a divergence, writes the evidence and the rerun command.
func reportVerdict(w io.Writer, path string, t *traces.Trace, target string, opts replay.Options, v replay.Verdict, evidenceDir string) error {
	if err := v.Report(w); err != nil {
		return err
	}
	if t.Expect.Variant != "" {
		fmt.Fprintf(w, "note: this trace records the behaviour of variant %q; the model predicts the correct store diverges at step #%d\n", t.Expect.Variant, t.Expect.DivergesAt)
	}
	if v.Outcome == replay.Match {
		return nil
	}
	if evidenceDir == "" {
		d, err := os.MkdirTemp("", "pconform-evidence-")
		if err != nil {
			return err
		}
		evidenceDir = d
	}
	ev := replay.Evidence{Trace: t, TracePath: path, Target: target, Options: opts, Verdict: v}
	dir, err := replay.WriteEvidence(evidenceDir, ev)
	if err != nil {
		return fmt.Errorf("writing evidence: %w", err)
	}
	fmt.Fprintf(w, "evidence: %s\n", dir)
	for _, cmd := range ev.RerunCommands() {
		fmt.Fprintf(w, "rerun: %s\n", cmd)
	}
	return errFinding
}
