package txerr

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
)

// maxDepth bounds how many local variables a value is followed through (err -> wrapped ->
// result ...). Deeper chains are assumed handled, trading a false negative for termination.
const maxDepth = 6

// flow decides whether an error value reaches a handling use. It follows the value upward
// through the expressions that contain it and, when it is stored in a local variable, through
// that variable's later uses.
type flow struct {
	pass *analysis.Pass
	seen map[*types.Var]bool // variables already being followed, to stop cycles
}

// lhsHandled reports whether storing the error in lhs (the left side of the assignment or
// declaration at assign) leads to a handling use.
func (f *flow) lhsHandled(lhs ast.Expr, assign inspector.Cursor) bool {
	return f.storeHandled(lhs, assign, 0)
}

func (f *flow) storeHandled(lhs ast.Expr, assign inspector.Cursor, depth int) bool {
	id, ok := ast.Unparen(lhs).(*ast.Ident)
	if !ok {
		return true // a field, element or pointee: the value leaves the function's locals
	}
	if id.Name == "_" {
		return false
	}
	obj := f.pass.TypesInfo.ObjectOf(id)
	v, ok := obj.(*types.Var)
	if !ok || v.Parent() == nil || v.Parent() == f.pass.Pkg.Scope() {
		return true // a package-level variable: outlives the function
	}
	if depth >= maxDepth || f.seen[v] {
		return true
	}
	if f.isResult(v, assign) {
		return true // a named result: returned by every bare return
	}
	if f.seen == nil {
		f.seen = make(map[*types.Var]bool)
	}
	f.seen[v] = true
	defer delete(f.seen, v)
	return f.varHandled(v, assign, depth+1)
}

// isResult reports whether v is a named result of a function enclosing c.
func (f *flow) isResult(v *types.Var, c inspector.Cursor) bool {
	for fc := range c.Enclosing((*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)) {
		var ft *ast.FuncType
		switch n := fc.Node().(type) {
		case *ast.FuncDecl:
			ft = n.Type
		case *ast.FuncLit:
			ft = n.Type
		}
		if ft.Results == nil {
			continue
		}
		for _, field := range ft.Results.List {
			for _, name := range field.Names {
				if f.pass.TypesInfo.Defs[name] == v {
					return true
				}
			}
		}
	}
	return false
}

// varHandled reports whether a use of v that can observe the value stored by the statement at
// assign is a handling use. Uses count when they come after the store and before the next
// statement in the same list that overwrites v, or anywhere in the innermost loop around the
// store (the next iteration sees the value).
func (f *flow) varHandled(v *types.Var, assign inspector.Cursor, depth int) bool {
	scope, ok := declaringFunc(assign, v)
	if !ok {
		return true
	}
	// An if, switch or for header's init statement is not in a list; its variable's uses in
	// the header and body all come after it, so the window simply starts at its end.
	start := assign.Node().End()
	end := scope.Node().End()
	if stmt, ok := cursorx.Stmt(assign); ok {
		end = f.nextOverwrite(stmt, v, end)
	}
	loop, inLoop := cursorx.Loop(assign, scope)
	for idc := range scope.Preorder((*ast.Ident)(nil)) {
		id := idc.Node().(*ast.Ident)
		if f.pass.TypesInfo.Uses[id] != v {
			continue
		}
		inWindow := id.Pos() >= start && id.Pos() < end
		if !inWindow && !(inLoop && loop.Contains(idc)) {
			continue
		}
		if idc.ParentEdgeKind() == edge.AssignStmt_Lhs {
			continue // a store into v, not a read
		}
		if f.useHandled(idc, depth) {
			return true
		}
	}
	return false
}

// declaringFunc returns the innermost function enclosing c whose extent contains v's
// declaration: the region where v's uses can be.
func declaringFunc(c inspector.Cursor, v *types.Var) (inspector.Cursor, bool) {
	for fc := range c.Enclosing((*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)) {
		if fc.Node().Pos() <= v.Pos() && v.Pos() < fc.Node().End() {
			return fc, true
		}
	}
	return inspector.Cursor{}, false
}

