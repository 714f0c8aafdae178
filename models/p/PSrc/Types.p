/*****************************************************************************************************
 * Types of the delivery model: the rows of the store, the result of a request, and the configuration
 * of scenarios. Field names follow the trace format (traces/trace.go) except where P reserves the
 * word: a row's `state` is `row_state` (P keyword) and its creation order `seq` is `seqno`.
 *****************************************************************************************************/

// A mailbox row. token/lease_until are both 0 while the row carries no lease. seqno is creation
// order, strictly increasing across the store.
type tMsg = (mailbox: string, id: string, key: string, priority: int, payload: string, row_state: string,
             attempts: int, max_attempts: int, available_at: int, token: int, lease_until: int, seqno: int);

// An outbox row. token/claim_until are both 0 while the row carries no claim. row_state is
// "pending", "completed" or "dead_letter"; dead_reason is "" unless it is "dead_letter".
// max_delivery_attempts (>= 1) bounds how often the row is claimed.
type tOutRow = (id: string, target: string, key: string, priority: int, max_attempts: int, payload: string,
                row_state: string, delivery_attempts: int, available_at: int, token: int, claim_until: int, seqno: int,
                max_delivery_attempts: int, dead_reason: string);

// A dead letter.
type tDead = (mailbox: string, id: string, attempts: int, reason: string);

// A delivery a consumer worker fetched and has not handled yet. It lives in process memory, so a
// crash forgets it. token is 0 on the leaseless path.
type tFetched = (mailbox: string, id: string, attempts: int, max_attempts: int, token: int);

// One row returned by an outbox claim.
type tClaimed = (id: string, delivery_attempts: int, token: int);

// The result of one store operation or protocol step, as its caller sees it. msg_id is "" when no
// message was returned. advanced answers a clock tick. quiet answers a fetch or claim that found
// nothing: true when nothing the caller waits for can happen any more (Store.QuietFor for a fetch;
// no pending outbox row for a claim).
type tRes = (err: string, duplicate: bool, msg_id: string, msg_attempts: int, msg_token: int,
             msg_max_attempts: int, affected: int, claimed: seq[tClaimed], action: string, attempt: int,
             bug: bool, advanced: bool, quiet: bool);

// The reply clients receive (eReply).
type tReply = (msg_id: string, msg_token: int, action: string, quiet: bool);

// Consumer profiles. Leased and Leaseless are correct; the others are the deliberately broken
// profiles the counterexample tests run. EffectOutsideFold is a leased worker whose handler writes
// its effect outside the fold's transaction (docs/semantics.md, "The transaction boundary": a
// store call with a context that does not carry the transaction): the effect commits on its own,
// before the handle, and stays when the handle's acknowledgement then fails or never comes.
enum tConsumerProfile { Leased, Leaseless, LeaselessRawAttempts, UnfencedAck, LeaselessFetchedAttempts,
                        EffectOutsideFold }

// Batch consumer profiles (docs/semantics.md, "Batches"). BatchLeased and BatchLeaseless are
// correct: a batch fetch of up to `size` messages in one step, and one step that commits every
// message's outcome, each as a single handle would. The others are deliberately broken batch
// consumers on the leased path, one per bug the batch rules exclude:
//   BatchAckBeforeEffects: the acknowledgements commit in one step, the effects in a second one;
//   BatchAcksFailed: a message whose handler failed is acknowledged with the rest of the batch;
//   BatchSkipsLeasedHead: the fetch passes over a key's head under a live lease (as SKIP LOCKED
//   passes over a locked row) and takes the key's next message.
enum tBatchProfile { BatchLeased, BatchLeaseless, BatchAckBeforeEffects, BatchAcksFailed, BatchSkipsLeasedHead }

// Publisher profiles. AtomicFold and Split are correct; SplitWrite drops the enqueue's commit error.
// AtomicFoldBatch is correct too: the fold, delivering every row of a claimed batch in one step
// (docs/semantics.md, "Batches").
enum tPublisherProfile { AtomicFold, Split, SplitWrite, AtomicFoldBatch }

// Scenario configuration.
type tEnqCfg = (mailbox: string, id: string, key: string, priority: int, max_attempts: int, delay: int,
                payload: string);
