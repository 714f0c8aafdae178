package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/internal/gcpace"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/traces"
)

// oracleFlags choose the oracles check and observe run.
type oracleFlags struct {
	p      bool
	models string
	cache  string
}

func (o *oracleFlags) register(c *cobra.Command) {
	c.Flags().BoolVar(&o.p, "p", false, "also run the P oracle: the project's spec monitors over the observed events, streamed to the P checker (the monitors compile once per version, about a minute)")
	c.Flags().StringVar(&o.cache, "p-cache", "", "where the P oracle keeps its compiled monitors (default: pconform/pstream in the user's cache directory)")
	c.Flags().StringVar(&o.models, "models", "", "the P project whose spec monitors the P oracle uses (default: models/p of the repository holding the current directory)")
}

// modelsDir is the P project the P oracle uses: --models, or models/p in the current directory or
// the nearest parent that has one.
func (o oracleFlags) modelsDir() (string, error) {
	if o.models != "" {
		if _, err := os.Stat(filepath.Join(o.models, "PSpec")); err != nil {
			return "", usagef("--models %s is not a P project with spec monitors (no PSpec in it)", o.models)
		}
		return o.models, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "models", "p")
		if _, err := os.Stat(filepath.Join(p, "PSpec")); err == nil {
			return p, nil
		}
		if filepath.Dir(dir) == dir {
			return "", usagef("models/p not found in %s or any parent; pass --models DIR (the P project holding PSpec)", wd)
		}
	}
}

// checkTrace runs the oracles on t and prints the verdict (see modelVerdict and pVerdict); a
// finding is errFinding.
func checkTrace(w io.Writer, t *traces.Trace, path string, o oracleFlags) error {
	found, err := modelVerdict(w, t, path)
	if err != nil {
		return err
	}
	if o.p {
		pFound, err := pOracle(w, []*traces.Trace{t}, []string{path}, o)
		if err != nil {
			return err
		}
		found = found || pFound
	}
	if found {
		return errFinding
	}
	return nil
}

// modelVerdict runs the model oracle on t and prints its verdict. A counterexample trace (one
// that names a broken variant and the step where the correct store refuses it) claims a refusal
// at that step: the model oracle refusing exactly there is the verdict it claims. Anything else
// the model reports is a finding (found).
func modelVerdict(w io.Writer, t *traces.Trace, path string) (found bool, err error) {
	f, err := observe.CheckModel(t)
	if err != nil {
		return false, err
	}
	claims := t.Expect.Variant != "" && t.Expect.DivergesAt >= 0
	switch {
	case f == nil && !claims:
		fmt.Fprintf(w, "model oracle: agrees with all %d steps\n", len(t.Steps))
	case f == nil:
		found = true
		fmt.Fprintf(w, "FINDING model oracle: agrees with all %d steps, but the trace claims the correct store refuses step %d\n", len(t.Steps), t.Expect.DivergesAt)
	case claims && f.Step == t.Expect.DivergesAt:
		fmt.Fprintf(w, "model oracle: refuses step %d, as the trace claims (%s): %s\n", f.Step, t.Expect.Variant, f.Message)
	default:
		found = true
		fmt.Fprintf(w, "FINDING %s\n", f)
		if claims {
			fmt.Fprintf(w, "  the trace claims the refusal at step %d\n", t.Expect.DivergesAt)
		}
		fmt.Fprintf(w, "to see it: pconform explain %s --target model\n", path)
	}
	return found, nil
}