// nextOverwrite returns the start of the first later statement in stmt's list that assigns v
// at its top level (so the stored value can no longer be observed after it), or end.
func (f *flow) nextOverwrite(stmt inspector.Cursor, v *types.Var, end token.Pos) token.Pos {
	for s, ok := stmt.NextSibling(); ok; s, ok = s.NextSibling() {
		as, isAssign := s.Node().(*ast.AssignStmt)
		if !isAssign {
			continue
		}
		for _, l := range as.Lhs {
			if id, ok := l.(*ast.Ident); ok && f.pass.TypesInfo.ObjectOf(id) == v {
				// Reads on the right-hand side still see the old value; End keeps them in.
				return as.End()
			}
		}
	}
	return end
}

// useHandled walks up from the expression at c, which holds the error or a value derived from
// it, and reports whether the value reaches a handling use.
//
// A test for one particular error (errors.Is, errors.As, a comparison with a sentinel) makes the
// branch it guards run for that error only, so such a branch handles no other error: the value
// is handled only if another use handles it. Negating the test (!errors.Is, err != ErrX) makes the
// branch run for every other error, which handles them.
func (f *flow) useHandled(c inspector.Cursor, depth int) bool {
	// tested: the value has become a test against one particular error; oneError: the test is
	// true for that error only (false when negated: true for every other error).
	tested, oneError := false, false
	for {
		c = cursorx.Unparen(c)
		parent := c.Parent()
		kind, idx := c.ParentEdge()
		switch p := parent.Node().(type) {
		case *ast.UnaryExpr:
			if p.Op == token.NOT && tested {
				oneError = !oneError
			}
			c = parent
		case *ast.BinaryExpr:
			if p.Op == token.EQL || p.Op == token.NEQ {
				other := p.Y
				if kind == edge.BinaryExpr_Y {
					other = p.X
				}
				if !isNil(f.pass, other) {
					tested, oneError = true, p.Op == token.EQL
				}
			}
			c = parent
		case *ast.StarExpr, *ast.KeyValueExpr, *ast.CompositeLit,
			*ast.TypeAssertExpr, *ast.IndexExpr, *ast.IndexListExpr, *ast.SliceExpr, *ast.SelectorExpr:
			c = parent // the value flows into the enclosing expression
		case *ast.CallExpr:
			if kind == edge.CallExpr_Fun {
				c = parent // err.Error() and the like derive a value from it
				continue
			}
			switch f.classifyCall(p) {
			case callSink:
				return true
			case callDrop:
				return false
			}
			if idx == 0 && isErrorTest(f.pass, p) {
				tested, oneError = true, true
			}
			c = parent
		case *ast.ReturnStmt:
			return true
		case *ast.SendStmt:
			return kind == edge.SendStmt_Value
		case *ast.AssignStmt:
			if kind != edge.AssignStmt_Rhs {
				return false
			}
			if len(p.Lhs) != len(p.Rhs) {
				return true // a multi-valued call was already classified above
			}
			return f.storeHandled(p.Lhs[idx], parent, depth)
		case *ast.ValueSpec:
			if kind != edge.ValueSpec_Values || len(p.Names) != len(p.Values) {
				return false
			}
			return f.storeHandled(p.Names[idx], parent, depth)
		case *ast.IfStmt:
			return kind == edge.IfStmt_Cond && !oneError && f.signals(p.Body)
		case *ast.SwitchStmt:
			if kind != edge.SwitchStmt_Tag {
				return false
			}
			// Each case compares the error with one value; only the default clause sees
			// every error the cases do not name.
			for _, cc := range p.Body.List {
				if cc.(*ast.CaseClause).List == nil && f.signals(cc) {
					return true
				}
			}
			return false
		case *ast.CaseClause:
			return kind == edge.CaseClause_List && !oneError && f.signals(p)
		default:
			return false
		}
	}
}

