// Command pconform-efficacy measures how often the oracles catch each broken variant in observed
// runs: it runs the observe workload (SQLite) against every broken variant for -seeds seeds and
// against the correct store for -correct-seeds seeds, and prints, per variant, the seeds the model
// oracle caught, the seeds the P oracle caught and the median time to catch. It is a research
// harness, not part of the gate; docs/observed.md ("Efficacy") says how to read its table.
//
// Run it from the repository root with the P tool on PATH (. scripts/env.sh):
//
//	go run ./observe/cmd/pconform-efficacy                                # every observed variant
//	go run ./observe/cmd/pconform-efficacy -kill                          # every run as observe --kill
//	go run ./observe/cmd/pconform-efficacy -variants split-write,stale-extend -seeds 3 -correct-seeds 3
//
// A variant seed first runs for -first, checked by the model oracle. The P oracle then checks
// these first runs, every variant seed's and every correct seed's by default (or the first
// -p-seeds seeds of each variant, every seed the model oracle did not catch, and the first
// -p-correct correct seeds): compiled into P projects of at most 50,000 observed steps each, one
// checker run per project. A seed neither oracle caught runs again with twice the budget each
// time, checked by the model, up to -budget of workload in all; the P oracle then checks the last
// run of each seed still uncaught (a second batch). The time to catch is the wall time of the
// seed's runs and model checks until the catch, plus, for a seed the P oracle checked, its share
// of the P batch (the batch's wall time divided by the traces in it). The correct store runs
// -correct-budget per seed, and every finding there is a false alarm.
//
// The model oracle checks every run twice: the whole trace (observe.CheckModel) and the event log
// as `pconform check` streams it (observe.Check). The two must refuse the same event, or pass
// alike; a run where they differ stops the tool (exit 3). So the model column is both oracles'.
//
// Exit codes: 0 every variant was caught in at least 9 of 10 of its seeds (scaled to -seeds) and
// the correct store had no finding; 1 otherwise; 2 usage error; 3 could not run.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/variants"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/observe/workload"
	"github.com/pconform/pconform/traces"
)

// childArg is the first argument of a child process of a -kill run: the process runs one loop of
// the workload (workload.RunChild) with the arguments workload.Child.Args wrote.
const childArg = "observe-child"

func main() {
	if len(os.Args) > 1 && os.Args[1] == childArg {
		ch, err := workload.ParseChild(os.Args[2:])
		if err == nil {
			err = workload.RunChild(context.Background(), ch, os.Stdout, os.Stdin)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "pconform-efficacy: %s: %v\n", childArg, err)
			os.Exit(3)
		}
		return
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// config is what the flags say.
type config struct {
	seeds, correctSeeds, pSeeds, pCorrect int
	first, budget, correctBudget          time.Duration
	kill                                  bool
	variants                              []string
	models                                string
}

// usageError is a bad flag or argument (exit 2).
type usageError struct{ error }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pconform-efficacy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.IntVar(&cfg.seeds, "seeds", 10, "seeds per broken variant")
	fs.IntVar(&cfg.correctSeeds, "correct-seeds", 100, "seeds of the correct store")
	fs.IntVar(&cfg.pSeeds, "p-seeds", -1, "seeds per variant the P oracle checks (besides every seed the model did not catch); -1 every seed")
	fs.IntVar(&cfg.pCorrect, "p-correct", -1, "correct-store seeds the P oracle checks; -1 every seed")
	fs.DurationVar(&cfg.first, "first", time.Second, "a variant seed's first run")
	fs.DurationVar(&cfg.budget, "budget", 60*time.Second, "most workload time per variant seed")
	fs.DurationVar(&cfg.correctBudget, "correct-budget", time.Second, "workload time per correct-store seed")
	fs.BoolVar(&cfg.kill, "kill", false, "observe every run with child processes SIGKILLed at random (as pconform observe --kill)")
	list := fs.String("variants", strings.Join(efficacyVariants(), ","), "comma-separated broken variants to observe")
	fs.StringVar(&cfg.models, "models", filepath.Join("models", "p"), "the P project whose spec monitors the P oracle uses")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "pconform-efficacy: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if _, err := os.Stat(filepath.Join(cfg.models, "PSpec")); err != nil {
		fmt.Fprintf(stderr, "pconform-efficacy: -models %s is not a P project with spec monitors (no PSpec in it); run from the repository root\n", cfg.models)
		return 2
	}
	if *list != "" {
		cfg.variants = strings.Split(*list, ",")
	}
	ok, err := efficacy(ctx, cfg, stdout, stderr)
	var usage usageError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "pconform-efficacy: %v\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "pconform-efficacy: %v\n", err)
		return 3
	case !ok:
		return 1
	}
	return 0
}