// pOracle runs the P oracle on ts with one compile and prints each trace's verdict.
func pOracle(w io.Writer, ts []*traces.Trace, paths []string, o oracleFlags) (found bool, err error) {
	dir, err := o.modelsDir()
	if err != nil {
		return false, err
	}
	fmt.Fprintf(os.Stderr, "pconform: P oracle: compiling the spec monitors of %s with the drivers of %d trace(s), then one checker run (a minute or more)\n", dir, len(ts))
	start := time.Now()
	msgs, err := bridge.CheckObservedAll(context.Background(), bridge.Config{ProjectDir: dir}, ts)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(os.Stderr, "pconform: P oracle: done in %s\n", time.Since(start).Round(time.Second))
	for i, t := range ts {
		if len(ts) > 1 {
			fmt.Fprintf(w, "%s: ", paths[i])
		}
		if pVerdict(w, t, msgs[i], dir) {
			found = true
		}
	}
	return found, nil
}

// streamConfig is the streaming P oracle's configuration for the models in dir; it compiles the
// monitors first when the cache has none for their sources, saying so on stderr.
func (o oracleFlags) streamConfig(dir string) (bridge.Config, error) {
	cfg := bridge.Config{ProjectDir: dir, StreamCache: o.cache}
	key, err := bridge.StreamKey(dir)
	if err != nil {
		return cfg, err
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "pconform: P oracle: the spec monitors of %s (%s), compiled once per version\n", dir, key)
	_, compiled, err := bridge.CompileStream(context.Background(), cfg)
	if err != nil {
		return cfg, err
	}
	if compiled {
		fmt.Fprintf(os.Stderr, "pconform: P oracle: compiled in %s; later checks reuse it\n", time.Since(start).Round(time.Second))
	}
	return cfg, nil
}

// claimLocation is the "(PSpec/File.p:line:col)" a safety monitor's message ends with.
var claimLocation = regexp.MustCompile(`\s*\(PSpec/[A-Za-z0-9_]+\.p:\d+:\d+\)$`)

// pVerdict prints the P oracle's verdict on t (msg is the firing monitor's message, "" when every
// monitor held) and reports whether it is a finding.
func pVerdict(w io.Writer, t *traces.Trace, msg, dir string) bool {
	claimed := t.Expect.Violates
	// The checker's message leaves out the assertion's location, which the trace's claim ends with.
	bare := strings.TrimSpace(claimLocation.ReplaceAllString(claimed, ""))
	ran := bridge.AssertedMonitors(dir, t)
	claimedMonitor := bridge.MonitorOf(dir, claimed)
	checkable := slices.Contains(ran, claimedMonitor)
	switch {
	case msg == "" && claimed == "":
		fmt.Fprintf(w, "P oracle: monitors %s hold%s\n", strings.Join(ran, ", "), unjudged(t, ran))
		return false
	case claimed != "" && claimedMonitor == "" && msg == "":
		// A property's or a hand-written claim: the model oracle judges it, the P oracle cannot.
		fmt.Fprintf(w, "P oracle: monitors %s hold%s; the trace's claim is not a P monitor's, so it is not judged here: %s\n",
			strings.Join(ran, ", "), unjudged(t, ran), claimed)
		return false
	case claimed != "" && claimedMonitor == "":
		fmt.Fprintf(w, "P oracle: violated: %s (the trace claims a violation in its own words: %s)\n", msg, claimed)
		return false
	case msg == "" && !checkable:
		fmt.Fprintf(w, "P oracle: not judged: the trace claims it violates %s, which it is not held to (a liveness monitor judges only the end of a P checker execution; see check --help): %s\n",
			claimedMonitor, bare)
		return false
	case msg == "":
		fmt.Fprintf(w, "FINDING P oracle: monitors %s hold, but the trace claims it violates: %s\n", strings.Join(ran, ", "), claimed)
		return true
	case msg == bare || msg == claimed:
		fmt.Fprintf(w, "P oracle: violated, as the trace claims: %s\n", msg)
		return false
	default:
		fmt.Fprintf(w, "FINDING P oracle: violated: %s\n", msg)
		return true
	}
}

// unjudged says which monitors a verdict leaves out (see bridge.AssertedMonitors).
func unjudged(t *traces.Trace, ran []string) string {
	if t.Origin.Kind == traces.OriginPChecker && len(ran) > 0 && !slices.Equal(ran, bridge.ObservedMonitors) {
		return " (the monitors its P test case asserts)"
	}
	return fmt.Sprintf(" (liveness monitors %s not judged: the trace ends where its recording stopped, not where a P checker execution ended)",
		strings.Join(bridge.LivenessMonitors, ", "))
}

