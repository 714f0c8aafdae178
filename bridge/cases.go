package bridge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pconform/pconform/profile"
)

// casesProject names the project CheckCases compiles and its DLL.
const casesProject = "PConformCases"

// casesFormat changes when the layout of the project CheckCases compiles changes.
const casesFormat = "pcases/2"

// casesFile is what a file of CheckCases's cases may be named: a P file, no directory.
var casesFile = regexp.MustCompile(`^[A-Za-z0-9_]+\.p$`)

// CheckCases compiles the P model of cfg.ProjectDir under the profile p (its PSrc, PSpec and PTst,
// with p's constants in PSrc/Profile_gen.p) together with the P files cases (a name such as
// "Cases.p" to its content). It runs every test case whose name starts with prefix, one schedule
// each, in one checker run, and returns each test case's assertion message ("" when nothing
// failed). A test case of cases may call the rules directly, announce spec events to the monitors
// it asserts, or create a Store and send it requests.
//
// The compiled project is kept in cache under the hash of its sources (p's constants and cases
// included), so a second call with the same sources runs the checker only; a compile takes about
// a minute. It needs the P toolchain (cfg.P). Errors wrap [ErrChecker] for a compile or a checker
// run that goes wrong; a failed assertion is a message, not an error.
func CheckCases(ctx context.Context, cfg Config, p profile.Profile, cases map[string][]byte, prefix, cache string) (map[string]string, error) {
	cfg = cfg.filled()
	if len(cases) == 0 || prefix == "" {
		return nil, fmt.Errorf("bridge: CheckCases needs P files and a test case prefix")
	}
	files, err := monitorFiles(cfg.ProjectDir, p, "the rule cases")
	if err != nil {
		return nil, err
	}
	// The rest of the model: the Store machine and the machines it names, some of them the
	// scenarios' (PTst).
	rels, err := modelSources(cfg.ProjectDir)
	if err != nil {
		return nil, fmt.Errorf("bridge: the rule cases: %w", err)
	}
	for _, rel := range rels {
		if _, written := files[rel]; written || !strings.HasPrefix(rel, "PSrc/") && !strings.HasPrefix(rel, "PTst/") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(cfg.ProjectDir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("bridge: the rule cases: %w", err)
		}
		files[rel] = data
	}
	for name, src := range cases {
		if !casesFile.MatchString(name) {
			return nil, fmt.Errorf("bridge: case file %q: want a P file name without a directory", name)
		}
		files["PCases/"+name] = src
	}
	files[casesProject+".pproj"] = monitorProject(casesProject, "PTst", "PCases")
	dir, dll, _, err := compileCached(ctx, cfg, compileJob{Cache: cache, Format: casesFormat, Project: casesProject,
		Files: files, What: "the rule cases under profile " + p.String()})
	if err != nil {
		return nil, err
	}
	// The checker's output goes to a directory of this run's own: the compiled project is shared
	// by every run with the same sources.
	outDir, err := os.MkdirTemp("", "pconform-cases-")
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	defer os.RemoveAll(outDir)
	return runCases(ctx, cfg, dir, dll, prefix, outDir, "the rule cases")
}

// runCases runs every test case of the compiled project in dir (its DLL dll) whose name starts
// with prefix, one schedule each, in one checker run writing to outDir, and returns each test
// case's assertion message ("" when it found no bug). One run for every test case: -tc matches by
// prefix, and the .NET start-up costs more than most test cases. what names the project in errors.
func runCases(ctx context.Context, cfg Config, dir, dll, prefix, outDir, what string) (map[string]string, error) {
	run := cfg
	run.ProjectDir = dir
	out, code, err := runP(ctx, run, CheckRun{DLL: dll, TestCase: prefix, Schedules: 1, OutDir: outDir}.Args()...)
	if err != nil {
		return nil, err
	}
	if code != 0 && code != 1 {
		return nil, fmt.Errorf("bridge: %w: p check of %s exited %d:\n%s", ErrChecker, what, code, tail(out, 20))
	}
	verdicts, err := parseObservedRun(out)
	if err != nil {
		return nil, fmt.Errorf("bridge: %w: p check of %s: %w:\n%s", ErrChecker, what, err, tail(out, 20))
	}
	if len(verdicts) == 0 {
		return nil, fmt.Errorf("bridge: %w: p check of %s ran no test case %s*:\n%s", ErrChecker, what, prefix, tail(out, 20))
	}
	msgs := map[string]string{}
	for name, v := range verdicts {
		if v.bugs == 0 {
			msgs[name] = ""
			continue
		}
		logPath := v.log
		if !filepath.IsAbs(logPath) {
			logPath = filepath.Join(dir, logPath)
		}
		msg, err := assertionMessage(logPath)
		if err != nil {
			return nil, fmt.Errorf("bridge: %s, test case %s: %w", what, name, err)
		}
		msgs[name] = msg
	}
	return msgs, nil
}
