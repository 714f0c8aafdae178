package codelink

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/variants"
)

// module is the module path the source paths are relative to.
const module = "github.com/pconform/pconform"

// brokenstoreDir is where the variants' code lives, relative to the module root.
const brokenstoreDir = "internal/brokenstore"

// ErrNoSource is wrapped by Broken when a variant's location can only be found in the sources
// and none were given.
var ErrNoSource = errors.New("codelink: the variant's code is found in the sources, and none were given")

// Link is one place in the source.
type Link struct {
	// What says what the code does for the variant, in a few words.
	What string
	// Symbol is the Go function, as package.Func or package.(*Type).Method.
	Symbol string
	// File is relative to the module root; Line is 1-based.
	File string
	Line int
}

// String is "file:line symbol".
func (l Link) String() string { return fmt.Sprintf("%s:%d %s", l.File, l.Line, l.Symbol) }

// Broken lists where the code of the broken variant lives: the function it runs instead of the
// store's, or every use of the brokenstore.Rules field it sets; for a variant of the model's rule,
// the store function that keeps that rule (variants.Row.GoFunc). src is the module's source tree;
// it may be nil for a variant that replaces a function. A name that is no broken variant gives no
// links.
func Broken(variant string, src fs.FS) ([]Link, error) {
	if !slices.Contains(targets.BrokenVariants(), variant) {
		return nil, nil
	}
	parts, _ := targets.Parts(variant)
	var links []Link
	if parts.Handle != nil {
		links = append(links, funcLink("the consumer's handle, replaced", parts.Handle))
	}
	if parts.DeliverSplit != nil {
		links = append(links, funcLink("the split publisher's delivery, replaced", parts.DeliverSplit))
	}
	if parts.HandleBatch != nil {
		links = append(links, funcLink("the consumer's batch handle, replaced", parts.HandleBatch))
	}
	if parts.Rules != nil {
		fields := setFields(*parts.Rules)
		if len(fields) > 0 && src == nil {
			return links, fmt.Errorf("%w (%s: brokenstore.Rules.%s)", ErrNoSource, variant, strings.Join(fields, ", "))
		}
		for _, f := range fields {
			uses, stmts, err := ruleUses(src, f)
			if err != nil {
				return links, err
			}
			links = append(links, uses...)
			sql, err := storeStatements(src, stmts)
			if err != nil {
				return links, err
			}
			links = append(links, sql...)
		}
	}
	// A variant of the model's rule (variants.Row.OnModel) replaces no store code: its link is the
	// store function that keeps the rule it breaks.
	if row, ok := variants.Lookup(variant); ok && row.OnModel && row.GoFunc != "" {
		if src == nil {
			return links, fmt.Errorf("%w (%s: %s)", ErrNoSource, variant, row.GoFunc)
		}
		at, err := variants.Locate(src, row.GoFunc)
		if err != nil {
			return links, fmt.Errorf("codelink: %s: %w", variant, err)
		}
		file, line, _ := strings.Cut(at, ":")
		n, err := strconv.Atoi(line)
		if err != nil {
			return links, fmt.Errorf("codelink: %s: location %q has no line", variant, at)
		}
		links = append(links, Link{What: "the store's rule the model's variant breaks", Symbol: row.GoFunc, File: file, Line: n})
	}
	return links, nil
}

// funcLink places a function value by the binary's own line table.
func funcLink(what string, fn any) Link {
	f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
	file, line := f.FileLine(f.Entry())
	name := f.Name() // module/internal/brokenstore.HandleUnfencedAck
	pkg, sym := name, ""
	if i := strings.LastIndex(name, "/"); i >= 0 {
		if j := strings.Index(name[i:], "."); j >= 0 {
			pkg, sym = name[:i+j], name[i+j+1:]
		}
	}
	dir := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	return Link{What: what, Symbol: path.Base(pkg) + "." + sym, File: path.Join(dir, path.Base(file)), Line: line}
}

// setFields names the fields of rules that differ from the store's (the zero value).
func setFields(rules any) []string {
	v := reflect.ValueOf(rules)
	var out []string
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() && !v.Field(i).IsZero() {
			out = append(out, f.Name)
		}
	}
	return out
}