func newCheckCmd() *cobra.Command {
	var (
		oracles       oracleFlags
		jobs          jobFlags
		keepGoing     bool
		follow        string
		variant       string
		findings      string
		window        int
		stopAfterIdle time.Duration
		progressEvery time.Duration
		lateWakes     time.Duration
	)
	c := &cobra.Command{
		Use:   "check LOG|TRACE|-...",
		Short: "Check recorded event logs or observed traces with the oracles",
		Long: `Check reads each file as it goes. An event log (JSON lines from the store's recorder, a commit
log, or a merged log of several processes) is put in commit order within a reorder window and
checked event by event against the reference model, which keeps only live state: a log of any
length is checked in memory that follows the live rows. A trace (pconform.trace/v1) is checked
step by step the same way; with --p the P spec monitors check it too.

With --p, a trace the P checker made is held to the monitors its P test case asserts, any other
trace to every safety monitor. A liveness monitor (a message resolved, an outbox row final, a
redriven dead letter deliverable) is judged only where an execution ended: at the end of a P
checker trace with a final snapshot. An observed history ends where its recording stopped, so
its liveness monitors are not judged, and the verdict says so (see docs/observed.md).

A finding names its event's position in commit order, its line and its sequence number, and
writes a trace of the events that matter (the rows involved, back to their creation) into
--findings, which 'pconform explain' and 'pconform replay' take. Checking stops at the first
finding unless --keep-going, which also reports a malformed event (one the trace format or the
model refuses) as a finding with its line, leaves it out and checks on. --follow FILE tails a growing log and reports a finding as soon as
its event arrives; a truncated or rotated file is said and read again from its new start.

A path of - reads an event log from standard input ('zcat log.gz | pconform check -'), as does a
pipe: a log read once keeps its live rows' events in memory for a finding's window, as --follow
does.

--jobs N checks an event log in N partitions by mailbox, in parallel, with the same verdict.
--shard i/N checks one share of it, for N machines; --join joins their --join-out files.

Progress goes to stderr: a live line on a terminal (events/s, position, ETA), plain lines every
--progress otherwise. A summary ends every check.

Exit codes: 0 every file is as it claims (an event log or observed trace: the model agrees with
every event; a counterexample trace: refused at the step it names and, with --p, its claimed
monitor violated), 1 a finding, 2 usage error,
3 a file could not be read (a log that is not JSON lines, a gap or repeat in its sequence
numbers, an unknown event kind, an impossible result: the error names the line).`,
		Example: `  pconform check /tmp/observed.json
  pconform observe --events-only --steps 1000000 --events /tmp/big.jsonl && pconform check /tmp/big.jsonl   # not run by the tests: a million steps
  pconform check --follow /tmp/live.jsonl   # not run by the tests: it follows the log until interrupted`,
		Args: func(_ *cobra.Command, args []string) error {
			if err := jobs.validate(oracles.p, keepGoing, follow); err != nil {
				return err
			}
			if len(args) == 0 && follow == "" {
				return cobraUsage{fmt.Errorf("expected one or more files to check, or --follow FILE")}
			}
			if len(args) > 0 && follow != "" {
				return cobraUsage{fmt.Errorf("--follow takes one file and no other arguments")}
			}
			if follow == stdinPath {
				return cobraUsage{fmt.Errorf("--follow tails a file that grows; to check a log on standard input, give %s as the log", stdinPath)}
			}
			if i := slices.Index(args, stdinPath); i >= 0 && slices.Contains(args[i+1:], stdinPath) {
				return cobraUsage{fmt.Errorf("%s (standard input) can be read once: give it once", stdinPath)}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			pace := gcpace.Start
			if jobs.jobs > 1 || jobs.shard != "" {
				pace = gcpace.StartParallel // the router and the partitions keep the cores busy
			}
			defer pace()()
			w := c.OutOrStdout()
			lc := logCheck{w: w, errw: c.ErrOrStderr(), in: c.InOrStdin(), variant: variant, keepGoing: keepGoing, findings: findings, window: window,
				progressEvery: progressEvery, lateWakes: lateWakes, jobFlags: jobs}
			if jobs.join {
				return lc.joinShards(args)
			}
			if oracles.p && follow != "" {
				return usagef("--p checks files; it does not follow a log (--follow)")
			}
			if follow != "" {
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
				defer stop()
				return lc.follow(ctx, follow, stopAfterIdle)
			}
			finding := false
			var pTraces []*traces.Trace
			var pPaths []string
			for _, path := range args {
				isLog, err := sniffLog(path)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "%s: ", logName(path))
				if isLog {
					err = lc.file(path, oracles)
				} else {
					var t *traces.Trace
					if t, err = traces.ReadFile(path); err != nil {
						return err
					}
					var found bool
					if found, err = modelVerdict(w, t, path); found {
						err = errFinding
					}
					pTraces, pPaths = append(pTraces, t), append(pPaths, path)
				}
				if errors.Is(err, errFinding) {
					finding = true
				} else if err != nil {
					return err
				}
			}
			if oracles.p && len(pTraces) > 0 {
				// One compile for every trace: the P oracle's cost is the compile.
				found, err := pOracle(w, pTraces, pPaths, oracles)
				if err != nil {
					return err
				}
				finding = finding || found
			}
			if finding {
				return errFinding
			}
			return nil
		},
	}
	oracles.register(c)
	jobs.register(c)
	c.Flags().BoolVar(&keepGoing, "keep-going", false, "go on past a finding to the end of the log")
	c.Flags().StringVar(&follow, "follow", "", "tail this growing event log, checking each event as it arrives (Ctrl-C ends with a summary)")
	c.Flags().DurationVar(&stopAfterIdle, "stop-after-idle", 0, "with --follow, end once the log has not grown for this long (0: never)")
	c.Flags().StringVar(&variant, "variant", "", "the store variant that wrote the log, if a broken one (its protocol steps may end in ways the correct store's never do)")
	c.Flags().StringVar(&findings, "findings", "", "where to write a finding's window trace (default: a new directory under the system's temporary directory)")
	c.Flags().IntVar(&window, "window", observe.DefaultWindow, "reorder window: how many events are held back to put the log in commit order")
	c.Flags().DurationVar(&lateWakes, "late-wakes", observe.DefaultLateWakes, "how long after its message was purged a wake still counts as one for a committed message (0: none; see docs/observed.md, Wake-ups)")
	c.Flags().DurationVar(&progressEvery, "progress", 10*time.Second, "when stderr is not a terminal, how often to print a progress line (0: never)")
	return c
}

