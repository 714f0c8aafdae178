// Package profile states the delivery semantics as a family of choices. Where docs/semantics.md
// fixes a rule that a reasonable store could settle differently (a lease live or expired at
// until == now, an ack that keeps or deletes its row, ...), the rule is a named [Choice] with
// today's rule as its default. A [Profile] picks one value per choice; its zero value is the
// default profile, the semantics as docs/semantics.md states them.
//
// # Usage
//
// A store declares its profile in a small JSON file (see profiles/ at the repository root):
//
//	{"name": "live-at-until", "lease_at_until": "live", "ack": "deletes"}
//
// [Read] and [ReadFile] parse one, refusing an unknown choice or value with an error naming it and
// its line. The models (models.Config.Profile) and the P model (through the constants
// internal/gen writes from [Choices]) then follow the profile's choices.
//
// # Contract
//
//   - [Choices] is the one table of the choices: the Profile type (profile_gen.go), the parser's
//     validation, the table in docs/semantics.md and the P model's constants are generated from it
//     by internal/gen, and a test fails when one of them is stale.
//   - Pure: no I/O except in ReadFile, which is a thin wrapper over Read.
//   - The zero Profile is the default; a Profile is comparable, and [Profile.Same] compares
//     choices without the name.
package profile