// ruleUses finds every read of the Rules field in the brokenstore sources (x.rules.Field or
// rules.Field), with the function it sits in, and the SQL statements the read decides: a
// statement field (e.qName) the guarded branch assigns, or the first one assigned after it
// from a variable the branch sets.
func ruleUses(src fs.FS, field string) ([]Link, []string, error) {
	names, err := fs.Glob(src, brokenstoreDir+"/*.go")
	if err != nil {
		return nil, nil, fmt.Errorf("codelink: %w", err)
	}
	var out []Link
	var stmts []string
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		data, err := fs.ReadFile(src, name)
		if err != nil {
			return nil, nil, fmt.Errorf("codelink: %w", err)
		}
		file, err := parser.ParseFile(fset, name, data, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, fmt.Errorf("codelink: %w", err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if b, ok := n.(*ast.BlockStmt); ok {
					stmts = append(stmts, decidedStatements(b.List, field)...)
				}
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != field || !isRules(sel.X) {
					return true
				}
				out = append(out, Link{What: "where the rule Rules." + field + " bends the store's",
					Symbol: "brokenstore." + funcName(fn), File: name, Line: fset.Position(sel.Pos()).Line})
				return true
			})
		}
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("codelink: no use of brokenstore.Rules.%s in %s", field, brokenstoreDir)
	}
	slices.Sort(stmts)
	return out, slices.Compact(stmts), nil
}

// decidedStatements finds, in one statement list, the if statements whose condition reads the
// rule and the SQL statement fields (qName) each decides.
func decidedStatements(list []ast.Stmt, field string) []string {
	var out []string
	for i, st := range list {
		ifs, ok := st.(*ast.IfStmt)
		if !ok || !reads(ifs.Cond, field) {
			continue
		}
		vars := map[string]bool{}
		for _, b := range ifs.Body.List {
			as, ok := b.(*ast.AssignStmt)
			if !ok {
				continue
			}
			for _, l := range as.Lhs {
				switch l := l.(type) {
				case *ast.Ident:
					vars[l.Name] = true
				case *ast.SelectorExpr:
					if isStatement(l.Sel.Name) {
						out = append(out, l.Sel.Name)
					}
				}
			}
		}
		if len(out) > 0 || len(vars) == 0 {
			continue
		}
	next:
		for _, later := range list[i+1:] {
			as, ok := later.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != 1 {
				continue
			}
			l, ok := as.Lhs[0].(*ast.SelectorExpr)
			if !ok || !isStatement(l.Sel.Name) {
				continue
			}
			found := false
			ast.Inspect(as.Rhs[0], func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && vars[id.Name] {
					found = true
				}
				return !found
			})
			if found {
				out = append(out, l.Sel.Name)
				break next
			}
		}
	}
	return out
}

// reads reports whether x reads rules.field.
func reads(x ast.Expr, field string) bool {
	found := false
	ast.Inspect(x, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == field && isRules(sel.X) {
			found = true
		}
		return !found
	})
	return found
}

// isStatement reports whether a field name is one of the SQL statements (qName).
func isStatement(name string) bool {
	return len(name) > 1 && name[0] == 'q' && name[1] >= 'A' && name[1] <= 'Z'
}

// storeQueries is the file that holds every SQL statement the store runs.
const storeQueries = "actordelivery/sqlite_queries.go"

// storeStatements places the store's own statements of the given names (the ones the variant's
// copies change); a name the store does not have is left out.
func storeStatements(src fs.FS, names []string) ([]Link, error) {
	if len(names) == 0 {
		return nil, nil
	}
	data, err := fs.ReadFile(src, storeQueries)
	if err != nil {
		return nil, fmt.Errorf("codelink: %w", err)
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, storeQueries, data, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("codelink: %w", err)
	}
	var out []Link
	for _, d := range file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			for _, id := range spec.(*ast.ValueSpec).Names {
				if slices.Contains(names, id.Name) {
					out = append(out, Link{What: "the store's SQL statement the variant's copy changes",
						Symbol: "actordelivery." + id.Name, File: storeQueries, Line: fset.Position(id.Pos()).Line})
				}
			}
		}
	}
	return out, nil
}

// isRules reports whether x is rules or something.rules.
func isRules(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name == "rules"
	case *ast.SelectorExpr:
		return x.Sel.Name == "rules"
	}
	return false
}

// funcName renders a declaration as Func or (*Type).Method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return fmt.Sprintf("(%s%s).%s", star, id.Name, fn.Name.Name)
	}
	return fn.Name.Name
}
