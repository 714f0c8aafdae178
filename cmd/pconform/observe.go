package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/observe/workload"
	"github.com/pconform/pconform/traces"
)

func newObserveCmd() *cobra.Command {
	var (
		oracles                           oracleFlags
		target, backend, dsn, out, events string
		seed                              int64
		budget, killEvery, tick           time.Duration
		workers, batch                    int
		kill, eventsOnly                  bool
		steps                             int64
	)
	c := &cobra.Command{
		Use:   "observe",
		Short: "Run the real store under a concurrent workload, record what it did, and check it",
		Long: `Observe runs real goroutines against a store target while the store records its history:
leased workers, one leaseless worker per leaseless mailbox, a fold and a split publisher (each
failing one of its commits in five), and random enqueues of messages and of outbox rows, with a
logical clock one second per 20ms tick (--tick, with --events-only). With --batch N (N > 1) some of them run batched
(docs/semantics.md, "Batches"): every second leased worker, the first leaseless mailbox's worker
and the worker group fetch and commit up to N messages at a time, and the fold publisher delivers
up to N claimed rows in one transaction; the history then holds batch steps beside single ones
(the P oracle, --p, checks them as the P model announces them). It
converts the recorded events into a trace of origin kind "observed" (written to --out), and checks
it with the reference model, which must agree with every observed result (see docs/observed.md).

With --kill, every loop (the enqueuer, each worker, each publisher) runs in a child process of its
own; pconform SIGKILLs a child at random every --kill-every on average and starts its loop again
with new worker numbers. The processes share one clock; the history is every committed write from
the database's commit log (written in the committing transaction, so a kill loses none) and the
children's reads, merged by commit sequence.

Exit codes: 0 the model agrees with every result, 1 a finding, 2 usage error, 3 the run could not
happen. The run is not reproducible from its seed (the scheduler decides the interleaving): the
written trace is the evidence; 'pconform check' checks it again.`,
		Example: `  pconform observe --seed 1 --budget 1s --out /tmp/observed.json
  pconform observe --target unfenced-ack --seed 3 --out /tmp/unfenced.json   # exit 1: the model refuses the bug
  pconform observe --kill --seed 2 --budget 2s --out /tmp/killed.json`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			if !slices.Contains(targets.Names(), target) {
				return usagef("unknown --target %q (known: %v)", target, targets.Names())
			}
			if _, ok := targets.Parts(target); !ok {
				return usagef("--target %q is a model; observe runs the store and its variants", target)
			}
			b, err := actordelivery.ParseBackend(backend)
			if err != nil {
				return usagef("unknown --backend %q (known: sqlite, postgres)", backend)
			}
			if tick < 0 {
				return usagef("--tick %s is negative", tick)
			}
			if batch < 0 || batch > actordelivery.MaxBatchSize {
				return usagef("--batch %d is outside [0, %d]", batch, actordelivery.MaxBatchSize)
			}
			if eventsOnly {
				return observeEventsOnly(c, b, events, steps, budget, workload.Config{Backend: b, Seed: seed, LeasedWorkers: workers, Variant: target, MaxEvents: steps, Batch: batch, Tick: tick}, dsn, kill)
			}
			if steps > 0 {
				return usagef("--steps goes with --events-only")
			}
			if c.Flags().Changed("tick") {
				return usagef("--tick goes with --events-only")
			}
			if out == "" {
				return usagef("--out is required: where to write the observed trace")
			}
			cfg := workload.Config{Backend: b, Seed: seed, Budget: budget, LeasedWorkers: workers, Variant: target, Batch: batch}
			switch b {
			case actordelivery.BackendSQLite:
				dir, err := os.MkdirTemp("", "pconform-observe-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				cfg.Target = filepath.Join(dir, "observe.db")
			case actordelivery.BackendPostgres:
				if dsn == "" {
					dsn = os.Getenv("PCONFORM_PG_DSN")
				}
				if dsn == "" {
					return usagef("--backend postgres needs --dsn or PCONFORM_PG_DSN")
				}
				cfg.Target = dsn
				cfg.TablePrefix = fmt.Sprintf("observe_%d_%d_", os.Getpid(), time.Now().UnixNano()%1e9)
			}
			var log bytes.Buffer
			cfg.Events = &log
			if events != "" {
				f, err := os.Create(events)
				if err != nil {
					return err
				}
				defer f.Close()
				cfg.Events = io.MultiWriter(&log, f)
			}
			command := fmt.Sprintf("pconform observe --target %s --backend %s --seed %d --budget %s --out %s", target, backend, seed, budget, out)
			if batch > 1 {
				command += fmt.Sprintf(" --batch %d", batch)
			}
			var stats workload.Stats
			var ps workload.ProcStats
			if kill {
				command += fmt.Sprintf(" --kill --kill-every %s", killEvery)
				dir, err := os.MkdirTemp("", "pconform-observe-children-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				self, err := os.Executable()
				if err != nil {
					return err
				}
				ps, err = workload.RunProcesses(context.Background(), workload.Processes{Config: cfg, Dir: dir, KillEvery: killEvery,
					Command: func(args []string) *exec.Cmd {
						return exec.Command(self, append([]string{"observe-child"}, args...)...)
					}})
				if err != nil {
					return fmt.Errorf("observe: %w", err)
				}
			} else if stats, err = workload.Run(context.Background(), cfg); err != nil {
				return fmt.Errorf("observe: %w", err)
			}
			t, err := convertEvents(&log, "events", observe.Options{Name: strings.TrimSuffix(filepath.Base(out), ".json"),
				Variant: variantOf(target), Seed: seed, Command: command})
			if err != nil {
				return err
			}
			if err := traces.WriteFile(out, t); err != nil {
				return err
			}
			w := c.OutOrStdout()
			if kill {
				fmt.Fprintf(w, "observed %s on %s for %s (seed %d) in %d child processes, %d killed and restarted: %d steps, %d committed writes (%d of them only in the commit log), %d reads, %d cut-off lines\n",
					target, backend, budget, seed, ps.Children, ps.Kills, len(t.Steps), ps.Writes, ps.OnlyInLog, ps.Reads, ps.TruncatedLines)
			} else {
				fmt.Fprintf(w, "observed %s on %s for %s (seed %d): %d steps, %d enqueued, %d outbox rows, %d handled, %d delivered, %d injected commit failures, t=%ds\n",
					target, backend, budget, seed, len(t.Steps), stats.Enqueued, stats.OutboxEnqueued, stats.Handled, stats.Delivered, stats.InjectedFaults, stats.Logical)
			}
			fmt.Fprintf(w, "trace: %s\n", out)
			err = checkTrace(w, t, out, oracles)
			if len(stats.Unwoken) > 0 {
				fmt.Fprintf(w, "FINDING wake-ups: the wake-driven mailbox's consumer (poll interval longer than the run) left %d messages ready: %s; a consumer woken for a committed message fetches it before its next poll tick\n",
					len(stats.Unwoken), strings.Join(stats.Unwoken, ", "))
				if err == nil {
					err = errFinding
				}
			} else if !kill {
				wakes, ticks := 0, 0
				for _, st := range t.Steps {
					switch st.Op {
					case traces.OpWake:
						wakes++
					case traces.OpPollTick:
						ticks++
					}
				}
				fmt.Fprintf(w, "wake-ups: %d recorded, %d poll ticks; the wake-driven mailbox's consumer handled %d messages and left none ready past the wake bound\n", wakes, ticks, stats.Woken)
			}
			return err
		},
	}
	c.Flags().StringVar(&target, "target", targets.Store, "the store target to run: "+targetHelp())
	c.Flags().StringVar(&backend, "backend", string(actordelivery.BackendSQLite), "store backend: sqlite or postgres")
	c.Flags().StringVar(&dsn, "dsn", "", "PostgreSQL server for --backend postgres (default $PCONFORM_PG_DSN); the run's tables get a prefix of their own")
	c.Flags().Int64Var(&seed, "seed", 1, "seed of the workload's random choices")
	c.Flags().DurationVar(&budget, "budget", 5*time.Second, "how long the workload runs")
	c.Flags().IntVar(&workers, "workers", 4, "leased workers")
	c.Flags().IntVar(&batch, "batch", 0, "run some workers and the fold publisher batched, up to this many messages or rows a transaction (0 or 1: none)")
	c.Flags().StringVar(&out, "out", "", "where to write the observed trace (required)")
	c.Flags().StringVar(&events, "events", "", "also write the recorded events (JSON lines) here")
	c.Flags().BoolVar(&kill, "kill", false, "run every loop in a child process and SIGKILL the children at random, restarting them")
	c.Flags().DurationVar(&killEvery, "kill-every", 0, "with --kill, the mean time between two kills (0: a quarter of --budget)")
	c.Flags().DurationVar(&tick, "tick", 0, "with --events-only, the real time per logical second (0: 20ms); a shorter tick records faster, up to what the store's CPU allows")
	c.Flags().BoolVar(&eventsOnly, "events-only", false, "only record: write the events to --events and check nothing (long histories for 'pconform check')")
	c.Flags().Int64Var(&steps, "steps", 0, "with --events-only, stop once this many events are recorded (the steps in flight finish, so a few more are written)")
	oracles.register(c)
	return c
}

// newObserveChildCmd is the hidden command a child process of `observe --kill` runs: one loop of
// the workload (workload.RunChild), with the arguments workload.Child.Args wrote.
func newObserveChildCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "observe-child",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			ch, err := workload.ParseChild(args)
			if err != nil {
				return usagef("%v", err)
			}
			return workload.RunChild(context.Background(), ch, c.OutOrStdout(), os.Stdin)
		},
	}
}

