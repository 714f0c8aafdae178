package storeapi

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"testing"
)

const storeSrc = `package actordelivery

import (
	"context"
	"time"
)

type Store struct{}

func (s *Store) ExecTx(ctx context.Context, readOnly bool, fn func(context.Context) error) error { return nil }

type Message struct {
	ID          string
	Attempts    int
	MaxAttempts int
	Token       string
}

type DeadLetter struct {
	ID       string
	Attempts int
}

type Delivery struct {
	Message Message
}

type Path int

const (
	PathLeased Path = iota
	PathLeaseless
)

func EffectiveAttempts(stored int, path Path) int { return stored }

func (s *Store) Lease(ctx context.Context, mailbox string, d time.Duration) (*Message, error) { return nil, nil }
`

const clientSrc = `package client

import (
	"context"

	ad "github.com/pconform/pconform/actordelivery"
)

type Message struct{ Attempts int }

type fake struct{}

func (fake) ExecTx(ctx context.Context, ro bool, fn func(context.Context) error) error { return nil }
func (fake) Run(ctx context.Context, ro int, fn func(context.Context) error) error   { return nil }

var (
	d  ad.Delivery
	dl ad.DeadLetter
	m  Message
	f  fake

	a1 = d.Message.Attempts
	a2 = dl.Attempts
	a3 = m.Attempts

	hook  func(int, ad.Path) int
	other func(int, int) int
	c     = ad.PathLeaseless
)
`

// load type-checks the stand-in store under its real import path and a client of it.
func load(t *testing.T) (*types.Package, *types.Info) {
	t.Helper()
	fset := token.NewFileSet()
	std := importer.ForCompiler(fset, "source", nil)
	check := func(path, src string, imp types.Importer, info *types.Info) *types.Package {
		f, err := parser.ParseFile(fset, path+".go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		conf := types.Config{Importer: imp}
		pkg, err := conf.Check(path, fset, []*ast.File{f}, info)
		if err != nil {
			t.Fatal(err)
		}
		return pkg
	}
	store := check(PkgPath, storeSrc, std, nil)
	imp := importerFunc(func(path string) (*types.Package, error) {
		if path == PkgPath {
			return store, nil
		}
		return std.Import(path)
	})
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Uses: map[*ast.Ident]types.Object{}}
	return check("client", clientSrc, imp, info), info
}

type importerFunc func(string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

func TestRecognition(t *testing.T) {
	client, info := load(t)
	fields := map[string]types.Object{}
	for sel, s := range info.Selections {
		if s.Kind() == types.FieldVal {
			fields[types.ExprString(sel)] = s.Obj()
		}
	}
	tests := []struct {
		expr string
		want bool
	}{
		{"d.Message.Attempts", true}, // through the embedding struct
		{"dl.Attempts", false},       // DeadLetter's count is final, not Message's
		{"m.Attempts", false},        // same name, another package
	}
	for _, tt := range tests {
		obj, ok := fields[tt.expr]
		if !ok {
			t.Fatalf("selection %s not found", tt.expr)
		}
		if got := IsField(obj, "Message", "Attempts"); got != tt.want {
			t.Errorf("IsField(%s, Message, Attempts) = %v, want %v", tt.expr, got, tt.want)
		}
	}

	scope := client.Scope()
	typeOf := func(name string) types.Type { return scope.Lookup(name).Type() }
	if !IsEffectiveAttemptsSignature(typeOf("hook")) {
		t.Error("func(int, Path) int is not recognised as the effective-attempts shape")
	}
	if IsEffectiveAttemptsSignature(typeOf("other")) {
		t.Error("func(int, int) int is taken for the effective-attempts shape")
	}
	if !IsNamed(typeOf("d"), "Delivery") || IsNamed(typeOf("m"), "Message") {
		t.Error("IsNamed confuses the store's types with a client's")
	}
	fake := typeOf("f")
	mset := types.NewMethodSet(fake)
	for _, tt := range []struct {
		method string
		want   bool
	}{{"ExecTx", true}, {"Run", false}} {
		sig := mset.Lookup(nil, tt.method).Obj().Type().(*types.Signature)
		if got := IsExecTxSignature(sig); got != tt.want {
			t.Errorf("IsExecTxSignature(%s) = %v, want %v", tt.method, got, tt.want)
		}
	}

	storePkg := typeOf("d").(*types.Named).Obj().Pkg()
	if !IsFunc(storePkg.Scope().Lookup("EffectiveAttempts"), "EffectiveAttempts") {
		t.Error("EffectiveAttempts not recognised")
	}
	if !IsConst(storePkg.Scope().Lookup("PathLeaseless"), "PathLeaseless") {
		t.Error("PathLeaseless not recognised")
	}
	store := storePkg.Scope().Lookup("Store").Type()
	lease, _, _ := types.LookupFieldOrMethod(store, true, storePkg, "Lease")
	if !IsMethod(lease, "Store", "Lease") || IsMethod(lease, "Store", "ExecTx") {
		t.Error("IsMethod does not identify (*Store).Lease")
	}
}
