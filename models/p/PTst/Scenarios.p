/*****************************************************************************************************
 * Scenario configurations. Kept small (2-4 messages, 1-3 workers, max_attempts 2-3) so that every
 * schedule's trace stays within a few dozen observations.
 *****************************************************************************************************/

fun Msg(mailbox: string, id: string, key: string, priority: int, max_attempts: int): tEnqCfg {
  return (mailbox = mailbox, id = id, key = key, priority = priority, max_attempts = max_attempts, delay = 0,
          payload = format("payload-{0}", id));
}

fun OutRow(id: string, target: string, max_attempts: int): tOutCfg {
  return (id = id, target = target, key = "", priority = 0, max_attempts = max_attempts,
          payload = format("payload-{0}", id), max_delivery_attempts = 0);
}

fun Worker(worker: int, mailbox: string, profile: tConsumerProfile, may_fail: bool): tConsumerCfg {
  return (worker = worker, mailbox = mailbox, profile = profile, lease_for = 2, retry_delay = 1, may_fail = may_fail,
          think = 0, nack_race = false, may_decline = false, takeover = 0,
          takeover_redrive = false, stop = 0, max_faults = 0);
}

// A worker whose handler may run for up to `think` scheduling points.
fun SlowWorker(worker: int, mailbox: string, profile: tConsumerProfile, may_fail: bool, think: int): tConsumerCfg {
  var w: tConsumerCfg;
  w = Worker(worker, mailbox, profile, may_fail);
  w.think = think;
  return w;
}

fun Pub(publisher: int, profile: tPublisherProfile, faults: seq[string], max_faults: int): tPublisherCfg {
  return (publisher = publisher, profile = profile, limit = 2, claim_for = 2, faults = faults, max_faults = max_faults,
          retry_delay = 0);
}

fun AllFaults(): seq[string] {
  var f: seq[string];
  f += (0, "commit_fails");
  f += (1, "crash_between");
  return f;
}

fun CommitFailsOnly(): seq[string] {
  var f: seq[string];
  f += (0, "commit_fails");
  return f;
}

fun EmptyScenario(): tScenario {
  return default(tScenario);
}

// Two leased workers, two messages that may fail: leases run out while a worker is slow, the other
// worker takes the message over, and the slow worker's ack or nack is stale.
fun ScLeasedWorkers(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 2));
  sc.consumers += (0, SlowWorker(1, "inbox", Leased, true, 3));
  sc.consumers += (1, SlowWorker(2, "inbox", Leased, true, 3));
  return sc;
}

// A worker group's stop: worker 1's group may be stopped while it is idle or while it handles a
// message, and its drain may time out, leaving the message under its lease; worker 2 runs on and
// takes what worker 1 left. One of worker 1's handles may fail to commit, which leaves its message
// under its lease as well and ends the fetch the stop monitor tracks.
fun ScWorkerStop(): tScenario {
  var sc: tScenario;
  var w: tConsumerCfg;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 2));
  w = Worker(1, "inbox", Leased, false);
  w.stop = 1;
  w.max_faults = 1;
  sc.consumers += (0, w);
  sc.consumers += (1, Worker(2, "inbox", Leased, false));
  return sc;
}

// A broken worker group: worker 1 may be stopped as in ScWorkerStop, but goes on fetching after
// its stop (tConsumerCfg.stop 2), which StoppedWorkerStartsNoFetch must refuse.
fun ScFetchAfterStop(): tScenario {
  var sc: tScenario;
  var w: tConsumerCfg;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 2));
  w = Worker(1, "inbox", Leased, false);
  w.stop = 2;
  sc.consumers += (0, w);
  return sc;
}

// One leaseless worker; handlers may fail until max_attempts and the message is dead-lettered. One
// handle's commit may fail, which changes nothing: the next peek delivers the message again.
fun ScLeaselessWorker(): tScenario {
  var sc: tScenario;
  var w: tConsumerCfg;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 3));
  w = Worker(1, "inbox", Leaseless, true);
  w.max_faults = 1;
  sc.consumers += (0, w);
  return sc;
}

