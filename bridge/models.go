package bridge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of the models stage ([ModelsConfig]), the same as the gate's budgets. Its seed and
// counterexample budget are [DefaultSeed] and [DefaultCounterexampleSchedules], a [Config]'s too:
// both configure the same checker runs of the same test cases, so one default serves both.
const (
	DefaultModelsSchedules       = 1000
	DefaultModelsRecordSchedules = 100
	DefaultModelsTimeout         = 600
	// DefaultModelsJobs is 4, twice the gate machine's cores: a checker run spends about a third
	// of its wall time with no CPU (it hands control from actor to actor), so two runs leave
	// two cores idle part of the time. Four runs of four long test cases took 38 to 40 s where two
	// took 48 to 55 s, for the same CPU.
	DefaultModelsJobs = 4
)

// ModelsPart is a part of the models stage's runs ([ModelsConfig.Part]).
type ModelsPart string

const (
	// ModelsAll is every run.
	ModelsAll ModelsPart = ""
	// ModelsRecords is the runs the bridge reads ([Config.FromRuns]): each green test's recorded
	// run and each counterexample's verdict run, which is its record.
	ModelsRecords ModelsPart = "records"
	// ModelsVerdicts is the green tests' verdict runs: the rest.
	ModelsVerdicts ModelsPart = "verdicts"
)

// holds reports whether the job belongs to the part.
func (p ModelsPart) holds(j modelsJob) bool {
	switch p {
	case ModelsRecords:
		return j.What != runVerdict
	case ModelsVerdicts:
		return j.What == runVerdict
	}
	return true
}

// ErrModelsUsage reports a models-stage setting that cannot be used (a budget that is not a
// number, a record budget past the verdict budget).
var ErrModelsUsage = errors.New("bad models-stage setting")

// ModelsConfig says how [CheckModels] checks a P project's test cases. ProjectDir and
// CompileCache are required; zero numbers take the Default* values.
type ModelsConfig struct {
	// ProjectDir is the P project (the directory of its .pproj), e.g. models/p. The checker's
	// output goes to ProjectDir/PCheckerOutput, the compiled project to ProjectDir/PGenerated.
	ProjectDir string
	// P is the p executable, Dotnet the dotnet one (its runtimes are an input of the compile);
	// "" means "p" and "dotnet" looked up on PATH.
	P, Dotnet string
	// Schedules is each green test's -s, CounterexampleSchedules the budget within which each
	// counterexample must find its bug, RecordSchedules a green test's recorded run's -s.
	Schedules, CounterexampleSchedules, RecordSchedules int
	// Seed is every run's --seed.
	Seed int64
	// Jobs is how many checker runs run at once.
	Jobs int
	// Timeout is every run's -t, in seconds.
	Timeout int
	// RunCache is the directory of cached checker runs; "" reuses no run, not even one its
	// directory holds already.
	RunCache string
	// CompileCache is the directory of compiled projects (one per sources' hash, compile.go).
	CompileCache string
	// Logs records runs for the bridge in ProjectDir/PCheckerOutput/recorded (the package
	// documentation, "Recorded runs").
	Logs bool
	// Part limits the stage to one part of its runs, so that a gate can start what reads the
	// recorded runs while the verdict runs go on: [ModelsRecords] or [ModelsVerdicts]. Both need
	// Logs. The zero value, [ModelsAll], makes every run.
	Part ModelsPart
	// TestCases names the tests to run; nil runs every listed test. Only a run of every test
	// prunes the cache.
	TestCases []string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger

	_ struct{}
}

