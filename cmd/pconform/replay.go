package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

type replayFlags struct {
	target         string
	backend        string
	dsn            string
	crashBefore    []int
	crashEveryStep bool
	evidence       string
}

func (f *replayFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&f.target, "target", targets.Store, "what to replay against: "+targetHelp())
	c.Flags().IntSliceVar(&f.crashBefore, "crash-before", nil, "close and reopen the database before step N (durability check; N,M or a repeated flag for several)")
	c.Flags().BoolVar(&f.crashEveryStep, "crash-every-step", false, "close and reopen the database before every step")
	c.Flags().StringVar(&f.backend, "backend", string(actordelivery.BackendSQLite), "store backend of the store-backed targets: sqlite or postgres")
	c.Flags().StringVar(&f.dsn, "dsn", "", "PostgreSQL server for --backend postgres (default $PCONFORM_PG_DSN); replay works in a schema of its own there and drops it after")
}

// targetHelp lists the registry's targets with what each one is.
func targetHelp() string {
	var b strings.Builder
	for _, name := range targets.Names() {
		fmt.Fprintf(&b, "\n  %s: %s", name, targets.Describe(name))
	}
	return b.String()
}

func (f *replayFlags) options() (replay.Options, error) {
	if len(f.crashBefore) > 0 && f.crashEveryStep {
		return replay.Options{}, usagef("--crash-before and --crash-every-step exclude each other")
	}
	if !slices.Contains(targets.Names(), f.target) {
		return replay.Options{}, usagef("unknown --target %q (known: %v)", f.target, targets.Names())
	}
	b, err := actordelivery.ParseBackend(f.backend)
	if err != nil {
		return replay.Options{}, usagef("unknown --backend %q (known: sqlite, postgres)", f.backend)
	}
	if b == actordelivery.BackendPostgres {
		if f.dsn == "" {
			f.dsn = os.Getenv("PCONFORM_PG_DSN")
		}
		if f.dsn == "" {
			return replay.Options{}, usagef("--backend postgres needs --dsn or PCONFORM_PG_DSN")
		}
	} else if f.dsn != "" {
		return replay.Options{}, usagef("--dsn is for --backend postgres")
	}
	if _, hasDB := targets.Parts(f.target); !hasDB && (len(f.crashBefore) > 0 || f.crashEveryStep) {
		return replay.Options{}, usagef("--target %s keeps no database, so a crash option has nothing to reopen; crash options are for the store and its variants", f.target)
	}
	return replay.Options{ReopenBefore: f.crashBefore, ReopenEveryStep: f.crashEveryStep}, nil
}

