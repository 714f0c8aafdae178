package bridge

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// IsCounterexample reports whether a test case must find a bug: its name ends in
// [CounterexampleSuffix]. It is the one place the rule is written, for [RunChecker] and
// [CheckModels].
func IsCounterexample(testCase string) bool {
	return strings.HasSuffix(testCase, CounterexampleSuffix)
}

// Budget is the -s a test case's verdict run gets: ceSchedules for a counterexample (the budget
// within which it must find its bug), schedules for a green test case.
func Budget(testCase string, schedules, ceSchedules int) int {
	if IsCounterexample(testCase) {
		return ceSchedules
	}
	return schedules
}

// CheckRun is one `p check` run of one test case, run in the P project directory. Its
// arguments are made in one place ([CheckRun.Args]) for [RunChecker] and for the gate's runs
// ([CheckModels]).
type CheckRun struct {
	// DLL is the compiled project to check; "" lets the checker find it in the project.
	DLL      string
	TestCase string
	// Schedules is -s; Seed is --seed, 0 leaves it out (the checker's own default).
	Schedules int
	Seed      int64
	// Timeout is -t in seconds; 0 leaves it out.
	Timeout int
	// FailOnMaxSteps adds --fail-on-maxsteps: a schedule that reaches the step bound is a bug.
	FailOnMaxSteps bool
	// Verbose adds -v: every schedule's log and the verbose JSON log.
	Verbose bool
	// OutDir is -o; "" leaves it out.
	OutDir string
}

// Args are the arguments of p for the run, in a fixed order: check [DLL] -tc -s [--seed] [-t]
// [--fail-on-maxsteps] [-v] [-o].
func (r CheckRun) Args() []string {
	args := []string{"check"}
	if r.DLL != "" {
		args = append(args, r.DLL)
	}
	args = append(args, "-tc", r.TestCase, "-s", strconv.Itoa(r.Schedules))
	if r.Seed != 0 {
		args = append(args, "--seed", strconv.FormatInt(r.Seed, 10))
	}
	if r.Timeout > 0 {
		args = append(args, "-t", strconv.Itoa(r.Timeout))
	}
	if r.FailOnMaxSteps {
		args = append(args, "--fail-on-maxsteps")
	}
	if r.Verbose {
		args = append(args, "-v")
	}
	if r.OutDir != "" {
		args = append(args, "-o", r.OutDir)
	}
	return args
}

// CheckOutcome is what the checker's standard output says about one test case's section (the
// lines after ".. Test case :: NAME").
type CheckOutcome struct {
	// Schedules explored and bugs found; Found says both lines were there.
	Schedules, Bugs int
	Found           bool
	// Seconds is the checker's elapsed time, or -1 when it printed none.
	Seconds float64
	// Sections counts the ".. Test case :: " headers in the whole output: more than one when -tc
	// matched other test cases by prefix.
	Sections int
}

// The lines of a test case's section that ParseCheckOutput reads.
var (
	foundLine    = regexp.MustCompile(`Found ([0-9]+) bugs?\.`)
	exploredLine = regexp.MustCompile(`Explored ([0-9]+) schedules?$`)
	elapsedLine  = regexp.MustCompile(`^\.\.\. Elapsed ([0-9.]+) sec\.$`)
)

// ParseCheckOutput reads the section of testCase in a checker's standard output.
func ParseCheckOutput(out []byte, testCase string) CheckOutcome {
	o, _ := parseCheckOutput(bytes.NewReader(out), testCase)
	return o
}

// parseCheckOutput is ParseCheckOutput on a reader (a run's log, which -v makes large); the error
// is the reader's, or a line longer than 64 MiB.
func parseCheckOutput(r io.Reader, testCase string) (CheckOutcome, error) {
	const header = ".. Test case :: "
	o := CheckOutcome{Seconds: -1}
	var cur string
	var bugs, scheds bool
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, header) {
			cur = strings.TrimPrefix(line, header)
			o.Sections++
			continue
		}
		if cur != testCase {
			continue
		}
		if m := foundLine.FindStringSubmatch(line); m != nil {
			o.Bugs, _ = strconv.Atoi(m[1])
			bugs = true
		} else if m := exploredLine.FindStringSubmatch(line); m != nil {
			o.Schedules, _ = strconv.Atoi(m[1])
			scheds = true
		} else if m := elapsedLine.FindStringSubmatch(line); m != nil {
			if f, err := strconv.ParseFloat(m[1], 64); err == nil {
				o.Seconds = f
			}
		}
	}
	o.Found = bugs && scheds
	return o, sc.Err()
}

// Verdict judges one checker run of testCase with budget schedules: its exit code, what its
// output said and its summary file (summaryPath, <project>_pchecker_summary.txt). It is the one
// place the pass rule is written, for [RunChecker] and the gate's runs ([CheckModels]). A
// green test case passes when it explored the whole budget without a bug, a counterexample when
// it found one. The note says why it failed, or where a counterexample found its bug.
//
// exit is -1 when the exit code is unknown.
func Verdict(testCase string, budget, exit int, o CheckOutcome, summaryPath string) (pass bool, note string) {
	switch {
	case !o.Found:
		code := "?"
		if exit >= 0 {
			code = strconv.Itoa(exit)
		}
		note = fmt.Sprintf("no result in the checker output (exit %s)", code)
	case exit == 2:
		note = "checker internal error (exit 2)"
	case exit > 2:
		note = fmt.Sprintf("exit code %d", exit)
	case exit == 1 && o.Bugs == 0:
		note = "exit 1 but no bug found"
	case exit == 0 && o.Bugs != 0:
		note = "exit 0 but a bug found"
	case o.Sections == 1 && !summaryAgrees(summaryPath, o):
		note = "summary file disagrees with the checker output"
	case !IsCounterexample(testCase) && o.Bugs != 0:
		note = "bug found"
	case !IsCounterexample(testCase) && o.Schedules < budget:
		note = fmt.Sprintf("only %d of %d schedules explored", o.Schedules, budget)
	case !IsCounterexample(testCase):
		pass = true
	case o.Bugs >= 1:
		pass, note = true, fmt.Sprintf("bug found at schedule %d", o.Schedules)
	default:
		note = fmt.Sprintf("no bug within %d schedules", o.Schedules)
	}
	if o.Sections != 1 {
		if note != "" {
			note += "; "
		}
		note += fmt.Sprintf("-tc matched %d tests", o.Sections)
		pass = false
	}
	return pass, note
}

// summaryAgrees reports whether the summary file has the bugs and schedules lines o read.
func summaryAgrees(path string, o CheckOutcome) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r", ""), "\n")
	has := func(want string) bool {
		for _, l := range lines {
			if l == want {
				return true
			}
		}
		return false
	}
	return has(fmt.Sprintf("bugs:%d", o.Bugs)) && has(fmt.Sprintf("schedules:%d", o.Schedules))
}
