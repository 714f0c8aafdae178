package rawattempts

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ast/edge"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"

	"github.com/pconform/pconform/analysis/internal/cursorx"
	"github.com/pconform/pconform/analysis/internal/storeapi"
)

// checker follows raw counts through one function and its closures, visiting nodes in source
// order. Its maps describe the state at the node being visited.
type checker struct {
	pass *analysis.Pass
	// raw maps a local variable to the source expression of the raw count it holds. Invariant:
	// a variable is absent when every value it may hold at this point is effective or unrelated.
	raw map[*types.Var]string
	// cmp maps a local bool variable to the raw comparison whose result it holds.
	cmp map[*types.Var]*ast.BinaryExpr
	// reported holds comparisons already reported, so a comparison reached both directly and
	// through a bool variable is reported once.
	reported map[*ast.BinaryExpr]bool
}

func newChecker(pass *analysis.Pass) *checker {
	return &checker{
		pass:     pass,
		raw:      make(map[*types.Var]string),
		cmp:      make(map[*types.Var]*ast.BinaryExpr),
		reported: make(map[*ast.BinaryExpr]bool),
	}
}

// function analyses the function at fn.
func (c *checker) function(fn inspector.Cursor) {
	c.visit(fn)
}

func (c *checker) visit(cur inspector.Cursor) {
	c.pre(cur)
	for child := range cur.Children() {
		c.visit(child)
	}
	c.post(cur)
}

// pre checks sinks with the state before the node's own assignments take effect.
func (c *checker) pre(cur inspector.Cursor) {
	switch n := cur.Node().(type) {
	case *ast.CallExpr:
		c.checkRetryCall(n)
	case *ast.BinaryExpr:
		if src, ok := c.rawComparison(n); ok && c.decides(cur) {
			c.reportComparison(n, src)
		}
	case *ast.Ident:
		if v, ok := c.pass.TypesInfo.Uses[n].(*types.Var); ok {
			if b, held := c.cmp[v]; held && c.decides(cur) {
				src, _ := c.rawComparison(b)
				c.reportComparison(b, src)
			}
		}
	}
}

// post applies the node's assignments.
func (c *checker) post(cur inspector.Cursor) {
	switch n := cur.Node().(type) {
	case *ast.AssignStmt:
		c.assign(cur, n.Tok, n.Lhs, n.Rhs)
	case *ast.ValueSpec:
		lhs := make([]ast.Expr, len(n.Names))
		for i, name := range n.Names {
			lhs[i] = name
		}
		c.assign(cur, token.DEFINE, lhs, n.Values)
	case *ast.RangeStmt:
		if n.Tok == token.ASSIGN {
			c.assign(cur, token.ASSIGN, []ast.Expr{n.Key, n.Value}, nil)
		}
	}
}

// assign updates the state for lhs = rhs (rhs nil: values the analysis does not follow).
func (c *checker) assign(at inspector.Cursor, tok token.Token, lhs, rhs []ast.Expr) {
	for i, l := range lhs {
		id, ok := l.(*ast.Ident)
		if !ok || id.Name == "_" {
			continue // stores into fields and elements are not followed
		}
		v, ok := c.pass.TypesInfo.ObjectOf(id).(*types.Var)
		if !ok {
			continue
		}
		var src string
		var isRaw bool
		var cmp *ast.BinaryExpr
		if len(lhs) == len(rhs) {
			src, isRaw = c.rawOf(rhs[i])
			if b, ok := ast.Unparen(rhs[i]).(*ast.BinaryExpr); ok {
				if _, raw := c.rawComparison(b); raw {
					cmp = b
				}
			}
		}
		switch tok {
		case token.DEFINE, token.ASSIGN:
		default: // op-assignment: the old value still contributes
			if old, was := c.raw[v]; was && !isRaw {
				src, isRaw = old, true
			}
		}
		strong := c.declaredHere(v, at.Node().Pos())
		switch {
		case isRaw:
			c.raw[v] = src
		case strong:
			delete(c.raw, v)
		}
		switch {
		case cmp != nil:
			c.cmp[v] = cmp
		case strong:
			delete(c.cmp, v)
		}
	}
}

