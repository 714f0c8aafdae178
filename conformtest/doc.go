// Package conformtest checks a delivery store against pconform's models from a plain go test, in
// the style of testing/fstest: one call runs every check as subtests.
//
// # Usage
//
//	func TestConformance(t *testing.T) {
//		conformtest.Run(t, func(t *testing.T) adapter.Target { return mystore.NewTarget(t.TempDir()) }, myProfile)
//	}
//
// newTarget returns a fresh, empty target for each subtest (the kit closes it). The zero
// profile.Profile is the default semantics of docs/semantics.md; a store that settles some rules
// otherwise passes its own profile (profile.ReadFile), and every expected result is re-expected
// under it by the reference model. [Check] takes a [Config] for the rest (hunt budget, seed, the
// store's own trace files).
//
// # Subtests
//
//   - capabilities: what the target declares it cannot do or report (replay.Capabilities),
//     and whose consumer and publisher run its protocol steps (adapter.OwnersOf: the store's
//     own, or the kit's reference through adapter.WithProtocol), logged; a declared-unsupported
//     operation the target runs anyway is a failure.
//   - corpus/NAME: every committed green trace of the P checker (traces/corpus) must match,
//     re-expected under the profile by the reference model (models.Reexpect: the steps and token
//     symbols stay, the results and final state are the profile's). A trace that uses an
//     operation the target does not support is replayed up to that step (the steps before it
//     and the state after them must match), then skipped, saying how far it ran. So is a trace
//     whose steps do not all fit the profile (models.ErrUnfit), up to the first step that does
//     not.
//   - hand/NAME: the same for the hand-written green traces (traces/testdata/good).
//   - profile/PROFILE/NAME: for a target whose profile makes the same choices as a shipped one
//     (profiles/PROFILE.json), the small P corpus made under that profile (traces/profiles):
//     executions the model has only under it, expected as the P model expects them. With its
//     reopen/profile/PROFILE/NAME run. Other targets do not run them.
//   - reopen/NAME: the same traces with the target reopened (a crash and restart) before every
//     step and before the final snapshot.
//   - variant/VARIANT/NAME: every committed counterexample (traces/corpus/*-bad, traces/hunted).
//     The target must do what the correct store does under the profile. If it does what the
//     broken variant does instead, the failure says "reproduces broken variant VARIANT" and the
//     property the variant violates. A counterexample reaches its bug under the profile only when
//     the reference model under it follows the variant's results up to the bug's step
//     (expect.diverges_at) and refuses the bug there. One that the profile moves off that path,
//     or that an unsupported step cuts short before the bug's step, is replayed all the same,
//     then skipped as "not exercised under this profile", never passed. The skip names the trace
//     that reaches the bug in its place: its replacement, a bug trace the P model made under a
//     profile with the same choices (traces/profiles/PROFILE/NAME-replaced-s<seed>-<n>, made by
//     `pconform profile corpus`), run as variant/VARIANT/profile/PROFILE/NAME like any
//     counterexample; or another committed counterexample of the same variant that reaches it.
//     TestNoVacuousCounterexamples holds this under every shipped and example profile.
//   - extra/NAME, reopen/extra/NAME: the trace files of Config.Traces, the store's own, run as
//     the committed green traces are (a counterexample among them as variant/VARIANT/NAME).
//   - hunt: random traces (a small generator of this package, not properties/, whose hunts
//     drive actordelivery itself), expected by the reference model under the profile, one trace
//     per seed from Config.Seed on. They hold store-level operations and, when the target runs
//     them (its own runtime or the kit's reference), protocol steps: consumer fetches and handles
//     with each outcome, publisher deliveries with each fault, and crashes. Each distinct divergence (the diverging operation
//     and the result fields that differ) is shrunk to a short trace, written to a file, and
//     reported as a failing subtest hunt/seed-N; Config{Seed: N, Hunts: 1} reproduces it alone.
//     A later seed that diverges the same way is only logged.
//
// Every failure ends with whose consumer and publisher ran ("consumer: the store's own;
// publisher: the kit's reference (adapter.WithProtocol)"). A counterexample whose consumer or
// publisher steps ran on the kit's reference logs that it checks the store's operations only.
//
// A failure that one profile choice explains names the rule: set the other way, that choice
// carries the target furthest past its divergence (replayed with the same reopens).
// TestSubtestsFail keeps every family honest with deliberately wrong targets and profiles.
//
// # Bad input
//
// A target that reports a snapshot column it declared unknown, answers ErrUnsupported for an
// operation it does not declare unsupported, or runs one it declares unsupported fails with an
// error naming the column or operation.
package conformtest
