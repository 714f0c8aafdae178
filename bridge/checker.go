package bridge

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// Defaults for the zero fields of a [Config].
const (
	DefaultSeed                    = 1
	DefaultSchedules               = 20
	DefaultCounterexampleSchedules = 100
	DefaultPerTest                 = 5
)

// defaultP is the p executable of a [Config] or a [ModelsConfig] that names none: p on PATH.
const defaultP = "p"

// OriginKind is the origin kind of every trace the bridge makes.
const OriginKind = traces.OriginPChecker

// Sentinel errors of the checker runs.
var (
	// ErrChecker reports a checker run that did not give what the test case promises: a compile
	// error, an internal error, a green test case that found a bug, a counterexample that found
	// none, or output files missing or inconsistent.
	ErrChecker = errors.New("checker run failed")
	// ErrAmbiguousTestCase reports a test case whose name is a prefix of another's: `p check -tc`
	// matches by prefix and the later test's log overwrites the earlier one's, so it cannot be run
	// on its own.
	ErrAmbiguousTestCase = errors.New("test case name is a prefix of another test case")
)

// Config says which checker runs make a corpus. Only ProjectDir is required; zero fields take the
// defaults filled in by [Config.filled].
type Config struct {
	// ProjectDir is the P project directory (the one holding the .pproj), e.g. models/p.
	ProjectDir string
	// P is the p executable; "" means "p" looked up on PATH.
	P string
	// Compile runs `p compile` in ProjectDir first; otherwise the project must be compiled.
	Compile bool
	// Seed is the checker's --seed for every test case; 0 means DefaultSeed.
	Seed int64
	// Schedules is the checker's -s for every green test case; 0 means DefaultSchedules.
	Schedules int
	// CounterexampleSchedules is the checker's -s for every counterexample: the budget within
	// which it must find its bug (the run stops at the first buggy schedule, so only the schedules
	// up to it are logged); 0 means DefaultCounterexampleSchedules.
	CounterexampleSchedules int
	// PerTest bounds the distinct traces kept per green test case (the first ones in schedule
	// order); 0 means DefaultPerTest. A counterexample keeps its one bug trace.
	PerTest int
	// TestCases names the test cases to run; nil means every test case the project lists.
	TestCases []string
	// FromRuns, when not "", is a directory of checker runs made earlier (the layout is in the
	// package documentation, "Recorded runs"; scripts/pmodels.sh --logs writes it): RunChecker
	// reads them instead of running the checker, so one checker run per test case serves the
	// model verdicts and every corpus made from them. A recorded run must have the same seed, -v,
	// and at least the schedules asked for; a green test case's first Schedules schedules are
	// taken, since with one seed the checker explores the same schedules in the same order whatever
	// its budget. Compile must be false.
	FromRuns string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// StreamCache is the directory of the streaming P oracle's compiled projects
	// (CompileStream); "" means StreamCacheDir.
	StreamCache string
	// Profile is the profile the streaming P oracle's monitors judge rows under (their lease-live
	// rule reads it); the zero value is the default profile. CheckObservedStream and
	// CheckObservedAll take each trace's own profile instead.
	Profile profile.Profile

	_ struct{}
}

