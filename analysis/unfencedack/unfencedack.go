package unfencedack

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

// Analyzer reports AckByID/NackByID on a message that holds a lease.
var Analyzer = &analysis.Analyzer{
	Name:     "unfencedack",
	Doc:      "report AckByID/NackByID on a leased message\n\nA message that came from Lease, or whose Token is used, must be acknowledged with Ack/Nack and its token; the unfenced AckByID/NackByID belong to the leaseless (single-worker) path.",
	URL:      "https://github.com/pconform/pconform/blob/main/docs/analyzers.md#unfencedack",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

// maxAlias bounds how many local copies are followed back to a message (id := m.ID; m := d.Message).
const maxAlias = 8

func run(pass *analysis.Pass) (any, error) {
	suppress.Install(pass)
	insp := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	for cur := range insp.Root().Preorder((*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)) {
		switch n := cur.Node().(type) {
		case *ast.FuncDecl:
			if n.Body == nil || directive.Has(directive.SingleWorker, n.Doc) || isStoreMethod(pass, n) {
				continue
			}
		case *ast.FuncLit:
			if !cursorx.TopLevel(cur) {
				continue // analysed with the function that contains it
			}
		}
		checkFunc(pass, cur)
	}
	return nil, nil
}

func isStoreMethod(pass *analysis.Pass, decl *ast.FuncDecl) bool {
	fn, ok := pass.TypesInfo.Defs[decl.Name].(*types.Func)
	return ok && storeapi.IsMethod(fn, "Store", fn.Name())
}

// funcFacts is what one function says about its message values.
type funcFacts struct {
	alias  map[*types.Var]*types.Var // a local copied from (a part of) another local
	leased map[*types.Var]bool       // message roots that hold a lease token
}

func checkFunc(pass *analysis.Pass, fn inspector.Cursor) {
	ff := funcFacts{alias: map[*types.Var]*types.Var{}, leased: map[*types.Var]bool{}}
	var calls []inspector.Cursor
	var tokenReads []ast.Expr
	for cur := range fn.Preorder((*ast.AssignStmt)(nil), (*ast.ValueSpec)(nil), (*ast.SelectorExpr)(nil), (*ast.CallExpr)(nil)) {
		switch n := cur.Node().(type) {
		case *ast.AssignStmt:
			ff.recordAssign(pass, n.Lhs, n.Rhs)
		case *ast.ValueSpec:
			lhs := make([]ast.Expr, len(n.Names))
			for i, name := range n.Names {
				lhs[i] = name
			}
			ff.recordAssign(pass, lhs, n.Values)
		case *ast.SelectorExpr:
			if sel, ok := pass.TypesInfo.Selections[n]; ok && storeapi.IsField(sel.Obj(), "Message", "Token") {
				tokenReads = append(tokenReads, n.X)
			}
		case *ast.CallExpr:
			if name := unfencedName(pass, n); name != "" {
				calls = append(calls, cur)
			}
		}
	}
	// Token reads are resolved after every copy is known, so the order of statements does not
	// matter: a token read anywhere in the function marks the message.
	for _, x := range tokenReads {
		if r := ff.root(pass, x); r != nil {
			ff.leased[r] = true
		}
	}
	for _, cur := range calls {
		call := cur.Node().(*ast.CallExpr)
		id := idArg(pass, call)
		if id == nil {
			continue
		}
		r := ff.root(pass, id)
		if r == nil || leaselessOnly(pass, cur, fn) {
			continue
		}
		var holds string
		switch {
		case ff.leased[r]:
			holds = "holds a lease token"
		case storeapi.IsNamed(r.Type(), "Delivery"):
			// A Delivery records its path precisely so that the acknowledgement can match it.
			holds = "may hold a lease token (a Delivery from the leased path does)"
		default:
			continue
		}
		name := unfencedName(pass, call)
		pass.Reportf(call.Pos(), "unfenced %s on message %s, which %s: use %s with the token, or keep the call on the leaseless path (Path == PathLeaseless, Token == \"\", or //pconform:%s)",
			name, r.Name(), holds, fencedName(name), directive.SingleWorker)
	}
}

// recordAssign notes local copies of message values and messages obtained from Lease.
func (ff *funcFacts) recordAssign(pass *analysis.Pass, lhs, rhs []ast.Expr) {
	if len(rhs) == 1 && len(lhs) > 1 {
		// m, err := st.Lease(...): the first result is a leased message.
		if call, ok := ast.Unparen(rhs[0]).(*ast.CallExpr); ok && isLease(pass, call) {
			if v := localVar(pass, lhs[0]); v != nil {
				ff.leased[v] = true
			}
		}
		return
	}
	if len(lhs) != len(rhs) {
		return
	}
	for i := range lhs {
		v := localVar(pass, lhs[i])
		if v == nil {
			continue
		}
		if src := selectorRoot(pass, rhs[i]); src != nil && src != v {
			ff.alias[v] = src
		}
	}
}

// root returns the local variable a message expression ultimately comes from, following
// selector chains and recorded copies.
func (ff *funcFacts) root(pass *analysis.Pass, e ast.Expr) *types.Var {
	v := selectorRoot(pass, e)
	for i := 0; v != nil && i < maxAlias; i++ {
		if ff.leased[v] {
			return v
		}
		next, ok := ff.alias[v]
		if !ok {
			return v
		}
		v = next
	}
	return v
}

// selectorRoot returns the local variable at the root of a pure selector chain (m, m.ID,
// d.Message.ID, (*m).ID), or nil for anything involving a call, index or literal.
func selectorRoot(pass *analysis.Pass, e ast.Expr) *types.Var {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.SelectorExpr:
			if sel, ok := pass.TypesInfo.Selections[x]; !ok || sel.Kind() != types.FieldVal {
				return nil
			}
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.UnaryExpr:
			if x.Op != token.AND {
				return nil
			}
			e = x.X
		case *ast.Ident:
			return localVar(pass, x)
		default:
			return nil
		}
	}
}