func (c ModelsConfig) filled() ModelsConfig {
	if c.P == "" {
		c.P = defaultP
	}
	if c.Dotnet == "" {
		c.Dotnet = "dotnet"
	}
	if c.Schedules <= 0 {
		c.Schedules = DefaultModelsSchedules
	}
	if c.CounterexampleSchedules <= 0 {
		c.CounterexampleSchedules = DefaultCounterexampleSchedules
	}
	if c.RecordSchedules <= 0 {
		c.RecordSchedules = DefaultModelsRecordSchedules
	}
	if c.Seed <= 0 {
		c.Seed = DefaultSeed
	}
	if c.Jobs <= 0 {
		c.Jobs = DefaultModelsJobs
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultModelsTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// ModelsConfigFromEnv reads the models stage's budgets from the environment (getenv, as
// os.Getenv): PCONFORM_SCHEDULES, PCONFORM_CE_SCHEDULES, PCONFORM_RECORD_SCHEDULES, PCONFORM_SEED,
// PCONFORM_JOBS, PCONFORM_TEST_TIMEOUT and PCONFORM_P_CACHE (a directory, or "off";
// defaultCache when unset). Unset numbers take their defaults. Errors wrap [ErrModelsUsage].
func ModelsConfigFromEnv(getenv func(string) string, defaultCache string) (ModelsConfig, error) {
	number := func(name string, def, min int) (int, error) {
		v := getenv("PCONFORM_" + name)
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || strings.TrimLeft(v, "0123456789") != "" {
			return 0, fmt.Errorf("bridge: %w: PCONFORM_%s must be a non-negative integer, got '%s'", ErrModelsUsage, name, v)
		}
		if n < min {
			return 0, fmt.Errorf("bridge: %w: PCONFORM_%s must be at least %d, got '%s'", ErrModelsUsage, name, min, v)
		}
		return n, nil
	}
	var c ModelsConfig
	var seed int
	var err error
	for _, f := range []struct {
		name     string
		to       *int
		def, min int
	}{
		{"SCHEDULES", &c.Schedules, DefaultModelsSchedules, 1},
		{"CE_SCHEDULES", &c.CounterexampleSchedules, DefaultCounterexampleSchedules, 1},
		{"RECORD_SCHEDULES", &c.RecordSchedules, DefaultModelsRecordSchedules, 1},
		{"SEED", &seed, DefaultSeed, 1},
		// 0 jobs run one at a time, as they always have.
		{"JOBS", &c.Jobs, DefaultModelsJobs, 0},
		{"TEST_TIMEOUT", &c.Timeout, DefaultModelsTimeout, 1},
	} {
		if *f.to, err = number(f.name, f.def, f.min); err != nil {
			return ModelsConfig{}, err
		}
	}
	c.Seed = int64(seed)
	c.Jobs = max(c.Jobs, 1)
	if c.RecordSchedules > c.Schedules {
		return ModelsConfig{}, fmt.Errorf("bridge: %w: PCONFORM_RECORD_SCHEDULES (%d) exceeds PCONFORM_SCHEDULES (%d)", ErrModelsUsage, c.RecordSchedules, c.Schedules)
	}
	switch cache := getenv("PCONFORM_P_CACHE"); cache {
	case "off":
	case "":
		c.RunCache = defaultCache
	default:
		c.RunCache = cache
	}
	return c, nil
}

// The files of the models stage in ProjectDir/PCheckerOutput, beside a directory per test.
const (
	// modelsCompileKey holds "KEY DLLSUM": the compile key ProjectDir/PGenerated was made from
	// and the sha256 of its DLL, so a project compiled again by hand is not taken for it.
	modelsCompileKey = "compile.key"
	// modelsCompileLog is the compiler's output, when the stage compiled.
	modelsCompileLog = "compile.log"
	// modelsRecorded is the directory of recorded runs (ModelsConfig.Logs).
	modelsRecorded = "recorded"
)

// CheckModels is the gate's models stage: it compiles cfg.ProjectDir (through the one compile
// path, cached by the sources' hash, the P tool's version and the .NET runtimes) unless its
// PGenerated was compiled from those already, lists its test cases, checks them against the
// sources' `test` declarations, and runs the checker on each test by its exact name, cfg.Jobs at
// a time: a counterexample (a name ending in [CounterexampleSuffix]) must find a bug within
// cfg.CounterexampleSchedules, every other test must explore cfg.Schedules without one. A run
// whose cache key (the compile key and the run's command line) is cached is restored instead;
// only runs that pass are cached. With cfg.Logs it also records runs for the bridge
// ([Config.FromRuns]). Progress, the report and the output of each failed run go to w.
//
// Findings (a test that fails its verdict, a listing that does not match the declarations) are
// in the result ([ModelsResult.Pass]). Errors are for a stage that could not run: the project
// does not compile or list its tests (wrapping [ErrChecker]), p cannot be started, files cannot
// be written.
func CheckModels(ctx context.Context, cfg ModelsConfig, w io.Writer) (*ModelsResult, error) {
	cfg = cfg.filled()
	if cfg.ProjectDir == "" || cfg.CompileCache == "" {
		return nil, errors.New("bridge: ModelsConfig.ProjectDir and CompileCache are required")
	}
	switch {
	case cfg.Part != ModelsAll && cfg.Part != ModelsRecords && cfg.Part != ModelsVerdicts:
		return nil, fmt.Errorf("bridge: %w: unknown part %q of the models stage (want %q or %q)", ErrModelsUsage, cfg.Part, ModelsRecords, ModelsVerdicts)
	case cfg.Part != ModelsAll && !cfg.Logs:
		// Without records every run is a verdict run, and the two parts would not split them.
		return nil, fmt.Errorf("bridge: %w: the part %q of the models stage needs the recorded runs (Logs, --logs)", ErrModelsUsage, cfg.Part)
	}
	// The checker runs in the project with its output directory given on the command line, so
	// every path it is handed must not depend on the directory it runs in.
	for _, p := range []*string{&cfg.ProjectDir, &cfg.CompileCache, &cfg.RunCache} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, fmt.Errorf("bridge: %w", err)
		}
		*p = abs
	}
	start := time.Now()
	s := &modelsStage{cfg: cfg, w: w, out: filepath.Join(cfg.ProjectDir, "PCheckerOutput")}
	if err := os.MkdirAll(s.out, 0o755); err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	res, err := s.check(ctx)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(w)
	if !res.Pass() {
		fmt.Fprintf(w, "pmodels: FAIL (%.0fs)\n", time.Since(start).Seconds())
		return res, nil
	}
	ran, reused := res.Ran()
	recorded, part := "", ""
	if cfg.Logs && cfg.Part != ModelsVerdicts {
		recorded = fmt.Sprintf(", %d recorded per green test", cfg.RecordSchedules)
	}
	if cfg.Part != ModelsAll {
		part = fmt.Sprintf(" (part: %s)", cfg.Part)
	}
	fmt.Fprintf(w, "pmodels: PASS%s: %d tests, %d checker runs, %d reused (%.0fs; seed %d, %d schedules per green test, counterexample budget %d%s)\n",
		part, len(res.Tests), ran, reused, time.Since(start).Seconds(), cfg.Seed, cfg.Schedules, cfg.CounterexampleSchedules, recorded)
	return res, nil
}