// max_delivery_attempts 0 means the default (10).
type tOutCfg = (id: string, target: string, key: string, priority: int, max_attempts: int, payload: string,
                max_delivery_attempts: int);
// may_fail: the handler's outcome is chosen by the checker; otherwise it always succeeds.
// think: the handler runs for up to this many scheduling points (the checker chooses how many), so a
// slow handler can outlive its lease while other workers move on.
// nack_race: after the worker's first fetch that returns a message, a RawNacker issues nack_by_id
// of that message before the worker handles it (a raw client racing the leaseless worker).
// may_decline: a failing handler's retry policy may decline (outcome "fail_no_retry", the checker's
// choice), so the message is dead-lettered before max_attempts with the handler's error as reason.
// takeover (leased only; 0 for none): the worker's first delivery stalls until its lease has run
// out and a Taker, a second leased worker with this worker number, has leased the message; then
// its handler fails with an error the retry policy declines (a stale early dead-letter, which the
// token fence must refuse), and the Taker handles the message it took.
// takeover_redrive (with takeover): the stalled delivery's attempts are used up (max_attempts 1);
// after its lease has run out the worker runs expire (which dead-letters the message) and redrive
// (which puts it back with attempts 0) before the Taker leases it, and its handler then fails
// with an error the policy would retry: the stale dead-letter at max_attempts, which the token
// fence must refuse as well.
// stop: 0 the worker runs until its mailbox is quiet; 1 its group may be stopped, at a point the
// checker chooses (before a fetch, or while a fetched message is handled, when the drain may also
// time out); 2 as 1, but the worker is the broken one that goes on fetching after the stop.
// max_faults: how many of its handles' commits the checker may make fail (commit_fails).
type tConsumerCfg = (worker: int, mailbox: string, profile: tConsumerProfile, lease_for: int,
                     retry_delay: int, may_fail: bool, think: int, nack_race: bool, may_decline: bool,
                     takeover: int, takeover_redrive: bool, stop: int, max_faults: int);
// A batch worker (BatchWorker): fetches up to `size` messages of its mailbox per step. may_fail and
// may_decline: as tConsumerCfg, chosen per message. think: as tConsumerCfg, once per batch.
// max_faults: how many of its commits the checker may make fail (commit_fails).
type tBatchCfg = (worker: int, mailbox: string, profile: tBatchProfile, size: int, lease_for: int,
                  retry_delay: int, may_fail: bool, may_decline: bool, think: int, max_faults: int);
// faults: the faults the checker may inject into a delivery; max_faults bounds how many it injects.
// retry_delay: how long a row whose delivery failed waits before it may be claimed again.
type tPublisherCfg = (publisher: int, profile: tPublisherProfile, limit: int, claim_for: int,
                      faults: seq[string], max_faults: int, retry_delay: int);
// crashes: how many crash-and-restarts a Crasher may inject at points the checker chooses.
// raw_ops: how many arbitrary store operations a RawClient issues after its scripted prologue (0 and
// no raw_script: no RawClient).
// janitor: how many purge rounds a Janitor runs over janitor_ids (0: no Janitor).
// redrives: how many redrives a Redriver issues, each of an id from redrive_ids (0: no Redriver).
// raw_script: the RawClient's prologue: "" runs every store operation once; "stale-leases" leases
// a message, lets the lease run out, leases it again and uses the old token under the new lease,
// then lets expire clear a lease that has run out (see RawClient.StaleLeases).
// dedup: 0 no DedupClient, 1 one whose redelivery lands while the mark is live, 2 one whose
// redelivery lands after it expired. checkpointer: run a CheckpointClient, which also loads the
// effect log of mailbox checkpoint_effects ("" for none) checkpoint_loads times. batches: the
// batch workers (BatchWorker), numbered apart from the consumers.
type tScenario = (variant: string, messages: seq[tEnqCfg], outbox: seq[tOutCfg],
                  consumers: seq[tConsumerCfg], publishers: seq[tPublisherCfg], crashes: int, raw_ops: int,
                  dead_letterer: bool, janitor: int, janitor_ids: seq[string], raw_script: string, dedup: int,
                  checkpointer: bool, checkpoint_effects: string, checkpoint_loads: int,
                  redrives: int, redrive_ids: seq[string], redrive_worker: bool, batches: seq[tBatchCfg]);
