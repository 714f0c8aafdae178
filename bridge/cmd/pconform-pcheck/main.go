// Command pconform-pcheck is the gate's driver of the P checker: scripts/pmodels.sh (the models
// stage) asks it which checker runs to make, runs each through it and has it judge each run, so
// that the rules (a test case named "...Counterexample" must find a bug within its budget, every
// other one must explore its whole budget without one) and the checker's command line are
// written once, in package bridge, for the gate and for the corpus alike. pmodels.sh keeps the
// cache, the parallel jobs and the report.
//
//	pconform-pcheck plan -compile-key K -dll DLL -seed S -timeout T -schedules N -ce-schedules M \
//	    -out DIR [-logs -record R -recorded DIR] TEST...
//	pconform-pcheck run -dll DLL -tc TEST -s N -seed S -timeout T [-v] -dir DIR
//	pconform-pcheck verdict -tc TEST -budget N -dir DIR
//
// plan prints one line per checker run, "TEST BUDGET VERBOSE KIND KEY DIR": each test's verdict
// run (with -logs a counterexample's is made with -v and serves as its record), and with -logs
// each green test's recorded run of -record schedules. KIND is green or counterexample; KEY is
// the run's cache key, a hash of -compile-key and the run's command line but its output
// directory. run runs `p check` in the current directory (the P project) with output in DIR and
// writes there what pmodels.sh and the bridge read: TEST.log (the checker's output), rc, run.txt,
// result ("schedules bugs seconds" from the test's own section of the output, empty when it has
// none), ran (how many test cases -tc matched) and cpu (the checker's CPU seconds). verdict reads
// those and prints "PASS|FAIL NOTE".
//
// Exit codes: 0 done (whatever the verdict), 2 usage error, 3 could not run.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pconform/pconform/bridge"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "pconform-pcheck: want a command: plan, run or verdict")
		return 2
	}
	var err error
	switch args[0] {
	case "plan":
		err = plan(args[1:], stdout, stderr)
	case "run":
		err = runOne(args[1:], stderr)
	case "verdict":
		err = verdict(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "pconform-pcheck: unknown command %q (commands: plan, run, verdict)\n", args[0])
		return 2
	}
	var usage usageError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "pconform-pcheck %s: %v\n", args[0], err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "pconform-pcheck %s: %v\n", args[0], err)
		return 3
	}
	return 0
}

// usageError is a bad flag or argument (exit 2).
type usageError struct{ error }

func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	return nil
}

// runKey is the cache key of one checker run: a hash of the compile key and the run's command
// line without its output directory, one word a line (what pmodels.sh's cache has always used).
func runKey(compileKey string, r bridge.CheckRun) string {
	var b bytes.Buffer
	b.WriteString("pmodels run v1\n" + compileKey + "\n")
	r.OutDir = ""
	for _, a := range r.Args() {
		b.WriteString(a + "\n")
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:])
}

func plan(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	compileKey := fs.String("compile-key", "", "the compiled project's key")
	dll := fs.String("dll", "", "the compiled project, relative to the P project")
	seed := fs.Int64("seed", 1, "checker --seed")
	timeout := fs.Int("timeout", 600, "checker -t, seconds")
	schedules := fs.Int("schedules", 1000, "-s of a green test's verdict run")
	ceSchedules := fs.Int("ce-schedules", 100, "-s budget of a counterexample")
	logs := fs.Bool("logs", false, "also plan the runs recorded for the bridge")
	record := fs.Int("record", 100, "with -logs, -s of a green test's recorded run")
	out := fs.String("out", "", "directory of the verdict runs (one per test)")
	recorded := fs.String("recorded", "", "with -logs, directory of the recorded runs (one per test)")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	switch {
	case *compileKey == "" || *dll == "" || *out == "":
		return usageError{errors.New("-compile-key, -dll and -out are required")}
	case *logs && *recorded == "":
		return usageError{errors.New("-logs needs -recorded")}
	case *seed < 1 || *timeout < 1 || *schedules < 1 || *ceSchedules < 1 || (*logs && *record < 1):
		return usageError{errors.New("-seed, -timeout, -schedules, -ce-schedules and -record must be at least 1")}
	}
	w := bufio.NewWriter(stdout)
	job := func(tc string, budget int, verbose bool, dir string) {
		r := bridge.CheckRun{DLL: *dll, TestCase: tc, Schedules: budget, Seed: *seed, Timeout: *timeout, FailOnMaxSteps: true, Verbose: verbose}
		kind, v := "green", 0
		if bridge.IsCounterexample(tc) {
			kind = "counterexample"
		}
		if verbose {
			v = 1
		}
		fmt.Fprintf(w, "%s %d %d %s %s %s\n", tc, budget, v, kind, runKey(*compileKey, r), dir)
	}
	for _, tc := range fs.Args() {
		ce := bridge.IsCounterexample(tc)
		job(tc, bridge.Budget(tc, *schedules, *ceSchedules), *logs && ce, filepath.Join(*out, tc))
		if *logs && !ce {
			job(tc, *record, true, filepath.Join(*recorded, tc))
		}
	}
	return w.Flush()
}