// notObserved names the broken variants the efficacy table leaves out, with the reason: the
// workload never performs the operation whose rule they break, so no run of it can show them
// (each is caught by its P counterexample, its corpus trace or a hunt instead). It is the
// NotObserved column of internal/variants; every other variant is in the table by default.
var notObserved = func() map[string]string {
	out := map[string]string{}
	for _, r := range variants.All() {
		if r.NotObserved != "" {
			out[r.Name] = r.NotObserved
		}
	}
	return out
}()

// efficacyVariants lists the broken variants the efficacy table observes: every name in
// targets.BrokenVariants but those in notObserved.
func efficacyVariants() []string {
	var out []string
	for _, v := range targets.BrokenVariants() {
		if _, skip := notObserved[v]; !skip {
			out = append(out, v)
		}
	}
	return out
}

// seedRun is what observing one seed of one target found.
type seedRun struct {
	model     bool          // the model oracle refused a run of this seed
	modelTime time.Duration // wall time of the runs and checks until that refusal
	first     *traces.Trace // the first run, the one the P oracle checks
	firstTime time.Duration // wall time of that run and its model check (and its share of the P batch, once it ran)
	spent     time.Duration // workload time of the runs so far
	pChecked  bool          // the P oracle checked the first run
	p         bool          // the P oracle refused it
	pMsg      string
	pTime     time.Duration // wall time until the P oracle's catch, its batch's share included
	last      *traces.Trace // the last run
	lastTime  time.Duration // wall time of the runs and checks up to and including the last run
	finding   string
}

