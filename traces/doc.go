// Package traces defines pconform's trace format: one JSON file per execution, holding where the
// execution came from, its steps (an operation, its arguments, the logical time and the result the
// model expects) and the state it ended in.
//
// The package is pure: it parses and writes bytes and never touches a store, a model or the file
// system beyond the path-taking wrappers. Parsing is strict: an unknown field or operation, a
// missing or mistyped field, or an out-of-range value is an error naming the file, the step and
// the field. Writing is canonical, so two equal traces are byte-identical files.
//
// The semantics each operation stands for are stated once, in docs/semantics.md; the format
// itself, with examples and every rule the reader enforces, in docs/trace-format.md.
//
// Every trace starts from the empty store. An observed trace (origin kind "observed") is converted
// from a recorder's event log (package observe); the log's "incarnation" and "snapshot" events, a
// store's Open and the rows its database held then, are not steps, and a log that starts from a
// non-empty snapshot has no trace form (observe.Convert refuses it).
//
// # Usage
//
// [Read], [ReadFile] and [Unmarshal] parse; [Write], [WriteFile] and [Marshal] write the canonical
// encoding; [Validate] checks an in-memory trace by the reader's rules. [Canonicalize] puts a
// snapshot in the order the format requires, [Hash] gives a content hash for deduplication,
// [Walk] lists a corpus directory, and [Schema] returns the JSON Schema for tools outside Go.
//
// The json tags on the types name the fields, but encoding/json does not produce this format:
// omitempty drops required arguments that are zero ("token": 0, "worker": 0), writes fields an
// operation does not take, and its reader is not strict. Use this package's functions.
//
// # Guarantees
//
//   - Read never panics, whatever its input; a bad trace is a [*ParseError] wrapping [ErrSyntax]
//     or [ErrInvalid].
//   - Everything Read accepts, Marshal writes, and reads back equal; Marshal(Read(b)) == b for
//     every canonical b. Marshal refuses what Validate refuses, so a written trace always reads.
//   - Validate and Read enforce the same rules, except that in memory "absent" is "zero".
//   - Every file Read accepts also satisfies the JSON Schema (the schema is the weaker of the two).
//
// # Never
//
// The package does not interpret a trace: it checks the format's rules (fields, ranges,
// vocabularies, time order, token symbols, snapshot order) but not whether the expected results
// are what the semantics imply. That is replay's job.
package traces
