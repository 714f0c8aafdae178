// Package traces defines pconform's trace format: one JSON file per execution, holding where the
// execution came from, its steps (an operation, its arguments, the logical time and the result the
// model expects) and the state it ended in.
//
// The package is pure: it parses and writes bytes and never touches a store, a model or the file
// system beyond the path-taking wrappers. Parsing is strict: an unknown field or operation, a
// missing or mistyped field, or an out-of-range value is an error naming the file, the step and
// the field. Writing is canonical, so two equal traces are byte-identical files.
//
// The semantics each operation stands for are stated once, in docs/semantics.md.
package traces