// Priorities and two correlation keys under two leased workers: m2 outranks m1 but waits for it.
fun ScPriorityKeyedFifo(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "a", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "a", 1, 2));
  sc.messages += (2, Msg("inbox", "m3", "", 1, 2));
  sc.messages += (3, Msg("inbox", "m4", "b", 0, 2));
  sc.consumers += (0, Worker(1, "inbox", Leased, true));
  sc.consumers += (1, Worker(2, "inbox", Leased, true));
  return sc;
}

// Two fold publishers compete for two rows; each may inject one commit failure or crash, and a
// crash may also land between a claim and its deliveries.
fun ScOutboxFold(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.outbox += (0, OutRow("o1", "inbox", 2));
  sc.outbox += (1, OutRow("o2", "inbox", 2));
  sc.publishers += (0, Pub(1, AtomicFold, AllFaults(), 1));
  sc.publishers += (1, Pub(2, AtomicFold, AllFaults(), 1));
  sc.crashes = 1;
  return sc;
}

// The same with the correct split (two-commit) publisher.
fun ScOutboxSplitCorrect(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.outbox += (0, OutRow("o1", "inbox", 2));
  sc.outbox += (1, OutRow("o2", "inbox", 2));
  sc.publishers += (0, Pub(1, Split, AllFaults(), 1));
  sc.publishers += (1, Pub(2, Split, AllFaults(), 1));
  return sc;
}

// Id collisions (docs/semantics.md, "Id collisions"): o1's id is already a message of mailbox
// audit (a worker may acknowledge it first), o3's is already a message of its own target inbox,
// o2 collides with nothing. A fold and a split publisher compete, each with one fault, and a crash
// may land anywhere. o1 must end dead-lettered with nothing enqueued into inbox
// (OutboxCompletionImpliesDelivery fails if the model completes it), o3 completed as a duplicate.
fun ScOutboxIdCollision(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("audit", "o1", "", 0, 2));
  sc.messages += (1, Msg("inbox", "o3", "", 0, 2));
  sc.outbox += (0, OutRow("o1", "inbox", 2));
  sc.outbox += (1, OutRow("o2", "inbox", 2));
  sc.outbox += (2, OutRow("o3", "inbox", 2));
  sc.consumers += (0, Worker(1, "audit", Leased, false));
  sc.publishers += (0, Pub(1, AtomicFold, AllFaults(), 1));
  sc.publishers += (1, Pub(2, Split, AllFaults(), 1));
  sc.crashes = 1;
  return sc;
}

// Leased workers on one mailbox and a leaseless worker on another, with up to two crashes landing
// anywhere (notably between a fetch and its handle).
fun ScCrashRestart(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 2));
  sc.messages += (2, Msg("solo", "m3", "", 0, 2));
  sc.consumers += (0, Worker(1, "inbox", Leased, true));
  sc.consumers += (1, Worker(2, "inbox", Leased, true));
  sc.consumers += (2, Worker(3, "solo", Leaseless, true));
  sc.crashes = 2;
  return sc;
}

// Outbox to mailbox to handler: a fold publisher delivers while two leased workers consume, and a
// crash may restart the whole process at any point.
fun ScPipeline(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.outbox += (0, OutRow("o1", "inbox", 2));
  sc.outbox += (1, OutRow("o2", "inbox", 2));
  sc.publishers += (0, Pub(1, AtomicFold, AllFaults(), 1));
  sc.consumers += (0, Worker(1, "inbox", Leased, true));
  sc.consumers += (1, Worker(2, "inbox", Leased, true));
  sc.crashes = 1;
  return sc;
}

// Arbitrary store operations on two keyed messages and an outbox row (and whatever the client
// enqueues itself), to put every store operation and error path into the observations.
fun ScRawStoreOps(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "k", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "k", 1, 2));
  sc.outbox += (0, OutRow("o1", "inbox", 2));
  sc.raw_ops = 6;
  return sc;
}

