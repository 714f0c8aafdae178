package storeapi

import (
	"go/types"
)

// PkgPath is the import path of the store package.
const PkgPath = "github.com/pconform/pconform/actordelivery"

// InStore reports whether obj is declared in the store package.
func InStore(obj types.Object) bool {
	return obj != nil && obj.Pkg() != nil && obj.Pkg().Path() == PkgPath
}

// IsNamed reports whether t, or the type t points to, is the store's named type name.
func IsNamed(t types.Type, name string) bool {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && InStore(n.Obj()) && n.Obj().Name() == name
}

// IsField reports whether obj is the field named field of the store's struct type typeName
// (for example Message.Attempts). A field of another struct that embeds typeName is reached
// through a selection whose Obj is still typeName's own field, so embedding is covered.
func IsField(obj types.Object, typeName, field string) bool {
	v, ok := obj.(*types.Var)
	if !ok || !v.IsField() || !InStore(v) || v.Name() != field {
		return false
	}
	tn, ok := v.Pkg().Scope().Lookup(typeName).(*types.TypeName)
	if !ok {
		return false
	}
	st, ok := tn.Type().Underlying().(*types.Struct)
	if !ok {
		return false
	}
	for f := range st.Fields() {
		if f == v.Origin() {
			return true
		}
	}
	return false
}

// IsFunc reports whether obj is the store's package-level function name.
func IsFunc(obj types.Object, name string) bool {
	fn, ok := obj.(*types.Func)
	if !ok || !InStore(fn) || fn.Name() != name {
		return false
	}
	sig := fn.Type().(*types.Signature)
	return sig.Recv() == nil
}

// IsMethod reports whether obj is the method name of the store's type recvType (value or
// pointer receiver).
func IsMethod(obj types.Object, recvType, name string) bool {
	fn, ok := obj.(*types.Func)
	if !ok || fn.Name() != name {
		return false
	}
	recv := fn.Type().(*types.Signature).Recv()
	return recv != nil && IsNamed(recv.Type(), recvType)
}

// IsConst reports whether obj is the store's constant name (for example PathLeaseless).
func IsConst(obj types.Object, name string) bool {
	c, ok := obj.(*types.Const)
	return ok && InStore(c) && c.Name() == name
}

// IsError reports whether t is the predeclared error type.
func IsError(t types.Type) bool {
	return types.Identical(t, types.Universe.Lookup("error").Type())
}

// IsContext reports whether t is context.Context.
func IsContext(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context" && n.Obj().Name() == "Context"
}

// LastResultIsError reports whether sig's last result is error.
func LastResultIsError(sig *types.Signature) bool {
	r := sig.Results()
	return r.Len() > 0 && IsError(r.At(r.Len()-1).Type())
}

// IsExecTxSignature reports whether sig has the shape of the store's transaction runner:
// (context.Context, bool, func(context.Context) error) error. Any method named ExecTx with this
// shape runs a transaction, whatever its receiver: *Store, an interface the store satisfies, or a
// fault-injecting wrapper.
func IsExecTxSignature(sig *types.Signature) bool {
	p, r := sig.Params(), sig.Results()
	if p.Len() != 3 || r.Len() != 1 || !IsError(r.At(0).Type()) || sig.Variadic() {
		return false
	}
	if !IsContext(p.At(0).Type()) || !types.Identical(p.At(1).Type(), types.Typ[types.Bool]) {
		return false
	}
	fn, ok := p.At(2).Type().Underlying().(*types.Signature)
	if !ok {
		return false
	}
	return fn.Params().Len() == 1 && IsContext(fn.Params().At(0).Type()) &&
		fn.Results().Len() == 1 && IsError(fn.Results().At(0).Type())
}

// IsEffectiveAttemptsSignature reports whether t is a function type of the shape of the
// store's effective-attempts helper: func(int, actordelivery.Path) int. Calling any value of
// that type (EffectiveAttempts itself, or a local or field holding it) is how a stored count becomes an effective attempt.
func IsEffectiveAttemptsSignature(t types.Type) bool {
	sig, ok := t.Underlying().(*types.Signature)
	if !ok || sig.Variadic() {
		return false
	}
	p, r := sig.Params(), sig.Results()
	return p.Len() == 2 && r.Len() == 1 && isInt(p.At(0).Type()) && IsNamed(p.At(1).Type(), "Path") &&
		isInt(r.At(0).Type())
}

// IsInteger reports whether t's underlying type is an integer type.
func IsInteger(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0
}

func isInt(t types.Type) bool {
	return types.Identical(t, types.Typ[types.Int])
}
