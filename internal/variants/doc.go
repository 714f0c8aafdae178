// Package variants is the one catalogue of the targets pconform knows: the correct store and
// model, the controls, and every known-broken variant of the store.
//
// Each [Row] says what the variant is, where the P model reproduces it (its counterexample test
// case and sc.variant string), which internal/brokenstore part builds it, whether the property
// hunts and the observed-run efficacy table cover it (and why not), and which Go function and
// SQL statement of actordelivery it breaks. Every other list of variants is read from this
// table or generated from it by internal/gen, behind TestGeneratedFilesAreCurrent: the target
// registry (internal/targets), bridge's counterexample map, the efficacy table's exclusions, the
// P constants file and the prose lists in the docs.
//
// Beside the targets, [ModelOnlyCounterexamples] lists the P counterexamples whose broken part is
// a machine of the P model's environment, not the store: they are no target, and no corpus trace
// is made of them.
//
// The package is data only: it imports nothing of the project and has no mutable state.
package variants
