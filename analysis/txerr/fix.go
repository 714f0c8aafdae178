package txerr

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ast/inspector"

	"github.com/pconform/pconform/analysis/internal/cursorx"
)

// suggestReturn offers to replace the statement at stmt, which drops call's error, with an if
// statement that returns the error. It offers nothing unless the fix is mechanical: call has
// the error as its only result, the enclosing function's last result is error, and every other
// result has a zero value that can be spelled in this file.
func suggestReturn(pass *analysis.Pass, stmt inspector.Cursor, call *ast.CallExpr) []analysis.SuggestedFix {
	tuple, ok := pass.TypesInfo.TypeOf(call).(*types.Tuple)
	if ok && tuple.Len() != 1 {
		return nil
	}
	sig, ok := enclosingSignature(pass, stmt)
	if !ok {
		return nil
	}
	results := sig.Results()
	if results.Len() == 0 || !types.Identical(results.At(results.Len()-1).Type(), types.Universe.Lookup("error").Type()) {
		return nil
	}
	file := enclosingFile(stmt)
	if file == nil {
		return nil
	}
	var values []string
	for i := 0; i < results.Len()-1; i++ {
		z, ok := zeroValue(results.At(i).Type(), qualifier(pass.Pkg, file))
		if !ok {
			return nil
		}
		values = append(values, z)
	}
	values = append(values, "err")

	src, indent, ok := sourceOf(pass, call, stmt.Node())
	if !ok {
		return nil
	}
	var b strings.Builder
	b.WriteString("if err := ")
	b.WriteString(src)
	b.WriteString("; err != nil {\n")
	b.WriteString(indent + "\treturn " + strings.Join(values, ", ") + "\n")
	b.WriteString(indent + "}")
	return []analysis.SuggestedFix{{
		Message: "return the transaction error",
		TextEdits: []analysis.TextEdit{{
			Pos:     stmt.Node().Pos(),
			End:     stmt.Node().End(),
			NewText: []byte(b.String()),
		}},
	}}
}

// enclosingSignature returns the signature of the innermost function around c. (The type
// checker records the type of a function literal, but a declaration's only via its name.)
func enclosingSignature(pass *analysis.Pass, c inspector.Cursor) (*types.Signature, bool) {
	fn, ok := cursorx.Func(c)
	if !ok {
		return nil, false
	}
	var t types.Type
	switch n := fn.Node().(type) {
	case *ast.FuncDecl:
		if obj := pass.TypesInfo.Defs[n.Name]; obj != nil {
			t = obj.Type()
		}
	case *ast.FuncLit:
		t = pass.TypesInfo.TypeOf(n)
	}
	sig, ok := t.(*types.Signature)
	return sig, ok
}

func enclosingFile(c inspector.Cursor) *ast.File {
	for fc := range c.Enclosing((*ast.File)(nil)) {
		return fc.Node().(*ast.File)
	}
	return nil
}

// sourceOf returns call's source text as written and the indentation of the line where stmt
// starts, so the replacement keeps the author's formatting.
func sourceOf(pass *analysis.Pass, call *ast.CallExpr, stmt ast.Node) (src, indent string, ok bool) {
	tf := pass.Fset.File(call.Pos())
	if tf == nil {
		return "", "", false
	}
	content, err := pass.ReadFile(tf.Name())
	if err != nil || tf.Size() != len(content) {
		return "", "", false
	}
	src = string(content[tf.Offset(call.Pos()):tf.Offset(call.End())])
	lineStart := tf.Offset(tf.LineStart(tf.Line(stmt.Pos())))
	line := content[lineStart:tf.Offset(stmt.Pos())]
	indent = string(line[:len(line)-len(strings.TrimLeft(string(line), " \t"))])
	return src, indent, true
}

// qualifier names packages as file imports them; false means file does not import the package
// under a usable name.
func qualifier(pkg *types.Package, file *ast.File) func(*types.Package) (string, bool) {
	return func(p *types.Package) (string, bool) {
		if p == pkg {
			return "", true
		}
		for _, imp := range file.Imports {
			if strings.Trim(imp.Path.Value, "`\"") != p.Path() {
				continue
			}
			if imp.Name == nil {
				return p.Name(), true
			}
			if imp.Name.Name == "_" || imp.Name.Name == "." {
				return "", false
			}
			return imp.Name.Name, true
		}
		return "", false
	}
}

// zeroValue spells the zero value of t in a return statement, or reports false when it cannot
// (a type parameter, an unnamed struct, or a type from a package the file does not import).
func zeroValue(t types.Type, qual func(*types.Package) (string, bool)) (string, bool) {
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsBoolean != 0:
			return "false", true
		case u.Info()&types.IsString != 0:
			return `""`, true
		case u.Info()&types.IsNumeric != 0:
			return "0", true
		case u.Kind() == types.UnsafePointer:
			return "nil", true
		}
		return "", false
	case *types.Pointer, *types.Slice, *types.Map, *types.Chan, *types.Signature:
		return "nil", true
	case *types.Interface:
		if _, isParam := t.(*types.TypeParam); isParam {
			return "", false
		}
		return "nil", true
	case *types.Struct, *types.Array:
		if _, named := types.Unalias(t).(*types.Named); !named {
			return "", false
		}
		ok := true
		name := types.TypeString(t, func(p *types.Package) string {
			q, found := qual(p)
			ok = ok && found
			return q
		})
		if !ok {
			return "", false
		}
		return name + "{}", true
	}
	return "", false
}
