package timeline

import (
	"fmt"
	"io"
	"strings"
)

// WriteText renders the timeline for a terminal: a header, then per step one line
// "#i @t [lanes] op args" followed by the expected result, the observed one when it differs, and
// the rows the step touched. The divergence, if any, is marked with ">>" and repeated in full at
// the end.
func WriteText(w io.Writer, tl Timeline) error {
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s (%s)\n", tl.Trace, tl.Origin)
	for _, l := range tl.Header() {
		fmt.Fprintf(&b, "%s: %s\n", l.Label, l.Text)
	}
	if tl.Target != "" {
		fmt.Fprintf(&b, "replayed against %s: %s\n", tl.Target, tl.Verdict)
		fmt.Fprintf(&b, "verdict: %s\n", tl.Claim)
	}
	fmt.Fprintf(&b, "lanes: %s\n\n", strings.Join(tl.Lanes, ", "))
	for _, r := range tl.Rows {
		if r.Gap > 0 {
			fmt.Fprintf(&b, "   … %s collapsed (--window -1 shows every step)\n", r.GapText())
			continue
		}
		mark := "  "
		switch r.State {
		case "diverged":
			mark = ">>"
		case "not-run":
			mark = " ."
		}
		fmt.Fprintf(&b, "%s #%-3d @%-4d [%s] %s %s\n", mark, r.Index, r.At, strings.Join(r.Lanes, ","), r.Op, r.Args)
		fmt.Fprintf(&b, "          expected: %s\n", r.Expected)
		if r.State == "diverged" {
			fmt.Fprintf(&b, "          observed: %s\n", r.Observed)
		}
		for _, l := range tl.Lanes {
			for _, row := range r.LaneState[l] {
				fmt.Fprintf(&b, "          | %s: %s\n", l, row)
			}
		}
	}
	if d := tl.Divergence; d != nil {
		b.WriteString("\n")
		if d.Step >= 0 {
			fmt.Fprintf(&b, "divergence at step #%d: %s\n", d.Step, d.Reason)
			fmt.Fprintf(&b, "  expected: %s\n  observed: %s\n", d.Expected, d.Observed)
		} else {
			fmt.Fprintf(&b, "divergence at the final snapshot: %s\n", d.Reason)
		}
		if d.Diff != "" {
			b.WriteString("  diff (-expected +observed):\n")
			for _, line := range strings.Split(strings.TrimRight(d.Diff, "\n"), "\n") {
				fmt.Fprintf(&b, "    %s\n", line)
			}
		}
		if len(d.Rows) > 0 {
			b.WriteString("  rows involved:\n")
			for _, row := range d.Rows {
				fmt.Fprintf(&b, "    %s\n", row)
			}
		}
	}
	if tl.FinalNote != "" {
		fmt.Fprintf(&b, "\nfinal state (%s):\n", tl.FinalNote)
		if len(tl.FinalDiff) == 0 {
			b.WriteString("  no difference\n")
		}
		for _, l := range tl.FinalDiff {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
