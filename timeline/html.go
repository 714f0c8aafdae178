package timeline

import (
	_ "embed"
	"html/template"
	"io"
	"slices"
)

//go:embed timeline.html.tmpl
var pageTemplate string

// WriteHTML renders the timeline as one self-contained HTML page (inline CSS, no scripts or
// external resources): a column per lane, a row per step; each step's cell sits in the lanes it
// touches. The diverging row carries the class "divergence" and the id "divergence", and shows the
// expected and observed values side by side; a summary at the top links to it.
func WriteHTML(w io.Writer, tl Timeline) error {
	tmpl, err := template.New("timeline").Funcs(template.FuncMap{
		"touches": func(r Row, lane string) bool { return slices.Contains(r.Lanes, lane) },
	}).Parse(pageTemplate)
	if err != nil {
		return err
	}
	return tmpl.Execute(w, tl)
}