func localVar(pass *analysis.Pass, e ast.Expr) *types.Var {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok || id.Name == "_" {
		return nil
	}
	v, ok := pass.TypesInfo.ObjectOf(id).(*types.Var)
	if !ok || v.IsField() || v.Parent() == nil || v.Parent() == pass.Pkg.Scope() {
		return nil
	}
	return v
}

// isLease reports whether call is a method named Lease whose first result is a message.
func isLease(pass *analysis.Pass, call *ast.CallExpr) bool {
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	if !ok || fn.Name() != "Lease" {
		return false
	}
	res := fn.Type().(*types.Signature).Results()
	return res.Len() > 0 && storeapi.IsNamed(res.At(0).Type(), "Message")
}

// unfencedName returns "AckByID" or "NackByID" when call is such a method call, else "".
func unfencedName(pass *analysis.Pass, call *ast.CallExpr) string {
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	if !ok || fn.Type().(*types.Signature).Recv() == nil {
		return ""
	}
	switch fn.Name() {
	case "AckByID", "NackByID":
		return fn.Name()
	}
	return ""
}

func fencedName(unfenced string) string {
	if unfenced == "AckByID" {
		return "Ack"
	}
	return "Nack"
}

// idArg returns the message id argument: the first string argument.
func idArg(pass *analysis.Pass, call *ast.CallExpr) ast.Expr {
	for _, a := range call.Args {
		if b, ok := pass.TypesInfo.TypeOf(a).Underlying().(*types.Basic); ok && b.Info()&types.IsString != 0 {
			return a
		}
	}
	return nil
}

