package sqlparams

import (
	"go/ast"
	"go/constant"
	"go/types"
	"maps"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"

	"github.com/pconform/pconform/analysis/internal/suppress"
)

// Analyzer reports SQL statements whose named parameters and bound arguments disagree, and
// fenced store methods whose statements do not compare the token.
var Analyzer = &analysis.Analyzer{
	Name:     "sqlparams",
	Doc:      "report SQL parameters bound but unused or used but unbound, and fenced statements without a token comparison\n\nThe driver ignores a named argument its SQL does not use, so a fence edited out of a statement still binds its token silently.",
	URL:      "https://github.com/pconform/pconform/blob/main/docs/analyzers.md#sqlparams",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

// sqlStart recognises a string constant as a SQL statement by its first keyword.
var sqlStart = regexp.MustCompile(`(?i)^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|ALTER|DROP|PRAGMA)\b`)

// fenceCompare is a WHERE clause's comparison of a token column with the bound token.
var fenceCompare = regexp.MustCompile(`(?is)\bWHERE\b.*\b(?:\w+\.)?(?:token|claim_token)\s*=\s*:token\b`)

// site is one statement and the names bound to it.
type site struct {
	node  ast.Node
	sql   string
	names []string
	// known is false when an argument's name cannot be read (a variable, a spread slice).
	known bool
}

func run(pass *analysis.Pass) (any, error) {
	suppress.Install(pass)
	insp := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	namers := namerFuncs(pass)
	for cur := range insp.Root().Preorder((*ast.FuncDecl)(nil), (*ast.CompositeLit)(nil)) {
		switch n := cur.Node().(type) {
		case *ast.FuncDecl:
			if n.Body == nil {
				continue
			}
			sites := findSites(pass, namers, n.Body)
			for _, s := range sites {
				checkSite(pass, s)
			}
			if isFenced(pass, n) {
				for _, s := range sites {
					if !fenceCompare.MatchString(stripQuoted(s.sql)) {
						pass.Reportf(s.node.Pos(), "fenced method %s runs a statement that does not compare the token column with :token in its WHERE clause", n.Name.Name)
					}
				}
			}
		case *ast.CompositeLit:
			checkDialects(pass, n)
		}
	}
	return nil, nil
}

// checkSite reports the disagreements between s's SQL and its bound names.
func checkSite(pass *analysis.Pass, s site) {
	if !s.known {
		return
	}
	used := params(s.sql)
	bound := map[string]bool{}
	for _, name := range s.names {
		bound[name] = true
		if !used[name] {
			pass.Reportf(s.node.Pos(), "parameter :%s is bound but the statement does not use it", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(used)) {
		if !bound[name] {
			pass.Reportf(s.node.Pos(), "the statement uses :%s but no argument binds it", name)
		}
	}
}

// checkDialects compares each replacement in a map literal of SQL constants with the statement
// that keys it.
func checkDialects(pass *analysis.Pass, lit *ast.CompositeLit) {
	if _, ok := pass.TypesInfo.TypeOf(lit).Underlying().(*types.Map); !ok {
		return
	}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, okKey := sqlConst(pass, kv.Key)
		val, okVal := sqlConst(pass, kv.Value)
		if !okKey || !okVal {
			continue
		}
		want, got := slices.Sorted(maps.Keys(params(key))), slices.Sorted(maps.Keys(params(val)))
		if !slices.Equal(want, got) {
			pass.Reportf(kv.Value.Pos(), "this form of %s uses parameters %s, but the statement it replaces uses %s: both are bound by the same code",
				types.ExprString(kv.Key), listParams(got), listParams(want))
		}
	}
}

func listParams(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = ":" + n
	}
	return strings.Join(out, ", ")
}

// findSites returns the statement sites under body: calls and return statements that hold a
// SQL constant and its named arguments. Function literals are included: a store method's
// statement usually sits in the closure it hands to its transaction helper.
func findSites(pass *analysis.Pass, namers map[*types.Func]namer, body ast.Node) []site {
	var out []site
	ast.Inspect(body, func(n ast.Node) bool {
		var operands []ast.Expr
		executes := false // the node runs its statement (or returns it with its arguments)
		switch n := n.(type) {
		case *ast.CallExpr:
			executes = isExecCall(pass, n)
			operands = n.Args
			if n.Ellipsis.IsValid() && len(operands) > 0 {
				last := operands[len(operands)-1]
				if cl, ok := ast.Unparen(last).(*ast.CompositeLit); ok {
					operands = append(slices.Clone(operands[:len(operands)-1]), cl.Elts...)
				} else {
					operands = append(slices.Clone(operands[:len(operands)-1]), unknownArg{last})
				}
			}
		case *ast.ReturnStmt:
			for _, r := range n.Results {
				if cl, ok := ast.Unparen(r).(*ast.CompositeLit); ok && isAnySlice(pass, cl) {
					operands = append(operands, cl.Elts...)
					executes = true
					continue
				}
				operands = append(operands, r)
			}
		default:
			return true
		}
		s := site{node: n, known: true}
		found := false
		for _, op := range operands {
			if u, ok := op.(unknownArg); ok {
				if isNamedArg(pass, u.Expr) || isAnySliceType(pass.TypesInfo.TypeOf(u.Expr)) {
					s.known = false
				}
				continue
			}
			if text, ok := sqlConst(pass, op); ok && !found {
				s.sql, found = text, true
				continue
			}
			if isNamedArg(pass, op) {
				name, ok := argName(pass, namers, op)
				if !ok {
					s.known = false
					continue
				}
				s.names = append(s.names, name)
			}
		}
		// A SQL constant handed to anything else (a map key, a cache) is not a statement site,
		// unless named arguments travel with it.
		if found && (executes || len(s.names) > 0) {
			out = append(out, s)
		}
		return true
	})
	return out
}

// isExecCall reports whether call runs a statement: a method named Exec, Query, QueryRow or
// Prepare, with or without Context.
func isExecCall(pass *analysis.Pass, call *ast.CallExpr) bool {
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	if !ok {
		return false
	}
	switch strings.TrimSuffix(fn.Name(), "Context") {
	case "Exec", "Query", "QueryRow", "Prepare":
		return true
	}
	return false
}

// unknownArg wraps a spread argument whose elements the analyzer cannot see.
type unknownArg struct{ ast.Expr }

func isAnySlice(pass *analysis.Pass, cl *ast.CompositeLit) bool {
	return isAnySliceType(pass.TypesInfo.TypeOf(cl))
}

func isAnySliceType(t types.Type) bool {
	if t == nil {
		return false
	}
	sl, ok := t.Underlying().(*types.Slice)
	if !ok {
		return false
	}
	it, ok := sl.Elem().Underlying().(*types.Interface)
	return ok && it.Empty()
}

// sqlConst returns e's value when e is a string constant that reads as a SQL statement.
func sqlConst(pass *analysis.Pass, e ast.Expr) (string, bool) {
	tv, ok := pass.TypesInfo.Types[e]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return "", false
	}
	text := constant.StringVal(tv.Value)
	return text, sqlStart.MatchString(text)
}

