package actordelivery

import (
	"flag"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
	files := sourceFiles(t, fset, parser.ParseComments)
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

// TestExportedAPIIsRecorded lists the package's exported API (every exported constant, variable,
// function, type, method and struct field, with its signature) and compares it with the reviewed
// list in testdata/api.txt. An API change then shows in the diff of that file, where a reviewer
// asks of every new name whether a user calls it: a name only the project's tests or variants
// need is a seam and belongs in an internal package or a test file. After such a review, rewrite
// the list with: go test ./actordelivery/ -run TestExportedAPIIsRecorded -update-api
func TestExportedAPIIsRecorded(t *testing.T) {
	got := exportedAPI(t)
	path := filepath.Join("testdata", "api.txt")
	if *updateAPI {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go test ./actordelivery/ -run TestExportedAPIIsRecorded -update-api to write it", err)
	}
	if got == string(want) {
		return
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	var added, removed []string
	for _, l := range gotLines {
		if !slices.Contains(wantLines, l) {
			added = append(added, "+ "+l)
		}
	}
	for _, l := range wantLines {
		if !slices.Contains(gotLines, l) {
			removed = append(removed, "- "+l)
		}
	}
	t.Errorf("the exported API differs from %s:\n%s\nReview each new name (is it for users, or only for tests?), then rewrite the list: go test ./actordelivery/ -run TestExportedAPIIsRecorded -update-api",
		path, strings.Join(append(removed, added...), "\n"))
}

var updateAPI = flag.Bool("update-api", false, "TestExportedAPIIsRecorded: rewrite testdata/api.txt from the package's exported API")

// exportedAPI is one line per exported declaration of the package's non-test sources, sorted:
// its kind, name and signature as gofmt prints them, bodies and comments left out. A struct type
// lists its exported fields, an interface its methods.
func exportedAPI(t *testing.T) string {
	t.Helper()
	fset := token.NewFileSet()
	var lines []string
	show := func(node any) string {
		var b strings.Builder
		if err := printer.Fprint(&b, fset, node); err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	for _, f := range sourceFiles(t, fset, parser.SkipObjectResolution) {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				d.Body, d.Doc = nil, nil
				lines = append(lines, show(d))
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								lines = append(lines, d.Tok.String()+" "+n.Name)
							}
						}
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						lines = append(lines, typeLines(s, show)...)
					}
				}
			}
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// typeLines lists an exported type: its declaration, then each exported field of a struct or
// method of an interface on a line of its own.
func typeLines(s *ast.TypeSpec, show func(any) string) []string {
	name := s.Name.Name
	switch typ := s.Type.(type) {
	case *ast.StructType:
		lines := []string{"type " + name + " struct"}
		for _, f := range typ.Fields.List {
			if len(f.Names) == 0 {
				lines = append(lines, "type "+name+" struct, embeds "+show(f.Type))
			}
			for _, n := range f.Names {
				if n.IsExported() {
					lines = append(lines, "type "+name+" struct, field "+n.Name+" "+show(f.Type))
				}
			}
		}
		return lines
	case *ast.InterfaceType:
		lines := []string{"type " + name + " interface"}
		for _, m := range typ.Methods.List {
			for _, n := range m.Names {
				lines = append(lines, "type "+name+" interface, method "+n.Name+show(m.Type)[len("func"):])
			}
			if len(m.Names) == 0 {
				lines = append(lines, "type "+name+" interface, embeds "+show(m.Type))
			}
		}
		return lines
	}
	assign := " "
	if s.Assign.IsValid() {
		assign = " = "
	}
	return []string{"type " + name + assign + show(s.Type)}
}

// exportedRecv reports whether a method's receiver is an exported type.
func exportedRecv(recv *ast.FieldList) bool {
	if len(recv.List) == 0 {
		return false
	}
	typ := recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}

// sourceFiles parses the package's non-test sources with mode.
func sourceFiles(t *testing.T, fset *token.FileSet, mode parser.Mode) []*ast.File {
	t.Helper()
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
		f, err := parser.ParseFile(fset, name, nil, mode)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no source file of package actordelivery found")
	}
	return files
}
