package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

func newProfileCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "profile",
		Short: "Check a semantic profile against the P model, or re-expect traces under it",
		Long: `A profile (docs/semantics.md, "Profiles") is a store's own answer to the rules a reasonable
store could settle differently. "profile check" tells which of the P model's properties the
profile's semantics keep and which they give up. "profile reexpect" rewrites traces so that they
expect what a correct store under the profile answers.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cobraUsage{fmt.Errorf("unknown profile command %q (commands: check, reexpect, corpus)", args[0])}
			}
			return cobraUsage{errors.New("expected a profile command: check, reexpect or corpus")}
		},
		RunE: func(*cobra.Command, []string) error { return nil },
	}
	c.AddCommand(newProfileCheckCmd(), newProfileReexpectCmd(), newProfileCorpusCmd())
	return c
}

// defaultProfileSchedules is profile check's budget per test case. Measured at 200 schedules,
// seed 1, on the shipped and example profiles (docs/notes/2026-12-05-profile-check-budget.md):
// the latest first failure of a given-up monitor is at schedule 38, the latest failure of any
// kind at 69. 100 finds every one of them, with room, in 2 to 4 minutes a profile.
const defaultProfileSchedules = 100

// profileCheckFlags are the flags of profile check.
type profileCheckFlags struct {
	models    string
	schedules int
	seed      int64
	tests     string
	out       string
	cache     string
	p         string
}

func newProfileCheckCmd() *cobra.Command {
	var f profileCheckFlags
	c := &cobra.Command{
		Use:   "check FILE",
		Short: "Say which P monitors a profile keeps and which it gives up, with counterexamples",
		Long: `Check compiles the P model (models/p) with the profile's constants, in a cached copy of the
project (the repository's files are never touched), and runs every green P test case on it (but
the untraced ones, whose steps no trace can hold yet: a failure must give a trace). For
each spec monitor it then says, in three sections:

  gives up   (given up by a declared choice) a test case failed it, and the counterexample needs
             one of the profile's choices: the smallest set of switches under which the Go model
             goes through the same results and states (reason wordings are never named). The
             counterexample is written as a trace (under --out), with the monitor's message and
             the property in its own words;
  violated by the model
             a test case failed it, and a counterexample needs none of the profile's choices (the
             Go model goes through the same states under the default rules), or the Go model does
             not follow it: no declared choice explains the failure, the model breaks the monitor;
  kept       every test case asserting it ran its whole budget without a failure;
  undecided  a test case asserting it stopped first at another monitor's failure.

A P compile takes about a minute; it is cached by a hash of the P sources and the profile, under
the user cache directory (or --cache). The default budget (--schedules 100) finds every monitor
the shipped and example profiles give up, measured at 200; a "kept" is evidence, not proof.

Example: pconform profile check profiles/no-fetch-sweep.json --out /tmp/no-sweep

