package rawattempts

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"

	"github.com/pconform/pconform/analysis/internal/cursorx"
	"github.com/pconform/pconform/analysis/internal/directive"
	"github.com/pconform/pconform/analysis/internal/storeapi"
	"github.com/pconform/pconform/analysis/internal/suppress"
)

// Analyzer reports raw stored attempt counts used in retry decisions.
var Analyzer = &analysis.Analyzer{
	Name:      "rawattempts",
	Doc:       "report raw stored attempt counts used in retry decisions\n\nA message's stored Attempts must pass through actordelivery.EffectiveAttempts before it reaches RetryPolicy.Retry or a comparison with MaxAttempts that decides a retry.",
	URL:       "https://github.com/pconform/pconform/blob/main/docs/analyzers.md#rawattempts",
	Requires:  []*analysis.Analyzer{inspect.Analyzer},
	FactTypes: []analysis.Fact{(*StoredAttempts)(nil), (*RetryDecision)(nil), (*EffectiveAttempts)(nil)},
	Run:       run,
}

// StoredAttempts is the fact that a struct field holds a stored, unbumped attempt count
// (//pconform:storedattempts).
type StoredAttempts struct{}

// RetryDecision is the fact that a function's integer arguments are attempt numbers of a retry
// decision (//pconform:retrydecision).
type RetryDecision struct{}

// EffectiveAttempts is the fact that a function turns a stored count into an effective attempt
// (//pconform:effectiveattempts).
type EffectiveAttempts struct{}

// AFact marks StoredAttempts as an analysis fact.
func (*StoredAttempts) AFact() {}

// AFact marks RetryDecision as an analysis fact.
func (*RetryDecision) AFact() {}

// AFact marks EffectiveAttempts as an analysis fact.
func (*EffectiveAttempts) AFact() {}

func (*StoredAttempts) String() string    { return "storedattempts" }
func (*RetryDecision) String() string     { return "retrydecision" }
func (*EffectiveAttempts) String() string { return "effectiveattempts" }

func run(pass *analysis.Pass) (any, error) {
	suppress.Install(pass)
	insp := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	exportMarks(pass, insp)
	for cur := range insp.Root().Preorder((*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)) {
		switch n := cur.Node().(type) {
		case *ast.FuncDecl:
			if n.Body == nil || exempt(pass, n) {
				continue
			}
		case *ast.FuncLit:
			if !cursorx.TopLevel(cur) {
				continue // analysed with the function that contains it
			}
		}
		newChecker(pass).function(cur)
	}
	return nil, nil
}

// exempt reports whether decl's body may read stored counts freely: the effective-attempts
// helper itself, anything with its shape or mark, and the store's own methods.
func exempt(pass *analysis.Pass, decl *ast.FuncDecl) bool {
	fn, ok := pass.TypesInfo.Defs[decl.Name].(*types.Func)
	if !ok {
		return false
	}
	if storeapi.IsEffectiveAttemptsSignature(fn.Type()) || pass.ImportObjectFact(fn, new(EffectiveAttempts)) {
		return true
	}
	return storeapi.InStore(fn) && storeapi.IsMethod(fn, "Store", fn.Name())
}

// exportMarks records the facts for marked declarations and reports marks that cannot mean
// anything where they stand.
func exportMarks(pass *analysis.Pass, insp *inspector.Inspector) {
	markFunc := func(name *ast.Ident, groups ...*ast.CommentGroup) {
		fn, ok := pass.TypesInfo.Defs[name].(*types.Func)
		if !ok {
			return
		}
		sig := fn.Type().(*types.Signature)
		if c, ok := directive.Find(directive.RetryDecision, groups...); ok {
			if !hasIntegerParam(sig) {
				pass.Reportf(c.Pos(), "//pconform:%s on %s has no effect: it has no integer parameter", directive.RetryDecision, name.Name)
			} else {
				pass.ExportObjectFact(fn, new(RetryDecision))
			}
		}
		if c, ok := directive.Find(directive.EffectiveAttempts, groups...); ok {
			if sig.Results().Len() != 1 || !storeapi.IsInteger(sig.Results().At(0).Type()) {
				pass.Reportf(c.Pos(), "//pconform:%s on %s has no effect: it must return one integer", directive.EffectiveAttempts, name.Name)
			} else {
				pass.ExportObjectFact(fn, new(EffectiveAttempts))
			}
		}
	}
	for cur := range insp.Root().Preorder((*ast.FuncDecl)(nil), (*ast.InterfaceType)(nil), (*ast.StructType)(nil)) {
		switch n := cur.Node().(type) {
		case *ast.FuncDecl:
			markFunc(n.Name, n.Doc)
		case *ast.InterfaceType:
			for _, m := range n.Methods.List {
				if len(m.Names) == 1 {
					markFunc(m.Names[0], m.Doc, m.Comment)
				}
			}
		case *ast.StructType:
			for _, f := range n.Fields.List {
				c, ok := directive.Find(directive.StoredAttempts, f.Doc, f.Comment)
				if !ok {
					continue
				}
				for _, name := range f.Names {
					v, ok := pass.TypesInfo.Defs[name].(*types.Var)
					if !ok {
						continue
					}
					if !storeapi.IsInteger(v.Type()) {
						pass.Reportf(c.Pos(), "//pconform:%s on %s has no effect: the field is not an integer", directive.StoredAttempts, name.Name)
						continue
					}
					pass.ExportObjectFact(v, new(StoredAttempts))
				}
			}
		}
	}
}

func hasIntegerParam(sig *types.Signature) bool {
	for p := range sig.Params().Variables() {
		if storeapi.IsInteger(p.Type()) {
			return true
		}
	}
	return false
}
