// Package reach says whether a counterexample trace reaches its bug under a semantic profile:
// whether a correct store under the profile, run on the trace's steps, does what the broken
// variant did at every step before the bug's step (expect.diverges_at) and refuses the bug there.
// A profile can move a run off the bug's path (a lease still live at its end time means no
// takeover happens), or allow what the variant does; the trace then checks nothing about the bug
// under that profile, and a replacement made by the P model under the profile must stand in
// (`pconform profile corpus`).
//
// The kit (conformtest) asks it before it counts a counterexample as passed; `pconform profile
// corpus` asks it which committed counterexamples need a replacement and whether a candidate
// replacement reaches its bug.
//
// # Contract
//
//   - Pure: it runs the reference model (internal/modeltarget) and nothing else.
//   - A trace's steps that do not fit the profile (models.ErrUnfit) are cut before the first one
//     that does not; a bug at or past the cut is not reached.
//   - Errors are only for a trace the reference model cannot run at all; "not reached" is a
//     verdict with its reason, never an error.
package reach
