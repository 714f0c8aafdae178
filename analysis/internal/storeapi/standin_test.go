package storeapi

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// standInDir holds the analyzers' stand-in for the store (see analysis/testdata/README.md).
var standInDir = filepath.Join("..", "..", "testdata", "src", filepath.FromSlash(PkgPath))

// TestStandInMatchesStore checks the analyzers' stand-in store against the real actordelivery
// package: every exported name the stand-in declares must exist in the store with the same kind
// and type, every exported struct field with the same type, every exported method with the same
// signature. The analyzers key on these names and shapes, so a stand-in that drifts from the
// store would let an analyzer pass its tests while missing the real code.
func TestStandInMatchesStore(t *testing.T) {
	real := loadStore(t)
	stand := loadStandIn(t)
	scope := stand.Scope()
	checked := 0
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		checked++
		for _, problem := range compareObject(obj, real.Scope().Lookup(name)) {
			t.Errorf("stand-in %s: %s", name, problem)
		}
	}
	if checked == 0 {
		t.Fatal("the stand-in declares no exported names; the comparison checked nothing")
	}
}

// TestCompareObjectFindsDrift makes sure the comparison can fail: a stand-in whose shapes
// differ from the store is reported name by name.
func TestCompareObjectFindsDrift(t *testing.T) {
	real := check(t, `package actordelivery
import "context"
type Store struct{}
type Message struct{ Attempts int; Token string }
func (s *Store) Ack(ctx context.Context, id, token string) error { return nil }
`)
	stand := check(t, `package actordelivery
import "context"
type Store struct{}
type Message struct{ Attempts int64; Token string; Gone bool }
func (s *Store) Ack(ctx context.Context, id string) error { return nil }
func Missing() {}
`)
	var got []string
	for _, name := range stand.Scope().Names() {
		for _, p := range compareObject(stand.Scope().Lookup(name), real.Scope().Lookup(name)) {
			got = append(got, name+": "+p)
		}
	}
	for _, want := range []string{"Message: field Attempts", "Message: field Gone", "Missing: not declared", "Store: method Ack"} {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, want) }) {
			t.Errorf("no problem starting %q reported; got %q", want, got)
		}
	}
}

func compareObject(stand, real types.Object) []string {
	if real == nil || !real.Exported() {
		return []string{"not declared by the store"}
	}
	if kind(stand) != kind(real) {
		return []string{"a " + kind(stand) + " in the stand-in, a " + kind(real) + " in the store"}
	}
	if _, ok := stand.(*types.TypeName); !ok {
		if a, b := typeString(stand.Type()), typeString(real.Type()); a != b {
			return []string{"type " + a + ", the store has " + b}
		}
		return nil
	}
	var problems []string
	su, ru := stand.Type().Underlying(), real.Type().Underlying()
	if ss, ok := su.(*types.Struct); ok {
		rs, ok := ru.(*types.Struct)
		if !ok {
			return []string{"a struct in the stand-in, " + typeString(ru) + " in the store"}
		}
		for f := range ss.Fields() {
			if !f.Exported() {
				continue
			}
			rf := fieldNamed(rs, f.Name())
			switch {
			case rf == nil:
				problems = append(problems, "field "+f.Name()+" is not in the store")
			case typeString(f.Type()) != typeString(rf.Type()):
				problems = append(problems, "field "+f.Name()+" has type "+typeString(f.Type())+", the store "+typeString(rf.Type()))
			}
		}
	} else if _, isIface := su.(*types.Interface); !isIface && typeString(su) != typeString(ru) {
		problems = append(problems, "underlying type "+typeString(su)+", the store has "+typeString(ru))
	}
	smethods := types.NewMethodSet(types.NewPointer(stand.Type()))
	rmethods := types.NewMethodSet(types.NewPointer(real.Type()))
	for sel := range smethods.Methods() {
		m := sel.Obj()
		if !m.Exported() {
			continue
		}
		rsel := rmethods.Lookup(m.Pkg(), m.Name())
		if rsel == nil {
			rsel = rmethods.Lookup(real.Pkg(), m.Name())
		}
		switch {
		case rsel == nil:
			problems = append(problems, "method "+m.Name()+" is not in the store")
		case typeString(m.Type()) != typeString(rsel.Obj().Type()):
			problems = append(problems, "method "+m.Name()+" has signature "+typeString(m.Type())+", the store "+typeString(rsel.Obj().Type()))
		}
	}
	return problems
}

func fieldNamed(s *types.Struct, name string) *types.Var {
	for f := range s.Fields() {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

func kind(obj types.Object) string {
	switch obj.(type) {
	case *types.Func:
		return "func"
	case *types.Var:
		return "var"
	case *types.Const:
		return "const"
	case *types.TypeName:
		return "type"
	}
	return "other"
}

// typeString writes t with the store's own names unqualified and parameter names dropped, so
// the stand-in and the store, two packages with one path, compare by shape.
func typeString(t types.Type) string {
	if sig, ok := t.(*types.Signature); ok {
		t = types.NewSignatureType(nil, nil, nil, unnamed(sig.Params()), unnamed(sig.Results()), sig.Variadic())
	}
	return types.TypeString(t, func(p *types.Package) string {
		if p.Path() == PkgPath {
			return ""
		}
		return p.Path()
	})
}

func unnamed(t *types.Tuple) *types.Tuple {
	vars := make([]*types.Var, t.Len())
	for i := range vars {
		vars[i] = types.NewParam(token.NoPos, nil, "", t.At(i).Type())
	}
	return types.NewTuple(vars...)
}

func loadStore(t *testing.T) *types.Package {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes, Dir: "."}
	pkgs, err := packages.Load(cfg, PkgPath)
	if err != nil {
		t.Fatalf("loading %s: %v", PkgPath, err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 || pkgs[0].Types == nil {
		t.Fatalf("loading %s: %v", PkgPath, pkgs)
	}
	return pkgs[0].Types
}

func loadStandIn(t *testing.T) *types.Package {
	t.Helper()
	entries, err := os.ReadDir(standInDir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(standInDir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check(PkgPath, fset, files, nil)
	if err != nil {
		t.Fatalf("type-checking the stand-in: %v", err)
	}
	return pkg
}

func check(t *testing.T, src string) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&types.Config{Importer: importer.ForCompiler(fset, "source", nil)}).Check(PkgPath, fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}