// stdinPath is the path that names standard input, as an event log.
const stdinPath = "-"

// logName is how messages and findings name the log at path.
func logName(path string) string {
	if path == stdinPath {
		return "stdin"
	}
	return path
}

// sniffLog reports whether path is an event log (its first non-empty line is an event) rather
// than a trace file. A path that is not a regular file (a pipe, /dev/stdin, - for standard
// input) can be read only once, and what sniffing read would be lost to the check: it is taken
// for an event log.
func sniffLog(path string) (bool, error) {
	if path == stdinPath {
		return true, nil
	}
	// Stat, not open: opening a named pipe waits for its writer, and closing it may lose
	// what the writer wrote.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadSlice('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			return observe.IsEvent(t) || t[0] == '{' && bytes.Contains(t, []byte(`"op"`)) && bytes.Contains(t, []byte(`"seq"`)), nil
		}
		if err != nil {
			return false, nil // empty, or one very long line: let the trace reader say what it is
		}
	}
}

// logCheck checks event logs with the streaming oracle and prints what it finds.
type logCheck struct {
	w, errw io.Writer
	// in is standard input, which the path - names.
	in            io.Reader
	variant       string
	keepGoing     bool
	findings      string
	window        int
	progressEvery time.Duration
	// lateWakes is --late-wakes: 0 is none (CheckOptions.LateWakes takes a negative value).
	lateWakes time.Duration
	jobFlags  jobFlags
}