// efficacy runs the table cfg asks for, prints it to w and each seed's progress to progress, and
// reports whether every variant was caught often enough and the correct store had no finding.
func efficacy(ctx context.Context, cfg config, w, progress io.Writer) (bool, error) {
	seeds, correctSeeds, pSeeds, pCorrect := cfg.seeds, cfg.correctSeeds, cfg.pSeeds, cfg.pCorrect
	first, budget, correctBudget, kill, variants := cfg.first, cfg.budget, cfg.correctBudget, cfg.kill, cfg.variants
	modelsDir := cfg.models
	results := map[string][]*seedRun{}
	var pTraces []*traces.Trace
	var pRuns []*seedRun
	for _, v := range variants {
		if !slices.Contains(efficacyVariants(), v) {
			return false, usageError{fmt.Errorf("unknown -variants entry %q (known: %v)", v, efficacyVariants())}
		}
	}
	for _, v := range variants {
		for s := 1; s <= seeds; s++ {
			r, err := observeUntilCaught(ctx, &seedRun{}, v, int64(s), first, first, kill)
			if err != nil {
				return false, err
			}
			results[v] = append(results[v], r)
			if pSeeds < 0 || s <= pSeeds || !r.model {
				r.pChecked = true
				pTraces, pRuns = append(pTraces, r.first), append(pRuns, r)
			}
			fmt.Fprintf(progress, "%s seed %d: model %v (%s) %s\n", v, s, r.model, r.modelTime.Round(time.Millisecond), r.finding)
		}
	}
	falseAlarms := 0
	var correctSteps int
	var correctRuns []*seedRun // the correct seeds the P oracle checks, in seed order
	for s := 1; s <= correctSeeds; s++ {
		o, _, err := observeOnce(ctx, targets.Store, int64(s), correctBudget, kill)
		if err != nil {
			return false, err
		}
		t := o.trace
		correctSteps += len(t.Steps)
		f, err := checkModel(o, targets.Store)
		if err != nil {
			return false, err
		}
		if f != nil {
			falseAlarms++
			fmt.Fprintf(w, "FALSE ALARM correct store seed %d: %s\n", s, f)
		}
		if pCorrect < 0 || s <= pCorrect {
			r := &seedRun{first: t}
			pTraces, pRuns = append(pTraces, t), append(pRuns, r)
			correctRuns = append(correctRuns, r)
		}
	}
	var pTime time.Duration
	pFalse := 0
	if len(pTraces) > 0 {
		start := time.Now()
		msgs, err := bridge.CheckObservedAll(ctx, bridge.Config{ProjectDir: modelsDir}, pTraces)
		if err != nil {
			return false, err
		}
		pTime = time.Since(start)
		for i, m := range msgs {
			pRuns[i].p, pRuns[i].pMsg = m != "", m
		}
		share := pTime / time.Duration(len(pTraces))
		for _, r := range pRuns {
			r.firstTime += share
			r.pTime = r.firstTime
		}
		for i, r := range correctRuns {
			if r.p {
				falseAlarms++
				pFalse++
				fmt.Fprintf(w, "FALSE ALARM (P) correct store seed %d: %s\n", i+1, r.pMsg)
			}
		}
	}
	// The seeds neither oracle caught in their first run go on with the model oracle.
	for _, v := range variants {
		for s, r := range results[v] {
			if r.model || r.p {
				continue
			}
			if _, err := observeUntilCaught(ctx, r, v, int64(s+1), 2*first, budget, kill); err != nil {
				return false, err
			}
			fmt.Fprintf(progress, "%s seed %d: model %v (%s) after more runs %s\n", v, s+1, r.model, r.modelTime.Round(time.Millisecond), r.finding)
		}
	}
	// The P oracle checks the last, longest run of every seed still uncaught.
	var lastTraces []*traces.Trace
	var lastRuns []*seedRun
	for _, v := range variants {
		for _, r := range results[v] {
			if !r.model && !r.p && r.last != nil && r.last != r.first {
				lastTraces, lastRuns = append(lastTraces, r.last), append(lastRuns, r)
			}
		}
	}
	if len(lastTraces) > 0 {
		start := time.Now()
		msgs, err := bridge.CheckObservedAll(ctx, bridge.Config{ProjectDir: modelsDir}, lastTraces)
		if err != nil {
			return false, err
		}
		took := time.Since(start)
		share := took / time.Duration(len(lastTraces))
		for i, m := range msgs {
			r := lastRuns[i]
			r.pChecked = true
			if m != "" {
				r.p, r.pMsg, r.pTime = true, m, r.lastTime+share
			}
		}
		fmt.Fprintf(w, "P oracle on the last runs of %d seeds still uncaught: %s\n", len(lastTraces), took.Round(time.Second))
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "variant\tseeds\tcaught by model\tcaught by P\tcaught by either\tmedian time to catch\n")
	ok := falseAlarms == 0
	for _, v := range variants {
		var m, p, either int
		var times []time.Duration
		pChecked := 0
		for _, r := range results[v] {
			if r.model {
				m++
			}
			if r.pChecked {
				pChecked++
				if r.p {
					p++
				}
			}
			switch {
			case r.model && (!r.p || r.modelTime <= r.pTime):
				either++
				times = append(times, r.modelTime)
			case r.p:
				either++
				times = append(times, r.pTime)
			}
		}
		med := "-"
		if len(times) > 0 {
			slices.Sort(times)
			med = times[len(times)/2].Round(100 * time.Millisecond).String()
		}
		if either*10 < 9*seeds {
			ok = false
		}
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%d/%d\t%d/%d\t%s\n", v, seeds, m, seeds, p, pChecked, either, seeds, med)
	}
	fmt.Fprintf(tw, "store (correct)\t%d\t%d findings\t%d findings of %d checked\t\t\n", correctSeeds, falseAlarms-pFalse, pFalse, len(correctRuns))
	tw.Flush()
	fmt.Fprintf(w, "correct store: %d seeds of %s, %d observed steps, %d false alarms\n", correctSeeds, correctBudget, correctSteps, falseAlarms)
	if len(pTraces) > 0 {
		steps := 0
		for _, t := range pTraces {
			steps += len(t.Steps)
		}
		fmt.Fprintf(w, "P oracle: %d traces, %d steps, compiled and checked (one compile and one checker run per 50,000 steps) in %s (%.0f events/s)\n", len(pTraces), steps, pTime.Round(time.Second), float64(steps)/pTime.Seconds())
	}
	return ok, nil
}

