package bridge

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The pure half of the models stage ([CheckModels]): which tests a project declares, how they
// compare with the checker's listing, which runs to make, their cache keys, and the report. None
// of it runs a process or touches a file.

// declaredTest is a `test NAME [main = ...]: ...` declaration at the start of a line.
var declaredTest = regexp.MustCompile(`(?m)^[ \t]*test[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\[`)

// declaredTests returns the test cases the sources declare, sorted and without duplicates.
func declaredTests(sources map[string][]byte) []string {
	var names []string
	for _, src := range sources {
		for _, m := range declaredTest.FindAllSubmatch(src, -1) {
			names = append(names, string(m[1]))
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// listingProblems compares the tests the sources declare with those the checker lists: each
// declared test must be listed, and nothing else may be (a listing from a stale compile).
func listingProblems(project string, declared, listed []string) []string {
	var problems []string
	for _, t := range declared {
		if !slices.Contains(listed, t) {
			problems = append(problems, fmt.Sprintf("test %s is declared in %s but not in the checker's listing (%s)", t, project, strings.Join(listed, " ")))
		}
	}
	for _, t := range listed {
		if !slices.Contains(declared, t) {
			problems = append(problems, fmt.Sprintf("the checker lists %s, which no source in %s declares (declared: %s; a stale compile?)", t, project, strings.Join(declared, " ")))
		}
	}
	return problems
}

// selectTests returns the named tests that the checker lists, in the order named, and a problem
// for each name it does not list; no names selects every listed test.
func selectTests(listed, names []string) (tests, problems []string) {
	if len(names) == 0 {
		return slices.Clone(listed), nil
	}
	for _, n := range names {
		if slices.Contains(listed, n) {
			tests = append(tests, n)
		} else {
			problems = append(problems, fmt.Sprintf("no test named %s (listed: %s)", n, strings.Join(listed, " ")))
		}
	}
	return tests, problems
}

// What a checker run of the models stage is for.
const (
	runVerdict       = "verdict"        // judges the test; without -v
	runVerdictRecord = "verdict+record" // a counterexample's verdict run with -v, also its record
	runRecord        = "record"         // a green test's first schedules again with -v, for the bridge
)

// modelsJob is one checker run of the models stage.
type modelsJob struct {
	Run CheckRun // OutDir is Dir
	// What is runVerdict, runVerdictRecord or runRecord.
	What string
	// Key is the run's cache key ([runKey]); Dir its output directory.
	Key, Dir string
}

// counterexample reports whether the job's test must find a bug.
func (j modelsJob) counterexample() bool { return IsCounterexample(j.Run.TestCase) }

// modelsPlan is what planModels needs.
type modelsPlan struct {
	CompileKey, DLL string
	Seed            int64
	Timeout         int
	// Schedules is a green test's verdict budget, CounterexampleSchedules a counterexample's.
	Schedules, CounterexampleSchedules int
	// Record, when not 0, adds each green test's recorded run of Record schedules (in
	// RecordedDir/<test>), and makes each counterexample's verdict run with -v.
	Record int
	// OutDir holds each test's verdict run, OutDir/<test>.
	OutDir, RecordedDir string
}

// planModels lists the checker runs of tests, in order: each test's verdict run, followed, when
// recording, by a green test's recorded run. Every run has --fail-on-maxsteps: a scenario that
// never ends is a bug.
func planModels(p modelsPlan, tests []string) []modelsJob {
	var jobs []modelsJob
	add := func(tc string, budget int, verbose bool, what, dir string) {
		r := CheckRun{DLL: p.DLL, TestCase: tc, Schedules: budget, Seed: p.Seed, Timeout: p.Timeout,
			FailOnMaxSteps: true, Verbose: verbose, OutDir: dir}
		jobs = append(jobs, modelsJob{Run: r, What: what, Key: runKey(p.CompileKey, r), Dir: dir})
	}
	for _, tc := range tests {
		budget := Budget(tc, p.Schedules, p.CounterexampleSchedules)
		switch {
		case p.Record > 0 && IsCounterexample(tc):
			// It stops at its bug, so -v costs little, and its log is the record.
			add(tc, budget, true, runVerdictRecord, filepath.Join(p.OutDir, tc))
		default:
			add(tc, budget, false, runVerdict, filepath.Join(p.OutDir, tc))
		}
		if p.Record > 0 && !IsCounterexample(tc) {
			add(tc, p.Record, true, runRecord, filepath.Join(p.RecordedDir, tc))
		}
	}
	return jobs
}

// runKey is the cache key of one checker run: a hash of the compile key and the run's command
// line without its output directory, so a run made elsewhere (another checkout) serves.
func runKey(compileKey string, r CheckRun) string {
	var b bytes.Buffer
	b.WriteString("pmodels run v2\n" + compileKey + "\n")
	r.OutDir = ""
	for _, a := range r.Args() {
		b.WriteString(a + "\n")
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:])
}

// modelsFormat is the compile format of the models' project ([compileJob.Format]): besides the
// sources, the compiled project depends on the P tool's version and on the .NET runtimes it may
// roll forward to.
func modelsFormat(pVersion, runtimes []byte) string {
	return "pmodels compile v2\n" + string(pVersion) + "\x00" + string(runtimes)
}

// keepInCache says which cache entries a prune removes: those not in keep (what the run used and
// what the runs before it used, so that switching between two branches reruns nothing).
func keepInCache(entries, keep []string) (remove []string) {
	for _, e := range entries {
		if !slices.Contains(keep, e) {
			remove = append(remove, e)
		}
	}
	return remove
}

// runFiles is what a run's directory says of it, read back from the files the run wrote: rc,
// result ("schedules bugs seconds" from the test's own section, empty when it has none), ran (how
// many test cases -tc matched) and cpu.
type runFiles struct {
	RC, Result, Ran, CPU string
}

// outcome turns the run's files into the exit code (-1 when unknown) and what the checker said.
func (f runFiles) outcome() (int, CheckOutcome) {
	exit := -1
	if n, err := strconv.Atoi(f.RC); err == nil {
		exit = n
	}
	o := CheckOutcome{Seconds: -1}
	if fl := strings.Fields(f.Result); len(fl) == 3 {
		s, err1 := strconv.Atoi(fl[0])
		b, err2 := strconv.Atoi(fl[1])
		o.Schedules, o.Bugs, o.Found = s, b, err1 == nil && err2 == nil
	}
	o.Sections, _ = strconv.Atoi(f.Ran)
	return exit, o
}

// resultLine is the result file of a run: "schedules bugs seconds", or empty when the checker's
// output has no section for the test.
func resultLine(o CheckOutcome) string {
	if !o.Found {
		return ""
	}
	secs := "?"
	if o.Seconds >= 0 {
		secs = strconv.FormatFloat(o.Seconds, 'f', 1, 64)
	}
	return fmt.Sprintf("%d %d %s\n", o.Schedules, o.Bugs, secs)
}

// ModelsRow is one checker run in the models stage's report.
type ModelsRow struct {
	TestCase string
	// Counterexample says the test must find a bug; a green test must explore its whole budget
	// without one.
	Counterexample bool
	// What is "verdict", "verdict+record" (a counterexample's verdict run, with -v) or "record"
	// (a green test's first schedules again with -v, for the bridge).
	What string
	// Budget is the run's -s.
	Budget int
	// Dir is the run's output directory.
	Dir string
	// Key is the run's cache key.
	Key string
	// Source is "ran", "kept" (the directory already held this run) or "cached".
	Source string
	// Schedules, Bugs, Seconds and CPU are as the run's files say, "?" when they do not.
	Schedules, Bugs, Seconds, CPU string
	// Pass is the verdict ([Verdict]); Note says why it failed, or where a counterexample found
	// its bug.
	Pass bool
	Note string
}

// ModelsResult is what [CheckModels] found.
type ModelsResult struct {
	// Tests are the test cases checked.
	Tests []string
	// Problems are the findings before any run: a declared test not listed, a listed test not
	// declared, a named test not listed. Each fails the stage.
	Problems []string
	// Rows are the checker runs, in plan order.
	Rows []ModelsRow
	// Compiled says the project was compiled (not kept from an earlier compile or the cache).
	Compiled bool
}

// Pass reports whether the stage passes: no problem and every run passed.
func (r *ModelsResult) Pass() bool {
	if len(r.Problems) > 0 {
		return false
	}
	for _, row := range r.Rows {
		if !row.Pass {
			return false
		}
	}
	return true
}

// Ran and Reused count the runs made and those kept or restored from the cache.
func (r *ModelsResult) Ran() (ran, reused int) {
	for _, row := range r.Rows {
		if row.Source == "ran" {
			ran++
		} else {
			reused++
		}
	}
	return ran, reused
}

// writeModelsTable writes the report's table: one row per checker run.
func writeModelsTable(w io.Writer, rows []ModelsRow) error {
	bw := bufio.NewWriter(w)
	const format = "%-42s %-14s %-8s %9s %5s %8s %6s %-7s %-6s %s\n"
	fmt.Fprintf(bw, "\n"+format, "TEST", "EXPECTED", "RUN", "SCHEDULES", "BUGS", "SECONDS", "CPU_S", "SOURCE", "RESULT", "NOTE")
	for _, r := range rows {
		kind, result := "green", "FAIL"
		if r.Counterexample {
			kind = "counterexample"
		}
		if r.Pass {
			result = "PASS"
		}
		fmt.Fprintf(bw, format, r.TestCase, kind, r.What, r.Schedules, r.Bugs, r.Seconds, r.CPU, r.Source, result, r.Note)
	}
	return bw.Flush()
}