// declaredHere reports whether an assignment at pos happens directly in the block that declares
// v, so that it overwrites v on every path reaching later statements of that block.
func (c *checker) declaredHere(v *types.Var, pos token.Pos) bool {
	return c.pass.Pkg.Scope().Innermost(pos) == v.Parent()
}

// rawOf reports whether e evaluates to a raw stored count, and names the source it came from.
func (c *checker) rawOf(e ast.Expr) (string, bool) {
	switch e := ast.Unparen(e).(type) {
	case *ast.SelectorExpr:
		sel, ok := c.pass.TypesInfo.Selections[e]
		if ok && sel.Kind() == types.FieldVal && c.isSource(sel.Obj()) {
			return types.ExprString(e), true
		}
	case *ast.Ident:
		if v, ok := c.pass.TypesInfo.Uses[e].(*types.Var); ok {
			src, raw := c.raw[v]
			return src, raw
		}
	case *ast.BinaryExpr:
		switch e.Op {
		case token.ADD, token.SUB, token.MUL, token.QUO, token.REM, token.AND, token.OR, token.XOR,
			token.SHL, token.SHR, token.AND_NOT:
			if src, ok := c.rawOf(e.X); ok {
				return src, true
			}
			return c.rawOf(e.Y)
		}
	case *ast.UnaryExpr:
		if e.Op == token.SUB || e.Op == token.ADD || e.Op == token.XOR {
			return c.rawOf(e.X)
		}
	case *ast.CallExpr:
		if tv, ok := c.pass.TypesInfo.Types[e.Fun]; ok && tv.IsType() && len(e.Args) == 1 {
			return c.rawOf(e.Args[0]) // a conversion keeps the value
		}
		if c.isSanitizer(e) || !storeapi.IsInteger(c.pass.TypesInfo.TypeOf(e)) {
			return "", false
		}
		// Any other integer-valued call (min, max, a clamp, a hand-rolled +1) that is given a
		// raw count is assumed to compute from it: the helper was bypassed.
		for _, a := range e.Args {
			if src, ok := c.rawOf(a); ok {
				return src, true
			}
		}
	}
	return "", false
}

// isSanitizer reports whether call turns a stored count into an effective attempt: a call
// through any value of the helper's type func(int, actordelivery.Path) int, or of a function
// marked //pconform:effectiveattempts.
func (c *checker) isSanitizer(call *ast.CallExpr) bool {
	if t := c.pass.TypesInfo.TypeOf(call.Fun); t != nil && storeapi.IsEffectiveAttemptsSignature(t) {
		return true
	}
	fn, ok := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	return ok && c.pass.ImportObjectFact(fn.Origin(), new(EffectiveAttempts))
}

func (c *checker) isSource(obj types.Object) bool {
	if storeapi.IsField(obj, "Message", "Attempts") {
		return true
	}
	if v, ok := obj.(*types.Var); ok {
		return c.pass.ImportObjectFact(v.Origin(), new(StoredAttempts))
	}
	return false
}

// checkRetryCall reports raw counts among the attempt arguments of a retry decision.
func (c *checker) checkRetryCall(call *ast.CallExpr) {
	fn, ok := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	if !ok || !c.isRetryDecision(fn) {
		return
	}
	sig := fn.Type().(*types.Signature)
	for i, arg := range call.Args {
		if i >= sig.Params().Len() || !storeapi.IsInteger(sig.Params().At(i).Type()) {
			continue
		}
		if src, raw := c.rawOf(arg); raw {
			c.pass.Report(analysis.Diagnostic{
				Pos: arg.Pos(),
				End: arg.End(),
				Message: "raw stored attempt count " + src + " reaches retry decision " + types.ExprString(call.Fun) +
					"; pass it through actordelivery.EffectiveAttempts first",
			})
		}
	}
}