// modelsStage is one run of CheckModels.
type modelsStage struct {
	cfg ModelsConfig
	w   io.Writer
	// out is ProjectDir/PCheckerOutput.
	out string
}

// pcfg is the Config that runs p in the project.
func (s *modelsStage) pcfg() Config {
	return Config{ProjectDir: s.cfg.ProjectDir, P: s.cfg.P}
}

func (s *modelsStage) check(ctx context.Context) (*ModelsResult, error) {
	cfg := s.cfg
	rels, err := modelSources(cfg.ProjectDir)
	if err != nil {
		return nil, fmt.Errorf("bridge: P sources of %s: %w", cfg.ProjectDir, err)
	}
	sources := map[string][]byte{}
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(cfg.ProjectDir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("bridge: %w", err)
		}
		sources[rel] = data
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("bridge: %w: no .p or .pproj files in %s", ErrChecker, cfg.ProjectDir)
	}
	declared := declaredTests(sources)
	if len(declared) == 0 {
		return nil, fmt.Errorf("bridge: %w: the sources in %s declare no test case (no line 'test NAME [main = ...]')", ErrChecker, cfg.ProjectDir)
	}
	project, err := pprojName(sources)
	if err != nil {
		return nil, err
	}
	compileKey, compiled, err := s.compile(ctx, sources, project)
	if err != nil {
		return nil, err
	}
	listOut, err := os.ReadFile(filepath.Join(s.out, RecordedListFile))
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	listed, err := parseTestList(listOut)
	if err != nil {
		return nil, err
	}
	if len(listed) == 0 {
		return nil, fmt.Errorf("bridge: %w: the checker lists no test cases:\n%s", ErrChecker, listOut)
	}
	res := &ModelsResult{Compiled: compiled}
	res.Problems = listingProblems(cfg.ProjectDir, declared, listed)
	var unknown []string
	res.Tests, unknown = selectTests(listed, cfg.TestCases)
	res.Problems = append(res.Problems, unknown...)
	for _, p := range res.Problems {
		fmt.Fprintf(s.w, "pmodels: FAIL: %s\n", p)
	}

	p := modelsPlan{CompileKey: compileKey, DLL: filepath.ToSlash(filepath.Join("PGenerated", "PChecker", "net8.0", project+".dll")),
		Seed: cfg.Seed, Timeout: cfg.Timeout, Schedules: cfg.Schedules, CounterexampleSchedules: cfg.CounterexampleSchedules,
		OutDir: s.out, RecordedDir: filepath.Join(s.out, modelsRecorded)}
	if cfg.Logs {
		p.Record = cfg.RecordSchedules
	}
	var jobs []modelsJob
	for _, j := range planModels(p, res.Tests) {
		if cfg.Part.holds(j) {
			jobs = append(jobs, j)
		}
	}
	made := s.runAll(ctx, jobs)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bridge: models stage: %w", err)
	}
	var used []string
	for i, j := range jobs {
		row := s.judge(j, project)
		row.Source = made[i].source
		if made[i].err != nil {
			row.Pass, row.Note = false, made[i].err.Error()
		}
		res.Rows = append(res.Rows, row)
		if !row.Pass {
			continue
		}
		used = append(used, j.Key)
		if row.Source == "ran" {
			if err := os.WriteFile(filepath.Join(j.Dir, "key"), []byte(j.Key+"\n"), 0o644); err != nil {
				return nil, fmt.Errorf("bridge: %w", err)
			}
			s.store(j)
		}
	}
	if err := writeModelsTable(s.w, res.Rows); err != nil {
		return nil, err
	}
	for i, row := range res.Rows {
		if !row.Pass {
			s.explain(jobs[i], project)
		}
	}
	// The verdicts' part leaves the recorded runs alone: the corpus may be reading them.
	if cfg.Logs && cfg.Part != ModelsVerdicts {
		if err := s.record(jobs, listed); err != nil {
			return nil, err
		}
	}
	if cfg.RunCache != "" && len(cfg.TestCases) == 0 && res.Pass() {
		if err := pruneRunCache(cfg.RunCache, cfg.Part, used); err != nil {
			return nil, err
		}
	}
	var found []string
	for _, row := range res.Rows {
		if row.Pass && row.Counterexample && row.What != runRecord {
			found = append(found, fmt.Sprintf("%s: bug found after %s schedule(s) (seed %d, budget %d)", row.TestCase, row.Schedules, cfg.Seed, cfg.CounterexampleSchedules))
		}
	}
	if len(found) > 0 {
		fmt.Fprintf(s.w, "\n%s\n", strings.Join(found, "\n"))
	}
	return res, nil
}