// isNamedArg reports whether e's type is database/sql.NamedArg.
func isNamedArg(pass *analysis.Pass, e ast.Expr) bool {
	t := pass.TypesInfo.TypeOf(e)
	if t == nil {
		return false
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "database/sql" && n.Obj().Name() == "NamedArg"
}

// namer says how a function that returns a sql.NamedArg names it: by a constant, or by one of
// its parameters.
type namer struct {
	name  string
	param int // index of the parameter holding the name, or -1
}

// namerFuncs finds the package's functions whose every return is sql.Named(<const or param>, ...).
func namerFuncs(pass *analysis.Pass) map[*types.Func]namer {
	out := map[*types.Func]namer{}
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			fn, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func)
			if !ok {
				continue
			}
			sig := fn.Type().(*types.Signature)
			if sig.Results().Len() != 1 {
				continue
			}
			var got *namer
			consistent := true
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if _, ok := n.(*ast.FuncLit); ok {
					return false
				}
				ret, ok := n.(*ast.ReturnStmt)
				if !ok || len(ret.Results) != 1 {
					return true
				}
				nm, ok := namedCall(pass, sig, ret.Results[0])
				if !ok || (got != nil && *got != nm) {
					consistent = false
					return false
				}
				got = &nm
				return true
			})
			if consistent && got != nil {
				out[fn] = *got
			}
		}
	}
	return out
}

