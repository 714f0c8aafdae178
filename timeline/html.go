package timeline

import (
	_ "embed"
	"html/template"
	"io"
	"slices"
)

//go:embed timeline.html.tmpl
var pageTemplate string

// WriteHTML renders the timeline as one self-contained HTML page (inline CSS, one small inline
// script, no external resources). At the top, what the trace is: the violated property (id
// "violated-property"), the variant (id "variant"), the origin, the predicted step and the
// verdict; then a legend (id "legend") with the side chooser (inputs named "side": as it ran,
// expected, observed). A column per lane that a shown step takes part in, the others folded into
// one "other lanes" column, and a row per step, each with an anchor (id "step-N"; the diverging
// row's is "divergence", with class "divergence"): the step sits in the first column it touches,
// and every column it touches shows that lane's state after it, drawn from one side only (class
// "sd-exp" or "sd-obs"; the diverging row shows both side by side). Steps that lead to the focus
// have class "causal"; the runs between them are collapsed into one row each (class "gap",
// data-first and data-last name the steps it stands for); the page's script lands a link to any
// of those steps, #step-N, on that row, marked with class "reached" as a link target is. Expected
// values are blue, observed ones orange. An observed run also gets its interval view (an inline
// SVG, id "intervals", see [Intervals]): a click on a bar marks every bar and step row of its
// messages with class "followed". The final-state diff closes the page (id "final").
func WriteHTML(w io.Writer, tl Timeline) error {
	tmpl, err := template.New("timeline").Funcs(template.FuncMap{
		"cell": tl.Cell,
		"kind": func(lane string) string { return tl.LaneKinds[lane] },
		"add":  func(a, b int) int { return a + b },
	}).Parse(pageTemplate)
	if err != nil {
		return err
	}
	return tmpl.Execute(w, tl)
}

// Cell is what one column of one row shows.
type Cell struct {
	// Touched: the step takes part in the column's lane (or, for OtherLanes, in one it stands for).
	Touched bool
	// Here: the step itself is drawn in this column (the first one it touches).
	Here bool
	// Expected and Observed are the lane states after the step on each side.
	Expected, Observed []string
}

// Cell lays out column col of row r.
func (tl Timeline) Cell(r Row, col string) Cell {
	lanes := []string{col}
	if col == OtherLanes {
		lanes = tl.Others
	}
	var c Cell
	first := ""
	for _, l := range tl.Columns {
		if tl.columnTouched(r, l) {
			first = l
			break
		}
	}
	c.Here = first == col
	for _, l := range lanes {
		if !slices.Contains(r.Lanes, l) {
			continue
		}
		c.Touched = true
		prefix := ""
		if col == OtherLanes {
			prefix = l + ": "
		}
		for _, s := range r.ExpectedState[l] {
			c.Expected = append(c.Expected, prefix+s)
		}
		for _, s := range r.ObservedState[l] {
			c.Observed = append(c.Observed, prefix+s)
		}
	}
	return c
}

func (tl Timeline) columnTouched(r Row, col string) bool {
	if col == OtherLanes {
		for _, l := range tl.Others {
			if slices.Contains(r.Lanes, l) {
				return true
			}
		}
		return false
	}
	return slices.Contains(r.Lanes, col)
}
