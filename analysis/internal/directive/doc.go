// Package directive reads the //pconform:NAME comment directives that mark declarations for
// pconform's analyzers.
//
// A directive is a line comment of the exact form "//pconform:NAME" (no space after the slashes,
// as for //go: directives), optionally followed by a space and free text that the analyzers
// ignore (a reason, for readers). It counts only in the doc comment of a function, method or
// interface method, or in the doc or trailing line comment of a struct field.
//
// The package only reads syntax: it never resolves types, reports diagnostics or exports facts;
// each analyzer decides what a directive means and records it as its own analysis.Fact.
package directive