// namedCall reads a call sql.Named(x, v) in a function of signature sig: x a constant, or one
// of the function's parameters.
func namedCall(pass *analysis.Pass, sig *types.Signature, e ast.Expr) (namer, bool) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(call.Args) != 2 {
		return namer{}, false
	}
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "database/sql" || fn.Name() != "Named" {
		return namer{}, false
	}
	if tv := pass.TypesInfo.Types[call.Args[0]]; tv.Value != nil && tv.Value.Kind() == constant.String {
		return namer{name: constant.StringVal(tv.Value), param: -1}, true
	}
	if id, ok := ast.Unparen(call.Args[0]).(*ast.Ident); ok {
		obj := pass.TypesInfo.Uses[id]
		for i := range sig.Params().Len() {
			if sig.Params().At(i) == obj {
				return namer{param: i}, true
			}
		}
	}
	return namer{}, false
}

// argName is the parameter name a named argument expression binds.
func argName(pass *analysis.Pass, namers map[*types.Func]namer, e ast.Expr) (string, bool) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return "", false
	}
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	if !ok {
		return "", false
	}
	nm, ok := namers[fn]
	if fn.Pkg() != nil && fn.Pkg().Path() == "database/sql" && fn.Name() == "Named" {
		nm, ok = namer{param: 0}, true
	}
	if !ok {
		return "", false
	}
	if nm.param < 0 {
		return nm.name, true
	}
	if nm.param >= len(call.Args) {
		return "", false
	}
	tv := pass.TypesInfo.Types[call.Args[nm.param]]
	if tv.Value == nil || tv.Value.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(tv.Value), true
}

// isFenced reports whether decl is a method of a type named Store that takes a parameter named
// token.
func isFenced(pass *analysis.Pass, decl *ast.FuncDecl) bool {
	if decl.Recv == nil || len(decl.Recv.List) != 1 {
		return false
	}
	t := pass.TypesInfo.TypeOf(decl.Recv.List[0].Type)
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Name() != "Store" {
		return false
	}
	for _, f := range decl.Type.Params.List {
		for _, name := range f.Names {
			if name.Name == "token" {
				return true
			}
		}
	}
	return false
}

// params returns the :name parameters of a statement, outside quoted text and not PostgreSQL's
// ::type casts.
func params(sql string) map[string]bool {
	out := map[string]bool{}
	s := stripQuoted(sql)
	for i := 0; i < len(s); i++ {
		if s[i] != ':' {
			continue
		}
		if i+1 < len(s) && s[i+1] == ':' {
			i++ // a cast
			continue
		}
		if i > 0 && s[i-1] == ':' {
			continue
		}
		j := i + 1
		for j < len(s) && (isLetter(s[j]) || (j > i+1 && isDigit(s[j]))) {
			j++
		}
		if j > i+1 {
			out[s[i+1:j]] = true
		}
		i = j - 1
	}
	return out
}

// stripQuoted blanks out '...' and "..." text, where a colon is not a parameter.
func stripQuoted(sql string) string {
	b := []byte(sql)
	var quote byte
	for i, c := range b {
		switch {
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			b[i] = ' '
		}
	}
	return string(b)
}

func isLetter(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
