package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// outputFlags shape what replay prints.
type outputFlags struct {
	json    bool
	quiet   bool
	verbose bool
}

func (o *outputFlags) register(c *cobra.Command) {
	c.Flags().BoolVar(&o.json, "json", false, "print one machine-readable JSON document instead of text")
	c.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print only one line per trace (and the summary table), no progress")
	c.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "print the full observed history (a passing replay prints only a summary)")
}

// historyTail is how many history lines before a divergence a report shows without -v.
const historyTail = 8

// traceResult is one trace's replay, judged; the JSON form is part of the CLI's contract.
type traceResult struct {
	File   string `json:"file"`
	Trace  string `json:"trace,omitempty"`
	Target string `json:"target"`
	// Outcome is "match", "diverged", "inconclusive" or "error" (the trace could not be read or run).
	Outcome string `json:"outcome"`
	// Step is the diverging step (-1: the final snapshot); absent on a match.
	Step *int `json:"step,omitempty"`
	// Variant, PredictedStep and Violates are what the trace says it is.
	Variant       string `json:"variant,omitempty"`
	PredictedStep *int   `json:"predicted_step,omitempty"`
	Violates      string `json:"violates,omitempty"`
	// Claim is what the trace claims about this target: "match", "refuse" or "none".
	Claim     string   `json:"claim,omitempty"`
	AsClaimed bool     `json:"as_claimed"`
	Summary   string   `json:"summary"`
	Reason    string   `json:"reason,omitempty"`
	Expected  string   `json:"expected,omitempty"`
	Observed  string   `json:"observed,omitempty"`
	Diff      []string `json:"diff,omitempty"`
	Evidence  string   `json:"evidence,omitempty"`
	Rerun     []string `json:"rerun,omitempty"`
	Error     string   `json:"error,omitempty"`
	// Exit is this trace's exit code on its own.
	Exit int `json:"exit"`

	verdict *replay.Verdict
}

func (r traceResult) failed(err error) traceResult {
	r.Outcome, r.Error, r.Exit = "error", err.Error(), exitCannotRun
	r.Summary = "could not run: " + err.Error()
	if errors.As(err, new(usageError)) {
		r.Exit, r.Summary = exitUsage, "usage: "+err.Error()
	}
	return r
}

func (r *traceResult) fill(t *traces.Trace, v replay.Verdict, j report.Judgement) {
	r.Trace, r.Outcome, r.Reason, r.verdict = t.Name, v.Outcome.String(), v.Reason, &v
	r.Variant, r.Violates = t.Expect.Variant, t.Expect.Violates
	if t.Expect.Variant != "" {
		d := t.Expect.DivergesAt
		r.PredictedStep = &d
	}
	if v.Outcome != replay.Match {
		s := v.Step
		r.Step = &s
	}
	if v.Outcome == replay.Diverged && v.Step != replay.FinalStep {
		r.Expected, r.Observed = tracefmt.Result(v.Op, *v.Expected), tracefmt.Result(v.Op, *v.Observed)
	}
	if v.Diff != "" {
		r.Diff = strings.Split(strings.TrimRight(v.Diff, "\n"), "\n")
	}
	r.Claim = map[report.Claim]string{report.ClaimNone: "none", report.ClaimMatch: "match", report.ClaimRefuse: "refuse"}[j.Claim]
	r.AsClaimed, r.Summary = j.AsClaimed, j.Summary
	switch {
	case j.AsClaimed:
		r.Exit = exitPass
	case v.Outcome == replay.Inconclusive:
		r.Exit = exitCannotRun
	default:
		r.Exit = exitFinding
	}
}

// rerunPath is the path a rerun command names: the evidence's copy of a trace read from stdin.
func (r traceResult) rerunPath(evidenceDir string) string {
	if r.File == "-" {
		return filepath.Join(evidenceDir, "trace.json")
	}
	return r.File
}

// exitOf combines per-trace exit codes: any finding wins, then a trace the options do not fit
// (usage), then any trace that could not run.
func exitOf(results []traceResult) int {
	code := exitPass
	for _, r := range results {
		switch {
		case r.Exit == exitFinding:
			return exitFinding
		case r.Exit == exitUsage:
			code = exitUsage
		case r.Exit == exitCannotRun && code != exitUsage:
			code = exitCannotRun
		}
	}
	return code
}

