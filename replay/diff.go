package replay

import (
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/internal/tracefmt"
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
	return renderDiff(tracefmt.DiffFields(tracefmt.ResultParts(op, want), tracefmt.ResultParts(op, got)))
}

// diffSnapshots renders the rows that differ between two canonical snapshots: "- row" for a row
// only the expected snapshot has, "+ row" for one only the observed snapshot has, rows in the
// snapshot's canonical order; "" when equal.
func diffSnapshots(want, got traces.Snapshot) string {
	if cmp.Equal(want, got, cmpOptions) {
		return ""
	}
	return renderDiff(tracefmt.DiffFields(tracefmt.SnapshotLines(want), tracefmt.SnapshotLines(got)))
}

func renderDiff(lines []string) string {
	if len(lines) == 0 {
		// Equal renderings of unequal values: say so rather than print nothing.
		return "(the values differ only in ways their rendering does not show)\n"
	}
	return strings.Join(lines, "\n") + "\n"
}