// A raw client's scripted stale tokens, lease boundaries and exhausted heads
// (RawClient.StaleLeases): m1 (unkeyed, three attempts) is leased three times, its old tokens used
// while a newer lease is live, leases and peeks land exactly at lease_until, and expire clears
// leases that have run out; m2 is nacked to its last attempt; m3, head of key k ahead of m4, waits
// in backoff, runs out of attempts and is dead-lettered. A few arbitrary operations follow.
fun ScStaleLeases(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 3));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 2));
  sc.messages += (2, Msg("inbox", "m3", "k", 0, 2));
  sc.messages += (3, Msg("inbox", "m4", "k", 0, 2));
  sc.raw_script = "stale-leases";
  sc.raw_ops = 3;
  return sc;
}

// Counterexample: the split publisher drops the enqueue's commit error and completes the row.
fun ScSplitWrite(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.outbox += (0, OutRow("o1", "inbox", 2));
  sc.publishers += (0, Pub(1, SplitWrite, CommitFailsOnly(), 1));
  return sc;
}

// Counterexample: the leaseless worker hands the stored count to its retry decision.
fun ScRawAttempts(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 2));
  sc.consumers += (0, Worker(1, "inbox", LeaselessRawAttempts, true));
  return sc;
}

// One leaseless worker, and a raw client's nack_by_id landing between the worker's first fetch and
// its handle. m1 (max 2) then fails at most once more before it is exhausted: the handle must decide
// from the row as stored, not from the count its fetch saw.
fun ScLeaselessNackRace(): tScenario {
  var sc: tScenario;
  var w: tConsumerCfg;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 3));
  w = Worker(1, "inbox", Leaseless, true);
  w.nack_race = true;
  sc.consumers += (0, w);
  return sc;
}

// A retry policy that may decline: a leased worker on `inbox` and a leaseless one on `solo`, each
// message may fail, and a failure may be one the policy declines to retry. The leased worker's
// first delivery (m1) is a takeover: it stalls past its lease, a Taker (worker 3) leases m1, and
// the stalled worker's declined failure must end lease_lost rather than dead-letter the Taker's
// message; m3 then gives the leased worker a delivery of its own. A second leased worker (4) on
// `spent` takes over with a redrive: its delivery of m4 (max_attempts 1) stalls past its lease,
// expire dead-letters m4, a redrive puts it back, a Taker (worker 5) leases it, and the stalled
// worker's failure at max_attempts must end lease_lost rather than dead-letter the Taker's message.
fun ScPolicyDeclines(): tScenario {
  var sc: tScenario;
  var w: tConsumerCfg;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 3));
  sc.messages += (1, Msg("solo", "m2", "", 0, 3));
  sc.messages += (2, Msg("inbox", "m3", "", 0, 3));
  w = Worker(1, "inbox", Leased, true);
  w.may_decline = true;
  w.takeover = 3;
  sc.consumers += (0, w);
  w = Worker(2, "solo", Leaseless, true);
  w.may_decline = true;
  sc.consumers += (1, w);
  sc.messages += (3, Msg("spent", "m4", "", 0, 1));
  w = Worker(4, "spent", Leased, true);
  w.takeover = 5;
  w.takeover_redrive = true;
  sc.consumers += (2, w);
  return sc;
}

// Counterexample: the takeover of ScPolicyDeclines with a store whose leased consumer skips the
// token fence of its early dead-letter, so the stalled worker dead-letters the Taker's message.
fun ScEarlyDeadLetterUnfenced(): tScenario {
  var sc: tScenario;
  var w: tConsumerCfg;
  sc = EmptyScenario();
  sc.variant = VariantEarlyDeadLetterUnfenced();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 3));
  w = Worker(1, "inbox", Leased, true);
  w.may_decline = true;
  w.takeover = 3;
  sc.consumers += (0, w);
  return sc;
}

// Counterexample: the redriven takeover of ScPolicyDeclines with a store whose leased consumer
// skips the token fence of its dead-letter at max_attempts, so the stalled worker, its attempts
// used up, dead-letters the message the Taker leased after the redrive.
fun ScExhaustedDeadLetterUnfenced(): tScenario {
  var sc: tScenario;
  var w: tConsumerCfg;
  sc = EmptyScenario();
  sc.variant = VariantExhaustedDeadLetterUnfenced();
  sc.messages += (0, Msg("spent", "m4", "", 0, 1));
  w = Worker(4, "spent", Leased, true);
  w.takeover = 5;
  w.takeover_redrive = true;
  sc.consumers += (0, w);
  return sc;
}

