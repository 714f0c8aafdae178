package txboundary

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"

	"github.com/pconform/pconform/analysis/internal/storeapi"
	"github.com/pconform/pconform/analysis/internal/suppress"
)

// Analyzer reports store calls inside a transaction's callback that do not carry the transaction.
var Analyzer = &analysis.Analyzer{
	Name:     "txboundary",
	Doc:      "report store calls that cross the transaction boundary\n\nInside an ExecTx callback or a handler's Effects, every store call must use the context the callback received (or one derived from it); a call with the outer context does not join the transaction.",
	URL:      "https://github.com/pconform/pconform/blob/main/docs/analyzers.md#txboundary",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

func run(pass *analysis.Pass) (any, error) {
	suppress.Install(pass)
	insp := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	for cur := range insp.Root().Preorder((*ast.FuncLit)(nil)) {
		if isCallback(pass, cur) && !insideCallback(pass, cur) {
			checkCallback(pass, cur)
		}
	}
	return nil, nil
}

// insideCallback reports whether the literal at cur lies in another callback, which checks it
// with its own (checkCallback).
func insideCallback(pass *analysis.Pass, cur inspector.Cursor) bool {
	for f := range cur.Parent().Enclosing((*ast.FuncLit)(nil)) {
		if isCallback(pass, f) {
			return true
		}
	}
	return false
}

// isCallback reports whether the function literal at cur runs inside a store transaction: an
// ExecTx callback or an Effects value.
func isCallback(pass *analysis.Pass, cur inspector.Cursor) bool {
	lit := cur.Node().(*ast.FuncLit)
	if lit.Type.Params == nil || len(lit.Type.Params.List) != 1 || !storeapi.IsContext(pass.TypesInfo.TypeOf(lit.Type.Params.List[0].Type)) {
		return false
	}
	switch parent := cur.Parent().Node().(type) {
	case *ast.CallExpr:
		if len(parent.Args) > 0 && parent.Args[len(parent.Args)-1] == lit && isExecTx(pass, parent) {
			return true
		}
		// A conversion Effects(func...).
		if tv, ok := pass.TypesInfo.Types[parent.Fun]; ok && tv.IsType() && storeapi.IsNamed(tv.Type, "Effects") {
			return true
		}
	case *ast.ReturnStmt:
		sig := enclosingSignature(pass, cur.Parent())
		if sig == nil || sig.Results().Len() != len(parent.Results) {
			return false
		}
		for i, r := range parent.Results {
			if r == lit {
				return storeapi.IsNamed(sig.Results().At(i).Type(), "Effects")
			}
		}
	case *ast.AssignStmt:
		for i, r := range parent.Rhs {
			if r == lit && i < len(parent.Lhs) {
				return storeapi.IsNamed(pass.TypesInfo.TypeOf(parent.Lhs[i]), "Effects")
			}
		}
	case *ast.ValueSpec:
		for i, v := range parent.Values {
			if v == lit && i < len(parent.Names) {
				return storeapi.IsNamed(pass.TypesInfo.TypeOf(parent.Names[i]), "Effects")
			}
		}
	}
	return false
}

// enclosingSignature is the signature of the function whose return statement is at cur.
func enclosingSignature(pass *analysis.Pass, cur inspector.Cursor) *types.Signature {
	for f := range cur.Enclosing((*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)) {
		switch n := f.Node().(type) {
		case *ast.FuncLit:
			sig, _ := pass.TypesInfo.TypeOf(n).(*types.Signature)
			return sig
		case *ast.FuncDecl:
			if fn, ok := pass.TypesInfo.Defs[n.Name].(*types.Func); ok {
				return fn.Type().(*types.Signature)
			}
			return nil
		}
	}
	return nil
}

// isExecTx reports whether call runs a store transaction: a method named ExecTx of the store's
// shape.
func isExecTx(pass *analysis.Pass, call *ast.CallExpr) bool {
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	if !ok || fn.Name() != "ExecTx" {
		return false
	}
	sig, ok := fn.Type().(*types.Signature)
	return ok && sig.Recv() != nil && storeapi.IsExecTxSignature(sig)
}

// isStoreCall reports whether call is a store call that takes a context first: a method of
// actordelivery.Store, or a transaction runner named ExecTx on any receiver.
func isStoreCall(pass *analysis.Pass, call *ast.CallExpr) bool {
	if len(call.Args) == 0 {
		return false
	}
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	if !ok {
		return false
	}
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil || sig.Params().Len() == 0 || !storeapi.IsContext(sig.Params().At(0).Type()) {
		return false
	}
	return storeapi.IsMethod(fn, "Store", fn.Name()) || isExecTx(pass, call)
}

// checkCallback reports the store calls in the body of the callback at cur whose context does not
// derive from the callback's context parameter. A nested callback's parameter counts as derived:
// its calls run in its runner's transaction, and the runner's own call is judged here.
func checkCallback(pass *analysis.Pass, cur inspector.Cursor) {
	lit := cur.Node().(*ast.FuncLit)
	param := paramOf(pass, lit)
	derived := map[*types.Var]bool{}
	if param != nil {
		derived[param] = true
	}
	body := func(f func(c inspector.Cursor) bool) {
		cur.Inspect(nil, func(c inspector.Cursor) bool {
			if _, isGo := c.Node().(*ast.GoStmt); isGo {
				return false // another goroutine: not the callback's
			}
			return f(c)
		})
	}
	// Locals assigned from a derived context are derived. Repeat until nothing changes: inside a
	// loop an assignment may depend on one that follows it.
	for changed := true; changed; {
		changed = false
		body(func(c inspector.Cursor) bool {
			if v := derivedBy(pass, c, derived); v != nil && !derived[v] {
				derived[v] = true
				changed = true
			}
			return true
		})
	}
	body(func(c inspector.Cursor) bool {
		call, ok := c.Node().(*ast.CallExpr)
		if ok && isStoreCall(pass, call) && !derives(pass, call.Args[0], derived) {
			report(pass, call, param)
		}
		return true
	})
}

// paramOf is the context parameter of a callback literal; nil when it is unnamed.
func paramOf(pass *analysis.Pass, lit *ast.FuncLit) *types.Var {
	field := lit.Type.Params.List[0]
	if len(field.Names) != 1 {
		return nil
	}
	v, _ := pass.TypesInfo.Defs[field.Names[0]].(*types.Var)
	return v
}

// derivedBy returns the context variable the node at c makes derived: a local assigned or
// declared from a derived context, or the parameter of a nested callback. nil otherwise.
func derivedBy(pass *analysis.Pass, c inspector.Cursor, derived map[*types.Var]bool) *types.Var {
	if lit, ok := c.Node().(*ast.FuncLit); ok {
		// A nested callback runs in a transaction of its own runner: its calls are judged
		// against its parameter, and the runner's call against this callback's context.
		if isCallback(pass, c) {
			return paramOf(pass, lit)
		}
		return nil
	}
	lhs, rhs := assignment(c.Node())
	for i, l := range lhs {
		id, ok := l.(*ast.Ident)
		if !ok {
			continue
		}
		v, _ := pass.TypesInfo.ObjectOf(id).(*types.Var)
		if v == nil || derived[v] || !storeapi.IsContext(v.Type()) {
			continue
		}
		var r ast.Expr
		switch {
		case len(rhs) == len(lhs):
			r = rhs[i]
		case len(rhs) == 1: // ctx, cancel := context.WithTimeout(...)
			r = rhs[0]
		default:
			continue
		}
		if derives(pass, r, derived) {
			return v
		}
	}
	return nil
}

// assignment returns the two sides of an assignment or a var declaration.
func assignment(n ast.Node) (lhs, rhs []ast.Expr) {
	switch n := n.(type) {
	case *ast.AssignStmt:
		return n.Lhs, n.Rhs
	case *ast.ValueSpec:
		for _, name := range n.Names {
			lhs = append(lhs, name)
		}
		return lhs, n.Values
	}
	return nil, nil
}

// derives reports whether e is a context derived from the callback's: a derived variable, or a
// call with a derived argument (context.WithTimeout(ctx, d), context.WithoutCancel(ctx)).
func derives(pass *analysis.Pass, e ast.Expr, derived map[*types.Var]bool) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		v, _ := pass.TypesInfo.ObjectOf(e).(*types.Var)
		return v != nil && derived[v]
	case *ast.CallExpr:
		for _, a := range e.Args {
			if derives(pass, a, derived) {
				return true
			}
		}
	}
	return false
}

func report(pass *analysis.Pass, call *ast.CallExpr, param *types.Var) {
	arg := call.Args[0]
	d := analysis.Diagnostic{
		Pos: arg.Pos(),
		End: arg.End(),
		Message: "store call inside a transaction's callback with a context that does not carry the transaction: " +
			"it does not join the transaction (the store refuses it with ErrOutsideTransaction)",
	}
	if param != nil && param.Name() != "_" && inScope(pass, param, arg.Pos()) {
		d.Message += "; pass " + param.Name()
		d.SuggestedFixes = []analysis.SuggestedFix{{
			Message:   "pass the callback's context " + param.Name(),
			TextEdits: []analysis.TextEdit{{Pos: arg.Pos(), End: arg.End(), NewText: []byte(param.Name())}},
		}}
	}
	pass.Report(d)
}

// inScope reports whether param's name, written at pos, refers to param (no closer declaration
// hides it).
func inScope(pass *analysis.Pass, param *types.Var, pos token.Pos) bool {
	s := pass.Pkg.Scope().Innermost(pos)
	if s == nil {
		return false
	}
	_, obj := s.LookupParent(param.Name(), pos)
	return obj == param
}
