package replay

import (
	"slices"
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
// the others come out signed, each expected line before the observed lines that follow it.
func DiffFields(expected, observed []string) []string {
	var out []string
	j := 0
	for _, e := range expected {
		if k := slices.Index(observed[j:], e); k >= 0 {
			for _, o := range observed[j : j+k] {
				out = append(out, "+ "+o)
			}
			j += k + 1
			continue
		}
		out = append(out, "- "+e)
	}
	for _, o := range observed[j:] {
		out = append(out, "+ "+o)
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