// Counterexample: the same race, with a leaseless worker that decides from the count its fetch saw.
fun ScLeaselessFetchedAttempts(): tScenario {
  var sc: tScenario;
  var w: tConsumerCfg;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 2));
  w = Worker(1, "inbox", LeaselessFetchedAttempts, true);
  w.nack_race = true;
  sc.consumers += (0, w);
  return sc;
}

// Counterexample: leased workers acknowledge by id, without their lease token.
fun ScUnfencedAck(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 3));
  sc.consumers += (0, SlowWorker(1, "inbox", UnfencedAck, false, 6));
  sc.consumers += (1, SlowWorker(2, "inbox", UnfencedAck, false, 6));
  return sc;
}

// Counterexample: a write outside the fold. Two slow leased workers whose handler writes its
// effect outside the acknowledgement's transaction: when a worker outlives its lease, the other
// worker takes the message over and commits the effect too, and the first one's effect stays
// although its ack is fenced off (lease_lost); a crash between the effect and the ack does the same.
fun ScEffectOutsideFold(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 3));
  sc.consumers += (0, SlowWorker(1, "inbox", EffectOutsideFold, false, 6));
  sc.consumers += (1, SlowWorker(2, "inbox", EffectOutsideFold, false, 6));
  sc.crashes = 1;
  return sc;
}

// Counterexample: the store's keyed-order rule lets a leased head be overtaken.
fun ScFifoOvertake(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.variant = VariantFifoOvertake();
  sc.messages += (0, Msg("inbox", "m1", "a", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "a", 0, 2));
  sc.consumers += (0, Worker(1, "inbox", Leased, false));
  sc.consumers += (1, Worker(2, "inbox", Leased, false));
  return sc;
}

// Outbox dead letters: o1 may be claimed once, o2 twice. Two publishers (split and fold) compete;
// a delivery may fail to commit (the publisher releases the row, or dead-letters it on its last
// attempt), crash after its first commit (the row stays claimed until the claim runs out, and a
// claim dead-letters it when it has no attempts left) or find the row undeliverable.
fun ScOutboxDeadLetters(): tScenario {
  var sc: tScenario;
  var o: tOutCfg;
  var p: tPublisherCfg;
  sc = EmptyScenario();
  o = OutRow("o1", "inbox", 2);
  o.max_delivery_attempts = 1;
  sc.outbox += (0, o);
  o = OutRow("o2", "inbox", 2);
  o.max_delivery_attempts = 2;
  sc.outbox += (1, o);
  p = Pub(1, Split, DeadLetterFaults(), 2);
  p.retry_delay = 1;
  sc.publishers += (0, p);
  sc.publishers += (1, Pub(2, AtomicFold, DeadLetterFaults(), 1));
  sc.dead_letterer = true;
  return sc;
}

fun DeadLetterFaults(): seq[string] {
  var f: seq[string];
  f += (0, "commit_fails");
  f += (1, "crash_between");
  f += (2, "undeliverable");
  return f;
}

// Counterexample: the claim ignores max_delivery_attempts. A split delivery of o1 (one attempt
// allowed) crashes after its enqueue committed; once the claim runs out the row is claimed a
// second time.
fun ScOutboxUnbounded(): tScenario {
  var sc: tScenario;
  var o: tOutCfg;
  var f: seq[string];
  sc = EmptyScenario();
  sc.variant = VariantOutboxUnbounded();
  o = OutRow("o1", "inbox", 2);
  o.max_delivery_attempts = 1;
  sc.outbox += (0, o);
  f += (0, "crash_between");
  sc.publishers += (0, Pub(1, Split, f, 1));
  return sc;
}

// Retention: a leased worker whose handler may fail (m1 has one attempt, so a failure
// dead-letters it), a fold publisher delivering o1 into the same mailbox, and a Janitor that
// purges twice and enqueues m1, m2 or o1 again after each purge and after a tick.
fun ScRetention(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 1));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 2));
  sc.outbox += (0, OutRow("o1", "inbox", 1));
  sc.consumers += (0, Worker(1, "inbox", Leased, true));
  sc.publishers += (0, Pub(1, AtomicFold, default(seq[string]), 0));
  sc.janitor = 2;
  sc.janitor_ids += (0, "m1");
  sc.janitor_ids += (1, "m2");
  sc.janitor_ids += (2, "o1");
  return sc;
}

