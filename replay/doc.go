// Package replay is pconform's conformance replay engine: it drives one trace, step by step,
// against a [Target] and reports the first step at which the target's observable result differs
// from the result the trace expects.
//
// # Usage
//
//	target, err := replay.NewTarget("store", dir) // or "model", or a broken variant
//	...
//	defer target.Close()
//	v, err := replay.Run(ctx, trace, target, replay.DefaultOptions())
//	if err != nil { ... }          // the run could not happen (a target failed, bad input)
//	if v.Outcome != replay.Match { // a finding, not an error
//		v.Report(os.Stderr)
//	}
//
// [Run] returns a [Verdict]: Match, Diverged (with the step, the expected and observed results,
// a go-cmp diff, the target's rows involved and the history up to that step) or Inconclusive (the
// run stopped early, e.g. its context ended, without a divergence). [WriteEvidence] keeps a
// divergence on disk (the trace, the target, both histories tagged #i, the report) with the
// commands that reproduce it. [Options] add durability checks: reopen the database before one
// step, or before every step; a correct store must still match.
//
// # Targets
//
// registry.go is the one target registry of the project: replay's tests, the properties' hunts
// and the CLI's --target all resolve names through [NewTarget], [Targets] and [BrokenVariants].
// It knows "store" (the SQLite store with its real Consumer and Publisher, see [StoreTarget]),
// "model" (the pure reference model, [ModelTarget]), "model-raw-attempts" (the model with the
// raw-attempts retry count), the control "eligibility-copy", and the broken variants
// ([BrokenVariants]: split-write, raw-attempts, unfenced-ack, fetched-attempts, lease-boundary, lease-early,
// fifo-overtake, outbox-unbounded, stale-extend). Every store-backed entry is built the same way: a store target whose
// storeConfig replaces one part (the copied eligibility, extend and claim SQL, the consumer's handle, the split delivery)
// by its broken counterpart from internal/brokenstore. Any other implementation plugs in through
// the small [Target] interface.
//
// # Contract
//
//   - Symbols, not values. A trace names tokens by small integer symbols. The engine binds a
//     symbol to the target's real token the first time the symbol appears in an expected result
//     and checks every later appearance against that binding, in both directions: a bound symbol
//     must come back as the same real token, and one real token never stands for two symbols. An
//     argument symbol that is not bound yet is sent as a token that matches nothing.
//   - Time is a number. Every step runs at the trace's logical time; a target sets its clock to
//     [traces.At] of it before the step.
//   - Observable results only. Step results are compared field by field after mapping the
//     target's tokens back to symbols; after the last step the final snapshot is compared with
//     go-cmp after [traces.Canonicalize] on both sides.
//   - A divergence is a value, never an error. Run returns an error only when the run itself
//     could not happen. A Target's Do returns an error only for infrastructure failures; a lost
//     lease or claim is an observation.
//   - Broken variants are built in internal/brokenstore from actordelivery's public API, or on
//     a copy of its eligibility SQL; actordelivery never carries a flag or hook for them.
//
// The engine core (binding, comparison, verdicts, histories) is pure; the store target and
// [WriteEvidence] are the only parts that touch files, through actordelivery and os.
package replay
