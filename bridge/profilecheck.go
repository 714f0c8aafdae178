package bridge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pconform/pconform/internal/pprofile"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// Outcome is one test case's checker run on a P project compiled under a semantic profile: a
// green one (CheckTestCase) or a counterexample (CheckCounterexample).
type Outcome struct {
	TestCase string
	// Command is the checker command, run in the project directory.
	Command string
	// Schedules is how many schedules the checker explored: the budget when it found no bug, the
	// buggy schedule's number when it found one (the checker stops there).
	Schedules int
	// Bug reports whether a monitor failed. Violates is its message (see [ViolatedProperty]) and
	// Monitor the spec monitor it comes from (see [MonitorOf]; "" when the message names none).
	Bug      bool
	Violates string
	Monitor  string
	// Trace is the buggy schedule's trace, expected under the profile (nil without a bug). A
	// schedule the failure cut short has no final state.
	Trace *traces.Trace
}

// CheckTestCase runs the green test case tc on the compiled project cfg.ProjectDir by its exact
// name (`p check -tc tc -s cfg.Schedules --seed cfg.Seed`, no -v), and, when a monitor fails,
// converts the buggy schedule into a trace expected under p, the profile the project was compiled
// with. Errors wrap [ErrChecker] for a run that goes wrong and the conversion's errors (see
// [ConvertUnder]); a failing monitor is an Outcome, not an error.
func CheckTestCase(ctx context.Context, cfg Config, tc string, p profile.Profile) (Outcome, error) {
	cfg = cfg.filled()
	if _, counterexample, _ := Variant(tc); counterexample {
		return Outcome{}, fmt.Errorf("bridge: %w: %s is a counterexample test case; only green ones are checked under a profile", ErrChecker, tc)
	}
	return checkCase(ctx, cfg, tc, p, cfg.Schedules)
}

// checkCase runs tc by its exact name with budget schedules (no -v) and converts a buggy
// schedule's bug log into a trace expected under p. cfg is filled.
func checkCase(ctx context.Context, cfg Config, tc string, p profile.Profile, budget int) (Outcome, error) {
	run := CheckRun{TestCase: tc, Schedules: budget, Seed: cfg.Seed}
	o := Outcome{TestCase: tc, Command: "p " + strings.Join(run.Args(), " ")}
	outDir, err := os.MkdirTemp("", "pconform-profile-")
	if err != nil {
		return o, fmt.Errorf("bridge: %w", err)
	}
	defer os.RemoveAll(outDir)
	run.OutDir = outDir
	out, code, err := runP(ctx, cfg, run.Args()...)
	if err != nil {
		return o, err
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("bridge: %w: %s: %s\n%s", ErrChecker, o.Command, fmt.Sprintf(format, a...), tail(out, 40))
	}
	if code != 0 && code != 1 {
		return o, fail("exit code %d", code)
	}
	summaryPath, err := findOne(outDir, "_pchecker_summary.txt")
	if err != nil {
		return o, fail("%v", err)
	}
	outcome := ParseCheckOutput(out, tc)
	switch {
	case !outcome.Found:
		return o, fail("no result in the checker output")
	case !summaryAgrees(summaryPath, outcome):
		return o, fail("summary file disagrees with the checker output")
	}
	o.Schedules = outcome.Schedules
	if outcome.Bugs == 0 {
		if code != 0 {
			return o, fail("exit code %d but the summary reports no bug", code)
		}
		return o, nil
	}
	o.Bug = true
	bugPath, err := findOne(outDir, "_0_0.trace.json")
	if err != nil {
		return o, fail("%v", err)
	}
	events, err := readLogFile(bugPath, ReadBugLog)
	if err != nil {
		return o, err
	}
	for _, ev := range events {
		if ev.Type == TypeAssertionFailure {
			o.Violates = ViolatedProperty(ev.Error)
			break
		}
	}
	o.Monitor = MonitorOf(cfg.ProjectDir, o.Violates)
	origin := traces.Origin{Kind: OriginKind, TestCase: tc, Seed: cfg.Seed, Schedule: o.Schedules, Command: o.Command}
	tr, err := ConvertUnder(events, origin, tc, p)
	if err != nil {
		return o, fmt.Errorf("%w (%s)", err, bugPath)
	}
	o.Trace = tr
	return o, nil
}

// profileFormat changes when the layout of a profile's compiled copy changes.
const profileFormat = "profile/1"

// projectName reads the <ProjectName> of a .pproj.
var projectName = regexp.MustCompile(`<ProjectName>\s*([A-Za-z0-9_.-]+)\s*</ProjectName>`)

// CompileProfile returns a compiled copy of the P project projectDir whose PSrc/Profile_gen.p
// holds p's constants: the project's sources (the files [ModelHash] covers), kept in cache under
// the hash of those sources, the constants included. cached says a copy was there already; a
// compile takes about a minute, and compiling, when not nil, is called with its directory before
// it starts. The copy is a P project of its own: [ListTests] and [CheckTestCase] run in it. It
// needs the P toolchain (cfg.P).
func CompileProfile(ctx context.Context, cfg Config, p profile.Profile, cache string, compiling func(dir string)) (dir string, cached bool, err error) {
	cfg = cfg.filled()
	constants, err := pprofile.Source(p)
	if err != nil {
		return "", false, fmt.Errorf("bridge: profile %s: %w", p, err)
	}
	rels, err := modelSources(cfg.ProjectDir)
	if err != nil {
		return "", false, fmt.Errorf("bridge: reading P sources: %w", err)
	}
	files := map[string][]byte{}
	project := ""
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(cfg.ProjectDir, filepath.FromSlash(rel)))
		if err != nil {
			return "", false, fmt.Errorf("bridge: reading P sources: %w", err)
		}
		files[rel] = data
		if strings.HasSuffix(rel, ".pproj") {
			m := projectName.FindSubmatch(data)
			if m == nil {
				return "", false, fmt.Errorf("bridge: %s: no <ProjectName>", filepath.Join(cfg.ProjectDir, rel))
			}
			if project != "" {
				return "", false, fmt.Errorf("bridge: two .pproj files in %s (%s and %s)", cfg.ProjectDir, project, m[1])
			}
			project = string(m[1])
		}
	}
	if project == "" {
		return "", false, fmt.Errorf("bridge: no .pproj file in %s", cfg.ProjectDir)
	}
	files["PSrc/Profile_gen.p"] = constants
	dir, _, compiled, err := compileCached(ctx, cfg, compileJob{Cache: cache, Format: profileFormat, Project: project,
		Files: files, What: "the P model under profile " + p.String(), Compiling: compiling})
	return dir, !compiled, err
}
