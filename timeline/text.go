package timeline

import (
	"fmt"
	"io"
	"strings"
)

// WriteText renders the timeline for a terminal: a header, then per step one line
// "#i @t [lanes] op args" followed by the expected result, the observed one when it differs, and
// the rows the step touched. A step that leads to the focus is marked "*"; the divergence, if
// any, is marked with ">>", shows both sides' lanes, and is repeated in full at the end. Every
// other row draws its lanes from one side: the observed one where the step ran, the expected one
// (marked "expected side") where it did not.
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
	fmt.Fprintf(&b, "expected: %s\n", tl.ExpectedSide)
	if tl.ObservedSide != "" {
		fmt.Fprintf(&b, "observed: %s\n", tl.ObservedSide)
	}
	fmt.Fprintf(&b, "lanes: %s\n", strings.Join(tl.Columns, ", "))
	if len(tl.Others) > 0 {
		fmt.Fprintf(&b, "%s (no shown step takes part in them alone): %s\n", OtherLanes, strings.Join(tl.Others, ", "))
	}
	b.WriteString("\n")
	for _, r := range tl.Rows {
		if r.Gap > 0 {
			fmt.Fprintf(&b, "   … %s collapsed (--window -1 shows every step)\n", r.GapText())
			continue
		}
		mark := "  "
		switch {
		case r.State == "diverged":
			mark = ">>"
		case r.State == "not-run":
			mark = " ."
		case r.Causal:
			mark = " *"
		}
		handles := ""
		if r.Handles != "" {
			handles = " handles " + r.Handles
		}
		fmt.Fprintf(&b, "%s #%-3d @%-4d [%s] %s %s%s\n", mark, r.Index, r.At, strings.Join(r.Lanes, ","), r.Op, r.Args, handles)
		fmt.Fprintf(&b, "          expected: %s\n", r.Expected)
		if r.State == "diverged" {
			fmt.Fprintf(&b, "          observed: %s\n", r.Observed)
			writeLanes(&b, tl, r.ExpectedState, "expected side: ")
			writeLanes(&b, tl, r.ObservedState, "observed side: ")
			continue
		}
		side, label := r.DefaultSide(), ""
		if side == SideExpected && r.State != "" {
			label = "expected side: "
		}
		writeLanes(&b, tl, r.LaneState(side), label)
	}
	if d := tl.Divergence; d != nil {
		b.WriteString("\n")
		if d.Step >= 0 {
			fmt.Fprintf(&b, "divergence at step #%d: %s\n", d.Step, d.Reason)
			fmt.Fprintf(&b, "  expected: %s\n    (%s)\n  observed: %s\n    (%s)\n", d.Expected, tl.ExpectedSide, d.Observed, tl.ObservedSide)
		} else {
			fmt.Fprintf(&b, "divergence at the final snapshot: %s\n", d.Reason)
		}
		if d.Diff != "" {
			b.WriteString("  diff (-expected +observed):\n")
			for _, line := range strings.Split(strings.TrimRight(d.Diff, "\n"), "\n") {
				fmt.Fprintf(&b, "    %s\n", line)
			}
		}
		if len(d.ExpectedRows) > 0 {
			b.WriteString("  rows involved, expected side:\n")
			for _, row := range d.ExpectedRows {
				fmt.Fprintf(&b, "    %s\n", row)
			}
		}
		if len(d.Rows) > 0 {
			b.WriteString("  rows involved, observed side:\n")
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

// writeLanes writes one side's lane states, in lane order.
func writeLanes(b *strings.Builder, tl Timeline, state map[string][]string, label string) {
	for _, l := range tl.Lanes {
		for _, row := range state[l] {
			fmt.Fprintf(b, "          | %s%s: %s\n", label, l, row)
		}
	}
}