// Processed-message dedup: a redelivery while the mark is live (dedup 1) or after it expired
// (dedup 2).
fun ScDedup(expire: bool): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.dedup = 1;
  if (expire) {
    sc.dedup = 2;
  }
  return sc;
}

// Counterexample: the store's mark_processed has its ttl check inverted; the redelivery lands
// while the mark is live.
fun ScDedupTTLInverted(): tScenario {
  var sc: tScenario;
  sc = ScDedup(false);
  sc.variant = VariantDedupTtlInverted();
  return sc;
}

// Checkpoints: an actor's saves (current, stale and repeated first saves) and loads, beside two
// slow leased workers whose handles save the effect log of inbox with their acknowledgements (a
// handle whose lease ran out acknowledges nothing and saves nothing), while the client loads it.
fun ScCheckpoints(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 2));
  sc.consumers += (0, SlowWorker(1, "inbox", Leased, true, 3));
  sc.consumers += (1, SlowWorker(2, "inbox", Leased, false, 3));
  sc.checkpointer = true;
  sc.checkpoint_effects = "inbox";
  sc.checkpoint_loads = 3;
  return sc;
}

// Counterexample: a first save (expected version 0) of an actor that has a checkpoint overwrites it
// and resets its version to 1.
fun ScCheckpointReset(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.variant = VariantCheckpointReset();
  sc.checkpointer = true;
  return sc;
}

// Redrive: a leased worker whose handler may fail (m1 has one attempt, m2 two), so messages end
// dead-lettered; a fold publisher that may find o1 undeliverable and dead-letter it; and a
// Redriver that redrives m1, m2 or o1 twice, at points the checker chooses (before, between or
// after the dead-letterings).
fun ScRedrive(): tScenario {
  var sc: tScenario;
  var f: seq[string];
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 1));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 2));
  sc.outbox += (0, OutRow("o1", "inbox", 1));
  sc.consumers += (0, Worker(1, "inbox", Leased, true));
  f += (0, "undeliverable");
  sc.publishers += (0, Pub(1, AtomicFold, f, 1));
  sc.redrives = 2;
  sc.redrive_ids += (0, "m1");
  sc.redrive_ids += (1, "m2");
  sc.redrive_ids += (2, "o1");
  return sc;
}

// Counterexample: purge retires no id (purge-forgets-ids). A leased worker acknowledges m1 and m2
// (m1 has one attempt, so a failure dead-letters it instead); the Janitor purges twice and
// enqueues m1 or m2 again after each purge: a purged id enqueued inside its horizon is inserted as
// a fresh message.
fun ScPurgeForgetsIds(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.variant = VariantPurgeForgetsIds();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 1));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 2));
  sc.consumers += (0, Worker(1, "inbox", Leased, true));
  sc.janitor = 2;
  sc.janitor_ids += (0, "m1");
  sc.janitor_ids += (1, "m2");
  return sc;
}

// Counterexample: a redrive puts a mailbox dead letter back with the attempts it died with
// (redrive-keeps-attempts). m1 has one attempt and a leased worker whose handler may fail
// dead-letters it; the Redriver redrives m1 twice and then fetches with a worker of its own: the
// redriven m1 is exhausted, so no worker can ever lease it.
fun ScRedriveKeepsAttempts(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.variant = VariantRedriveKeepsAttempts();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 1));
  sc.consumers += (0, Worker(1, "inbox", Leased, true));
  sc.redrives = 2;
  sc.redrive_ids += (0, "m1");
  sc.redrive_worker = true;
  return sc;
}

// Counterexample: a redrive records the attempt count after its reset (redrive-records-reset).
// m1 has one attempt and a leased worker whose handler may fail dead-letters it; the Redriver
// redrives m1 twice and lists its history after each: the record says 0 attempts where the dead
// letter had 1.
fun ScRedriveRecordsReset(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.variant = VariantRedriveRecordsReset();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 1));
  sc.consumers += (0, Worker(1, "inbox", Leased, true));
  sc.redrives = 2;
  sc.redrive_ids += (0, "m1");
  return sc;
}