// writeResults prints the results and returns the error that makes the process exit as they say.
func writeResults(w, errw io.Writer, results []traceResult, o outputFlags) error {
	code := exitOf(results)
	if o.json {
		doc := struct {
			Results []traceResult `json:"results"`
			Exit    int           `json:"exit"`
		}{results, code}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return err
		}
	} else if len(results) == 1 && results[0].Exit == exitCannotRun && results[0].verdict == nil {
		fmt.Fprintf(errw, "pconform: %s\n", results[0].Summary)
	} else if len(results) == 1 && results[0].Exit == exitUsage {
		fmt.Fprintf(errw, "pconform: %s\nRun 'pconform replay --help' for usage.\n", results[0].Error)
	} else {
		var b strings.Builder
		for i, r := range results {
			if len(results) > 1 && !o.quiet && i > 0 {
				b.WriteString("\n")
			}
			writeText(&b, r, o, len(results) > 1)
		}
		if len(results) > 1 {
			writeTable(&b, results)
		}
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	switch code {
	case exitFinding:
		return errFinding
	case exitUsage:
		return errUsageReported
	case exitCannotRun:
		return errCannotRun
	}
	return nil
}

func writeText(b *strings.Builder, r traceResult, o outputFlags, several bool) {
	prefix := ""
	if several {
		prefix = r.File + ": "
	}
	fmt.Fprintf(b, "%s%s\n", prefix, r.Summary)
	if o.quiet || r.verdict == nil {
		return
	}
	v := *r.verdict
	if !o.verbose {
		// Real tokens are random: printing them would make two runs differ.
		v.Tokens = replay.Tokens{}
		if v.Outcome == replay.Match {
			v.History = nil
		} else if n := len(v.History); n > historyTail+1 {
			v.History = append([]string{fmt.Sprintf("… %d earlier steps matched (-v shows them)", n-historyTail-1)}, v.History[n-historyTail-1:]...)
		}
	}
	_ = v.Report(b)
	if r.Evidence != "" {
		fmt.Fprintf(b, "evidence: %s\n", r.Evidence)
	}
	for _, c := range r.Rerun {
		fmt.Fprintf(b, "rerun: %s\n", c)
	}
}

func writeTable(b *strings.Builder, results []traceResult) {
	b.WriteString("\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRACE\tTARGET\tVERDICT\tRESULT")
	counts := map[int]int{}
	for _, r := range results {
		verdict := r.Outcome
		if r.Step != nil && r.Outcome == "diverged" {
			verdict = fmt.Sprintf("diverged at step #%d", *r.Step)
			if *r.Step == replay.FinalStep {
				verdict = "diverged at the final snapshot"
			}
		}
		result := map[int]string{exitPass: "as claimed", exitFinding: "FINDING", exitUsage: "USAGE", exitCannotRun: "COULD NOT RUN"}[r.Exit]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.File, r.Target, verdict, result)
		counts[r.Exit]++
	}
	_ = tw.Flush()
	usage := ""
	if n := counts[exitUsage]; n > 0 {
		usage = fmt.Sprintf(", %d usage errors", n)
	}
	fmt.Fprintf(b, "%d traces: %d as claimed, %d findings%s, %d could not run\n", len(results), counts[exitPass], counts[exitFinding], usage, counts[exitCannotRun])
}

// progress reports which trace is running, on a terminal only, redrawn in place.
type progress struct {
	w     io.Writer
	total int
	on    bool
}

func newProgress(w io.Writer, total int, quiet bool) *progress {
	return &progress{w: w, total: total, on: !quiet && total > 1 && isTerminal(w)}
}

func (p *progress) step(i int, name string) {
	if p.on {
		fmt.Fprintf(p.w, "\r\033[K[%d/%d] %s", i+1, p.total, name)
	}
}

func (p *progress) done() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// isTerminal reports whether w is a character device (a terminal), not a file or a pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
