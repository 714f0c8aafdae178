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
// verdict; then a legend (id "legend"). A column per lane (mailboxes, workers, publishers, the
// outbox) and a row per step, each with an anchor (id "step-N"; the diverging row's is
// "divergence", with class "divergence"): the step sits in the first lane it touches, and every
// lane it touches shows that lane's state after it. Steps far from the divergence are collapsed
// into one row per run (class "gap", data-first and data-last name the steps it stands for); the
// page's script lands a link to any of those steps, #step-N, on that row, marked with class
// "reached" as a link target is. Expected values are blue, observed ones orange. The final-state diff
// closes the page (id "final").
func WriteHTML(w io.Writer, tl Timeline) error {
	tmpl, err := template.New("timeline").Funcs(template.FuncMap{
		"touches": func(r Row, lane string) bool { return slices.Contains(r.Lanes, lane) },
		"kind":    func(lane string) string { return tl.LaneKinds[lane] },
		"add":     func(a, b int) int { return a + b },
	}).Parse(pageTemplate)
	if err != nil {
		return err
	}
	return tmpl.Execute(w, tl)
}