// ---- batches (docs/semantics.md, "Batches") ----

fun Batch(worker: int, mailbox: string, profile: tBatchProfile, size: int, may_fail: bool): tBatchCfg {
  return (worker = worker, mailbox = mailbox, profile = profile, size = size, lease_for = 2, retry_delay = 1,
          may_fail = may_fail, may_decline = false, think = 0, max_faults = 0);
}

// Two leased consumers of one mailbox, one batched (size 3) and one single, over a keyed stream
// (m1 before m2, key k1), a second key's message and a high-priority unkeyed one. Handlers may
// fail, the retry policy may decline, a batch commit may fail once, the batch handler may outlive
// its leases, and the process may crash once.
fun ScBatchLeasedWorkers(): tScenario {
  var sc: tScenario;
  var b: tBatchCfg;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "k1", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "k1", 0, 2));
  sc.messages += (2, Msg("inbox", "m3", "k2", 0, 2));
  sc.messages += (3, Msg("inbox", "m4", "", 1, 2));
  b = Batch(1, "inbox", BatchLeased, 3, true);
  b.may_decline = true;
  b.max_faults = 1;
  b.think = 3;
  sc.batches += (0, b);
  sc.consumers += (0, SlowWorker(2, "inbox", Leased, true, 1));
  sc.crashes = 1;
  return sc;
}

// One leaseless batched consumer (size 3; the leaseless path has one worker per mailbox) over a
// keyed stream, a second key and a high-priority unkeyed message, with failures, declines, a
// failed batch commit and a crash.
fun ScBatchLeaselessWorker(): tScenario {
  var sc: tScenario;
  var b: tBatchCfg;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "k1", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "k1", 0, 2));
  sc.messages += (2, Msg("inbox", "m3", "k2", 0, 2));
  sc.messages += (3, Msg("inbox", "m4", "", 1, 2));
  b = Batch(1, "inbox", BatchLeaseless, 3, true);
  b.may_decline = true;
  b.max_faults = 1;
  sc.batches += (0, b);
  sc.crashes = 1;
  return sc;
}

// The broken batch that acknowledges in one commit and writes the effects in a second one, which
// may fail: an acknowledged message whose effect never commits.
fun ScBatchAckBeforeEffects(): tScenario {
  var sc: tScenario;
  var b: tBatchCfg;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 2));
  b = Batch(1, "inbox", BatchAckBeforeEffects, 2, false);
  b.max_faults = 1;
  sc.batches += (0, b);
  return sc;
}

// The broken batch that acknowledges a failed handler's message with the rest of the batch.
fun ScBatchAcksFailed(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "", 0, 2));
  sc.batches += (0, Batch(1, "inbox", BatchAcksFailed, 2, true));
  return sc;
}

// The broken batch fetch that passes over a key's leased head: m1 and m2 share key k1, and the
// batch takes m2 while m1 is under a live lease (its own or another worker's).
fun ScBatchSkipsKeyHead(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.messages += (0, Msg("inbox", "m1", "k1", 0, 2));
  sc.messages += (1, Msg("inbox", "m2", "k1", 0, 2));
  sc.batches += (0, Batch(1, "inbox", BatchSkipsLeasedHead, 2, false));
  return sc;
}

// Two competing batch-fold publishers (limit 2) delivering o1, o2, o3 into inbox, one fault each
// (commit_fails or crash_between, for a whole batch), a crash anywhere.
fun ScBatchPublisherFold(): tScenario {
  var sc: tScenario;
  sc = EmptyScenario();
  sc.outbox += (0, OutRow("o1", "inbox", 2));
  sc.outbox += (1, OutRow("o2", "inbox", 2));
  sc.outbox += (2, OutRow("o3", "inbox", 2));
  sc.publishers += (0, Pub(1, AtomicFoldBatch, AllFaults(), 1));
  sc.publishers += (1, Pub(2, AtomicFoldBatch, AllFaults(), 1));
  sc.crashes = 1;
  return sc;
}