func (c Config) filled() Config {
	if c.P == "" {
		c.P = defaultP
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.Schedules <= 0 {
		c.Schedules = DefaultSchedules
	}
	if c.CounterexampleSchedules <= 0 {
		c.CounterexampleSchedules = DefaultCounterexampleSchedules
	}
	if c.PerTest <= 0 {
		c.PerTest = DefaultPerTest
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Run is the account of one test case's checker run.
type Run struct {
	TestCase string
	// Variant is "" for a green test case, else the counterexample's broken variant.
	Variant        string
	Counterexample bool
	// Command is the checker command, run in the project directory (the output directory option
	// is left out: it only says where the logs went).
	Command string
	// Schedules is how many schedules the checker explored (for a counterexample: up to and
	// including the buggy one). Observed is how many of the converted schedules announced
	// observations and Distinct how many different traces those gave; a counterexample converts
	// only its buggy schedule.
	Schedules, Observed, Distinct int
	// Kept names the traces kept for the corpus, in schedule order.
	Kept []string
	// Untraced is why the bridge keeps no trace of this green test case ([Untraced]); "" when it
	// does.
	Untraced string
}

// Corpus is the result of [RunChecker]: the kept traces and how they were made.
type Corpus struct {
	// Model is the content hash of the P sources ([ModelHash]).
	Model string
	// PVersion is the checker's own version line.
	PVersion                string
	Seed                    int64
	Schedules               int
	CounterexampleSchedules int
	PerTest                 int
	// Runs are in test-case order; Traces in the same order, then by schedule.
	Runs   []Run
	Traces []*traces.Trace
}

// RunChecker runs the P checker on every selected test case of cfg.ProjectDir, one test case per
// run and by its exact name, with `-v --seed S -s N`, converts every schedule's observations into
// a trace and keeps, per green test case, the first cfg.PerTest distinct traces and, per
// counterexample, the trace of the schedule that found the bug. Traces are distinct when they
// differ in anything but name and origin.
//
// Errors wrap [ErrChecker] or [ErrAmbiguousTestCase] for checker runs that go wrong, and the
// conversion's errors ([ErrMalformedLog], [ErrBadObservation], [ErrUnknownTestCase]) for logs
// the bridge cannot turn into traces.
func RunChecker(ctx context.Context, cfg Config) (*Corpus, error) {
	cfg = cfg.filled()
	if cfg.ProjectDir == "" {
		return nil, errors.New("bridge: Config.ProjectDir is empty")
	}
	if cfg.FromRuns != "" && cfg.Compile {
		return nil, errors.New("bridge: Config.Compile and Config.FromRuns exclude each other: recorded runs need no compile")
	}
	model, err := ModelHash(cfg.ProjectDir)
	if err != nil {
		return nil, err
	}
	if cfg.FromRuns != "" {
		if err := recordedAfterSources(cfg.FromRuns, cfg.ProjectDir); err != nil {
			return nil, err
		}
	}
	version, err := pVersion(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Compile {
		// In place, not through compileCached: the checker's runs below, ListTests and
		// scripts/pmodels.sh find the project's DLL in its own PGenerated.
		cfg.Logger.Info("compiling P project", "dir", cfg.ProjectDir)
		if _, err := pCompile(ctx, cfg, cfg.ProjectDir, cfg.ProjectDir); err != nil {
			return nil, err
		}
	}
	listed, err := ListTests(ctx, cfg)
	if err != nil {
		return nil, err
	}
	selected := cfg.TestCases
	if selected == nil {
		selected = listed
	}
	for _, tc := range selected {
		if !slices.Contains(listed, tc) {
			return nil, fmt.Errorf("bridge: %w: no test case %q in %s (listed: %s)", ErrChecker, tc, cfg.ProjectDir, strings.Join(listed, ", "))
		}
		for _, other := range listed {
			if other != tc && strings.HasPrefix(other, tc) {
				return nil, fmt.Errorf("bridge: %w: %q is a prefix of %q; rename one of them", ErrAmbiguousTestCase, tc, other)
			}
		}
		if _, _, err := Variant(tc); err != nil {
			return nil, err
		}
	}
	corpus := &Corpus{Model: model, PVersion: version, Seed: cfg.Seed, Schedules: cfg.Schedules,
		CounterexampleSchedules: cfg.CounterexampleSchedules, PerTest: cfg.PerTest}
	for _, tc := range selected {
		run, kept, err := runTestCase(ctx, cfg, tc, model)
		if err != nil {
			return nil, err
		}
		corpus.Runs = append(corpus.Runs, run)
		corpus.Traces = append(corpus.Traces, kept...)
	}
	return corpus, nil
}

// CheckCommand is the checker command line recorded in origins and the README.
func CheckCommand(testCase string, seed int64, schedules int) string {
	return "p " + strings.Join(CheckRun{TestCase: testCase, Schedules: schedules, Seed: seed, Verbose: true}.Args(), " ")
}

func runTestCase(ctx context.Context, cfg Config, tc, model string) (Run, []*traces.Trace, error) {
	variant, counterexample, _ := Variant(tc)
	budget := Budget(tc, cfg.Schedules, cfg.CounterexampleSchedules)
	run := Run{TestCase: tc, Variant: variant, Counterexample: counterexample, Command: CheckCommand(tc, cfg.Seed, budget)}
	var (
		out    []byte
		code   int
		outDir string
	)
	if cfg.FromRuns != "" {
		outDir = filepath.Join(cfg.FromRuns, tc)
		cfg.Logger.Info("reading recorded checker run", "test_case", tc, "dir", outDir)
		rec, err := readRecorded(outDir, tc, cfg.Seed, budget, counterexample)
		if err != nil {
			return run, nil, err
		}
		out, code = rec.out, rec.exit
	} else {
		var err error
		outDir, err = os.MkdirTemp("", "pconform-bridge-")
		if err != nil {
			return run, nil, fmt.Errorf("bridge: %w", err)
		}
		defer os.RemoveAll(outDir)
		cfg.Logger.Info("running checker", "test_case", tc, "command", run.Command)
		args := CheckRun{TestCase: tc, Schedules: budget, Seed: cfg.Seed, Verbose: true, OutDir: outDir}.Args()
		out, code, err = runP(ctx, cfg, args...)
		if err != nil {
			return run, nil, err
		}
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("bridge: %w: %s: %s\n%s", ErrChecker, run.Command, fmt.Sprintf(format, a...), tail(out, 40))
	}
	if code != 0 && code != 1 {
		return run, nil, fail("exit code %d", code)
	}
	if !bytes.Contains(out, []byte(".. Test case :: "+tc+"\n")) {
		return run, nil, fail("the checker did not report running %s", tc)
	}
	summaryPath, err := findOne(outDir, "_pchecker_summary.txt")
	if err != nil {
		return run, nil, fail("%v", err)
	}
	outcome := ParseCheckOutput(out, tc)
	if pass, note := Verdict(tc, budget, code, outcome, summaryPath); !pass {
		return run, nil, fail("%s (exit code %d)", note, code)
	}
	if counterexample && outcome.Schedules > budget {
		// Only a recorded run with a larger budget gets here.
		return run, nil, fail("counterexample found no bug in %d schedules (the recorded run found it at schedule %d)", budget, outcome.Schedules)
	}

	verbosePath, err := findOne(outDir, "_verbose.trace.json")
	if err != nil {
		return run, nil, fail("%v", err)
	}
	// A green run's schedules past the budget (a recorded run may have more) are only counted.
	limit := budget
	if counterexample {
		limit = -1
	}
	var total int
	schedules, err := readLogFile(verbosePath, func(r io.Reader) ([][]Event, error) {
		s, n, err := ReadVerboseLogPrefix(r, limit)
		total = n
		return s, err
	})
	if err != nil {
		return run, nil, err
	}
	if total != outcome.Schedules {
		return run, nil, fail("verbose log holds %d schedules, the checker says %d", total, outcome.Schedules)
	}
	run.Schedules = len(schedules)
	origin := func(schedule int) traces.Origin {
		return traces.Origin{Kind: OriginKind, TestCase: tc, Seed: cfg.Seed, Schedule: schedule, Command: run.Command, Model: model}
	}

	if counterexample && variant == "" {
		// A broken model machine's bug, not a store's (Variant): checked above, no trace kept.
		run.Observed, run.Distinct = 1, 1
		return run, nil, nil
	}
	if why, ok := Untraced(tc); ok {
		// Judged above; its steps have no trace op yet, so no trace is kept.
		run.Untraced = why
		return run, nil, nil
	}
	if counterexample {
		bugPath, err := findOne(outDir, "_0_0.trace.json")
		if err != nil {
			return run, nil, fail("%v", err)
		}
		bugEvents, err := readLogFile(bugPath, ReadBugLog)
		if err != nil {
			return run, nil, err
		}
		// The buggy schedule is the verbose log's last; both logs must tell the same story.
		last := schedules[len(schedules)-1]
		if !sameObservations(last, bugEvents) {
			return run, nil, fail("bug log and the verbose log's last schedule announce different observations")
		}
		tr, err := Convert(bugEvents, origin(run.Schedules), tc)
		if err != nil {
			return run, nil, fmt.Errorf("%w (%s)", err, bugPath)
		}
		if tr.Expect.DivergesAt < 0 {
			return run, nil, fail("the bug schedule flags no step with bug == true, so its trace cannot say where the variant diverges")
		}
		run.Observed, run.Distinct, run.Kept = 1, 1, []string{tr.Name}
		return run, []*traces.Trace{tr}, nil
	}

	seen := map[string]bool{}
	var kept []*traces.Trace
	for i, events := range schedules {
		tr, err := Convert(events, origin(i+1), tc)
		if errors.Is(err, ErrNoObservations) {
			continue
		}
		if err != nil {
			return run, nil, fmt.Errorf("%w (%s)", err, verbosePath)
		}
		run.Observed++
		key, err := traces.Hash(tr)
		if err != nil {
			return run, nil, err
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		run.Distinct++
		if len(kept) < cfg.PerTest {
			kept = append(kept, tr)
			run.Kept = append(run.Kept, tr.Name)
		}
	}
	cfg.Logger.Info("checker run converted", "test_case", tc, "schedules", run.Schedules, "observed", run.Observed, "distinct", run.Distinct, "kept", len(kept))
	return run, kept, nil
}

// sameObservations compares the observation announcements of two event lists.
func sameObservations(a, b []Event) bool {
	obs := func(evs []Event) []Event {
		var out []Event
		for _, e := range evs {
			if e.Type == TypeAnnounce && strings.HasPrefix(e.Name, ObsPrefix) {
				out = append(out, e)
			}
		}
		return out
	}
	a, b = obs(a), obs(b)
	return slices.EqualFunc(a, b, func(x, y Event) bool {
		return x.Name == y.Name && x.Machine == y.Machine && jsonEqual(x.Payload, y.Payload)
	})
}

// jsonEqual compares two JSON values by meaning: the bug log is indented, the verbose log is not.
func jsonEqual(a, b json.RawMessage) bool {
	decode := func(raw json.RawMessage) (any, bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		return v, dec.Decode(&v) == nil
	}
	x, okX := decode(a)
	y, okY := decode(b)
	return okX && okY && reflect.DeepEqual(x, y)
}

// ListTests returns the test cases `p check --list-tests` reports for cfg.ProjectDir, which must
// be compiled. Errors wrap [ErrChecker].
func ListTests(ctx context.Context, cfg Config) ([]string, error) {
	cfg = cfg.filled()
	if cfg.FromRuns != "" {
		out, err := readRecordedFile(cfg.FromRuns, RecordedListFile)
		if err != nil {
			return nil, err
		}
		return parseTestList(out)
	}
	out, code, err := runP(ctx, cfg, "check", "--list-tests")
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("bridge: %w: p check --list-tests exited %d (is %s compiled?):\n%s", ErrChecker, code, cfg.ProjectDir, tail(out, 20))
	}
	return parseTestList(out)
}

// parseTestList reads the names between ".. List of test cases (total N)" and ". Done" and checks
// there are N of them.
func parseTestList(out []byte) ([]string, error) {
	const header = ".. List of test cases (total "
	var names []string
	total := -1
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case total < 0 && strings.HasPrefix(line, header):
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, header), ")"))
			if err != nil {
				return nil, fmt.Errorf("bridge: %w: cannot read test count from %q", ErrChecker, line)
			}
			total = n
		case total >= 0 && strings.HasPrefix(line, "."):
			if len(names) != total {
				return nil, fmt.Errorf("bridge: %w: test list says %d test cases, found %d", ErrChecker, total, len(names))
			}
			return names, nil
		case total >= 0 && line != "":
			names = append(names, line)
		}
	}
	return nil, fmt.Errorf("bridge: %w: no complete test list in the checker's output:\n%s", ErrChecker, tail(out, 20))
}

