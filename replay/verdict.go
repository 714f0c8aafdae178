package replay

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/traces"
)

// Outcome is the kind of a [Verdict].
type Outcome int

const (
	// Match: every step's result and the final snapshot (when the trace has one) agree.
	Match Outcome = iota
	// Diverged: the target's result at Verdict.Step differs from the expected one.
	Diverged
	// Inconclusive: the run stopped before the end without a divergence (its context ended, or
	// the target cannot run one of the trace's operations).
	Inconclusive
)

func (o Outcome) String() string {
	switch o {
	case Match:
		return "match"
	case Diverged:
		return "diverged"
	case Inconclusive:
		return "inconclusive"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// FinalStep is Verdict.Step when the final snapshot, not a step, diverged.
const FinalStep = -1

// Verdict is the result of one replay: a finding, never an error.
type Verdict struct {
	Outcome Outcome
	// Trace is the replayed trace's name.
	Trace string
	// Step is the index of the diverging step, FinalStep when the final snapshot diverged, or the
	// index of the step the run stopped before (Inconclusive). len(steps) on a Match.
	Step int
	// Op, At and Args describe the step at Step (zero for FinalStep and Match).
	Op   traces.Op
	At   int64
	Args traces.Args
	// Expected and Observed are the diverging step's results, Observed with the target's tokens
	// mapped to symbols (a token never bound shows as a negative symbol).
	Expected, Observed *traces.Result
	// Raw is the diverging step's observation with the target's real tokens.
	Raw *Observation
	// ExpectedFinal and ObservedFinal are the canonical final snapshots when Step == FinalStep.
	ExpectedFinal, ObservedFinal *traces.Snapshot
	// End is the target's whole state where the run ended (after the last step that ran: the
	// diverging one, or the last), tokens as symbols, canonical; nil when no snapshot was taken
	// there (a match of a trace without a final snapshot, an inconclusive run).
	End *traces.Snapshot
	// FinalCompared reports whether a final snapshot was compared (false when the trace has none).
	FinalCompared bool
	// Diff shows what differs, expected against observed: "- " lines expected, "+ " lines
	// observed (result fields for a step, rows for the final snapshot). Byte-stable.
	Diff string
	// Reason is one line saying why the verdict is what it is.
	Reason string
	// Rows are the target's rows whose ids the diverging step involves, from a snapshot taken at
	// the divergence, tokens as symbols. RowsErr is set instead when that snapshot failed.
	Rows    traces.Snapshot
	RowsErr string
	// History is the observed history, one line per step run, as tracefmt.Step renders it; the
	// last line is the diverging step.
	History []string
	// Tokens are the bindings at the end of the run, symbol to real token.
	Tokens Tokens
	// NotCompared lists, one line per step, the results left out of the comparison because the
	// target declares it does not report them (Capabilities.Unreported), where the trace expected
	// or the target reported something for them.
	NotCompared []string
}

// String is the verdict in one line.
func (v Verdict) String() string {
	switch {
	case v.Outcome == Match:
		return fmt.Sprintf("trace %q: match (%d steps, final %s)", v.Trace, v.Step, map[bool]string{true: "compared", false: "absent"}[v.FinalCompared])
	case v.Outcome == Diverged && v.Step == FinalStep:
		return fmt.Sprintf("trace %q: diverged at the final snapshot: %s", v.Trace, v.Reason)
	case v.Outcome == Diverged:
		return fmt.Sprintf("trace %q: diverged at step #%d (%s @%d): %s", v.Trace, v.Step, v.Op, v.At, v.Reason)
	default:
		return fmt.Sprintf("trace %q: inconclusive before step #%d: %s", v.Trace, v.Step, v.Reason)
	}
}

// Report writes the verdict for a person: the diverging step, expected against observed, the
// diff, the rows involved, the token bindings and the observed history.
func (v Verdict) Report(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "replay: %s\n", v)
	if v.Outcome == Diverged && v.Step != FinalStep {
		fmt.Fprintf(&b, "  step:     %s\n", tracefmt.Step(v.Step, v.Op, v.At, v.Args, *v.Expected))
		fmt.Fprintf(&b, "  expected: %s\n", tracefmt.Result(v.Op, *v.Expected))
		fmt.Fprintf(&b, "  observed: %s\n", tracefmt.Result(v.Op, *v.Observed))
	}
	if v.Diff != "" {
		b.WriteString("  diff (-expected +observed):\n")
		writeIndented(&b, "    ", strings.TrimRight(v.Diff, "\n"))
	}
	if v.Outcome == Diverged && v.Step != FinalStep {
		b.WriteString("  rows involved (target state at the divergence):\n")
		switch rows := tracefmt.SnapshotLines(v.Rows); {
		case v.RowsErr != "":
			fmt.Fprintf(&b, "    (snapshot failed: %s)\n", v.RowsErr)
		case len(rows) == 0:
			b.WriteString("    (none)\n")
		default:
			writeIndented(&b, "    ", strings.Join(rows, "\n"))
		}
	}
	for _, ns := range []struct {
		name   string
		tokens map[int]string
	}{{"lease tokens", v.Tokens.Lease}, {"claim tokens", v.Tokens.Claim}} {
		if len(ns.tokens) == 0 {
			continue
		}
		syms := make([]int, 0, len(ns.tokens))
		for s := range ns.tokens {
			syms = append(syms, s)
		}
		slices.Sort(syms)
		parts := make([]string, len(syms))
		for i, s := range syms {
			parts[i] = fmt.Sprintf("%d=%s", s, ns.tokens[s])
		}
		fmt.Fprintf(&b, "  %s: %s\n", ns.name, strings.Join(parts, " "))
	}
	if len(v.NotCompared) > 0 {
		b.WriteString("  not compared (results the target declares it does not report):\n")
		writeIndented(&b, "    ", strings.Join(v.NotCompared, "\n"))
	}
	if len(v.History) > 0 {
		b.WriteString("  history (observed):\n")
		writeIndented(&b, "    ", strings.Join(v.History, "\n"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeIndented(b *strings.Builder, indent, text string) {
	for _, line := range strings.Split(text, "\n") {
		b.WriteString(indent)
		b.WriteString(line)
		b.WriteString("\n")
	}
}
