package bridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pconform/pconform/traces"
)

// AssertedMonitors names the spec monitors the P oracle holds t to. A trace the P checker made
// (origin p-checker) is held to the monitors its test case asserts, as the checker held its
// execution: the others may rightly fail on it (a raw outbox_complete, which tcRawStoreOps runs,
// completes a row no publisher delivered). Of those, the liveness monitors (LivenessMonitors)
// count only when the trace has the final snapshot its completed scenario
// announced, every column known: its end is where the execution ended, where the checker judged
// them. Any other trace (observed, property, hand) is held to every safety monitor
// (ObservedMonitors) and to no liveness monitor: it ends where its recording stopped, and
// the store might have gone on to resolve what was owed. A p-checker trace whose test case cannot
// be read is held as any other.
func AssertedMonitors(projectDir string, t *traces.Trace) []string {
	if t.Origin.Kind != traces.OriginPChecker || t.Origin.TestCase == "" {
		return slices.Clone(ObservedMonitors)
	}
	asserted, err := testCaseMonitors(projectDir, t.Origin.TestCase)
	if err != nil {
		return slices.Clone(ObservedMonitors)
	}
	endJudged := t.Final != nil && len(t.Final.Unknown) == 0
	var out []string
	for _, m := range asserted {
		if slices.Contains(ObservedMonitors, m) || endJudged && slices.Contains(LivenessMonitors, m) {
			out = append(out, m)
		}
	}
	return out
}