func pVersion(ctx context.Context, cfg Config) (string, error) {
	var (
		out  []byte
		code int
		err  error
	)
	if cfg.FromRuns != "" {
		out, err = readRecordedFile(cfg.FromRuns, RecordedVersionFile)
	} else {
		out, code, err = runP(ctx, cfg, "--version")
	}
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "P version ") {
			return strings.TrimSpace(line), nil
		}
	}
	return "", fmt.Errorf("bridge: %w: p --version exited %d without a version line:\n%s", ErrChecker, code, tail(out, 10))
}

// runP runs p in the project directory and returns its combined output and exit code. An error
// is returned only when p could not be run at all (not found, killed by ctx).
func runP(ctx context.Context, cfg Config, args ...string) ([]byte, int, error) {
	var out bytes.Buffer
	code, _, err := runPTo(ctx, cfg, &out, args...)
	if err != nil {
		return nil, 0, err
	}
	return out.Bytes(), code, nil
}

// runPTo runs p in the project directory with its combined output going to w, and returns its
// exit code and CPU time (user and system). An error is returned only when p could not be run at
// all (not found, killed by ctx).
func runPTo(ctx context.Context, cfg Config, w io.Writer, args ...string) (int, time.Duration, error) {
	cmd := exec.CommandContext(ctx, cfg.P, args...)
	cmd.Dir = cfg.ProjectDir
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, cpu, nil
	case ctx.Err() != nil:
		return 0, cpu, fmt.Errorf("bridge: p %s: %w", strings.Join(args, " "), ctx.Err())
	case errors.As(err, &exit):
		return exit.ExitCode(), cpu, nil
	default:
		return 0, cpu, fmt.Errorf("bridge: running p: %w", err)
	}
}