func newReplayCmd() *cobra.Command {
	var f replayFlags
	var out outputFlags
	c := &cobra.Command{
		Use:   "replay TRACE...",
		Short: "Replay traces against a target and judge each verdict against what the trace claims",
		Long: `Replay drives each TRACE step by step against a target — the real store (running the real
consumer and publisher), the reference model, or a known-broken variant — and reports the first
step whose result differs from the trace, with the expected and observed values and the rows
involved.

A trace says what it is (docs/trace-format.md, "What a trace claims"), and replay holds it to that:
a trace of the correct store must match the store and the model; a counterexample (expect.variant)
must match its variant, which reproduces the bug, and the correct store must refuse the bug at the
predicted step (expect.diverges_at): "as predicted: the correct store refuses the bug at step #N".

TRACE is a file, a directory (every .json file in it, sorted) or - for standard input. With several
traces a summary table follows. A passing replay prints a summary; -v adds the full history. On a
divergence replay prints the rerun commands; on a finding it also writes an evidence directory
(under --evidence, created when missing).

Exit codes: 0 every verdict is what its trace claims, 1 a finding, 2 usage error, 3 a trace could
not be read or run (and no finding).`,
		Example: `  pconform replay traces/corpus/tcOutboxSplitWriteCounterexample-s1-1-bad.json
  pconform replay traces/corpus/tcOutboxSplitWriteCounterexample-s1-1-bad.json --target split-write
  pconform replay traces/corpus --quiet
  pconform replay traces/corpus --quiet --backend postgres --dsn postgres://user@127.0.0.1:5432/scratch
  pconform replay - --json < traces/corpus/tcOutboxSplitWriteCounterexample-s1-1-bad.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cobraUsage{fmt.Errorf("expected one or more trace files, directories or -, got none")}
			}
			if n := countOf(args, "-"); n > 1 {
				return cobraUsage{fmt.Errorf("- (standard input) given %d times; it can be read once", n)}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts, err := f.options()
			if err != nil {
				return err
			}
			inputs := expandInputs(args)
			prog := newProgress(c.ErrOrStderr(), len(inputs), out.quiet || out.json)
			results := make([]traceResult, 0, len(inputs))
			for i, in := range inputs {
				prog.step(i, in.path)
				r := replayInput(c.Context(), c.InOrStdin(), in, f, opts)
				results = append(results, r)
			}
			prog.done()
			return writeResults(c.OutOrStdout(), c.ErrOrStderr(), results, out)
		},
	}
	f.register(c)
	out.register(c)
	c.Flags().StringVar(&f.evidence, "evidence", "", "directory for the evidence of a finding, created when missing (default: a new temporary directory)")
	return c
}

func countOf(args []string, s string) int {
	n := 0
	for _, a := range args {
		if a == s {
			n++
		}
	}
	return n
}

// input is one trace to replay: a path, or "-" for standard input. err is set when a directory
// argument could not be listed.
type input struct {
	path string
	err  error
}

// expandInputs turns arguments into traces: a directory becomes its .json files in sorted
// order; anything else stays as given (an unreadable path fails later, as that trace's error).
func expandInputs(args []string) []input {
	var out []input
	for _, a := range args {
		if a == "-" {
			out = append(out, input{path: a})
			continue
		}
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			out = append(out, input{path: a})
			continue
		}
		paths, err := traces.Walk(a)
		switch {
		case err != nil:
			out = append(out, input{path: a, err: err})
		case len(paths) == 0:
			out = append(out, input{path: a, err: fmt.Errorf("%s: a directory without any .json trace", a)})
		}
		for _, p := range paths {
			out = append(out, input{path: p})
		}
	}
	return out
}

// readInput reads one trace from its path or, for "-", from stdin.
func readInput(stdin io.Reader, path string) (*traces.Trace, error) {
	if path == "-" {
		return traces.Read(stdin, "<stdin>")
	}
	st, err := os.Stat(path)
	if err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	return traces.ReadFile(path)
}

// replayInput reads, replays and judges one trace; every failure lands in the result.
func replayInput(ctx context.Context, stdin io.Reader, in input, f replayFlags, opts replay.Options) traceResult {
	r := traceResult{File: in.path, Target: f.target}
	if in.err != nil {
		return r.failed(in.err)
	}
	t, err := readInput(stdin, in.path)
	if err != nil {
		return r.failed(err)
	}
	if err := checkFits(t, opts); err != nil {
		return r.failed(err)
	}
	v, _, err := replayTrace(ctx, t, f, opts, nil)
	if err != nil {
		return r.failed(err)
	}
	r.fill(t, v, report.Judge(t, f.target, v))
	if v.Outcome == replay.Diverged {
		ev := report.Evidence{Trace: t, TracePath: in.path, Target: f.target, Backend: actordelivery.Backend(f.backend), Options: opts, Verdict: v}
		if !r.AsClaimed || f.evidence != "" {
			dir := f.evidence
			if dir == "" {
				if dir, err = os.MkdirTemp("", "pconform-evidence-"); err != nil {
					return r.failed(fmt.Errorf("evidence: %w", err))
				}
			}
			path, err := report.WriteEvidence(dir, ev)
			if err != nil {
				return r.failed(fmt.Errorf("writing evidence: %w", err))
			}
			r.Evidence = path
			ev.TracePath = r.rerunPath(path)
		}
		r.Rerun = ev.RerunCommands()
	}
	return r
}

// replayTrace runs t against a fresh target in a temporary directory. With snapshots set it also
// returns the target's state after every step that ran and snapshots accepts.
func replayTrace(ctx context.Context, t *traces.Trace, f replayFlags, opts replay.Options, snapshots func(int) bool) (replay.Verdict, map[int]traces.Snapshot, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var tg replay.Target
	if f.backend == string(actordelivery.BackendPostgres) {
		srv, err := targets.OpenPGServer(f.dsn)
		if err != nil {
			return replay.Verdict{}, nil, err
		}
		defer srv.Close()
		if tg, err = targets.NewOn(f.target, targets.StoreDB{Backend: actordelivery.BackendPostgres, Server: srv}); err != nil {
			return replay.Verdict{}, nil, err
		}
	} else {
		dir, err := os.MkdirTemp("", "pconform-replay-")
		if err != nil {
			return replay.Verdict{}, nil, err
		}
		defer os.RemoveAll(dir)
		if tg, err = targets.New(f.target, dir); err != nil {
			return replay.Verdict{}, nil, err
		}
	}
	if f.target == targets.Model && !t.Expect.Profile.IsDefault() {
		// The reference model expects what a correct store under the trace's profile does.
		if err := tg.Close(); err != nil {
			return replay.Verdict{}, nil, err
		}
		tg = targets.NewModelTarget(models.Config{Profile: t.Expect.Profile})
	}
	defer tg.Close()
	after := map[int]traces.Snapshot{}
	if snapshots != nil {
		opts.AfterStep = func(i int, s traces.Snapshot) { after[i] = s }
		opts.AfterStepOnly = snapshots
	}
	v, err := replay.Run(ctx, t, tg, opts)
	return v, after, err
}

// checkFits refuses, as a usage error naming the value, a trace the options or the registry
// cannot honestly replay: a broken variant no target knows (the claim could never be checked),
// or a crash step past the trace's end (the crash would never happen).
func checkFits(t *traces.Trace, opts replay.Options) error {
	if v := t.Expect.Variant; v != "" && (!slices.Contains(targets.Names(), v) || targets.IsCorrect(v)) {
		return usagef("%s: expect.variant %q is not a known broken variant (known: %s)", t.Name, v, strings.Join(targets.BrokenVariants(), ", "))
	}
	for _, k := range opts.ReopenBefore {
		if k >= len(t.Steps) {
			return usagef("--crash-before %d is past the end of %s, whose steps are #0 to #%d", k, t.Name, len(t.Steps)-1)
		}
	}
	return nil
}
