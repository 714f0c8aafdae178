package actordelivery

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestNoTestSeamsInTheAPI reads the package's exported API from its non-test sources and fails
// on a test seam: the hooks that used to be exported only so tests and replay could inject bugs
// (an attempts override on ConsumerOptions, Store.Notify), or any exported declaration whose
// comment says it exists for tests. A user's autocomplete should show only what a user calls;
// variants wrap the store from outside (internal/brokenstore, replay). OutboxStore is exported on
// purpose: it is how any caller (a tracing wrapper, replay's fault injection) stands between a
// Publisher and its store, and its comment says what a wrapper must keep.
func TestNoTestSeamsInTheAPI(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no source file of package actordelivery found")
	}
	d, err := doc.NewFromFiles(fset, files, "github.com/pconform/pconform/actordelivery")
	if err != nil {
		t.Fatal(err)
	}
	forTests := regexp.MustCompile(`(?i)\b(for|by|in) (the )?tests?\b|\btest[- ]only\b|\btest seam\b`)
	check := func(name, comment string) {
		if forTests.MatchString(comment) {
			t.Errorf("%s is exported and its comment says it serves tests: %q", name, strings.TrimSpace(comment))
		}
	}
	for _, f := range d.Funcs {
		check(f.Name, f.Doc)
	}
	for _, typ := range d.Types {
		check(typ.Name, typ.Doc)
		for _, m := range typ.Methods {
			check(typ.Name+"."+m.Name, m.Doc)
			if typ.Name == "Store" && m.Name == "Notify" {
				t.Errorf("Store.Notify is exported: wake-ups are the store's own business")
			}
		}
		for _, f := range typ.Funcs {
			check(f.Name, f.Doc)
		}
		for _, spec := range typ.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, field := range st.Fields.List {
				for _, n := range field.Names {
					if !n.IsExported() {
						continue
					}
					check(typ.Name+"."+n.Name, field.Doc.Text()+field.Comment.Text())
					if typ.Name == "ConsumerOptions" && n.Name == "Attempts" {
						t.Errorf("ConsumerOptions.Attempts is exported: the raw-attempts bug is a variant, built outside the package")
					}
				}
			}
		}
	}
}
