// Package storeapi recognises the names of the actordelivery store API (its exported
// declarations; docs/analyzers.md lists the ones each analyzer keys on) in type-checked code, so that every analyzer keys on the same names in the same way.
//
// Recognition is by package path, type name and member name, never by object identity with a
// loaded copy of the store: that keeps the analyzers working on the real store, on callers of it
// in other packages, and on the small stand-in packages in the analyzers' testdata, which use the
// same import path. The package reads go/types objects only; it never reports diagnostics.
package storeapi