// isRetryDecision reports whether fn decides a retry: a method named Retry taking an integer,
// or a function marked //pconform:retrydecision.
func (c *checker) isRetryDecision(fn *types.Func) bool {
	sig := fn.Type().(*types.Signature)
	if fn.Name() == "Retry" && sig.Recv() != nil && hasIntegerParam(sig) {
		return true
	}
	return c.pass.ImportObjectFact(fn.Origin(), new(RetryDecision))
}

// rawComparison reports whether b compares a raw count with an expression reading a
// MaxAttempts field.
func (c *checker) rawComparison(b *ast.BinaryExpr) (string, bool) {
	switch b.Op {
	case token.LSS, token.LEQ, token.GTR, token.GEQ, token.EQL, token.NEQ:
	default:
		return "", false
	}
	if src, ok := c.rawOf(b.X); ok && readsMaxAttempts(b.Y) {
		return src, true
	}
	if src, ok := c.rawOf(b.Y); ok && readsMaxAttempts(b.X) {
		return src, true
	}
	return "", false
}

func readsMaxAttempts(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok && s.Sel.Name == "MaxAttempts" {
			found = true
		}
		return !found
	})
	return found
}

func (c *checker) reportComparison(b *ast.BinaryExpr, src string) {
	if c.reported[b] {
		return
	}
	c.reported[b] = true
	c.pass.Report(analysis.Diagnostic{
		Pos: b.Pos(),
		End: b.End(),
		Message: "raw stored attempt count " + src + " compared with MaxAttempts in a retry decision" +
			"; pass it through actordelivery.EffectiveAttempts first",
	})
}

// decides reports whether the boolean expression at cur is (part of) the condition of an if or
// a switch case whose branches take a delivery action.
func (c *checker) decides(cur inspector.Cursor) bool {
	for {
		parent := cur.Parent()
		switch p := parent.Node().(type) {
		case *ast.ParenExpr:
		case *ast.UnaryExpr:
			if p.Op != token.NOT {
				return false
			}
		case *ast.BinaryExpr:
			if p.Op != token.LAND && p.Op != token.LOR {
				return false
			}
		case *ast.IfStmt:
			if cur.ParentEdgeKind() != edge.IfStmt_Cond {
				return false
			}
			if c.takesAction(p.Body) || (p.Else != nil && c.takesAction(p.Else)) {
				return true
			}
			// An early exit makes the rest of the list the other branch:
			// if !exhausted { return ... }; deadLetter(...).
			return p.Else == nil && cursorx.Exits(p.Body) && c.restTakesAction(parent)
		case *ast.CaseClause:
			if cur.ParentEdgeKind() != edge.CaseClause_List {
				return false
			}
			return c.takesAction(p)
		default:
			return false
		}
		cur = parent
	}
}

// takesAction reports whether the statements under n call a delivery action. Function literals
// are entered: the action usually runs inside ExecTx's callback.
func (c *checker) takesAction(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		switch fn := typeutil.Callee(c.pass.TypesInfo, call).(type) {
		case *types.Func:
			found = isActionName(fn.Name()) || c.isRetryDecision(fn)
		case *types.Var: // a func-valued field or variable, such as a dead-letter hook
			found = isActionName(fn.Name())
		}
		return !found
	})
	return found
}

// restTakesAction reports whether a statement after stmt in its list takes a delivery action.
func (c *checker) restTakesAction(stmt inspector.Cursor) bool {
	switch stmt.Parent().Node().(type) {
	case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
	default:
		return false
	}
	for s, ok := stmt.NextSibling(); ok; s, ok = s.NextSibling() {
		if c.takesAction(s.Node()) {
			return true
		}
	}
	return false
}

func isActionName(name string) bool {
	lower := strings.ToLower(name)
	for _, a := range []string{"deadletter", "nack", "retry"} {
		if strings.Contains(lower, a) {
			return true
		}
	}
	return false
}
