package cursorx

import (
	"go/ast"

	"golang.org/x/tools/go/ast/inspector"
)

// Func returns the innermost function (declaration with a body, or literal) enclosing c; ok is
// false for package-level code.
func Func(c inspector.Cursor) (fn inspector.Cursor, ok bool) {
	for f := range c.Enclosing((*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)) {
		if d, isDecl := f.Node().(*ast.FuncDecl); isDecl && d.Body == nil {
			continue
		}
		return f, true
	}
	return inspector.Cursor{}, false
}

// TopLevel reports whether the function literal at c lies outside every other function (a
// package-level variable's initialiser). Analyzers that look at a function together with its
// closures visit declarations and top-level literals only.
func TopLevel(c inspector.Cursor) bool {
	for range c.Parent().Enclosing((*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)) {
		return false
	}
	return true
}

// Exits reports whether a block ends by leaving the function (return or panic), so that the
// statements after an if with this body run only when its condition was false.
func Exits(b *ast.BlockStmt) bool {
	if len(b.List) == 0 {
		return false
	}
	switch last := b.List[len(b.List)-1].(type) {
	case *ast.ReturnStmt:
		return true
	case *ast.ExprStmt:
		if call, ok := last.X.(*ast.CallExpr); ok {
			id, ok := call.Fun.(*ast.Ident)
			return ok && id.Name == "panic"
		}
	}
	return false
}

// Loop returns the innermost for or range statement enclosing c that lies inside within; ok is
// false when c is not in a loop of that function.
func Loop(c, within inspector.Cursor) (loop inspector.Cursor, ok bool) {
	for l := range c.Enclosing((*ast.ForStmt)(nil), (*ast.RangeStmt)(nil), (*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)) {
		switch l.Node().(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			return inspector.Cursor{}, false
		}
		if within.Contains(l) {
			return l, true
		}
	}
	return inspector.Cursor{}, false
}

// Stmt returns the statement containing c whose parent is a statement list (a block or a case
// body), so that the statements after it in the same list can be visited.
func Stmt(c inspector.Cursor) (stmt inspector.Cursor, ok bool) {
	for s := c; s.Node() != nil; s = s.Parent() {
		if _, isStmt := s.Node().(ast.Stmt); !isStmt {
			continue
		}
		switch s.Parent().Node().(type) {
		case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
			return s, true
		}
	}
	return inspector.Cursor{}, false
}

// Unparen returns the outermost parenthesised expression around c, so a walk up from an
// expression skips redundant parentheses.
func Unparen(c inspector.Cursor) inspector.Cursor {
	for {
		if _, ok := c.Parent().Node().(*ast.ParenExpr); !ok {
			return c
		}
		c = c.Parent()
	}
}