// variantOf is the expect.variant of an observed trace of target.
func variantOf(target string) string {
	if target == targets.Store {
		return ""
	}
	return target
}

// convertEvents reads a recorded event log and converts it, reporting an ignored truncated line.
func convertEvents(r io.Reader, name string, opts observe.Options) (*traces.Trace, error) {
	lg, err := observe.ReadLog(r, name)
	if err != nil {
		return nil, err
	}
	if lg.Truncated > 0 {
		fmt.Fprintf(os.Stderr, "pconform: %s: line %d is incomplete (the writer stopped mid-line); ignored\n", name, lg.Truncated)
	}
	return observe.Convert(lg, opts)
}

// observeEventsOnly records a run into the events file and checks nothing: the quick way to a
// long history for 'pconform check'.
func observeEventsOnly(c *cobra.Command, b actordelivery.Backend, events string, steps int64, budget time.Duration, cfg workload.Config, dsn string, kill bool) error {
	switch {
	case events == "":
		return usagef("--events-only needs --events FILE: where to write the recorded events")
	case kill:
		return usagef("--events-only runs in one process; it does not take --kill")
	case b != actordelivery.BackendSQLite && dsn == "" && os.Getenv("PCONFORM_PG_DSN") == "":
		return usagef("--backend postgres needs --dsn or PCONFORM_PG_DSN")
	}
	if c.Flags().Changed("budget") || steps == 0 {
		cfg.Budget = budget
	}
	switch b {
	case actordelivery.BackendSQLite:
		dir, err := os.MkdirTemp("", "pconform-observe-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.Target = filepath.Join(dir, "observe.db")
	default:
		if dsn == "" {
			dsn = os.Getenv("PCONFORM_PG_DSN")
		}
		cfg.Target = dsn
		cfg.TablePrefix = fmt.Sprintf("observe_%d_%d_", os.Getpid(), time.Now().UnixNano()%1e9)
	}
	f, err := os.Create(events)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	cfg.Events = w
	start := time.Now()
	stats, runErr := workload.Run(context.Background(), cfg)
	if err := errors.Join(runErr, w.Flush(), f.Close()); err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	fi, err := os.Stat(events)
	if err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Fprintf(c.OutOrStdout(), "recorded %s on %s (seed %d) into %s: %d bytes in %s, %d enqueued, %d handled, %d delivered, t=%ds\ncheck it: pconform check %s\n",
		cfg.Variant, b, cfg.Seed, events, fi.Size(), took.Round(time.Millisecond), stats.Enqueued, stats.Handled, stats.Delivered, stats.Logical, events)
	return nil
}