Exit codes: 0 the report was made (whatever it says), 2 usage error (a bad profile file), 3 could not
run (no P tool, a compile that failed).`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cobraUsage{fmt.Errorf("expected one profile FILE, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return profileCheck(c.Context(), args[0], f, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	c.Flags().StringVar(&f.models, "models", "", "the P project (default: models/p of the repository holding the current directory)")
	c.Flags().IntVar(&f.schedules, "schedules", defaultProfileSchedules, "schedules per test case")
	c.Flags().Int64Var(&f.seed, "seed", bridge.DefaultSeed, "checker --seed")
	c.Flags().StringVar(&f.tests, "tests", "", "comma-separated green test cases to run (default: every green test case)")
	c.Flags().StringVar(&f.out, "out", "", "directory for the counterexample traces (default: a new temporary directory)")
	c.Flags().StringVar(&f.cache, "cache", "", "directory of compiled profile projects (default: pconform/profile-check in the user cache directory)")
	c.Flags().StringVar(&f.p, "p", "p", "the p executable")
	return c
}

// monitorInfo is what the P project says about one spec monitor.
type monitorInfo struct {
	name string
	// doc is the comment above the spec, in one line.
	doc string
	// tests are the test cases asserting it.
	tests []string
}

func profileCheck(ctx context.Context, path string, f profileCheckFlags, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := profile.ReadFile(path)
	if err != nil {
		return usageError{err}
	}
	if f.schedules < 1 {
		return usagef("--schedules %d: want at least 1", f.schedules)
	}
	dir, err := oracleFlags{models: f.models}.modelsDir()
	if err != nil {
		return err
	}
	if _, err := exec.LookPath(f.p); err != nil {
		return fmt.Errorf("the P tool %q is not on PATH (. scripts/env.sh puts it there): %w", f.p, err)
	}
	monitors, err := readMonitors(dir)
	if err != nil {
		return err
	}
	project, cached, err := compileUnder(ctx, dir, p, f, stderr)
	if err != nil {
		return err
	}
	cfg := bridge.Config{ProjectDir: project, P: f.p, Seed: f.seed, Schedules: f.schedules}
	listed, err := bridge.ListTests(ctx, cfg)
	if err != nil {
		return err
	}
	var tests []string
	if f.tests != "" {
		for _, tc := range strings.Split(f.tests, ",") {
			if !slices.Contains(listed, tc) {
				return usagef("--tests: no test case %q (listed: %s)", tc, strings.Join(listed, ", "))
			}
			tests = append(tests, tc)
		}
	} else {
		for _, tc := range listed {
			// An untraced test case's failure could give no trace to judge or replay.
			if _, untraced := bridge.Untraced(tc); !bridge.IsCounterexample(tc) && !untraced {
				tests = append(tests, tc)
			}
		}
	}
	out := f.out
	if out == "" {
		if out, err = os.MkdirTemp("", "pconform-profile-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}

	fmt.Fprintf(stdout, "profile %s\n", p)
	for _, s := range p.Changed() {
		c, _ := profile.Lookup(s.Choice)
		fmt.Fprintf(stdout, "  %s = %q: %s\n", s.Choice, s.Value, c.Doc)
	}
	how := "compiled"
	if cached {
		how = "cached compile"
	}
	hash, err := bridge.ModelHash(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "P model %s %s (%s), %d test cases, -s %d --seed %d each\n\n", dir, hash, how, len(tests), f.schedules, f.seed)

	// The report's sections, in sectionHeads' order; reportMonitor says which a monitor goes to.
	sections := make([]bytes.Buffer, len(sectionHeads))
	outcomes := map[string]bridge.Outcome{}
	for _, tc := range tests {
		o, err := bridge.CheckTestCase(ctx, cfg, tc, p)
		if err != nil {
			return err
		}
		outcomes[tc] = o
	}
	for _, m := range monitors {
		var mine []bridge.Outcome
		for _, tc := range m.tests {
			if o, ok := outcomes[tc]; ok {
				mine = append(mine, o)
			}
		}
		if len(mine) == 0 {
			continue
		}
		var b bytes.Buffer
		sections[reportMonitor(&b, m, mine, p, out)].Write(b.Bytes())
	}
	for i, head := range sectionHeads {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintln(stdout, head)
		if sections[i].Len() == 0 {
			fmt.Fprintln(stdout, "(none)")
		}
		stdout.Write(sections[i].Bytes())
	}
	fmt.Fprintf(stdout, "\ncounterexamples in %s; replay one on the model with\n  pconform replay FILE --target model\n", out)
	return nil
}

// The sections of a report: the monitors a counterexample breaks because of the profile's
// declared choices; those it breaks where none of them is needed (the model itself breaks the
// monitor there, under this profile); and the rest.
const (
	byChoice = iota
	byModel
	notBroken
)

var sectionHeads = []string{
	"Given up by a declared choice (each counterexample needs one of the profile's choices):",
	"Violated by the model under this profile (a counterexample needs none of the profile's choices):",
	"Kept or undecided:",
}

// reportMonitor writes one monitor's verdict to w and returns the section it belongs to. A
// monitor is given up by a declared choice when every counterexample of it needs one of p's
// choices (choicesInPlay); violated by the model when one needs none, or when the Go model does
// not follow it (then no choice can be said to explain it).
func reportMonitor(w io.Writer, m monitorInfo, outs []bridge.Outcome, p profile.Profile, dir string) int {
	var broke []bridge.Outcome
	undecided := false
	for _, o := range outs {
		switch {
		case o.Bug && o.Monitor == m.name:
			broke = append(broke, o)
		case o.Bug:
			undecided = true
		}
	}
	if len(broke) == 0 {
		if undecided {
			fmt.Fprintf(w, "%s: undecided (a test case asserting it stopped at another monitor's failure first)\n", m.name)
		} else {
			fmt.Fprintf(w, "%s: kept (%d test cases, no failure)\n", m.name, len(outs))
		}
		return notBroken
	}
	section := byChoice
	var body bytes.Buffer
	for _, o := range broke {
		fmt.Fprintf(&body, "  %s, schedule %d (%s): %s\n", o.TestCase, o.Schedules, o.Command, o.Violates)
		if o.Trace == nil {
			section = byModel
			continue
		}
		o.Trace.Name = fmt.Sprintf("%s-%s-s%d-%d", o.TestCase, fileSafe(p.Name), o.Trace.Origin.Seed, o.Schedules)
		path := filepath.Join(dir, o.Trace.Name+".json")
		if err := traces.WriteFile(path, o.Trace); err != nil {
			fmt.Fprintf(&body, "  (the trace could not be written: %v)\n", err)
			continue
		}
		needs, err := choicesInPlay(o.Trace, p)
		if err != nil || len(needs) == 0 {
			section = byModel
		}
		fmt.Fprintf(&body, "  trace: %s (%d steps)\n", path, len(o.Trace.Steps))
		fmt.Fprintln(&body, needsLine(needs, err))
	}
	if section == byChoice {
		fmt.Fprintf(w, "%s: gives up\n", m.name)
	} else {
		fmt.Fprintf(w, "%s: violated by the model\n", m.name)
	}
	if m.doc != "" {
		fmt.Fprintf(w, "  the property: %s\n", m.doc)
	}
	w.Write(body.Bytes())
	return section
}

// needsLine is the report's line under a counterexample's trace: the profile's choices it needs
// (choicesInPlay's answer).
func needsLine(needs []profile.Setting, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("  the Go model does not follow this trace under the profile: %v", err)
	case len(needs) == 0:
		return "  the Go model goes through the same states under the default rules: the failure needs none of the profile's choices"
	}
	var words []string
	for _, s := range needs {
		c, _ := profile.Lookup(s.Choice)
		words = append(words, fmt.Sprintf("%s=%s (%s)", s.Choice, s.Value, strings.TrimSuffix(c.Doc, ".")))
	}
	return "  it needs: " + strings.Join(words, "; ")
}

// choicesInPlay returns the smallest set of p's changed switches (dropping one at a time, in
// table order) under which the Go model runs tr's steps through the same results and the same
// state after every step as under p. Results alone would not do: a counterexample often ends
// where a monitor saw a bad row, with no result that shows it (an uncapped nack_by_id returns
// ok under either value), and a trace of the P checker has no final snapshot. A wording (a
// dead-letter reason's text) is kept as p has it and never named: no monitor reads a reason's
// words. It returns an error when the Go model under p does not give tr's results.
func choicesInPlay(tr *traces.Trace, p profile.Profile) ([]profile.Setting, error) {
	if !reproduces(tr, p) {
		return nil, errors.New("its results differ from the Go model's under the same profile")
	}
	want, err := modelStates(tr, p)
	if err != nil {
		return nil, err
	}
	keep := p
	for _, s := range p.Changed() {
		c, _ := profile.Lookup(s.Choice)
		if !c.Switch() {
			continue
		}
		try := keep
		if err := try.Set(s.Choice, c.DefaultValue()); err != nil {
			return nil, err
		}
		if got, err := modelStates(tr, try); err == nil && slices.EqualFunc(want, got, func(a, b *traces.Trace) bool {
			return firstDifference(a, b) < 0
		}) {
			keep = try
		}
	}
	var needs []profile.Setting
	for _, s := range keep.Changed() {
		if c, _ := profile.Lookup(s.Choice); c.Switch() {
			needs = append(needs, s)
		}
	}
	return needs, nil
}

// modelStates returns the Go model's re-expectation under p of every prefix of tr's steps, the
// k-th (counting from 0) ending after step k with the model's state there as its final snapshot.
func modelStates(tr *traces.Trace, p profile.Profile) ([]*traces.Trace, error) {
	out := make([]*traces.Trace, len(tr.Steps))
	for k := range tr.Steps {
		prefix := *tr
		prefix.Steps = tr.Steps[:k+1]
		prefix.Final = &traces.Snapshot{}
		re, err := models.Reexpect(models.Config{Profile: p}, &prefix)
		if err != nil {
			return nil, err
		}
		out[k] = re
	}
	return out, nil
}

// reproduces reports whether the Go model under p gives every result (and the final state, when
// tr has one) that tr expects.
func reproduces(tr *traces.Trace, p profile.Profile) bool {
	re, err := models.Reexpect(models.Config{Profile: p}, tr)
	return err == nil && firstDifference(tr, re) < 0
}

func fileSafe(name string) string {
	if name == "" {
		return "profile"
	}
	return regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(name, "_")
}

// compileUnder returns a compiled copy of the P project dir whose Profile_gen.p is p's, from the
// cache when one with the same sources and profile was compiled before (bridge.CompileProfile).
func compileUnder(ctx context.Context, dir string, p profile.Profile, f profileCheckFlags, stderr io.Writer) (string, bool, error) {
	cache := f.cache
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", false, fmt.Errorf("no user cache directory (pass --cache DIR): %w", err)
		}
		cache = filepath.Join(base, "pconform", "profile-check")
	}
	return bridge.CompileProfile(ctx, bridge.Config{ProjectDir: dir, P: f.p}, p, cache, func(tmp string) {
		fmt.Fprintf(stderr, "pconform: compiling the P model under the profile (about a minute) in %s\n", tmp)
	})
}

var (
	specDecl = regexp.MustCompile(`^spec ([A-Za-z0-9_]+) `)
	testDecl = regexp.MustCompile(`(?s)test\s+([A-Za-z0-9_]+)\s*\[\s*main\s*=\s*[A-Za-z0-9_]+\s*\]\s*:\s*assert\s+(.*?)\s+in\s`)
)

// readMonitors lists the spec monitors of the P project dir, in file order, each with its doc
// comment and the test cases that assert it.
func readMonitors(dir string) ([]monitorInfo, error) {
	specs, err := filepath.Glob(filepath.Join(dir, "PSpec", "*.p"))
	if err != nil {
		return nil, err
	}
	var out []monitorInfo
	index := map[string]int{}
	for _, path := range specs {
		fh, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		var comment []string
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "//"); ok {
				comment = append(comment, strings.TrimSpace(rest))
				continue
			}
			if m := specDecl.FindStringSubmatch(line); m != nil {
				index[m[1]] = len(out)
				out = append(out, monitorInfo{name: m[1], doc: firstSentence(strings.Join(comment, " "))})
			}
			comment = nil
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	tests, err := filepath.Glob(filepath.Join(dir, "PTst", "*.p"))
	if err != nil {
		return nil, err
	}
	for _, path := range tests {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for _, m := range testDecl.FindAllStringSubmatch(string(b), -1) {
			for _, name := range strings.Split(m[2], ",") {
				if i, ok := index[strings.TrimSpace(name)]; ok {
					out[i].tests = append(out[i].tests, m[1])
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no spec monitor in %s", filepath.Join(dir, "PSpec"))
	}
	return out, nil
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

func newProfileReexpectCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "reexpect PROFILE TRACE|DIR...",
		Short: "Rewrite traces to expect what a correct store under the profile answers",
		Long: `Reexpect runs each trace's steps through the Go reference model under the profile and writes
