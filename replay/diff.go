package replay

import (
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/traces"
)

// The engine decides equality with go-cmp but renders differences itself: go-cmp's text is
// deliberately unstable (it varies its spacing from run to run), and a report, an evidence file
// or a page must come out byte for byte the same each time.

// diffResults renders a step's expected and observed results as the fields that differ, one
// "- key=value" / "+ key=value" line each, in the trace format's field order; "" when equal.
func diffResults(op traces.Op, want, got traces.Result) string {
	if cmp.Equal(want, got, cmpOptions) {
		return ""
	}
	return renderDiff(DiffFields(resultParts(op, want), resultParts(op, got)))
}

// diffSnapshots renders the rows that differ between two canonical snapshots: "- row" for a row
// only the expected snapshot has, "+ row" for one only the observed snapshot has, rows in the
// snapshot's canonical order; "" when equal.
func diffSnapshots(want, got traces.Snapshot) string {
	if cmp.Equal(want, got, cmpOptions) {
		return ""
	}
	return renderDiff(DiffFields(formatSnapshot(want), formatSnapshot(got)))
}

// DiffFields compares two lists of lines as sets kept in order: lines both have are dropped,
// the others come out signed ("- " expected only, "+ " observed only), each expected line before
// the observed lines that follow it. Linear in the lengths of the lists.
func DiffFields(expected, observed []string) []string {
	inExp, inObs := make(map[string]bool, len(expected)), make(map[string]bool, len(observed))
	for _, e := range expected {
		inExp[e] = true
	}
	for _, o := range observed {
		inObs[o] = true
	}
	var out []string
	j := 0
	for _, e := range expected {
		if !inObs[e] {
			out = append(out, "- "+e)
			continue
		}
		for ; j < len(observed) && observed[j] != e; j++ {
			if !inExp[observed[j]] {
				out = append(out, "+ "+observed[j])
			}
		}
		if j < len(observed) {
			j++
		}
	}
	for ; j < len(observed); j++ {
		if !inExp[observed[j]] {
			out = append(out, "+ "+observed[j])
		}
	}
	return out
}

func renderDiff(lines []string) string {
	if len(lines) == 0 {
		// Equal renderings of unequal values: say so rather than print nothing.
		return "(the values differ only in ways their rendering does not show)\n"
	}
	return strings.Join(lines, "\n") + "\n"
}