type callKind int

const (
	callFlow callKind = iota // the result carries the value on (wrapping, conversion, errors.Is)
	callSink                 // the call handles the value: logs it, panics, or takes it over
	callDrop                 // the call consumes the value without handling it (printing)
)

// classifyCall says what passing a value to call means.
func (f *flow) classifyCall(call *ast.CallExpr) callKind {
	if tv, ok := f.pass.TypesInfo.Types[call.Fun]; ok && tv.IsType() {
		return callFlow // a conversion
	}
	switch obj := typeutil.Callee(f.pass.TypesInfo, call).(type) {
	case *types.Builtin:
		if obj.Name() == "panic" {
			return callSink
		}
		return callFlow // append, min and friends keep the value in their result
	case *types.Func:
		pkg := ""
		if obj.Pkg() != nil {
			pkg = obj.Pkg().Path()
		}
		name := obj.Name()
		switch pkg {
		case "log/slog":
			if isSlogLogMethod(name) {
				return callSink
			}
			return callFlow // slog.Any, slog.String, Group: attributes for a later log call
		case "log":
			if isStdLogFunc(name) {
				return callSink
			}
		case "testing":
			if isTestingReport(name) {
				return callSink
			}
		case "fmt":
			switch {
			case name == "Errorf", strings.HasPrefix(name, "Sprint"), strings.HasPrefix(name, "Append"):
				return callFlow
			case strings.HasPrefix(name, "Print"), strings.HasPrefix(name, "Fprint"):
				return callDrop
			}
		case "errors":
			return callFlow // Join, Is, As, Unwrap: the result still reflects the error
		}
	}
	return callSink // any other function takes the value over; it is not followed
}

func isSlogLogMethod(name string) bool {
	base := strings.TrimSuffix(name, "Context")
	switch base {
	case "Debug", "Info", "Warn", "Error", "Log", "LogAttrs":
		return true
	}
	return false
}

func isStdLogFunc(name string) bool {
	for _, p := range []string{"Print", "Fatal", "Panic", "Output"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func isTestingReport(name string) bool {
	switch name {
	case "Error", "Errorf", "Fatal", "Fatalf", "Log", "Logf", "Skip", "Skipf":
		return true
	}
	return false
}

// signals reports whether the statements under n (a branch) return, panic, or log, so that
// testing the error to enter that branch handles it. Function literals are not entered: their
// statements run some other time.
func (f *flow) signals(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			found = true
		case *ast.CallExpr:
			if f.classifyCall(n) == callSink && isReportingCall(f.pass, n) {
				found = true
			}
		}
		return !found
	})
	return found
}

// isErrorTest reports whether call is errors.Is or errors.As: a test for one particular error.
func isErrorTest(pass *analysis.Pass, call *ast.CallExpr) bool {
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	return ok && fn.Pkg() != nil && fn.Pkg().Path() == "errors" && (fn.Name() == "Is" || fn.Name() == "As")
}

// isNil reports whether e is the untyped nil.
func isNil(pass *analysis.Pass, e ast.Expr) bool {
	tv, ok := pass.TypesInfo.Types[ast.Unparen(e)]
	return ok && tv.IsNil()
}

// isReportingCall reports whether call is panic, os.Exit, or a logging call (as opposed to an
// arbitrary function, which classifyCall treats as taking a value over).
func isReportingCall(pass *analysis.Pass, call *ast.CallExpr) bool {
	switch obj := typeutil.Callee(pass.TypesInfo, call).(type) {
	case *types.Builtin:
		return obj.Name() == "panic"
	case *types.Func:
		if obj.Pkg() == nil {
			return false
		}
		switch obj.Pkg().Path() {
		case "log/slog":
			return isSlogLogMethod(obj.Name())
		case "log":
			return isStdLogFunc(obj.Name())
		case "testing":
			return isTestingReport(obj.Name())
		case "os":
			return obj.Name() == "Exit"
		}
	}
	return false
}
