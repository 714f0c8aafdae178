package cursorx

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"golang.org/x/tools/go/ast/inspector"
)

const src = `package p

var top = func() int { return 1 }

func f(xs []int) {
	g := func() {}
	for range xs {
		if len(xs) > 0 {
			return
		}
		mark()
	}
	switch {
	case true:
		mark()
	}
	panicky := func() { panic("x") }
	_, _ = g, panicky
}

func mark() {}
`

func parse(t *testing.T) *inspector.Inspector {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	return inspector.New([]*ast.File{f})
}

func TestTopLevelAndFunc(t *testing.T) {
	in := parse(t)
	var got []bool
	for c := range in.Root().Preorder((*ast.FuncLit)(nil)) {
		got = append(got, TopLevel(c))
		fn, ok := Func(c)
		if !ok || fn.Node() != c.Node() {
			t.Errorf("Func of a function literal is not the literal itself")
		}
	}
	want := []bool{true, false, false} // top, g, panicky
	if len(got) != len(want) {
		t.Fatalf("found %d literals, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("literal %d: TopLevel = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestLoopStmtExits(t *testing.T) {
	in := parse(t)
	var calls []inspector.Cursor
	for c := range in.Root().Preorder((*ast.CallExpr)(nil)) {
		if id, ok := c.Node().(*ast.CallExpr).Fun.(*ast.Ident); ok && id.Name == "mark" {
			calls = append(calls, c)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("found %d mark() calls, want 2", len(calls))
	}
	fn, _ := Func(calls[0])
	if _, ok := Loop(calls[0], fn); !ok {
		t.Error("mark() inside the range loop: Loop found none")
	}
	if _, ok := Loop(calls[1], fn); ok {
		t.Error("mark() in the switch: Loop found one")
	}
	stmt, ok := Stmt(calls[1])
	if !ok {
		t.Fatal("Stmt found no statement list around mark()")
	}
	if _, isCase := stmt.Parent().Node().(*ast.CaseClause); !isCase {
		t.Errorf("Stmt's list is a %T, want the case clause", stmt.Parent().Node())
	}
	var exits []bool
	for c := range in.Root().Preorder((*ast.IfStmt)(nil), (*ast.FuncLit)(nil)) {
		switch n := c.Node().(type) {
		case *ast.IfStmt:
			exits = append(exits, Exits(n.Body))
		case *ast.FuncLit:
			exits = append(exits, Exits(n.Body))
		}
	}
	want := []bool{true, false, true, true} // top, g, the if, panicky
	for i := range want {
		if i >= len(exits) || exits[i] != want[i] {
			t.Fatalf("Exits over [top, g, if, panicky] = %v, want %v", exits, want)
		}
	}
}