// lateWakeWindow is --late-wakes as CheckOptions.LateWakes.
func (lc *logCheck) lateWakeWindow() time.Duration {
	if lc.lateWakes <= 0 {
		return -1
	}
	return lc.lateWakes
}

// file checks one event log to its end; with o.p, the streaming P oracle checks it too, beside
// the model.
func (lc *logCheck) file(path string, o oracleFlags) error {
	var in io.Reader = lc.in
	var f *os.File
	var size int64
	regular := false
	if path != stdinPath {
		var err error
		if f, err = os.Open(path); err != nil {
			return err
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size, regular = fi.Size(), true
		}
		in = f
	}
	path = logName(path)
	var pc *bridge.StreamChecker
	if o.p {
		dir, err := o.modelsDir()
		if err != nil {
			return err
		}
		cfg, err := o.streamConfig(dir)
		if err != nil {
			return err
		}
		if pc, err = bridge.NewStreamChecker(context.Background(), cfg); err != nil {
			return err
		}
		defer pc.Close()
	}
	dec := observe.NewDecoder(in, path)
	// Parsing is about a third of a check's work: it runs on the other cores, ahead of the
	// oracle (or of the router that feeds the partitions).
	defer dec.Ahead(runtime.GOMAXPROCS(0))()
	pr := newCheckProgress(lc.errw, path, size, dec, lc.progressEvery)
	start := time.Now()
	opts := lc.options(path, pr)
	if regular {
		// The oracle keeps no row's history: at a finding it checks the file again up to it,
		// keeping the events as positions in the file, and reads them again for the window.
		opts.Log = f
		again := observe.ReadAgain(f, path, lc.window)
		opts.Reread = func() (observe.Source, error) {
			pr.say(path + ": a finding: reading the file again from its start, for the finding's window")
			return again()
		}
	}
	if pc != nil {
		opts.Checkers = append(opts.Checkers, pc)
	}
	sum, first, err := lc.check(observe.NewOrdered(dec, lc.window), opts)
	pr.done()
	if dec.Truncated > 0 {
		fmt.Fprintf(lc.errw, "pconform: %s: line %d is incomplete (the writer stopped mid-line); ignored\n", path, dec.Truncated)
	}
	if err != nil {
		return err
	}
	if pc != nil {
		if err := pc.Close(); err != nil {
			return err
		}
	}
	serr := lc.summary(sum, first, time.Since(start))
	if pc != nil {
		switch {
		case pc.Found != nil:
			// Reported with the findings above.
		case sum.Stopped:
			fmt.Fprintf(lc.w, "P oracle: stopped with the check (%d spec events sent)\n", pc.Spec)
		default:
			fmt.Fprintf(lc.w, "P oracle: monitors %s hold (%d spec events)\n", strings.Join(bridge.StreamMonitors, ", "), pc.Spec)
		}
	}
	return serr
}

func (lc *logCheck) options(path string, pr *checkProgress) observe.CheckOptions {
	return observe.CheckOptions{Variant: lc.variant, KeepGoing: lc.keepGoing, Progress: pr.update, LateWakes: lc.lateWakeWindow(),
		OnFinding: func(f *observe.Finding) error { return lc.report(path, f) }}
}

