/*****************************************************************************************************
 * Observation events: the contract with the bridge (bridge/), described in docs/models.md
 * ("Observations"). The per-op events eObs<Op> are generated from traces.Spec into
 * ObservationEvents_gen.p (`go generate ./internal/gen`); this file holds the rest. The Store
 * announces exactly one eObs* event per store operation or protocol step, in the order it applies
 * them (a delivery that crashed is followed by the eObsCrash of the restart); payload field names are the trace format's JSON names plus `at`, except that a row's
 * `state` is `row_state` because `state` is a P keyword.
 *
 * The eSpec* events are NOT observations: they report the store's real state changes (derived by
 * comparing the state before and after each request) to the spec monitors. The bridge ignores them.
 *****************************************************************************************************/

// The final snapshot, announced once per completed scenario. Rows are sorted: messages by mailbox
// then id, outbox rows and dead letters by id. effects holds only mailboxes with at least one effect.
type tMsgSnap = (mailbox: string, id: string, key: string, priority: int, payload: string, row_state: string,
                 attempts: int, max_attempts: int, available_at: int, token: int, lease_until: int);
type tOutSnap = (id: string, target: string, key: string, priority: int, max_attempts: int, payload: string,
                 row_state: string, delivery_attempts: int, available_at: int, token: int, claim_until: int,
                 reason: string);
type tDeadSnap = (mailbox: string, id: string, key: string, priority: int, payload: string, attempts: int,
                  max_attempts: int, reason: string, dead_at: int);
event eObsFinal: (messages: seq[tMsgSnap], outbox: seq[tOutSnap], dead_letters: seq[tDeadSnap],
                  effects: map[string, seq[string]]);

// One record of the redrive history (traces.RedriveRecord), in eObsListRedrives.
type tRedriveRec = (id: string, kind: string, mailbox: string, attempts: int, dead_reason: string, reason: string,
                    at: int);

// Spec-only events (see the header).
event eSpecRow: (at: int, row: tMsg);                 // a mailbox row was inserted or changed
event eSpecMsgInserted: (at: int, mailbox: string, id: string);
// The post-commit wake of mailbox's subscribers for message id (docs/semantics.md, "Wake-ups"):
// announced after every spec event of the request that inserted the message, since each request
// is one transaction and the wake is sent once it committed.
event eSpecWake: (at: int, mailbox: string, id: string);
event eSpecDeadLettered: (at: int, mailbox: string, id: string, attempts: int, max_attempts: int, reason: string);
event eSpecLeased: (at: int, mailbox: string, id: string); // a fresh lease was taken on the row
event eSpecEffect: (at: int, mailbox: string, id: string);  // a handler effect committed
// A consumer worker handled the delivery of message id it fetched under token (0 on the leaseless
// path) with this action; announced before the handle's state changes, so a monitor's copy of the
// rows still shows them as the handle found them.
event eSpecHandled: (at: int, worker: int, id: string, token: int, action: string);
event eSpecOutboxEnqueued: (at: int, id: string, target: string);
event eSpecOutboxCompleted: (at: int, id: string, target: string);
event eSpecOutboxRow: (at: int, row: tOutRow);        // an outbox row was inserted or changed
// purge removed a message or dead letter id; horizon_end is the end of its dedup horizon (exclusive).
event eSpecPurged: (at: int, id: string, horizon_end: int);
// redrive moved the dead letter id back: kind "message" (a mailbox dead letter, back in its
// mailbox) or "outbox" (a dead-lettered outbox row, pending again); mailbox, attempts and
// dead_reason are what the dead letter had just before the move (an outbox row's target, delivery
// attempts and reason), reason the redrive's. The row's new state follows as eSpecRow or
// eSpecOutboxRow.
type tSpecRedriven = (at: int, id: string, kind: string, mailbox: string, attempts: int, dead_reason: string,
                      reason: string);
event eSpecRedriven: tSpecRedriven;
// list_redrives listed these records of id (of every id when id is ""). Announced right after
// eObsListRedrives, so the observation is in the log before a monitor judges it.
event eSpecRedrivesListed: (at: int, id: string, redrives: seq[tRedriveRec]);

// The batch steps (docs/semantics.md, "Batches"), one observation per request as every other:
// the trace ops consumer_fetch_batch, consumer_handle_batch, publisher_deliver_batch and
// consumer_effects_batch. Their payloads carry the model's own types (tFetched, tClaimed, lists),
// so they are written here, not generated from traces.Spec; the bridge decodes them by rules of
// its own (bridge.HandDeclared, bridge/batch.go).
// ids are the fetched messages in batch order (attempts after the bump and token on the leased
// path), actions the handle's action per message ("commit_failed" for each when the commit failed).
event eObsConsumerFetchBatch: (at: int, worker: int, mailbox: string, profile: string, size: int, lease_for: int,
                               messages: seq[tFetched], bug: bool);
event eObsConsumerHandleBatch: (at: int, worker: int, mailbox: string, profile: string, outcomes: seq[string],
                                retry_delay: int, fault: string, actions: seq[string], bug: bool);
// A batch delivery: the rows in claim order, and per row its action and whether its enqueue
// found the id taken (as publisher_deliver's).
event eObsPublisherDeliverBatch: (at: int, publisher: int, rows: seq[tClaimed], fault: string, retry_delay: int,
                                  actions: seq[string], duplicates: seq[bool], bug: bool);
event eObsConsumerEffectsBatch: (at: int, worker: int, mailbox: string, fault: string, ids: seq[string],
                                 bug: bool);