// findOne finds the one file under dir whose name ends in suffix.
func findOne(dir, suffix string) (string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), suffix) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(found) != 1 {
		return "", fmt.Errorf("want one *%s in the checker output, found %d: %v", suffix, len(found), found)
	}
	return found[0], nil
}

func readLogFile[T any](path string, read func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("bridge: %w", err)
	}
	defer f.Close()
	v, err := read(bufio.NewReader(f))
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%w (%s)", err, path)
	}
	return v, nil
}

// ModelHash is the content hash of a P project's sources: every .p and .pproj file under dir
// (generated and checker output directories excluded), in sorted path order, each hashed with its
// slash-separated relative path and length. It is "sha256:" and 64 hex digits.
func ModelHash(dir string) (string, error) {
	files, err := modelSources(dir)
	if err != nil {
		return "", fmt.Errorf("bridge: hashing P sources: %w", err)
	}
	if len(files) == 0 {
		return "", fmt.Errorf("bridge: hashing P sources: no .p or .pproj file under %s", dir)
	}
	h := sha256.New()
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return "", fmt.Errorf("bridge: hashing P sources: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(data))
		h.Write(data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// modelSources lists a P project's sources, the files [ModelHash] covers: every .p and .pproj file
// under dir, generated and checker output directories excluded, as sorted slash-separated paths
// relative to dir.
func modelSources(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (d.Name() == "PGenerated" || d.Name() == "PCheckerOutput" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext == ".p" || ext == ".pproj" {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

func tail(out []byte, lines int) string {
	all := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
