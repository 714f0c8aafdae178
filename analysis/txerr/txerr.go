package txerr

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/edge"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"

	"github.com/pconform/pconform/analysis/internal/cursorx"
	"github.com/pconform/pconform/analysis/internal/directive"
	"github.com/pconform/pconform/analysis/internal/storeapi"
	"github.com/pconform/pconform/analysis/internal/suppress"
)

// Analyzer reports dropped transaction and commit errors.
var Analyzer = &analysis.Analyzer{
	Name:      "txerr",
	Doc:       "report dropped transaction and commit errors\n\nThe error of ExecTx, (*sql.Tx).Commit or a //pconform:txcommit function must be returned, logged or checked by a branch that returns or logs.",
	URL:       "https://github.com/pconform/pconform/blob/main/docs/analyzers.md#txerr",
	Requires:  []*analysis.Analyzer{inspect.Analyzer},
	FactTypes: []analysis.Fact{(*TxCommit)(nil)},
	Run:       run,
}

// TxCommit is the fact that a function's error result is a transaction outcome. It is exported
// for every function or interface method marked //pconform:txcommit.
type TxCommit struct{}

// AFact marks TxCommit as an analysis fact.
func (*TxCommit) AFact() {}

func (*TxCommit) String() string { return "txcommit" }

func run(pass *analysis.Pass) (any, error) {
	suppress.Install(pass)
	insp := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	exportMarks(pass, insp)
	for cur := range insp.Root().Preorder((*ast.CallExpr)(nil)) {
		call := cur.Node().(*ast.CallExpr)
		if !isTxCall(pass, call) {
			continue
		}
		checkCall(pass, cur, call)
	}
	return nil, nil
}

// exportMarks records a TxCommit fact for each function or interface method marked
// //pconform:txcommit, and reports marks that cannot mean anything.
func exportMarks(pass *analysis.Pass, insp *inspector.Inspector) {
	mark := func(name *ast.Ident, c *ast.Comment) {
		fn, ok := pass.TypesInfo.Defs[name].(*types.Func)
		if !ok {
			return
		}
		if !storeapi.LastResultIsError(fn.Type().(*types.Signature)) {
			pass.Reportf(c.Pos(), "//pconform:%s on %s has no effect: its last result is not error", directive.TxCommit, name.Name)
			return
		}
		pass.ExportObjectFact(fn, new(TxCommit))
	}
	for cur := range insp.Root().Preorder((*ast.FuncDecl)(nil), (*ast.InterfaceType)(nil)) {
		switch n := cur.Node().(type) {
		case *ast.FuncDecl:
			if c, ok := directive.Find(directive.TxCommit, n.Doc); ok {
				mark(n.Name, c)
			}
		case *ast.InterfaceType:
			for _, m := range n.Methods.List {
				if c, ok := directive.Find(directive.TxCommit, m.Doc, m.Comment); ok && len(m.Names) == 1 {
					mark(m.Names[0], c)
				}
			}
		}
	}
}

// isTxCall reports whether call runs or commits a transaction.
func isTxCall(pass *analysis.Pass, call *ast.CallExpr) bool {
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	if !ok {
		return false
	}
	sig := fn.Type().(*types.Signature)
	if !storeapi.LastResultIsError(sig) {
		return false
	}
	switch {
	case storeapi.IsMethod(fn, "Store", "ExecTx"):
		return true
	case fn.Name() == "ExecTx" && sig.Recv() != nil && storeapi.IsExecTxSignature(sig):
		return true
	case fn.Name() == "Commit" && isSQLTx(sig.Recv()):
		return true
	}
	return pass.ImportObjectFact(fn.Origin(), new(TxCommit))
}

