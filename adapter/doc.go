// Package adapter holds what a [replay.Target] for a store needs and should not have to guess:
// token conversions, the effects convention, the handler error, and the reference protocol steps.
//
// # Usage
//
// An adapter for a store with only store-level operations (enqueue, lease, ack, outbox_claim, ...)
// implements those in its Do, answers the protocol steps with [replay.ErrUnsupported], and wraps
// itself with [WithProtocol]:
//
//	target := adapter.WithProtocol(myAdapter, prof)
//
// The wrapper runs consumer_fetch, consumer_handle, publisher_deliver and crash as the reference
// consumer and publisher do (docs/semantics.md), through the adapter's own store operations. An
// adapter whose store has its own consumer or publisher implements those steps itself instead,
// and is not wrapped.
//
// Times convert with [traces.At], [traces.Seconds] and [traces.Duration]; tokens with
// [FormatToken] and [ParseToken]. A store refusal (a constraint error) is returned from Do wrapped
// in [replay.ErrRefused]; what the target cannot do or report is declared by a
// Capabilities method ([replay.Capabilities]).
//
// # Contract
//
//   - The reference steps run only the wrapped target's Do and Snapshot; they never reach into the
//     store. A step's store operations run at the step's time, the fenced one first (a nack with
//     the lease's token before a leased dead letter), so a failed fence changes nothing.
//   - The wrapper keeps the effects log (docs/semantics.md, "Effects") and each worker's fetched
//     delivery in memory; both survive Reopen, the fetches do not survive a crash step. When the
//     store keeps checkpoints, an acked handle also saves the log as the checkpoint
//     EffectsActor(mailbox), right after the ack, so load_checkpoint sees its version.
//   - TestReferenceSteps holds the reference steps to the real consumer and publisher: every
//     committed green trace, run on actordelivery's store-level operations through the wrapper,
//     matches.
//   - The wrapper honours every profile choice the reference model honours.
//     TestWrapperAgreesWithModel runs every committed trace, re-expected by the model under each
//     shipped profile (profiles/*.json, examples/*/profile.json), through the wrapper over the
//     model's own store-level operations; every step must match. A divergence there is the
//     wrapper's fault, never the store's.
//   - Pure: no I/O, no clock, no global state.
package adapter