func runOne(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	p := fs.String("p", "p", "the p executable")
	dll := fs.String("dll", "", "the compiled project, relative to the P project")
	tc := fs.String("tc", "", "the test case")
	schedules := fs.Int("s", 0, "checker -s")
	seed := fs.Int64("seed", 1, "checker --seed")
	timeout := fs.Int("timeout", 600, "checker -t, seconds")
	verbose := fs.Bool("v", false, "checker -v")
	dir := fs.String("dir", "", "the run's output directory")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *dll == "" || *tc == "" || *dir == "" || *schedules < 1 || *seed < 1 || *timeout < 1 {
		return usageError{errors.New("-dll, -tc, -dir and -s (at least 1) are required; -seed and -timeout must be at least 1")}
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	r := bridge.CheckRun{DLL: *dll, TestCase: *tc, Schedules: *schedules, Seed: *seed, Timeout: *timeout,
		FailOnMaxSteps: true, Verbose: *verbose, OutDir: *dir}
	var out bytes.Buffer
	cmd := exec.Command(*p, r.Args()...)
	cmd.Stdout, cmd.Stderr = &out, &out
	rc, cpu := 0, 0.0
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		rc = exit.ExitCode()
	default:
		// As the shell reports a command it cannot run.
		rc = 127
		fmt.Fprintf(&out, "pconform-pcheck: cannot run %s: %v\n", *p, err)
	}
	if cmd.ProcessState != nil {
		cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	o := bridge.ParseCheckOutput(out.Bytes(), *tc)
	result := ""
	if o.Found {
		secs := "?"
		if o.Seconds >= 0 {
			secs = strconv.FormatFloat(o.Seconds, 'f', 1, 64)
		}
		result = fmt.Sprintf("%d %d %s\n", o.Schedules, o.Bugs, secs)
	}
	verb := 0
	if *verbose {
		verb = 1
	}
	files := []struct{ name, data string }{
		{*tc + ".log", out.String()},
		{"cpu", fmt.Sprintf("%.1f\n", cpu)},
		{"rc", fmt.Sprintf("%d\n", rc)},
		{bridge.RecordedRunFile, fmt.Sprintf("test_case:%s\nseed:%d\nschedules:%d\nverbose:%d\nexit:%d\n", *tc, *seed, *schedules, verb, rc)},
		{"result", result},
		{"ran", fmt.Sprintf("%d\n", o.Sections)},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(*dir, f.name), []byte(f.data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func verdict(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verdict", flag.ContinueOnError)
	tc := fs.String("tc", "", "the test case")
	budget := fs.Int("budget", 0, "the run's -s")
	dir := fs.String("dir", "", "the run's output directory")
	project := fs.String("project", "PConform", "the P project's name (its summary file's prefix)")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *tc == "" || *dir == "" {
		return usageError{errors.New("-tc and -dir are required")}
	}
	first := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(*dir, name))
		line, _, _ := strings.Cut(string(data), "\n")
		return strings.TrimSpace(line)
	}
	exit := -1
	if n, err := strconv.Atoi(first("rc")); err == nil {
		exit = n
	}
	var o bridge.CheckOutcome
	if f := strings.Fields(first("result")); len(f) == 3 {
		s, err1 := strconv.Atoi(f[0])
		b, err2 := strconv.Atoi(f[1])
		o.Schedules, o.Bugs, o.Found = s, b, err1 == nil && err2 == nil
	}
	o.Sections, _ = strconv.Atoi(first("ran"))
	pass, note := bridge.Verdict(*tc, *budget, exit, o, filepath.Join(*dir, "BugFinding", *project+"_pchecker_summary.txt"))
	result := "FAIL"
	if pass {
		result = "PASS"
	}
	_, err := fmt.Fprintf(stdout, "%s %s\n", result, note)
	return err
}