// observed is one run: its event log and the trace made of it.
type observed struct {
	log   []byte
	trace *traces.Trace
}

// observeOnce runs the workload on target for budget (SQLite, a fresh database) and returns the
// run and the wall time the run and conversion took.
func observeOnce(ctx context.Context, target string, seed int64, budget time.Duration, kill bool) (*observed, time.Duration, error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "pconform-efficacy-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	var log bytes.Buffer
	cfg := workload.Config{Target: filepath.Join(dir, "observe.db"), Seed: seed, Budget: budget, Events: &log, Variant: target}
	command := fmt.Sprintf("pconform observe --target %s --seed %d --budget %s", target, seed, budget)
	if kill {
		self, err := os.Executable()
		if err != nil {
			return nil, 0, err
		}
		_, err = workload.RunProcesses(ctx, workload.Processes{Config: cfg, Dir: dir,
			Command: func(args []string) *exec.Cmd {
				return exec.Command(self, append([]string{childArg}, args...)...)
			}})
		if err != nil {
			return nil, 0, fmt.Errorf("efficacy: %s seed %d: %w", target, seed, err)
		}
		command += " --kill"
	} else if _, err := workload.Run(ctx, cfg); err != nil {
		return nil, 0, fmt.Errorf("efficacy: %s seed %d: %w", target, seed, err)
	}
	raw := log.Bytes()
	lg, err := observe.ReadLog(bytes.NewReader(raw), "events")
	if err != nil {
		return nil, 0, err
	}
	t, err := observe.Convert(lg, observe.Options{Name: fmt.Sprintf("%s-seed%d", target, seed), Variant: variantOf(target), Seed: seed,
		Command: command})
	if err != nil {
		return nil, 0, err
	}
	return &observed{log: raw, trace: t}, time.Since(start), nil
}

// checkModel is the model oracle's verdict on run o of target: the whole-trace oracle's and the
// streaming oracle's, which must agree (the same refused step, or none); an error if they do not.
func checkModel(o *observed, target string) (*observe.Finding, error) {
	whole, err := observe.CheckModel(o.trace)
	if err != nil {
		return nil, err
	}
	src := observe.NewOrdered(observe.NewDecoder(bytes.NewReader(o.log), o.trace.Name), 0)
	_, streamed, err := observe.Check(src, observe.CheckOptions{Variant: variantOf(target)})
	if err != nil {
		return nil, fmt.Errorf("efficacy: %s: the streaming oracle: %w", o.trace.Name, err)
	}
	if (whole == nil) != (streamed == nil) || whole != nil && whole.Step != streamed.Step {
		return nil, fmt.Errorf("efficacy: %s: the model oracles disagree: whole trace %v, streamed %v (rerun: %s)",
			o.trace.Name, whole, streamed, o.trace.Origin.Command)
	}
	return whole, nil
}

// observeUntilCaught goes on observing target with seed for r: runs of from, then twice as long
// each time, checked by the model oracle, until it refuses a run or the workload time (r's runs so
// far included) would pass budget. The first run it makes for a fresh r is r.first, the one the
// P oracle checks; r.modelTime counts on from r.firstTime.
func observeUntilCaught(ctx context.Context, r *seedRun, target string, seed int64, from, budget time.Duration, kill bool) (*seedRun, error) {
	elapsed := r.firstTime
	for b := from; r.spent+b <= budget; b *= 2 {
		o, took, err := observeOnce(ctx, target, seed, b, kill)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		f, err := checkModel(o, target)
		if err != nil {
			return nil, err
		}
		t := o.trace
		elapsed += took + time.Since(start)
		r.spent += b
		r.last, r.lastTime = t, elapsed
		if r.first == nil {
			r.first, r.firstTime = t, elapsed
		}
		if f != nil {
			r.model, r.modelTime, r.finding = true, elapsed, f.String()
			return r, nil
		}
	}
	return r, nil
}

// variantOf is the expect.variant of an observed trace of target.
func variantOf(target string) string {
	if target == targets.Store {
		return ""
	}
	return target
}