// report prints a finding and writes its window.
func (lc *logCheck) report(path string, f *observe.Finding) error {
	fmt.Fprintf(lc.w, "FINDING %s\n", f)
	if f.Window == nil {
		if f.WindowErr != nil {
			fmt.Fprintf(lc.w, "  no window trace: %v\n", f.WindowErr)
		}
		return nil
	}
	dir := lc.findings
	if dir == "" {
		d, err := os.MkdirTemp("", "pconform-findings-")
		if err != nil {
			return err
		}
		lc.findings, dir = d, d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	f.Window.Name = fmt.Sprintf("%s-line%d", base, f.Line)
	out := filepath.Join(dir, f.Window.Name+".json")
	if err := traces.WriteFile(out, f.Window); err != nil {
		return err
	}
	how := "its last step is the finding, and the model refuses it there on its own"
	if !f.WindowReproduces {
		how = "the model does not refuse its last step on its own (a row outside the window decided it); check the whole log with --keep-going"
	}
	fmt.Fprintf(lc.w, "  window: %s (%d steps: the rows involved back to their creation; %s)\n", out, len(f.Window.Steps), how)
	fmt.Fprintf(lc.w, "  to see it: pconform explain %s --target model\n", out)
	return nil
}

// summary prints the verdict line of a checked log; a finding is errFinding.
func (lc *logCheck) summary(sum observe.Summary, first *observe.Finding, took time.Duration) error {
	rate := float64(sum.Events) / max(took.Seconds(), 1e-9)
	what := "the model agrees with every event"
	switch {
	case first != nil && sum.Stopped && !lc.keepGoing:
		what = fmt.Sprintf("%d finding(s), stopped at the first (--keep-going goes on)", sum.Findings)
	case sum.Stopped:
		what = fmt.Sprintf("%d finding(s), stopped where the model could take no further step", sum.Findings)
	case first != nil:
		what = fmt.Sprintf("%d finding(s)", sum.Findings)
	}
	fmt.Fprintf(lc.w, "%d events (%d writes) checked in %s (%.0f events/s), %d live rows: %s\n",
		sum.Events, sum.Writes, took.Round(time.Millisecond), rate, sum.LiveRows, what)
	if first != nil {
		return errFinding
	}
	return nil
}

// follow checks a growing log until ctx ends, the log stays idle for stopAfterIdle, or (without
// --keep-going) a finding. A log that starts again at seq 1 is a new history: its check starts
// again too.
func (lc *logCheck) follow(ctx context.Context, path string, stopAfterIdle time.Duration) error {
	fl := &observe.Follower{Path: path, StopAfterIdle: stopAfterIdle, Window: lc.window,
		Say: func(s string) { fmt.Fprintf(lc.errw, "pconform: %s\n", s) }}
	defer fl.Close()
	found := false
	for {
		start := time.Now()
		var pr *checkProgress
		src := observe.SourceFunc(func() (*observe.Event, error) {
			ev, err := fl.Next(ctx)
			if pr == nil && fl.Decoder() != nil {
				pr = newCheckProgress(lc.errw, path, 0, fl.Decoder(), lc.progressEvery)
			}
			return ev, err
		})
		opts := observe.CheckOptions{Variant: lc.variant, KeepGoing: lc.keepGoing, LateWakes: lc.lateWakeWindow(),
			OnFinding: func(f *observe.Finding) error { return lc.report(path, f) },
			Progress: func(s observe.Summary) {
				if pr != nil {
					pr.update(s)
				}
			}}
		sum, first, err := observe.Check(src, opts)
		if pr != nil {
			pr.done()
		}
		fmt.Fprintf(lc.w, "%s: ", path)
		restarted := errors.Is(err, observe.ErrLogRestarted)
		if err != nil && !restarted && !errors.Is(err, observe.ErrIdle) && !errors.Is(err, context.Canceled) {
			return err
		}
		if lc.summary(sum, first, time.Since(start)) != nil {
			found = true
			if !lc.keepGoing {
				return errFinding
			}
		}
		if !restarted {
			break
		}
		fmt.Fprintf(lc.errw, "pconform: %s starts again at seq 1: a new history, checked from its start\n", path)
	}
	if found {
		return errFinding
	}
	return nil
}