func isSQLTx(recv *types.Var) bool {
	if recv == nil {
		return false
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "database/sql" && n.Obj().Name() == "Tx"
}

// checkCall reports call when its error result is dropped.
func checkCall(pass *analysis.Pass, cur inspector.Cursor, call *ast.CallExpr) {
	if rollbackOnly(pass, cur, call) {
		return
	}
	what := types.ExprString(call.Fun)
	cur = cursorx.Unparen(cur)
	parent := cur.Parent()
	switch p := parent.Node().(type) {
	case *ast.ExprStmt:
		pass.Report(analysis.Diagnostic{
			Pos:            call.Pos(),
			End:            call.End(),
			Message:        "error of transaction call " + what + " is discarded",
			SuggestedFixes: suggestReturn(pass, parent, call),
		})
		return
	case *ast.DeferStmt, *ast.GoStmt:
		pass.Reportf(call.Pos(), "error of transaction call %s is discarded by %s", what, stmtKeyword(p))
		return
	case *ast.AssignStmt:
		lhs := errorLHS(p.Lhs, len(p.Rhs), cur.ParentEdgeIndex())
		if lhs == nil {
			return
		}
		if id, ok := lhs.(*ast.Ident); ok && id.Name == "_" {
			var fixes []analysis.SuggestedFix
			if len(p.Lhs) == 1 && len(p.Rhs) == 1 {
				fixes = suggestReturn(pass, parent, call)
			}
			pass.Report(analysis.Diagnostic{
				Pos:            call.Pos(),
				End:            call.End(),
				Message:        "error of transaction call " + what + " is assigned to _",
				SuggestedFixes: fixes,
			})
			return
		}
		f := flow{pass: pass}
		if !f.lhsHandled(lhs, parent) {
			pass.Reportf(call.Pos(), "error of transaction call %s is stored in %s but never returned, logged, or checked by a branch that returns or logs", what, types.ExprString(lhs))
		}
		return
	case *ast.ValueSpec:
		if cur.ParentEdgeKind() != edge.ValueSpec_Values {
			return
		}
		names := make([]ast.Expr, len(p.Names))
		for i, n := range p.Names {
			names[i] = n
		}
		lhs := errorLHS(names, len(p.Values), cur.ParentEdgeIndex())
		if id, ok := lhs.(*ast.Ident); ok && id.Name == "_" {
			pass.Reportf(call.Pos(), "error of transaction call %s is assigned to _", what)
			return
		}
		f := flow{pass: pass}
		if lhs != nil && !f.lhsHandled(lhs, parent) {
			pass.Reportf(call.Pos(), "error of transaction call %s is stored in %s but never returned, logged, or checked by a branch that returns or logs", what, types.ExprString(lhs))
		}
		return
	}
	f := flow{pass: pass}
	if !f.useHandled(cur, 0) {
		pass.Reportf(call.Pos(), "error of transaction call %s is not returned, logged, or checked by a branch that returns or logs", what)
	}
}

// errorLHS returns the left-hand operand that receives the error of the call at index idx of
// an assignment with nrhs right-hand operands: the matching operand of a one-to-one assignment,
// or the last operand when one multi-valued call feeds them all.
func errorLHS(lhs []ast.Expr, nrhs, idx int) ast.Expr {
	if len(lhs) == nrhs {
		if idx < len(lhs) {
			return lhs[idx]
		}
		return nil
	}
	if nrhs == 1 && len(lhs) > 0 {
		return lhs[len(lhs)-1]
	}
	return nil
}

func stmtKeyword(n ast.Node) string {
	if _, ok := n.(*ast.GoStmt); ok {
		return "go"
	}
	return "defer"
}

// rollbackOnly reports whether call hands its transaction a function literal that fails on
// every path (each return yields a non-nil error, or it panics). Such a transaction never
// commits: it is a deliberate rollback, and its error is the callback's own.
func rollbackOnly(pass *analysis.Pass, cur inspector.Cursor, call *ast.CallExpr) bool {
	if len(call.Args) == 0 {
		return false
	}
	litCur := cur.ChildAt(edge.CallExpr_Args, len(call.Args)-1)
	lit, ok := ast.Unparen(litCur.Node().(ast.Expr)).(*ast.FuncLit)
	if !ok || lit.Type.Results == nil || len(lit.Type.Results.List) != 1 {
		return false
	}
	for rc := range litCur.Preorder((*ast.ReturnStmt)(nil)) {
		if fn, _ := cursorx.Func(rc); fn.Node() != lit {
			continue // a nested function literal's return
		}
		ret := rc.Node().(*ast.ReturnStmt)
		if len(ret.Results) != 1 || !nonNil(pass, rc, ret.Results[0]) {
			return false
		}
	}
	return true
}

// nonNil reports whether the error e, returned at ret, is certainly not nil: a new error, a
// package-level sentinel, or a variable just tested with `v != nil`.
func nonNil(pass *analysis.Pass, ret inspector.Cursor, e ast.Expr) bool {
	switch x := ast.Unparen(e).(type) {
	case *ast.CallExpr:
		fn, ok := typeutil.Callee(pass.TypesInfo, x).(*types.Func)
		if !ok || fn.Pkg() == nil {
			return false
		}
		path, name := fn.Pkg().Path(), fn.Name()
		return (path == "errors" && name == "New") || (path == "fmt" && name == "Errorf")
	case *ast.SelectorExpr:
		v, ok := pass.TypesInfo.Uses[x.Sel].(*types.Var)
		return ok && !v.IsField() && v.Pkg() != nil && v.Parent() == v.Pkg().Scope()
	case *ast.Ident:
		v, ok := pass.TypesInfo.Uses[x].(*types.Var)
		if !ok {
			return false
		}
		if v.Pkg() != nil && v.Parent() == v.Pkg().Scope() {
			return true
		}
		for ic := range ret.Enclosing((*ast.IfStmt)(nil)) {
			ifs := ic.Node().(*ast.IfStmt)
			if ifs.Body.Pos() <= ret.Node().Pos() && ret.Node().End() <= ifs.Body.End() && testsNonNil(pass, ifs.Cond, v) {
				return true
			}
		}
	}
	return false
}

// testsNonNil reports whether cond being true implies v != nil.
func testsNonNil(pass *analysis.Pass, cond ast.Expr, v *types.Var) bool {
	b, ok := ast.Unparen(cond).(*ast.BinaryExpr)
	if !ok {
		return false
	}
	switch b.Op {
	case token.LAND:
		return testsNonNil(pass, b.X, v) || testsNonNil(pass, b.Y, v)
	case token.NEQ:
		for _, pair := range [][2]ast.Expr{{b.X, b.Y}, {b.Y, b.X}} {
			id, ok := ast.Unparen(pair[0]).(*ast.Ident)
			if ok && pass.TypesInfo.Uses[id] == v && pass.TypesInfo.Types[pair[1]].IsNil() {
				return true
			}
		}
	}
	return false
}
