// Package replay is pconform's conformance replay engine: it drives one trace, step by step,
// against a [Target] and reports the first step at which the target's observable result differs
// from the result the trace expects.
//
// # Usage
//
//	target, err := targets.New("store", dir) // internal/targets: "model", or a broken variant
//	...
//	defer target.Close()
//	v, err := replay.Run(ctx, trace, target, replay.Options{})
//	if err != nil { ... }          // the run could not happen (a target failed, bad input)
//	if v.Outcome != replay.Match { // a finding, not an error
//		v.Report(os.Stderr)
//	}
//
// [Run] returns a [Verdict]: Match, Diverged (with the step, the expected and observed results,
// a diff, the target's rows involved and the history up to that step) or Inconclusive (the run
// stopped early, e.g. its context ended, without a divergence). [Record] runs a trace's steps and
// writes down what the target did, bug included. The zero [Options] is a plain replay; its
// fields add durability checks: reopen the database before some steps, or before every step. A
// correct store must still match.
//
// Any implementation plugs in through the small [Target] interface. A driver other than Run
// that calls a Target itself maps tokens through a [Binding] (or [NewBinder], [TargetArgs],
// [Symbolize] and [SymbolizeSnapshot]).
//
// The project's own targets (the store, the model, the broken variants, their registry and
// fixtures) live in internal/targets; formatting in internal/tracefmt; claims and evidence
// files in internal/report.
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
//     lease or claim is an observation, and so is a step the store refused ([ErrRefused],
//     compared as the result err "refused").
//   - What a target declares is kept ([Capabilities]): an operation it declares unsupported is
//     never sent (the verdict is Inconclusive), a snapshot column it declares unknown is left
//     out of the final comparison, with the columns the trace itself leaves unknown, and a
//     target that reports a column it declared unknown makes Run return an error naming it. A
//     result it declares unreported (Capabilities.Unreported: a count, a duplicate flag, an
//     operation's error kind) is left out of that operation's comparison on both sides, and the
//     verdict lists each step where it was (Verdict.NotCompared).
//
// The engine is pure: it touches no file, database or clock of its own.
package replay
