package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Evidence is everything needed to look at a divergence again: the trace, where it came from, the
// target and options it ran under, and the verdict.
type Evidence struct {
	Trace *traces.Trace
	// TracePath is the file the trace was read from ("" when it was built in memory); the rerun
	// commands name it.
	TracePath string
	Target    string
	// Backend is the store backend a store-backed target ran on; "" means SQLite.
	Backend actordelivery.Backend
	Options replay.Options
	Verdict replay.Verdict
}

// RerunCommands returns the commands that replay the trace again under the same target and
// options, to be run from the repository root: the CLI form first, then the go test form, which
// checks everything TestCorpus checks for that one trace (-corpus names the trace's directory
// when it is not traces/corpus).
func (e Evidence) RerunCommands() []string {
	path := e.TracePath
	if path == "" || path == "-" {
		path = "<trace.json in this directory>"
	}
	cli := fmt.Sprintf("scripts/pconform replay %s --target %s", shellQuote(path), e.Target)
	if e.Backend == actordelivery.BackendPostgres {
		cli += " --backend postgres" // the server: --dsn or PCONFORM_PG_DSN
	}
	if e.Options.ReopenEveryStep {
		cli += " --crash-every-step"
	}
	if len(e.Options.ReopenBefore) > 0 {
		cli += " --crash-before " + reopenList(e.Options.ReopenBefore)
	}
	name := "<name>"
	if e.Trace != nil {
		name = regexp.QuoteMeta(e.Trace.Name)
	}
	// Anchored at both levels: 'TestCorpus/...' alone also runs TestCorpusSituations and others.
	test := fmt.Sprintf("go test ./replay/ -run '^TestCorpus$/^%s$' -v", name)
	if dir := filepath.Dir(path); e.TracePath != "" && e.TracePath != "-" && filepath.ToSlash(filepath.Clean(dir)) != "traces/corpus" {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		test += " -corpus " + shellQuote(dir)
	}
	if e.Backend == actordelivery.BackendPostgres {
		test += " -backends postgres"
	}
	return []string{cli, test}
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain path characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WriteReport writes the divergence for a person: the verdict's report, the two histories side
// by side where they differ, and the commands that reproduce it.
func (e Evidence) WriteReport(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "target: %s\n", e.Target)
	fmt.Fprintf(&b, "options: crash_before=%s crash_every_step=%t\n", reopenList(e.Options.ReopenBefore), e.Options.ReopenEveryStep)
	if e.Trace != nil {
		o := e.Trace.Origin
		origin := o.Kind
		if o.TestCase != "" {
			origin += " " + o.TestCase
		}
		if o.Seed != 0 {
			origin += fmt.Sprintf(" seed=%d schedule=%d", o.Seed, o.Schedule)
		}
		fmt.Fprintf(&b, "trace: %s (origin: %s; expect variant=%q diverges_at=%d)\n", e.Trace.Name,
			origin, e.Trace.Expect.Variant, e.Trace.Expect.DivergesAt)
		if o.Command != "" {
			fmt.Fprintf(&b, "made by: %s\n", o.Command)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if err := e.Verdict.Report(w); err != nil {
		return err
	}
	var tail strings.Builder
	if e.Trace != nil {
		tail.WriteString("history diff (-expected +observed):\n")
		for _, l := range tracefmt.DiffLines(tracefmt.History(e.Trace), e.Verdict.History) {
			tail.WriteString("  " + l + "\n")
		}
	}
	tail.WriteString("To reproduce:\n")
	for _, c := range e.RerunCommands() {
		tail.WriteString("  " + c + "\n")
	}
	_, err := io.WriteString(w, tail.String())
	return err
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// WriteEvidence keeps e in a new directory under dir and returns its path. The directory holds
// trace.json (the trace as replayed), target.txt, expected.history and observed.history (one line
// per step, tagged #i), divergence.txt (the report, the history diff and the commands that
// reproduce it) and rerun.sh.
func WriteEvidence(dir string, e Evidence) (string, error) {
	name := "trace"
	if e.Trace != nil {
		name = e.Trace.Name
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("replay: evidence: %w", err)
	}
	path, err := os.MkdirTemp(dir, "replay-"+unsafeName.ReplaceAllString(name+"-"+e.Target, "_")+"-")
	if err != nil {
		return "", fmt.Errorf("replay: evidence: %w", err)
	}
	if e.TracePath == "" || e.TracePath == "-" {
		// The trace came from memory or stdin: the copy kept here is what reruns it.
		e.TracePath = filepath.Join(path, "trace.json")
	}
	var report strings.Builder
	if err := e.WriteReport(&report); err != nil {
		return "", fmt.Errorf("replay: evidence: %w", err)
	}
	files := map[string]string{
		"target.txt":       fmt.Sprintf("%s\ncrash_before=%s crash_every_step=%t\n", e.Target, reopenList(e.Options.ReopenBefore), e.Options.ReopenEveryStep),
		"observed.history": joinLines(e.Verdict.History),
		"divergence.txt":   report.String(),
		"rerun.sh":         "#!/bin/sh\n# Run from the repository root.\n" + joinLines(e.RerunCommands()),
	}
	if e.Trace != nil {
		files["expected.history"] = joinLines(tracefmt.History(e.Trace))
		data, err := traces.Marshal(e.Trace)
		if err != nil {
			return "", fmt.Errorf("replay: evidence: trace: %w", err)
		}
		files["trace.json"] = string(data)
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(path, f), []byte(content), 0o644); err != nil {
			return "", fmt.Errorf("replay: evidence: %w", err)
		}
	}
	return path, nil
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// reopenList renders Options.ReopenBefore as the CLI's --crash-before takes it: "2" or "2,5";
// "-1" (the flag's old "never") when there is none, so evidence files keep their form.
func reopenList(steps []int) string {
	if len(steps) == 0 {
		return "-1"
	}
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = strconv.Itoa(s)
	}
	return strings.Join(parts, ",")
}
