package suppress

import (
	"go/ast"
	"go/token"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"

	"github.com/pconform/pconform/analysis/internal/directive"
)

// Ignore is the directive name.
const Ignore = "ignore"

// span is a suppressed region of one file.
type span struct{ from, to token.Pos }

// Filter holds the //pconform:ignore directives of one package that name one analyzer.
type Filter struct {
	fset  *token.FileSet
	spans []span
	// lines are suppressed lines, keyed by file name and line number.
	lines map[string]map[int]bool
}

// Install reads pass's files for directives naming pass's analyzer, reports the ones without a
// reason, and wraps pass.Report so that diagnostics inside a suppressed region are dropped. It
// must be called at the start of the analyzer's Run, before anything is reported.
func Install(pass *analysis.Pass) {
	f := New(pass.Fset, pass.Files, pass.Analyzer.Name, func(c *ast.Comment) {
		pass.Reportf(c.Pos(), "//pconform:%s %s needs a reason after the analyzer name", Ignore, pass.Analyzer.Name)
	})
	report := pass.Report
	pass.Report = func(d analysis.Diagnostic) {
		if !f.Covers(d.Pos) {
			report(d)
		}
	}
}

// New collects the directives in files that name analyzer; malformed is called for each one
// that has no reason (and so suppresses nothing).
func New(fset *token.FileSet, files []*ast.File, analyzer string, malformed func(*ast.Comment)) *Filter {
	f := &Filter{fset: fset, lines: make(map[string]map[int]bool)}
	for _, file := range files {
		docs := make(map[*ast.CommentGroup]*ast.FuncDecl)
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Doc != nil {
				docs[fd.Doc] = fd
			}
		}
		for _, g := range file.Comments {
			for _, c := range g.List {
				names, reason, ok := Parse(c.Text)
				if !ok || !slices.Contains(names, analyzer) {
					continue
				}
				if reason == "" {
					if malformed != nil {
						malformed(c)
					}
					continue
				}
				if fd, isDoc := docs[g]; isDoc {
					f.spans = append(f.spans, span{fd.Pos(), fd.End()})
					continue
				}
				f.addLine(file, c)
			}
		}
	}
	return f
}

// addLine suppresses the comment's own line when code precedes it there, else the next line.
func (f *Filter) addLine(file *ast.File, c *ast.Comment) {
	tf := f.fset.File(c.Pos())
	if tf == nil {
		return
	}
	line := tf.Line(c.Pos())
	if !codeBefore(file, tf, c.Pos(), line) {
		line++
	}
	name := tf.Name()
	if f.lines[name] == nil {
		f.lines[name] = make(map[int]bool)
	}
	f.lines[name][line] = true
}

// codeBefore reports whether some syntax of file starts on line before pos (a trailing comment),
// as opposed to a comment on a line of its own.
func codeBefore(file *ast.File, tf *token.File, pos token.Pos, line int) bool {
	lineStart := tf.LineStart(line)
	found := false
	ast.Inspect(file, func(n ast.Node) bool {
		if found || n == nil {
			return false
		}
		if _, isComment := n.(*ast.CommentGroup); isComment {
			return false
		}
		// Only nodes overlapping [lineStart, pos) can hold code before the comment.
		if n.End() <= lineStart || n.Pos() >= pos {
			return false
		}
		if n.Pos() >= lineStart {
			found = true
			return false
		}
		return true
	})
	return found
}

// Covers reports whether a diagnostic at pos is suppressed.
func (f *Filter) Covers(pos token.Pos) bool {
	for _, s := range f.spans {
		if s.from <= pos && pos < s.to {
			return true
		}
	}
	p := f.fset.Position(pos)
	return f.lines[p.Filename][p.Line]
}

// Parse splits an ignore directive's text into the analyzer names and the reason; ok is false
// when the comment is not an ignore directive.
func Parse(text string) (names []string, reason string, ok bool) {
	if directive.Parse(text) != Ignore {
		return nil, "", false
	}
	rest := strings.TrimSpace(strings.TrimPrefix(text, directive.Prefix+Ignore))
	list, reason, _ := strings.Cut(rest, " ")
	for n := range strings.SplitSeq(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names, strings.TrimSpace(reason), true
}