// pprojName is the <ProjectName> of the one .pproj at the top of the sources: it names the DLL.
func pprojName(sources map[string][]byte) (string, error) {
	var names []string
	for rel, data := range sources {
		if strings.HasSuffix(rel, ".pproj") && !strings.Contains(rel, "/") {
			if m := projectName.FindSubmatch(data); m != nil {
				names = append(names, string(m[1]))
			}
		}
	}
	if len(names) != 1 {
		return "", fmt.Errorf("bridge: %w: want one .pproj with a <ProjectName> at the top of the project, found %d", ErrChecker, len(names))
	}
	return names[0], nil
}

// compile leaves ProjectDir/PGenerated compiled from sources, and PCheckerOutput's version.log and
// list.log made by it, and returns the compile key. It compiles through compileCached, so a
// project compiled once (on another branch, say) is copied in and not compiled again.
func (s *modelsStage) compile(ctx context.Context, sources map[string][]byte, project string) (key string, compiled bool, err error) {
	cfg := s.cfg
	pc := s.pcfg()
	version, code, err := runP(ctx, pc, "--version")
	if err != nil {
		return "", false, err
	}
	if code != 0 {
		return "", false, fmt.Errorf("bridge: %w: p --version exited %d:\n%s", ErrChecker, code, tail(version, 20))
	}
	if err := writeIfChanged(filepath.Join(s.out, RecordedVersionFile), version); err != nil {
		return "", false, err
	}
	// The runtimes the compiled project may roll forward to; a dotnet that cannot say is an
	// input like any other.
	runtimes, rerr := exec.CommandContext(ctx, cfg.Dotnet, "--list-runtimes").CombinedOutput()
	if rerr != nil {
		runtimes = append(runtimes, []byte("\n"+rerr.Error())...)
	}
	format := modelsFormat(version, runtimes)
	key = compileKey(format, sources)
	dll := compiledDLL(cfg.ProjectDir, project)
	keyFile := filepath.Join(s.out, modelsCompileKey)
	listFile := filepath.Join(s.out, RecordedListFile)
	if kept, _ := os.ReadFile(keyFile); len(kept) > 0 {
		if sum, err := fileSum(dll); err == nil && strings.TrimSpace(string(kept)) == key+" "+sum && nonEmpty(listFile) {
			fmt.Fprintf(s.w, "pmodels: compile skipped: %s was compiled from these sources by this P tool (%s)\n",
				filepath.Join(cfg.ProjectDir, "PGenerated"), keyFile)
			return key, false, touchAfterSources(listFile, cfg.ProjectDir)
		}
	}
	if err := os.Remove(keyFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("bridge: %w", err)
	}
	start := time.Now()
	dir, _, compiled, err := compileCached(ctx, pc, compileJob{Cache: cfg.CompileCache, Format: format, Project: project,
		Files: sources, What: cfg.ProjectDir, Log: filepath.Join(s.out, modelsCompileLog),
		Compiling: func(string) { fmt.Fprintf(s.w, "pmodels: compiling %s\n", cfg.ProjectDir) }})
	if err != nil {
		return "", false, fmt.Errorf("%w\n%s(whole compiler output: %s)", err, compilerErrors(filepath.Join(s.out, modelsCompileLog)), filepath.Join(s.out, modelsCompileLog))
	}
	if compiled {
		fmt.Fprintf(s.w, "pmodels: compiled in %.0fs\n", time.Since(start).Seconds())
	} else {
		fmt.Fprintf(s.w, "pmodels: compile skipped: %s holds %s compiled from these sources by this P tool\n", dir, project)
	}
	if err := pruneCompileCache(cfg.CompileCache, filepath.Base(dir)); err != nil {
		return "", false, err
	}
	// The checker's runs, the bridge's integration test and a person replaying a bug by hand all
	// find the DLL in the project's own PGenerated. A copy, not links: a `p compile` by hand
	// rewrites those files in place.
	gen := filepath.Join(cfg.ProjectDir, "PGenerated")
	tmp := filepath.Join(s.out, ".PGenerated.tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return "", false, fmt.Errorf("bridge: %w", err)
	}
	if err := copyTree(filepath.Join(dir, "PGenerated"), tmp, false); err != nil {
		return "", false, err
	}
	if err := os.RemoveAll(gen); err != nil {
		return "", false, fmt.Errorf("bridge: %w", err)
	}
	if err := os.Rename(tmp, gen); err != nil {
		return "", false, fmt.Errorf("bridge: %w", err)
	}
	var list bytes.Buffer
	code, _, err = runPTo(ctx, pc, &list, "check", filepath.ToSlash(filepath.Join("PGenerated", "PChecker", "net8.0", project+".dll")), "--list-tests")
	if err != nil {
		return "", false, err
	}
	if code != 0 {
		return "", false, fmt.Errorf("bridge: %w: p check --list-tests exited %d:\n%s", ErrChecker, code, tail(list.Bytes(), 20))
	}
	if err := writeIfChanged(listFile, list.Bytes()); err != nil {
		return "", false, err
	}
	if err := touchAfterSources(listFile, cfg.ProjectDir); err != nil {
		return "", false, err
	}
	sum, err := fileSum(dll)
	if err != nil {
		return "", false, fmt.Errorf("bridge: %w", err)
	}
	if err := os.WriteFile(keyFile, []byte(key+" "+sum+"\n"), 0o644); err != nil {
		return "", false, fmt.Errorf("bridge: %w", err)
	}
	return key, compiled, nil
}

