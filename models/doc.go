// Package models is pconform's reference semantics in Go: a pure model of the durable mailbox, the
// transactional outbox, the consumer and the publisher, stated once in docs/semantics.md and
// implemented here exactly as written there. The P models in models/p follow the same rules; the
// SQLite store in actordelivery must agree with both, and conformance replay says which side drifted
// when they do not.
//
// # Usage
//
// A model is a value. [Init] builds the empty state for a [Config]; [Step] applies one trace
// operation (a [traces.Op] with its [traces.Args]) at a logical time and returns the next state
// and the [traces.Result] a caller of the real store would observe. [State.Snapshot] gives the
// canonical snapshot that traces record as their final state. [RunTrace] runs a whole trace,
// binding the trace's token symbols to the model's own tokens; [Run] runs bare steps whose token
// arguments already are model tokens. A checker of a history recorded on a database that already
// held rows starts a [Machine] from them with [Machine.Adopt] (one [StartRow] each) and holds a
// later statement of the store's rows to the state reached with [Machine.Compare] and
// [Machine.Counts].
//
// # Contract
//
//   - Pure: no I/O, no clock, no randomness, no goroutines, no global state. Step never changes
//     the state it is given; two calls with equal inputs give equal outputs.
//   - Never touches SQLite or any other store; it is the thing a store is compared against.
//   - Tokens are the model's own: increasing integers from 1, one per lease and one per non-empty
//     outbox claim batch. Token 0 means "no token" and never matches.
//   - A semantic failure (a stale token, an unknown id) is a [traces.Result] with Err or Action
//     set, never a Go error. Step returns an error, wrapping [ErrMalformed], only for a step that
//     cannot be a step of any execution: an unknown op, a missing or out-of-range argument, time
//     running backwards, a consumer_handle that does not pair with its worker's fetch, a
//     split publisher_deliver for an outbox row that does not exist (a fold one is a stale
//     delivery of a purged row: claim_lost).
//
// # Where docs/semantics.md is silent
//
// The model settles these points; every other side must settle them the same way.
//
//   - A cleared token clears its end time too: a row without a lease token has lease_until 0, an
//     outbox row without a claim token has claim_until 0.
//   - outbox_enqueue makes the row available at once (available_at = now); a delivery enqueues
//     with delay 0. An outbox_claim that finds no row issues no token.
//   - consumer_handle decides on the delivery its fetch returned (the attempts the fetch reported),
//     not on a re-read of the row, as the real consumer does with the delivery it holds.
//   - In a handle, an ack_by_id, nack_by_id or dead_letter that finds the row no longer ready
//     rolls the handle back like a failed fenced ack or nack: action lease_lost. The Attempt of
//     a failed handle is its effective attempt whatever the action.
//   - A handle for a worker holding no delivery is idle whatever mailbox and profile it names; a
//     second fetch by a worker still holding one, or a handle naming another mailbox or profile
//     than the worker's fetch, is malformed. lease_for on a leaseless fetch is ignored.
//   - publisher_deliver's duplicate flag is what the target enqueue observed whenever the
//     enqueue ran, even when its transaction then rolled back (fold, claim_lost) or failed to
//     commit (fold or split, commit_fails), as docs/semantics.md says. On the fold a lost claim
//     rolls back before any commit, so the action is claim_lost whatever the fault. crash_between stops only the delivery: consumer workers keep
//     their fetches (a trace in which the whole process died follows it with a crash step).
//   - Times never go back: a step earlier than the previous one is malformed.
//
// # Implementation notes
//
// The model keeps, per mailbox, an index of its ready messages in seq order and finds the next
// message in one pass over it; acked rows leave the index, so a lease, a peek or an expire costs
// time in the mailboxes' backlog, not in the number of rows a long trace has acked. An outbox claim
// costs time in the rows it dead-letters and takes, not in the pending rows: they are indexed by
// the time a claim may take them and by seq (claimIndex). [Step] copies the whole state,
// so a run of n Steps costs time quadratic in n; [Run], [RunTrace] and a [Machine] step one state
// in place, so their cost per step does not grow with the trace (BenchmarkHistory). The tests hold a second, deliberately naive model that recomputes
// eligibility by brute force straight from the rule text, and compare the two on random
// operation sequences (see TestModelMatchesNaive).
package models
