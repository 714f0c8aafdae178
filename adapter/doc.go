// Package adapter holds what a store's adapter for the conformance kit needs and should not have
// to guess: the step and snapshot types (the same as replay's), time and token conversions, the
// effects convention, the handler error, and the reference protocol steps. With conformtest, it
// is all a store author imports: every name an adapter needs from replay, traces and profile is
// reached here (surface.go), and conformtest's TestAuthorSurface keeps each example at 30 names
// or fewer.
//
// # Usage
//
// An adapter has a method per store operation (enqueue: Enqueue, ack_by_id: AckByID, ...), of
// type func(ctx context.Context, at int64, a Args) (Observation, error), plus Snapshot, Reopen
// and Close. [Adapt] makes a [Target] of it; an operation without a method is unsupported. A
// store with its own consumer and publisher puts them under test through the small interfaces
// [Consumer] (fetch, handle, crash) and [Publisher] (deliver, with the step's faults injected at
// its commits by [Faults]). [WithRuntime] puts them together:
//
//	target := adapter.WithRuntime(myAdapter, prof, adapter.Runtime{Consumer: myConsumer, Publisher: myPublisher})
//
// Then the kit checks the store's own retry, dead-letter and delivery code. A nil Consumer or
// Publisher is replaced by the kit's reference one. A store that has no runtime at all wraps its
// adapter with [WithProtocol], which runs consumer_fetch, consumer_handle, publisher_deliver and
// crash as the reference consumer and publisher do (docs/semantics.md), through the adapter's own
// store operations:
//
//	target := adapter.WithProtocol(myAdapter, prof)
//
// A [Target] written with a Do method is taken as it is. [OwnersOf] says whose consumer and
// publisher a target runs; conformtest puts it in every report.
//
// Times convert with [At], [Seconds] and [Duration]; tokens with [FormatToken] and [ParseToken].
// An operation's documented error (a lost lease, a missing row) is an error wrapping [ErrDenied];
// a store refusal (a constraint error) one wrapping [ErrRefused]. The snapshot columns a store
// cannot report are declared by a Capabilities method ([Capabilities]).
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
//   - WithRuntime's steps run the store's own consumer and publisher as they are; the wrapper
//     adds no rule of its own to them. Only an injected fault's error (ErrCommitFailed,
//     ErrCrashed) is taken as the step's, and a crash after a delivery's first commit is reported
//     as crashed whatever the publisher went on to say, as nobody would have seen it. A fault
//     that the publisher's error wraps or joins with another error does not hide it: the step
//     fails naming the other error (TestFaultBesideAnotherError).
//   - The wrapper honours every profile choice the reference model honours.
//     TestWrapperAgreesWithModel runs every committed trace, re-expected by the model under each
//     shipped profile (profiles/*.json, examples/*/profile.json), under the profile of each choice
//     trace (traces/testdata/choices) and under every switch at its alternative, through the
//     wrapper over the model's own store-level operations; every step must match. A divergence
//     there is the wrapper's fault, never the store's. Most choices are the store's to make; the
//     wrapper itself reads the ones its reference steps decide (fetch_sweep, failed_delivery,
//     complete_fence on the fold, dead_letter_id in a duplicate flag it reads from the snapshot).
//   - Pure: no I/O, no clock, no global state.
package adapter