// compilerError is a line of the P compiler's that says what is wrong: a parse or type error
// ("[Error:] [file:L:C] msg") or a failed C# build ("error CSxxxx").
var compilerError = regexp.MustCompile(`\[(Parser |Semantic |)Error|Error:|error [A-Z]+[0-9]+|NotSupportedError`)

// compilerErrors returns the error lines of a compiler's log, each ending in a newline.
func compilerErrors(log string) string {
	data, _ := os.ReadFile(log)
	var b strings.Builder
	for _, l := range strings.Split(string(data), "\n") {
		if compilerError.MatchString(l) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// bugLine is a line of a checker's bug report that says what went wrong.
var bugLine = regexp.MustCompile(`<ErrorLog>|Assertion|liveness|Exception|Error`)

// runResult is how a job's directory came to hold its run.
type runResult struct {
	source string // "ran", "kept" or "cached"
	err    error  // the run could not be made
}

// runAll makes every job's run, cfg.Jobs at a time, and returns how each came about, in order.
func (s *modelsStage) runAll(ctx context.Context, jobs []modelsJob) []runResult {
	results := make([]runResult, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(s.cfg.Jobs, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = s.runOne(ctx, jobs[i])
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// runOne leaves job's run in its directory: kept when the directory holds it already (its key
// file says so; only a run that passed has one), restored from the cache, or run. With the cache
// off every run is made again: that is what turning it off is for.
func (s *modelsStage) runOne(ctx context.Context, j modelsJob) runResult {
	// Left untouched when it is this run already: its files' ages are inputs of the Go tests that
	// read them, and rewriting them would make those tests run again.
	if s.cfg.RunCache != "" && firstLine(filepath.Join(j.Dir, "key")) == j.Key && exists(filepath.Join(j.Dir, "result")) {
		return runResult{source: "kept"}
	}
	if err := os.RemoveAll(j.Dir); err != nil {
		return runResult{source: "ran", err: err}
	}
	if s.cfg.RunCache != "" {
		entry := filepath.Join(s.cfg.RunCache, j.Key)
		if info, err := os.Stat(entry); err == nil && info.IsDir() {
			if err := copyTree(entry, j.Dir, true); err == nil {
				return runResult{source: "cached"}
			}
			os.RemoveAll(j.Dir)
		}
	}
	s.cfg.Logger.Info("running checker", "test_case", j.Run.TestCase, "args", strings.Join(j.Run.Args(), " "))
	return runResult{source: "ran", err: s.runChecker(ctx, j)}
}

// runChecker runs `p check` for j in the project, with its output in j.Dir, and writes there
// what the verdict and the bridge read: <test>.log (the checker's output), rc, run.txt
// ([RecordedRunFile]), result ([resultLine]), ran (how many test cases -tc matched) and cpu (the
// checker's CPU seconds).
func (s *modelsStage) runChecker(ctx context.Context, j modelsJob) error {
	if err := os.MkdirAll(j.Dir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(j.Dir, j.Run.TestCase+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	rc, cpu, err := runPTo(ctx, s.pcfg(), log, j.Run.Args()...)
	if err != nil {
		// As the shell reports a command it cannot run.
		rc = 127
		fmt.Fprintf(log, "pconform: %v\n", err)
	}
	if cerr := log.Close(); cerr != nil {
		return cerr
	}
	log, err = os.Open(logPath)
	if err != nil {
		return err
	}
	o, perr := parseCheckOutput(log, j.Run.TestCase)
	log.Close()
	if perr != nil {
		return fmt.Errorf("reading %s: %w", logPath, perr)
	}
	verbose := 0
	if j.Run.Verbose {
		verbose = 1
	}
	files := []struct{ name, data string }{
		{"cpu", fmt.Sprintf("%.1f\n", cpu.Seconds())},
		{"rc", fmt.Sprintf("%d\n", rc)},
		{RecordedRunFile, fmt.Sprintf("test_case:%s\nseed:%d\nschedules:%d\nverbose:%d\nexit:%d\n", j.Run.TestCase, j.Run.Seed, j.Run.Schedules, verbose, rc)},
		{"result", resultLine(o)},
		{"ran", fmt.Sprintf("%d\n", o.Sections)},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(j.Dir, f.name), []byte(f.data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// judge reads job's run back from its directory and gives its verdict.
func (s *modelsStage) judge(j modelsJob, project string) ModelsRow {
	f := runFiles{RC: firstLine(filepath.Join(j.Dir, "rc")), Result: firstLine(filepath.Join(j.Dir, "result")),
		Ran: firstLine(filepath.Join(j.Dir, "ran")), CPU: firstLine(filepath.Join(j.Dir, "cpu"))}
	exit, o := f.outcome()
	row := ModelsRow{TestCase: j.Run.TestCase, Counterexample: j.counterexample(), What: j.What, Budget: j.Run.Schedules,
		Dir: j.Dir, Key: j.Key, Schedules: "?", Bugs: "?", Seconds: "?", CPU: "?"}
	if fl := strings.Fields(f.Result); len(fl) == 3 {
		row.Schedules, row.Bugs, row.Seconds = fl[0], fl[1], fl[2]
	}
	if f.CPU != "" {
		row.CPU = f.CPU
	}
	row.Pass, row.Note = Verdict(j.Run.TestCase, j.Run.Schedules, exit, o, filepath.Join(j.Dir, "BugFinding", project+"_pchecker_summary.txt"))
	return row
}

// explain writes what a failed run said: the error lines of its bug report, the end of its log and
// the command that replays its bug.
func (s *modelsStage) explain(j modelsJob, project string) {
	logPath := filepath.Join(j.Dir, j.Run.TestCase+".log")
	fmt.Fprintf(s.w, "---- %s: checker output (%s) ----\n", j.Run.TestCase, logPath)
	reports, _ := filepath.Glob(filepath.Join(j.Dir, "BugFinding", "*.txt"))
	n := 0
	for _, r := range reports {
		data, _ := os.ReadFile(r)
		for _, l := range strings.Split(string(data), "\n") {
			if n < 20 && bugLine.MatchString(l) {
				fmt.Fprintln(s.w, l)
				n++
			}
		}
	}
	if data := fileTail(logPath, 64<<10); len(data) > 0 {
		fmt.Fprintln(s.w, tail(data, 25))
	}
	if scheds, _ := filepath.Glob(filepath.Join(j.Dir, "BugFinding", "*.schedule")); len(scheds) > 0 {
		rel, err := filepath.Rel(s.cfg.ProjectDir, scheds[0])
		if err != nil {
			rel = scheds[0]
		}
		fmt.Fprintf(s.w, "replay: (cd %s && p check %s -tc %s --replay %s -v)\n", s.cfg.ProjectDir,
			filepath.ToSlash(filepath.Join("PGenerated", "PChecker", "net8.0", project+".dll")), j.Run.TestCase, filepath.ToSlash(rel))
	}
}

// store puts a run that passed into the run cache, under its key. A run already there is left as
// it is; a failure to cache is only logged: the run itself stands.
func (s *modelsStage) store(j modelsJob) {
	if s.cfg.RunCache == "" {
		return
	}
	entry := filepath.Join(s.cfg.RunCache, j.Key)
	if exists(entry) {
		return
	}
	if err := os.MkdirAll(s.cfg.RunCache, 0o755); err != nil {
		s.cfg.Logger.Warn("cannot cache a checker run", "test_case", j.Run.TestCase, "err", err)
		return
	}
	tmp, err := os.MkdirTemp(s.cfg.RunCache, ".tmp."+j.Key+".")
	if err != nil {
		s.cfg.Logger.Warn("cannot cache a checker run", "test_case", j.Run.TestCase, "err", err)
		return
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(j.Dir, filepath.Join(tmp, "run"), true); err != nil {
		s.cfg.Logger.Warn("cannot cache a checker run", "test_case", j.Run.TestCase, "err", err)
		return
	}
	// Another stage may have put the same run in place first: either copy serves.
	_ = os.Rename(filepath.Join(tmp, "run"), entry)
}

// record completes the recorded-runs directory (the package documentation, "Recorded runs"): the
// counterexamples' verdict runs (made with -v) linked in beside the green tests' recorded runs,
// the listing and the version, and no run of a test no longer listed. Files are replaced only
// when they changed: their ages are inputs of the Go tests that read them.
func (s *modelsStage) record(jobs []modelsJob, listed []string) error {
	dir := filepath.Join(s.out, modelsRecorded)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	for _, j := range jobs {
		if j.What != runVerdictRecord || !exists(j.Dir) {
			continue
		}
		rec := filepath.Join(dir, j.Run.TestCase)
		if firstLine(filepath.Join(rec, "key")) == firstLine(filepath.Join(j.Dir, "key")) && exists(rec) {
			continue
		}
		if err := os.RemoveAll(rec); err != nil {
			return fmt.Errorf("bridge: %w", err)
		}
		if err := copyTree(j.Dir, rec, true); err != nil {
			return err
		}
	}
	for _, name := range []string{RecordedListFile, RecordedVersionFile} {
		data, err := os.ReadFile(filepath.Join(s.out, name))
		if err != nil {
			return fmt.Errorf("bridge: %w", err)
		}
		if err := writeIfChanged(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	if err := touchAfterSources(filepath.Join(dir, RecordedListFile), s.cfg.ProjectDir); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	for _, e := range entries {
		// Runs of tests that are no longer listed must not stand in for anything.
		if e.IsDir() && !slices.Contains(listed, e.Name()) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("bridge: %w", err)
			}
		}
	}
	return nil
}

// pruneRunCache keeps the cache entries this run used and those the full run before it used
// (used.keys and used-before.keys in the cache; a part's run has its own pair,
// used-records.keys and so on); older entries are deleted. Every pair's keys are kept, so a
// part's run never deletes what the other part used.
func pruneRunCache(cache string, part ModelsPart, used []string) error {
	if !exists(cache) {
		return nil
	}
	name := "used"
	if part != ModelsAll {
		name += "-" + string(part)
	}
	usedFile, beforeFile := filepath.Join(cache, name+".keys"), filepath.Join(cache, name+"-before.keys")
	if exists(usedFile) {
		if err := os.Rename(usedFile, beforeFile); err != nil {
			return fmt.Errorf("bridge: run cache: %w", err)
		}
	}
	if err := os.WriteFile(usedFile, []byte(strings.Join(used, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("bridge: run cache: %w", err)
	}
	lists, err := filepath.Glob(filepath.Join(cache, "used*.keys"))
	if err != nil {
		return fmt.Errorf("bridge: run cache: %w", err)
	}
	var keep []string
	for _, l := range lists {
		data, err := os.ReadFile(l)
		if err != nil {
			return fmt.Errorf("bridge: run cache: %w", err)
		}
		keep = append(keep, strings.Fields(string(data))...)
	}
	return removeEntries(cache, keep)
}

// pruneCompileCache keeps the compiled project just used and the one used before it (last.key in
// the cache); other projects are deleted: each is tens of megabytes.
func pruneCompileCache(cache, key string) error {
	lastFile := filepath.Join(cache, "last.key")
	last := firstLine(lastFile)
	if last != key {
		if err := os.WriteFile(lastFile, []byte(key+"\n"), 0o644); err != nil {
			return fmt.Errorf("bridge: compile cache: %w", err)
		}
	}
	keep := []string{key}
	if last != "" {
		keep = append(keep, last)
	}
	return removeEntries(cache, keep)
}

// removeEntries deletes the directories of dir that keepInCache does not keep; hidden ones (a
// copy in progress) and compiles in progress are left.
func removeEntries(dir string, keep []string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), "compiling-") {
			names = append(names, e.Name())
		}
	}
	for _, n := range keepInCache(names, keep) {
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("bridge: %w", err)
		}
	}
	return nil
}

// touchAfterSources sets the age of a listing to now when a source of project is newer: the
// bridge refuses recorded runs whose listing is older than a source (made from other models), and
// a listing the compile key vouches for is current whatever its age.
func touchAfterSources(listing, project string) error {
	info, err := os.Stat(listing)
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	rels, err := modelSources(project)
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	for _, rel := range rels {
		src, err := os.Stat(filepath.Join(project, filepath.FromSlash(rel)))
		if err == nil && src.ModTime().After(info.ModTime()) {
			now := time.Now()
			if err := os.Chtimes(listing, now, now); err != nil {
				return fmt.Errorf("bridge: %w", err)
			}
			return nil
		}
	}
	return nil
}

// copyTree copies the directory src to dst (which must not exist), hard-linking files when link is
// set and the file system allows it.
func copyTree(src, dst string, link bool) error {
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if link && os.Link(path, to) == nil {
			return nil
		}
		return copyFile(path, to)
	})
	if err != nil {
		return fmt.Errorf("bridge: copying %s: %w", src, err)
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	// The age travels with the content, as `cp -p` keeps it.
	return os.Chtimes(to, info.ModTime(), info.ModTime())
}

// fileTail is the last n bytes of a file, or less: a run's log with -v is large, and only its end
// is shown.
func fileTail(path string, n int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return nil
		}
	}
	data, _ := io.ReadAll(f)
	return data
}

// fileSum is the sha256 of a file, in hex.
func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// firstLine is a file's first line without surrounding space, "" when it cannot be read.
func firstLine(path string) string {
	data, _ := os.ReadFile(path)
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func nonEmpty(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Size() > 0
}