// testCaseMonitors reads the monitors the test case name asserts from the project's PTst files
// ("test NAME [main = M]: assert A, B in ...").
func testCaseMonitors(projectDir, name string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(projectDir, "PTst", "*.p"))
	if err != nil {
		return nil, err
	}
	decl := regexp.MustCompile(`(?s)\btest\s+` + regexp.QuoteMeta(name) + `\s*\[[^\]]*\]\s*:\s*assert\s+(.*?)\s+in\b`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if m := decl.FindSubmatch(data); m != nil {
			var out []string
			for _, s := range strings.Split(string(m[1]), ",") {
				out = append(out, strings.TrimSpace(s))
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("bridge: no test case %s in %s", name, filepath.Join(projectDir, "PTst"))
}

// observedCase names the test case of the k-th trace's driver.
func observedCase(k int) string { return PTestCase(k) }

// ErrNoBugLog is returned by CheckObserved when the checker reported a bug but left no readable
// bug log.
var ErrNoBugLog = errors.New("bridge: the P checker reported a bug but wrote no bug log")

// CheckObserved compiles, in a temporary directory, a P project of the models' spec monitors
// (cfg.ProjectDir's PSpec, with the types and events they use from PSrc/Types.p,
// PSrc/Observations.p and PSrc/ObservationEvents_gen.p and the rules they judge rows by from
// PSrc/Rules.p and PSrc/Variants_gen.p, copied as they are: the files model checking compiles;
// the profile constants those rules read are written for t's profile) and the driver
// PDriver writes for t, runs the checker on its test case and returns the assertion
// message of the monitor that fired ("" when every monitor held). The temporary project is removed
// afterwards. It needs the P toolchain (cfg.P).
func CheckObserved(ctx context.Context, cfg Config, t *traces.Trace) (string, error) {
	msgs, err := CheckObservedAll(ctx, cfg, []*traces.Trace{t})
	if err != nil {
		return "", err
	}
	return msgs[0], nil
}

// CheckObservedAll is CheckObserved for several traces with few compilations: the traces are
// split into batches of at most maxObservedBatchSteps steps (observedBatches), every trace's
// driver in a batch is a test case of one project, and the checker runs each. msgs[i] is ts[i]'s
// verdict.
func CheckObservedAll(ctx context.Context, cfg Config, ts []*traces.Trace) (msgs []string, err error) {
	for _, batch := range observedBatches(ts, maxObservedBatchSteps) {
		got, err := checkObservedBatch(ctx, cfg, batch)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, got...)
	}
	return msgs, nil
}

// maxObservedBatchSteps bounds the observed steps compiled into one P project. The C# compiler's
// memory grows with the generated drivers: 51,336 steps (30 histories of 1 s) compiled in under
// two minutes, while 220 such histories in one project drove it past 18 GB until the kernel killed it.
const maxObservedBatchSteps = 50_000

// observedBatches splits ts, in order, into consecutive batches whose steps add up to at most
// limit and whose traces share one profile (a batch's monitors are compiled under it); a trace
// longer than limit is a batch of its own.
func observedBatches(ts []*traces.Trace, limit int) [][]*traces.Trace {
	var batches [][]*traces.Trace
	var cur []*traces.Trace
	steps := 0
	for _, t := range ts {
		if len(cur) > 0 && (steps+len(t.Steps) > limit || !t.Expect.Profile.Same(cur[0].Expect.Profile)) {
			batches = append(batches, cur)
			cur, steps = nil, 0
		}
		cur = append(cur, t)
		steps += len(t.Steps)
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// checkObservedBatch compiles one project of ts's drivers and runs the checker over it.
func checkObservedBatch(ctx context.Context, cfg Config, ts []*traces.Trace) (msgs []string, err error) {
	cfg = cfg.filled()
	if len(ts) > 9999 {
		return nil, fmt.Errorf("bridge: %d observed traces in one project; at most 9999", len(ts))
	}
	// The monitors judge rows by the model's rules (Rules.p), which read the profile's constants:
	// the batch's own profile, not the committed default.
	files, err := monitorFiles(cfg.ProjectDir, ts[0].Expect.Profile, "observed drivers")
	if err != nil {
		return nil, fmt.Errorf("bridge: trace %q: %w", ts[0].Name, err)
	}
	for k, t := range ts {
		src, err := PDriver(t, k, AssertedMonitors(cfg.ProjectDir, t))
		if err != nil {
			return nil, fmt.Errorf("bridge: trace %q: %w", t.Name, err)
		}
		files[fmt.Sprintf("PObserved/Observed%04d.p", k)] = []byte(src)
	}
	files[observedProject+".pproj"] = monitorProject(observedProject, "PObserved")
	// The drivers are this batch's alone, so the cache is a temporary directory, removed with
	// the run's output.
	tmp, err := os.MkdirTemp("", "pconform-observed-p-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dir, dll, _, err := compileCached(ctx, cfg, compileJob{Cache: tmp, Format: observedFormat, Project: observedProject,
		Files: files, What: "the observed drivers"})
	if err != nil {
		return nil, err
	}
	verdicts, err := runCases(ctx, cfg, dir, dll, observedPrefix, filepath.Join(dir, "out"), "the observed drivers")
	if err != nil {
		return nil, err
	}
	for k, t := range ts {
		msg, ok := verdicts[observedCase(k)]
		if !ok {
			return nil, fmt.Errorf("bridge: p check ran no test case %s (trace %q)", observedCase(k), t.Name)
		}
		msgs = append(msgs, msg)
	}
	if len(verdicts) != len(ts) {
		return nil, fmt.Errorf("bridge: p check ran %d observed test cases, want %d", len(verdicts), len(ts))
	}
	return msgs, nil
}

// observedProject names the observed drivers' project and its DLL.
const observedProject = "PConformObserved"

// observedFormat changes when the layout of the observed drivers' project changes.
const observedFormat = "pobserved/1"

// observedPrefix is the prefix every observed test case's name has (observedCase).
const observedPrefix = PTestCasePrefix

// caseVerdict is one test case's section of a checker run's output.
type caseVerdict struct {
	bugs int
	log  string // the readable bug log the checker wrote for it, when bugs > 0
}

var (
	caseHeader = regexp.MustCompile(`^\.\. Test case :: (\S+)$`)
	caseBugs   = regexp.MustCompile(`^\.+ Found (\d+) bugs?\.$`)
	caseLog    = regexp.MustCompile(`^\.+ Writing (.+_\d+_\d+\.txt)$`)
)

// parseObservedRun reads the output of one checker run over several test cases: each test case's
// section starts with ".. Test case :: NAME" and must state its bug count ("Found N bug(s).");
// a section with a bug must name the readable log it wrote (the checker numbers them
// <Project>_0_0.txt, <Project>_0_1.txt, ... in the order it finds bugs, so the name cannot be
// guessed from the test case).
func parseObservedRun(out []byte) (map[string]caseVerdict, error) {
	verdicts := map[string]caseVerdict{}
	var cur string
	var v caseVerdict
	counted := false
	flush := func() error {
		if cur == "" {
			return nil
		}
		switch {
		case !counted:
			return fmt.Errorf("test case %s states no bug count", cur)
		case v.bugs > 0 && v.log == "":
			return fmt.Errorf("test case %s found %d bug(s) but names no bug log", cur, v.bugs)
		}
		if _, dup := verdicts[cur]; dup {
			return fmt.Errorf("test case %s ran twice", cur)
		}
		verdicts[cur] = v
		return nil
	}
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if m := caseHeader.FindStringSubmatch(l); m != nil {
			if err := flush(); err != nil {
				return nil, err
			}
			cur, v, counted = m[1], caseVerdict{}, false
			continue
		}
		if cur == "" {
			continue
		}
		if m := caseBugs.FindStringSubmatch(l); m != nil {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				return nil, fmt.Errorf("test case %s: bug count %q: %w", cur, m[1], err)
			}
			v.bugs, counted = n, true
		} else if m := caseLog.FindStringSubmatch(l); m != nil {
			v.log = m[1]
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return verdicts, nil
}

var assertPrefix = regexp.MustCompile(`^Assertion Failed: \S+:\d+:\d+ `)

// assertionMessage reads the monitor's assertion message from the checker's readable bug log.
func assertionMessage(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoBugLog, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if _, msg, ok := strings.Cut(l, "<ErrorLog> "); ok {
			// "Assertion Failed: <file>:<line>:<col> <the monitor's message>"
			return assertPrefix.ReplaceAllString(strings.TrimSpace(msg), ""), nil
		}
	}
	return "", fmt.Errorf("%w: %s has no <ErrorLog> line", ErrNoBugLog, path)
}

var (
	monitorLocation = regexp.MustCompile(`\((PSpec/[A-Za-z0-9_]+\.p):(\d+):\d+\)$`)
	livenessMonitor = regexp.MustCompile(`^PImplementation\.([A-Za-z0-9_]+) detected liveness bug`)
	specLine        = regexp.MustCompile(`^spec ([A-Za-z0-9_]+) `)
)

// MonitorOf names the spec monitor a violation message of the project in projectDir comes from:
// the monitor of a liveness report, or the spec block holding the assertion's location (the
// "(PSpec/File.p:line:col)" a safety monitor's message ends with). It returns "" when the message
// names neither or the file cannot be read.
func MonitorOf(projectDir, msg string) string {
	if m := livenessMonitor.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	m := monitorLocation.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	at, err := strconv.Atoi(m[2])
	if err != nil {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(projectDir, filepath.FromSlash(m[1])))
	if err != nil {
		return ""
	}
	name := ""
	for i, l := range strings.Split(string(data), "\n") {
		if i+1 > at {
			break
		}
		if s := specLine.FindStringSubmatch(l); s != nil {
			name = s[1]
		}
	}
	return name
}
