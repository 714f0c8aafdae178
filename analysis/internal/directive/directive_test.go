package directive

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		text, want string
	}{
		{"//pconform:txcommit", "txcommit"},
		{"//pconform:txcommit the outbox commit", "txcommit"},
		{"//pconform:singleworker\tleaseless only", "singleworker"},
		{"// pconform:txcommit", ""}, // a space makes it prose, as with //go: directives
		{"//go:noinline", ""},
		{"/* pconform:txcommit */", ""},
		{"//pconform:", ""},
	}
	for _, tt := range tests {
		if got := Parse(tt.text); got != tt.want {
			t.Errorf("Parse(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestHasOnDeclarations(t *testing.T) {
	const src = `package p

// Commit finishes the unit of work.
//pconform:txcommit
func Commit() error { return nil }

// Plain has prose only: pconform:txcommit is mentioned, not declared.
func Plain() error { return nil }

type M struct {
	//pconform:storedattempts
	A int
	B int //pconform:storedattempts counted by the store
	C int
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]bool{}
	fields := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			funcs[n.Name.Name] = Has(TxCommit, n.Doc)
		case *ast.Field:
			for _, name := range n.Names {
				fields[name.Name] = Has(StoredAttempts, n.Doc, n.Comment)
			}
		}
		return true
	})
	wantFuncs := map[string]bool{"Commit": true, "Plain": false}
	wantFields := map[string]bool{"A": true, "B": true, "C": false}
	for k, v := range wantFuncs {
		if funcs[k] != v {
			t.Errorf("func %s: Has = %v, want %v", k, funcs[k], v)
		}
	}
	for k, v := range wantFields {
		if fields[k] != v {
			t.Errorf("field %s: Has = %v, want %v", k, fields[k], v)
		}
	}
}
