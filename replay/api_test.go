package replay_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxExported bounds replay's public API (issue 27: about 40 names). A new exported name needs a
// reason to live here rather than in internal/targets, internal/report or internal/tracefmt.
const maxExported = 40

// TestExportedAPISize counts replay's exported package-level names (types, functions, constants,
// variables; not methods or fields) in its non-test files, and fails above maxExported.
func TestExportedAPISize(t *testing.T) {
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatal("found no exported names: the test reads the wrong directory")
	}
	if len(names) > maxExported {
		t.Errorf("replay exports %d names, more than %d:\n%s", len(names), maxExported, strings.Join(names, "\n"))
	}
	t.Logf("replay exports %d names: %s", len(names), strings.Join(names, " "))
}