the trace with the model's results, final state and expect.profile, into --out under the same file
name. It says, per trace, whether anything changed and where first. A trace whose steps cannot
follow under the profile (a fetch that now finds a message is followed by another fetch of the same
worker, say) is reported as not fitting and not written.

Exit codes: 0 every trace was read (fitting or not), 2 usage error (a bad profile), 3 could not run
(an unreadable trace).`,
		Example: `  pconform profile reexpect profiles/ack-deletes.json traces/corpus --out /tmp/ack-deletes`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return cobraUsage{errors.New("expected a PROFILE and at least one TRACE or DIR")}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" {
				return usagef("--out DIR is required")
			}
			return profileReexpect(args[0], args[1:], out, c.OutOrStdout())
		},
	}
	c.Flags().StringVar(&out, "out", "", "directory to write the re-expected traces into")
	return c
}

func profileReexpect(path string, paths []string, out string, w io.Writer) error {
	p, err := profile.ReadFile(path)
	if err != nil {
		return usageError{err}
	}
	var files []string
	for _, a := range paths {
		info, err := os.Stat(a)
		if err != nil {
			return err
		}
		if !info.IsDir() {
			files = append(files, a)
			continue
		}
		found, err := traces.Walk(a)
		if err != nil {
			return err
		}
		files = append(files, found...)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var changed, same, unfit int
	for _, f := range files {
		tr, err := traces.ReadFile(f)
		if err != nil {
			return err
		}
		re, err := models.Reexpect(models.Config{Profile: p}, tr)
		if errors.Is(err, models.ErrUnfit) {
			unfit++
			fmt.Fprintf(w, "%s: does not fit the profile: %v\n", f, err)
			continue
		}
		if err != nil {
			return err
		}
		if err := traces.WriteFile(filepath.Join(out, filepath.Base(f)), re); err != nil {
			return err
		}
		if at := firstDifference(tr, re); at >= 0 {
			changed++
			where := "the final state"
			if at < len(tr.Steps) {
				where = fmt.Sprintf("step #%d (%s)", at, tr.Steps[at].Op)
			}
			fmt.Fprintf(w, "%s: changed, first at %s\n", f, where)
		} else {
			same++
		}
	}
	fmt.Fprintf(w, "%d traces under %s: %d changed, %d unchanged, %d do not fit; written to %s\n", len(files), p, changed, same, unfit, out)
	return nil
}

// firstDifference is the first step whose result or token argument differs between a and b (b
// re-expects a), len(a.Steps) for the final state only, -1 for none.
func firstDifference(a, b *traces.Trace) int {
	for i := range a.Steps {
		if a.Steps[i].Args.Token != b.Steps[i].Args.Token || !gocmp.Equal(a.Steps[i].Result, b.Steps[i].Result, cmpopts.EquateEmpty()) {
			return i
		}
	}
	if !gocmp.Equal(a.Final, b.Final, cmpopts.EquateEmpty()) {
		return len(a.Steps)
	}
	return -1
}