// leaselessOnly reports whether the call at cur, inside the function at fn, can only run on
// the leaseless path.
func leaselessOnly(pass *analysis.Pass, cur, fn inspector.Cursor) bool {
	for c := cur; c != fn; c = c.Parent() {
		parent := c.Parent()
		kind := c.ParentEdgeKind()
		switch p := parent.Node().(type) {
		case *ast.IfStmt:
			if kind == edge.IfStmt_Body && implies(pass, p.Cond, true) {
				return true
			}
			if kind == edge.IfStmt_Else && implies(pass, p.Cond, false) {
				return true
			}
		case *ast.CaseClause:
			if kind == edge.CaseClause_Body && caseLeaseless(pass, c.Parent().Parent().Parent(), p) {
				return true
			}
		}
		switch parent.Node().(type) {
		case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
			if kind == edge.BlockStmt_List || kind == edge.CaseClause_Body || kind == edge.CommClause_Body {
				if afterLeasedExit(pass, c) {
					return true
				}
			}
		}
	}
	return false
}

// caseLeaseless reports whether clause of the switch at sw only runs on the leaseless path.
func caseLeaseless(pass *analysis.Pass, sw inspector.Cursor, clause *ast.CaseClause) bool {
	s, ok := sw.Node().(*ast.SwitchStmt)
	if !ok || len(clause.List) == 0 {
		return false
	}
	for _, e := range clause.List {
		if s.Tag == nil {
			if !implies(pass, e, true) {
				return false
			}
			continue
		}
		if !storeapi.IsNamed(pass.TypesInfo.TypeOf(s.Tag), "Path") || !isPathConst(pass, e, "PathLeaseless") {
			return false
		}
	}
	return true
}

// afterLeasedExit reports whether a statement before stmt in its list is an early exit on the
// leased path: if <leased> { ...; return }.
func afterLeasedExit(pass *analysis.Pass, stmt inspector.Cursor) bool {
	for s, ok := stmt.PrevSibling(); ok; s, ok = s.PrevSibling() {
		ifs, isIf := s.Node().(*ast.IfStmt)
		if isIf && ifs.Else == nil && cursorx.Exits(ifs.Body) && implies(pass, ifs.Cond, false) {
			return true
		}
	}
	return false
}

// implies reports whether e being true guarantees the leaseless path (leaseless true) or the
// leased path (leaseless false).
func implies(pass *analysis.Pass, e ast.Expr, leaseless bool) bool {
	switch x := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		return x.Op == token.NOT && implies(pass, x.X, !leaseless)
	case *ast.BinaryExpr:
		switch x.Op {
		case token.LAND:
			return implies(pass, x.X, leaseless) || implies(pass, x.Y, leaseless)
		case token.EQL, token.NEQ:
			eq := x.Op == token.EQL
			for _, pair := range [][2]ast.Expr{{x.X, x.Y}, {x.Y, x.X}} {
				subject, other := pair[0], pair[1]
				if storeapi.IsNamed(pass.TypesInfo.TypeOf(subject), "Path") {
					switch {
					case isPathConst(pass, other, "PathLeaseless"):
						return eq == leaseless
					case isPathConst(pass, other, "PathLeased"):
						return eq != leaseless
					}
				}
				if isTokenRead(pass, subject) && isEmptyString(pass, other) {
					return eq == leaseless // a message without a token was not leased
				}
			}
		}
	}
	return false
}

func isPathConst(pass *analysis.Pass, e ast.Expr, name string) bool {
	var id *ast.Ident
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		id = x.Sel
	default:
		return false
	}
	return storeapi.IsConst(pass.TypesInfo.Uses[id], name)
}

func isTokenRead(pass *analysis.Pass, e ast.Expr) bool {
	s, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	sel, ok := pass.TypesInfo.Selections[s]
	return ok && storeapi.IsField(sel.Obj(), "Message", "Token")
}

func isEmptyString(pass *analysis.Pass, e ast.Expr) bool {
	tv, ok := pass.TypesInfo.Types[e]
	return ok && tv.Value != nil && tv.Value.ExactString() == `""`
}
