package variants

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// ErrNoSymbol is wrapped by Locate for a symbol the sources do not define.
var ErrNoSymbol = errors.New("variants: symbol not found")

// Locate finds where symbol is defined in the repository whose root src holds: a function or
// method as Row.GoFunc spells it ("actordelivery.(*Consumer).decide"), or a statement
// constant as "actordelivery." + Row.SQL. It returns "dir/file.go:line" from the root. It reads
// the package's non-test files; a symbol defined twice resolves to the first file in name
// order. An unknown symbol gives an error wrapping [ErrNoSymbol].
func Locate(src fs.FS, symbol string) (string, error) {
	pkg, _, ok := strings.Cut(symbol, ".")
	if !ok {
		return "", fmt.Errorf("variants: %q is not package.Symbol", symbol)
	}
	names, err := fs.Glob(src, path.Join(pkg, "*.go"))
	if err != nil {
		return "", fmt.Errorf("variants: %w", err)
	}
	sort.Strings(names)
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		data, err := fs.ReadFile(src, name)
		if err != nil {
			return "", fmt.Errorf("variants: %w", err)
		}
		f, err := parser.ParseFile(fset, name, data, parser.SkipObjectResolution)
		if err != nil {
			return "", fmt.Errorf("variants: %w", err)
		}
		if pos, ok := find(f, pkg, symbol); ok {
			return fmt.Sprintf("%s:%d", name, fset.Position(pos).Line), nil
		}
	}
	return "", fmt.Errorf("%w: %q in %s", ErrNoSymbol, symbol, pkg)
}

// find returns the position of the declaration in f that symbol names.
func find(f *ast.File, pkg, symbol string) (token.Pos, bool) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if funcSymbol(pkg, d) == symbol {
				return d.Pos(), true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if v, ok := s.(*ast.ValueSpec); ok {
					for _, n := range v.Names {
						if pkg+"."+n.Name == symbol {
							return n.Pos(), true
						}
					}
				}
			}
		}
	}
	return token.NoPos, false
}

// funcSymbol spells a function declaration as Row.GoFunc does.
func funcSymbol(pkg string, d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return pkg + "." + d.Name.Name
	}
	switch t := d.Recv.List[0].Type.(type) {
	case *ast.StarExpr:
		if id, ok := t.X.(*ast.Ident); ok {
			return fmt.Sprintf("%s.(*%s).%s", pkg, id.Name, d.Name.Name)
		}
	case *ast.Ident:
		return fmt.Sprintf("%s.(%s).%s", pkg, t.Name, d.Name.Name)
	}
	return ""
}

// SQLSymbol is the row's statement constant as [Locate] takes it ("actordelivery.qLease"); ""
// when the row names none.
func (r Row) SQLSymbol() string {
	if r.SQL == "" {
		return ""
	}
	return "actordelivery." + r.SQL
}
