/*****************************************************************************************************
 * Requests to the Store machine and its one reply event. Every request names the client that waits
 * for the reply; the Store applies requests one at a time, in the order it dequeues them.
 *****************************************************************************************************/

// Store operations.
event eEnqueueReq: (client: machine, mailbox: string, id: string, key: string, priority: int,
                    max_attempts: int, delay: int, payload: string);
event eLeaseReq: (client: machine, mailbox: string, lease_for: int);
event ePeekReq: (client: machine, mailbox: string);
event eAckReq: (client: machine, id: string, token: int);
event eNackReq: (client: machine, id: string, token: int, delay: int);
event eAckByIdReq: (client: machine, id: string);
event eNackByIdReq: (client: machine, id: string, delay: int);
event eExtendReq: (client: machine, id: string, token: int, lease_for: int);
event eExpireReq: (client: machine);
event eDeadLetterReq: (client: machine, id: string, reason: string);
event eOutboxEnqueueReq: (client: machine, id: string, target: string, key: string, priority: int,
                          max_attempts: int, payload: string, max_delivery_attempts: int);
event eOutboxClaimReq: (client: machine, limit: int, claim_for: int);
event eOutboxCompleteReq: (client: machine, id: string, token: int);
event eOutboxFailReq: (client: machine, id: string, token: int, delay: int);
event eOutboxDeadLetterReq: (client: machine, id: string, token: int, reason: string);
event ePurgeReq: (client: machine, limit: int, older_than: int, horizon: int);
event eRedriveReq: (client: machine, id: string, reason: string);
// Reads the redrive history: the records of id, or of every id when id is "". The reply is an
// eReply; the records are in the eObsListRedrives announcement.
event eListRedrivesReq: (client: machine, id: string);

// Processed-message dedup and checkpoints (docs/semantics.md, "Processed messages" and
// "Checkpoints"). These three are answered with eKeepReply.
event eMarkProcessedReq: (client: machine, consumer: string, id: string, ttl: int);
event eSaveCheckpointReq: (client: machine, actor: string, expect_version: int, payload: string);
event eLoadCheckpointReq: (client: machine, actor: string);
// The reply to a mark or a checkpoint request: the mark's duplicate flag, the checkpoint version
// (0 with an error) and the error kind ("" for none).
event eKeepReply: (duplicate: bool, version: int, err: string);

// Moves the clock forward by `by` seconds (a client waiting for a processed-message mark to run
// out). The reply is an eReply.
event eAdvanceReq: (client: machine, by: int);

// Moves the clock to the next time at which something can change (a lease or claim running out, a
// delayed row becoming available). The reply says whether it moved.
event eTickReq: (client: machine);

// A RawNacker tells the worker that started it that its nack_by_id has been answered; a Taker and
// the stalled worker that started it tell each other when each has done its step.
event eRaced;

// Protocol steps.
event eFetchReq: (client: machine, worker: int, mailbox: string, profile: tConsumerProfile, lease_for: int);
// fault: "commit_fails" when the handle's transaction fails to commit (nothing changes), else "".
event eHandleReq: (client: machine, worker: int, mailbox: string, profile: tConsumerProfile, outcome: string,
                   retry_delay: int, fault: string);
// Batch steps (docs/semantics.md, "Batches"). A batch fetch is answered with eBatchReply. A batch
// handle commits the outcome of every fetched message (outcomes[k] for the k-th) in one step;
// fault "commit_fails" makes that commit fail, so nothing changes. eBatchEffectsReq is the second
// commit of the broken BatchAckBeforeEffects profile: the effects of the messages its handle has
// already acknowledged. Both are answered with eReply.
event eBatchFetchReq: (client: machine, worker: int, mailbox: string, profile: tBatchProfile, size: int,
                       lease_for: int);
event eBatchHandleReq: (client: machine, worker: int, mailbox: string, profile: tBatchProfile, outcomes: seq[string],
                        retry_delay: int, fault: string);
event eBatchEffectsReq: (client: machine, worker: int, mailbox: string, fault: string);
// The broken EffectOutsideFold profile's write outside the fold: the effect of the message the
// worker fetched commits in a step of its own, before the worker's handle. Answered with eReply.
event eEffectOutsideReq: (client: machine, worker: int, mailbox: string);
// A batch delivery (AtomicFoldBatch): every claimed row of rows in one folded step, with one
// fault for the step ("none", "commit_fails" or "crash_between"); epoch as eDeliverReq's.
event eDeliverBatchReq: (client: machine, publisher: int, rows: seq[tClaimed], fault: string, retry_delay: int,
                         epoch: int);
// The reply to a batch fetch: how many messages it fetched, and the quiet flag (as eReply's).
event eBatchReply: (count: int, quiet: bool);
// epoch is the Store's crash epoch when the row was claimed (eClaimReply): a delivery requested by a
// publisher whose process has crashed since is dropped unannounced and answered "restarted".
event eDeliverReq: (client: machine, publisher: int, id: string, token: int, profile: tPublisherProfile,
                    fault: string, retry_delay: int, epoch: int);
event eCrashReq: (client: machine);
// A worker group's shutdown (docs/semantics.md, "Shutdown"): the stop of a worker, and its end
// (outcome "drained", or "timed_out" when the drain timeout cut off its delivery).
event eWorkerStopReq: (client: machine, worker: int);
event eWorkerDrainReq: (client: machine, worker: int, outcome: string);

// Announce the final state (eObsFinal).
event eFinalReq: (client: machine);

// The reply to every request but a claim: the fetched or leased message (msg_id "" for none), the
// action of a protocol step, and the quiet flag of a fetch (see Store.QuietFor). Replies carry only
// what clients use: the checker formats every payload it sends, so small payloads keep it fast.
event eReply: (msg_id: string, msg_token: int, action: string, quiet: bool);
// The reply to an outbox claim: the claimed rows, whether no outbox row is pending any more, and the
// crash epoch the claim was made in.
event eClaimReply: (claimed: seq[tClaimed], quiet: bool, epoch: int);

// A scenario participant tells the scenario driver it has finished.
event eDone: (who: machine);

// A machine sends itself eYield to give the scheduler a point at which others may run.
event eYield;
