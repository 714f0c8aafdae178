/*****************************************************************************************************
 * Store: the one machine that owns the clock, every mailbox and outbox row, the dead letters, the
 * effect log and the in-flight fetches of consumer workers. It serializes all requests: each request
 * is applied atomically, announced as exactly ONE eObs* observation (plus, for a publisher delivery
 * that crashed, the eObsCrash of the restart that follows it), reported to the monitors as eSpec*
 * state changes, and answered with eReply (eClaimReply for a claim). Announcement order is therefore
 * the linearization order.
 *
 * The operations implement docs/semantics.md rule for rule. A protocol step (fetch, handle,
 * deliver) runs its store operations as one transaction: it checks what could make it roll back
 * before it changes anything, so a rolled-back step leaves the state exactly as it found it.
 * Broken profiles also work out what the correct profile would have done from the same state and
 * set res.bug when any observable result differs.
 *****************************************************************************************************/

machine Store {
  var now: int;
  var msgs: seq[tMsg];
  var outbox: seq[tOutRow];
  var dead: seq[tDead];
  // mailbox -> ids whose handler effect committed, in commit order; only mailboxes with an effect.
  var effects: map[string, seq[string]];
  var nextSeq: int;
  // Last token issued. Leases and claims share the counter, so a token symbol names one of either.
  var nextToken: int;
  // worker -> the delivery it fetched and has not handled yet (process memory: a crash clears it).
  var fetched: map[int, tFetched];
  // batch worker -> the batch it fetched and has not handled yet, in batch order (process memory).
  var batches: map[int, seq[tFetched]];
  // batch worker -> the messages a BatchAckBeforeEffects handle acknowledged whose effects its second
  // commit still owes (process memory: a crash forgets them, and their effects never commit).
  var owed: map[int, seq[tFetched]];
  // "" for the correct store, else the broken variant the store reproduces: one of the Variant*
  // functions of Variants_gen.p (generated from internal/variants, which says what each breaks).
  var variant: string;
  // (consumer, id) as "consumer|id" -> the time its processed-message mark expires; a mark is live
  // while now < expires. Marks are never removed: an expired one counts as absent.
  var processed: map[string, int];
  // actor -> its checkpoint. The effect log of mailbox mb is the checkpoint "effects/mb", saved by
  // the consumer's handle in the acknowledgement's transaction (AddEffect), so its version is the
  // number of effects committed.
  var checkpoints: map[string, (version: int, payload: string)];
  // Number of crashes so far: requests made by a process incarnation that has since crashed are
  // recognised by their older epoch.
  var epoch: int;

  // Retention (docs/semantics.md, "Retention"): the time each acked message, dead letter and
  // final (completed or dead-lettered) outbox row became final, and the retired ids of purged
  // messages and dead letters with the end of their dedup horizon (exclusive). StampFinal fills the
  // first three after each request; Purge empties them for the rows it removes.
  var ackedAt: map[string, int];
  var deadAt: map[string, int];
  var outFinalAt: map[string, int];
  var retired: map[string, int];
  // Each dead letter's message row as it was when it was moved: the rest of the dead letter's row
  // (its key, priority, payload and max_attempts, in the final snapshot), and what a redrive
  // (docs/semantics.md, "Redrive") puts back.
  var deadRows: map[string, tMsg];
  // The redrive history as the store keeps it, oldest first, and as the correct store would
  // (the two differ only under redrive-records-reset). Only Redrive appends; nothing removes.
  var redrives: seq[tRedriveRec];
  var rightRedrives: seq[tRedriveRec];
  // The broken profiles' memory of what the correct store would have done, so that res.bug flags
  // exactly the first step whose result the bug changes: the ids purge-forgets-ids did not retire,
  // with the end of the horizon the correct store would have kept them for, and the messages
  // redrive-keeps-attempts put back with the attempt count the correct store would have reset.
  var forgotten: map[string, int];
  var keptAttempts: map[string, int];

  // The state before the request being applied, for AnnounceChanges.
  var oldMsgs: seq[tMsg];
  var oldOutbox: seq[tOutRow];
  var oldDead: int;
  var oldEffects: map[string, int];
  // Rows an ack deleted (profile choice ack "deletes") during the request being applied, as acked:
  // AnnounceChanges reports them to the monitors and empties it.
  var deletedRows: seq[tMsg];

  start state Init {
    entry (v: string) {
      variant = v;
      goto Serving;
    }
  }

  state Serving {
    on eEnqueueReq do (r: (client: machine, mailbox: string, id: string, key: string, priority: int,
                           max_attempts: int, delay: int, payload: string)) {
      var res: tRes;
      Begin();
      res = Enqueue(r.mailbox, r.id, r.key, r.priority, r.max_attempts, r.delay, r.payload);
      announce eObsEnqueue, (at = now, mailbox = r.mailbox, id = r.id, max_attempts = r.max_attempts,
                             key = r.key, priority = r.priority, delay = r.delay, payload = r.payload,
                             duplicate = res.duplicate, bug = res.bug);
      Reply(r.client, res);
    }

    on eLeaseReq do (r: (client: machine, mailbox: string, lease_for: int)) {
      var res: tRes;
      Begin();
      res = Lease(r.mailbox, r.lease_for);
      announce eObsLease, (at = now, mailbox = r.mailbox, lease_for = r.lease_for, msg_id = res.msg_id,
                           msg_attempts = res.msg_attempts, msg_token = res.msg_token, bug = res.bug);
      Reply(r.client, res);
    }

    on ePeekReq do (r: (client: machine, mailbox: string)) {
      var res: tRes;
      Begin();
      res = Peek(r.mailbox);
      announce eObsPeek, (at = now, mailbox = r.mailbox, msg_id = res.msg_id, msg_attempts = res.msg_attempts,
                          msg_token = 0);
      Reply(r.client, res);
    }

    on eAckReq do (r: (client: machine, id: string, token: int)) {
      var res: tRes;
      Begin();
      res = Ack(r.id, r.token);
      announce eObsAck, (at = now, id = r.id, token = r.token, err = res.err);
      Reply(r.client, res);
    }

    on eNackReq do (r: (client: machine, id: string, token: int, delay: int)) {
      var res: tRes;
      Begin();
      res = Nack(r.id, r.token, r.delay);
      announce eObsNack, (at = now, id = r.id, token = r.token, delay = r.delay, err = res.err);
      Reply(r.client, res);
    }

    on eAckByIdReq do (r: (client: machine, id: string)) {
      var res: tRes;
      Begin();
      res = AckById(r.id);
      announce eObsAckById, (at = now, id = r.id, err = res.err);
      Reply(r.client, res);
    }

    on eNackByIdReq do (r: (client: machine, id: string, delay: int)) {
      var res: tRes;
      Begin();
      res = NackById(r.id, r.delay);
      announce eObsNackById, (at = now, id = r.id, delay = r.delay, err = res.err);
      Reply(r.client, res);
    }

    on eExtendReq do (r: (client: machine, id: string, token: int, lease_for: int)) {
      var res: tRes;
      Begin();
      res = Extend(r.id, r.token, r.lease_for);
      announce eObsExtend, (at = now, id = r.id, token = r.token, lease_for = r.lease_for, err = res.err);
      Reply(r.client, res);
    }

    on eExpireReq do (r: (client: machine)) {
      var res: tRes;
      Begin();
      res = Expire();
      announce eObsExpire, (at = now, affected = res.affected);
      Reply(r.client, res);
    }

    on eDeadLetterReq do (r: (client: machine, id: string, reason: string)) {
      var res: tRes;
      Begin();
      res = DeadLetter(r.id, r.reason);
      announce eObsDeadLetter, (at = now, id = r.id, reason = r.reason, err = res.err);
      Reply(r.client, res);
    }

    on eOutboxEnqueueReq do (r: (client: machine, id: string, target: string, key: string, priority: int,
                                 max_attempts: int, payload: string, max_delivery_attempts: int)) {
      var res: tRes;
      Begin();
      res = OutboxEnqueue(r.id, r.target, r.key, r.priority, r.max_attempts, r.payload, r.max_delivery_attempts);
      announce eObsOutboxEnqueue, (at = now, id = r.id, target = r.target, max_attempts = r.max_attempts,
                                   key = r.key, priority = r.priority, payload = r.payload,
                                   max_delivery_attempts = r.max_delivery_attempts, duplicate = res.duplicate,
                                   err = res.err);
      Reply(r.client, res);
    }

    on eOutboxClaimReq do (r: (client: machine, limit: int, claim_for: int)) {
      var res: tRes;
      Begin();
      res = OutboxClaim(r.limit, r.claim_for);
      res.quiet = sizeof(res.claimed) == 0 && PendingRows("") == 0;
      announce eObsOutboxClaim, (at = now, limit = r.limit, claim_for = r.claim_for, claimed = res.claimed,
                                 bug = res.bug);
      AnnounceChanges();
      send r.client, eClaimReply, (claimed = res.claimed, quiet = res.quiet, epoch = epoch);
    }

    on eOutboxCompleteReq do (r: (client: machine, id: string, token: int)) {
      var res: tRes;
      Begin();
      res = OutboxComplete(r.id, r.token);
      announce eObsOutboxComplete, (at = now, id = r.id, token = r.token, err = res.err);
      Reply(r.client, res);
    }

    on eOutboxFailReq do (r: (client: machine, id: string, token: int, delay: int)) {
      var res: tRes;
      Begin();
      res = OutboxFail(r.id, r.token, r.delay);
      announce eObsOutboxFail, (at = now, id = r.id, token = r.token, delay = r.delay, err = res.err);
      Reply(r.client, res);
    }

    on eOutboxDeadLetterReq do (r: (client: machine, id: string, token: int, reason: string)) {
      var res: tRes;
      Begin();
      res = OutboxDeadLetter(r.id, r.token, r.reason);
      announce eObsOutboxDeadLetter, (at = now, id = r.id, token = r.token, reason = r.reason, err = res.err);
      Reply(r.client, res);
    }

    on ePurgeReq do (r: (client: machine, limit: int, older_than: int, horizon: int)) {
      var res: tRes;
      Begin();
      res = Purge(r.limit, r.older_than, r.horizon);
      announce eObsPurge, (at = now, limit = r.limit, older_than = r.older_than, horizon = r.horizon,
                           affected = res.affected);
      Reply(r.client, res);
    }

    on eMarkProcessedReq do (r: (client: machine, consumer: string, id: string, ttl: int)) {
      var k: (duplicate: bool, version: int, err: string, bug: bool);
      Begin();
      k = MarkProcessed(r.consumer, r.id, r.ttl);
      announce eObsMarkProcessed, (at = now, consumer = r.consumer, id = r.id, ttl = r.ttl, duplicate = k.duplicate,
                                   bug = k.bug);
      KeepReply(r.client, k);
    }

    on eSaveCheckpointReq do (r: (client: machine, actor: string, expect_version: int, payload: string)) {
      var k: (duplicate: bool, version: int, err: string, bug: bool);
      Begin();
      k = SaveCheckpoint(r.actor, r.expect_version, r.payload);
      announce eObsSaveCheckpoint, (at = now, actor = r.actor, expect_version = r.expect_version, payload = r.payload,
                                    version = k.version, err = k.err, bug = k.bug);
      KeepReply(r.client, k);
    }

    on eLoadCheckpointReq do (r: (client: machine, actor: string)) {
      var k: (duplicate: bool, version: int, err: string, bug: bool);
      Begin();
      k = LoadCheckpoint(r.actor);
      announce eObsLoadCheckpoint, (at = now, actor = r.actor, version = k.version, err = k.err);
      KeepReply(r.client, k);
    }

    on eAdvanceReq do (r: (client: machine, by: int)) {
      Begin();
      if (r.by > 0) {
        now = now + r.by;
        announce eObsAdvanceClock, (at = now,);
      }
      Reply(r.client, NoResult());
    }

    on eRedriveReq do (r: (client: machine, id: string, reason: string)) {
      var res: tRes;
      Begin();
      res = Redrive(r.id, r.reason);
      announce eObsRedrive, (at = now, id = r.id, reason = r.reason, err = res.err);
      Reply(r.client, res);
    }

    on eListRedrivesReq do (r: (client: machine, id: string)) {
      var listed: seq[tRedriveRec];
      Begin();
      listed = RedrivesOf(redrives, r.id);
      announce eObsListRedrives, (at = now, id = r.id, redrives = listed,
                                  bug = listed != RedrivesOf(rightRedrives, r.id));
      announce eSpecRedrivesListed, (at = now, id = r.id, redrives = listed);
      Reply(r.client, NoResult());
    }

    on eTickReq do (r: (client: machine)) {
      var res: tRes;
      Begin();
      res = Tick();
      if (res.advanced) {
        announce eObsAdvanceClock, (at = now,);
      }
      Reply(r.client, res);
    }

    on eFetchReq do (r: (client: machine, worker: int, mailbox: string, profile: tConsumerProfile,
                         lease_for: int)) {
      var res: tRes;
      var leaseFor: int;
      Begin();
      res = Fetch(r.worker, r.mailbox, r.profile, r.lease_for);
      res.quiet = res.msg_id == "" && QuietFor(r.mailbox);
      if (ConsumerPath(r.profile) == "leased") {
        leaseFor = r.lease_for;
      }
      announce eObsConsumerFetch, (at = now, worker = r.worker, mailbox = r.mailbox, profile = ConsumerPath(r.profile),
                                   lease_for = leaseFor, msg_id = res.msg_id, msg_attempts = res.msg_attempts,
                                   msg_token = res.msg_token, bug = res.bug);
      Reply(r.client, res);
    }

    on eHandleReq do (r: (client: machine, worker: int, mailbox: string, profile: tConsumerProfile,
                          outcome: string, retry_delay: int, fault: string)) {
      var res: tRes;
      var f: tFetched;
      Begin();
      if (r.worker in fetched) {
        f = fetched[r.worker];
      }
      res = Handle(r.worker, r.profile, r.outcome, r.retry_delay, r.fault);
      announce eObsConsumerHandle, (at = now, worker = r.worker, mailbox = r.mailbox,
                                    profile = ConsumerPath(r.profile), outcome = r.outcome,
                                    retry_delay = r.retry_delay, fault = r.fault,
                                    reason = "", // the model's handler fails with "handler failed"
                                    action = res.action, attempt = res.attempt, bug = res.bug);
      // After the observation (a monitor that fails here ends the trace after this step) and
      // before the state changes are announced, so a monitor still sees the rows as they were. A
      // commit that failed handled nothing (as in a batch).
      if (f.id != "" && res.action != "commit_failed") {
        announce eSpecHandled, (at = now, worker = r.worker, id = f.id, token = f.token, action = res.action);
      }
      Reply(r.client, res);
    }

    on eBatchFetchReq do (r: (client: machine, worker: int, mailbox: string, profile: tBatchProfile, size: int,
                              lease_for: int)) {
      var res: tRes;
      var got: seq[tFetched];
      var leaseFor: int;
      Begin();
      res = BatchFetch(r.worker, r.mailbox, r.profile, r.size, r.lease_for);
      got = batches[r.worker];
      res.quiet = sizeof(got) == 0 && QuietFor(r.mailbox);
      if (BatchConsumerProfile(r.profile) == Leased) {
        leaseFor = r.lease_for;
      }
      announce eObsConsumerFetchBatch, (at = now, worker = r.worker, mailbox = r.mailbox,
                                        profile = ConsumerPath(BatchConsumerProfile(r.profile)), size = r.size,
                                        lease_for = leaseFor, messages = got, bug = res.bug);
      AnnounceChanges();
      send r.client, eBatchReply, (count = sizeof(got), quiet = res.quiet);
    }

    on eBatchHandleReq do (r: (client: machine, worker: int, mailbox: string, profile: tBatchProfile,
                               outcomes: seq[string], retry_delay: int, fault: string)) {
      var res: tRes;
      var got: seq[tFetched];
      var out: (actions: seq[string], bug: bool);
      var actions: seq[string];
      var k: int;
      Begin();
      if (r.worker in batches) {
        got = batches[r.worker];
      }
      out = BatchHandle(r.worker, r.profile, r.outcomes, r.retry_delay, r.fault);
      actions = out.actions;
      res.bug = out.bug;
      announce eObsConsumerHandleBatch, (at = now, worker = r.worker, mailbox = r.mailbox,
                                         profile = ConsumerPath(BatchConsumerProfile(r.profile)),
                                         outcomes = r.outcomes, retry_delay = r.retry_delay, fault = r.fault,
                                         actions = actions, bug = res.bug);
      // As a single handle: after the observation, before the state changes are announced.
      k = 0;
      while (k < sizeof(actions) && k < sizeof(got)) {
        if (actions[k] != "commit_failed") {
          announce eSpecHandled, (at = now, worker = r.worker, id = got[k].id, token = got[k].token, action = actions[k]);
        }
        k = k + 1;
      }
      Reply(r.client, res);
    }

    // EffectOutsideFold's effect, committed apart from the acknowledgement (the correct store
    // refuses the write: ErrOutsideTransaction). Announced as an effects commit of its own, as the
    // BatchAckBeforeEffects profile's second commit is; a crash before the handle forgets the
    // fetch, not the effect.
    on eEffectOutsideReq do (r: (client: machine, worker: int, mailbox: string)) {
      var res: tRes;
      var ids: seq[string];
      Begin();
      if (r.worker in fetched) {
        ids += (0, fetched[r.worker].id);
        AddEffect(fetched[r.worker].mailbox, fetched[r.worker].id);
      }
      res.bug = sizeof(ids) > 0;
      announce eObsConsumerEffectsBatch, (at = now, worker = r.worker, mailbox = r.mailbox, fault = "", ids = ids,
                                          bug = res.bug);
      Reply(r.client, res);
    }

    on eBatchEffectsReq do (r: (client: machine, worker: int, mailbox: string, fault: string)) {
      var res: tRes;
      var ids: seq[string];
      var f: tFetched;
      Begin();
      if (r.worker in owed) {
        foreach (f in owed[r.worker]) {
          ids += (sizeof(ids), f.id);
          if (r.fault != "commit_fails") {
            AddEffect(f.mailbox, f.id);
          }
        }
        owed -= (r.worker);
      }
      // The correct store has committed these effects with their acknowledgements already.
      res.bug = sizeof(ids) > 0;
      announce eObsConsumerEffectsBatch, (at = now, worker = r.worker, mailbox = r.mailbox, fault = r.fault, ids = ids,
                                          bug = res.bug);
      Reply(r.client, res);
    }

    // A batch delivery: each row's part is exactly a single fold delivery's (Deliver), all in one
    // step. The step's fault applies to the whole transaction: commit_fails fails every row (each
    // then released, fenced by its claim, as after a single failed delivery), crash_between
    // crashes the process after the one commit.
    on eDeliverBatchReq do (r: (client: machine, publisher: int, rows: seq[tClaimed], fault: string,
                                retry_delay: int, epoch: int)) {
      var res: tRes;
      var one: tRes;
      var c: tClaimed;
      var fault: string;
      var actions: seq[string];
      var duplicates: seq[bool];
      if (r.epoch != epoch) {
        send r.client, eReply, (msg_id = "", msg_token = 0, action = "restarted", quiet = false);
        return;
      }
      Begin();
      fault = "none";
      if (r.fault == "commit_fails") {
        fault = "commit_fails";
      }
      foreach (c in r.rows) {
        one = Deliver(c.id, c.token, AtomicFold, fault, r.retry_delay);
        if (r.fault == "crash_between" && one.action == "delivered") {
          one.action = "crashed";
        }
        actions += (sizeof(actions), one.action);
        duplicates += (sizeof(duplicates), one.duplicate);
      }
      announce eObsPublisherDeliverBatch, (at = now, publisher = r.publisher, rows = r.rows, fault = r.fault,
                                           retry_delay = r.retry_delay, actions = actions, duplicates = duplicates,
                                           bug = false);
      if (r.fault == "crash_between") {
        // The process died after the batch's commit; it restarts before anything else runs.
        res.action = "crashed";
        Crash();
        announce eObsCrash, (at = now,);
      }
      Reply(r.client, res);
    }

    on eDeliverReq do (r: (client: machine, publisher: int, id: string, token: int, profile: tPublisherProfile,
                           fault: string, retry_delay: int, epoch: int)) {
      var res: tRes;
      if (r.epoch != epoch) {
        // The publisher that claimed this batch died in a crash; its restarted self never makes
        // this delivery. Nothing happens and nothing is announced.
        res.action = "restarted";
        send r.client, eReply, (msg_id = "", msg_token = 0, action = res.action, quiet = false);
        return;
      }
      Begin();
      res = Deliver(r.id, r.token, r.profile, r.fault, r.retry_delay);
      announce eObsPublisherDeliver, (at = now, publisher = r.publisher, id = r.id, token = r.token,
                                      profile = PublisherPath(r.profile), fault = r.fault,
                                      retry_delay = r.retry_delay, action = res.action,
                                      duplicate = res.duplicate, bug = res.bug);
      if (res.action == "crashed") {
        // The process died after the delivery's first commit; it restarts before anything else runs.
        Crash();
        announce eObsCrash, (at = now,);
      }
      Reply(r.client, res);
    }

    on eWorkerStopReq do (r: (client: machine, worker: int)) {
      Begin();
      announce eObsWorkerStop, (at = now, worker = r.worker);
      Reply(r.client, NoResult());
    }

    // A drain that timed out forgets the worker's delivery, as a crash does: its message stays
    // as stored (under its lease, or unchanged for the next peek).
    on eWorkerDrainReq do (r: (client: machine, worker: int, outcome: string)) {
      Begin();
      if (r.worker in fetched) {
        fetched -= (r.worker);
      }
      announce eObsWorkerDrain, (at = now, worker = r.worker, outcome = r.outcome);
      Reply(r.client, NoResult());
    }

    on eCrashReq do (r: (client: machine)) {
      Begin();
      Crash();
      announce eObsCrash, (at = now,);
      Reply(r.client, NoResult());
    }

    on eFinalReq do (r: (client: machine)) {
      announce eObsFinal, (messages = SnapshotMessages(msgs), outbox = SnapshotOutbox(outbox),
                           dead_letters = SnapshotDead(dead, deadRows, deadAt), effects = effects);
      send r.client, eReply, (msg_id = "", msg_token = 0, action = "", quiet = false);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Mailbox operations (docs/semantics.md, "Mailbox").

  fun FindMsg(id: string): int {
    var i: int;
    i = 0;
    while (i < sizeof(msgs)) {
      if (msgs[i].id == id) {
        return i;
      }
      i = i + 1;
    }
    return -1;
  }

  // Whether id names a message in any mailbox (any state), a dead letter, or a purged one whose
  // dedup horizon has not passed. Under the profile choice dead_letter_id "free", a dead letter
  // does not take its id.
  fun IdTaken(id: string): bool {
    var d: tDead;
    if (FindMsg(id) >= 0) {
      return true;
    }
    if (id in retired && retired[id] > now) {
      return true;
    }
    if (PrfDeadLetterIdFree()) {
      return false;
    }
    foreach (d in dead) {
      if (d.id == id) {
        return true;
      }
    }
    return false;
  }

  // Token matching: the message exists, is ready and carries exactly that token.
  fun TokenMatches(i: int, token: int): bool {
    return i >= 0 && msgs[i].row_state == "ready" && token != 0 && msgs[i].token == token;
  }

  // redrive-keeps-attempts: whether the pick i (an index or -1) differs from the correct store's, in
  // which every message redriven since has the attempts the bug kept taken off again (a different
  // message, or the same one with a different attempt count).
  fun KeptAttemptsChangePick(mailbox: string, i: int): bool {
    var saved: seq[tMsg];
    var j: int;
    var right: int;
    var differs: bool;
    if (sizeof(keptAttempts) == 0) {
      return false;
    }
    saved = msgs;
    j = 0;
    while (j < sizeof(msgs)) {
      if (msgs[j].id in keptAttempts) {
        msgs[j].attempts = msgs[j].attempts - keptAttempts[msgs[j].id];
      }
      j = j + 1;
    }
    right = NextIndex(mailbox, "");
    msgs = saved;
    differs = right != i;
    if (!differs && i >= 0) {
      differs = msgs[i].id in keptAttempts;
    }
    return differs;
  }

  // Eligible(msgs[i], now) under the given keyed-order variant.
  fun Eligible(i: int, v: string): bool {
    var j: int;
    if (!EligibleAlone(msgs[i], now)) {
      return false;
    }
    if (msgs[i].key == "") {
      return true;
    }
    j = 0;
    while (j < sizeof(msgs)) {
      if (msgs[j].mailbox == msgs[i].mailbox && msgs[j].key == msgs[i].key && msgs[j].seqno < msgs[i].seqno &&
          BlocksSuccessor(msgs[j], now, v)) {
        return false;
      }
      j = j + 1;
    }
    return true;
  }

  // Index of the next message of mailbox under the given variant, -1 for none.
  fun NextIndex(mailbox: string, v: string): int {
    var i: int;
    var best: int;
    best = -1;
    i = 0;
    while (i < sizeof(msgs)) {
      if (msgs[i].mailbox == mailbox && Eligible(i, v)) {
        if (best < 0 || DeliversBefore(msgs[i], msgs[best])) {
          best = i;
        }
      }
      i = i + 1;
    }
    return best;
  }

  fun Enqueue(mailbox: string, id: string, key: string, priority: int, max_attempts: int, delay: int,
              payload: string): tRes {
    var res: tRes;
    if (IdTaken(id)) {
      res.duplicate = true;
      return res;
    }
    // purge-forgets-ids: the correct store still holds a purged id inside its horizon.
    res.bug = id in forgotten && forgotten[id] > now;
    msgs += (sizeof(msgs), (mailbox = mailbox, id = id, key = key, priority = priority, payload = payload,
                            row_state = "ready", attempts = 0, max_attempts = max_attempts,
                            available_at = now + delay, token = 0, lease_until = 0, seqno = nextSeq));
    nextSeq = nextSeq + 1;
    return res;
  }

  // Leases under the store's variant; res.bug reports a choice the correct rule would not make.
  fun Lease(mailbox: string, lease_for: int): tRes {
    var res: tRes;
    var i: int;
    i = NextIndex(mailbox, variant);
    if (variant != "") {
      res.bug = i != NextIndex(mailbox, "") || KeptAttemptsChangePick(mailbox, i);
    }
    if (i < 0) {
      return res;
    }
    nextToken = nextToken + 1;
    msgs[i].token = nextToken;
    msgs[i].lease_until = now + lease_for;
    msgs[i].attempts = msgs[i].attempts + 1;
    res.msg_id = msgs[i].id;
    res.msg_attempts = msgs[i].attempts;
    res.msg_token = nextToken;
    res.msg_max_attempts = msgs[i].max_attempts;
    return res;
  }

  fun Peek(mailbox: string): tRes {
    var res: tRes;
    var i: int;
    i = NextIndex(mailbox, variant);
    if (variant != "") {
      res.bug = i != NextIndex(mailbox, "") || KeptAttemptsChangePick(mailbox, i);
    }
    if (i >= 0) {
      res.msg_id = msgs[i].id;
      res.msg_attempts = msgs[i].attempts;
      res.msg_max_attempts = msgs[i].max_attempts;
    }
    return res;
  }

  fun Ack(id: string, token: int): tRes {
    var res: tRes;
    var i: int;
    i = FindMsg(id);
    if (!TokenMatches(i, token)) {
      res.err = "lease_lost";
      return res;
    }
    Settle(i);
    return res;
  }

  // Acknowledges msgs[i]: the row stays as acked, or, under the profile choice ack "deletes", it is
  // deleted, so its id is free again (dedup over live rows only). The monitors see a deleted row
  // as acked (AnnounceChanges reports the rows in deletedRows).
  fun Settle(i: int) {
    msgs[i].row_state = "acked";
    msgs[i].token = 0;
    msgs[i].lease_until = 0;
    if (PrfAckDeletes()) {
      deletedRows += (sizeof(deletedRows), msgs[i]);
      msgs -= (i);
    }
  }

  fun Nack(id: string, token: int, delay: int): tRes {
    var res: tRes;
    var i: int;
    i = FindMsg(id);
    if (!TokenMatches(i, token)) {
      res.err = "lease_lost";
      return res;
    }
    msgs[i].token = 0;
    msgs[i].lease_until = 0;
    msgs[i].available_at = now + delay;
    return res;
  }

  fun AckById(id: string): tRes {
    var res: tRes;
    var i: int;
    i = FindMsg(id);
    if (i < 0 || msgs[i].row_state != "ready") {
      res.err = "not_found";
      return res;
    }
    Settle(i);
    return res;
  }

  fun NackById(id: string, delay: int): tRes {
    var res: tRes;
    var i: int;
    i = FindMsg(id);
    if (i < 0 || msgs[i].row_state != "ready") {
      res.err = "not_found";
      return res;
    }
    // Capped at max_attempts, unless the profile choice nack_by_id is "uncapped".
    if (msgs[i].attempts < msgs[i].max_attempts || PrfNackByIdUncapped()) {
      msgs[i].attempts = msgs[i].attempts + 1;
    }
    msgs[i].token = 0;
    msgs[i].lease_until = 0;
    msgs[i].available_at = now + delay;
    return res;
  }

  fun Extend(id: string, token: int, lease_for: int): tRes {
    var res: tRes;
    var i: int;
    i = FindMsg(id);
    if (!TokenMatches(i, token)) {
      res.err = "lease_lost";
      return res;
    }
    msgs[i].lease_until = now + lease_for;
    return res;
  }

  // Moves msgs[i] to the dead-letter table with its attempts.
  fun MoveToDead(i: int, reason: string) {
    var j: int;
    // Under dead_letter_id "free" the id may already be a dead letter: the new one replaces it.
    j = 0;
    while (j < sizeof(dead)) {
      if (dead[j].id == msgs[i].id) {
        dead -= (j);
        if (msgs[i].id in deadAt) {
          deadAt -= (msgs[i].id);
        }
      } else {
        j = j + 1;
      }
    }
    deadRows[msgs[i].id] = msgs[i];
    dead += (sizeof(dead), (mailbox = msgs[i].mailbox, id = msgs[i].id, attempts = msgs[i].attempts, reason = reason));
    msgs -= (i);
  }

  fun Expire(): tRes {
    var res: tRes;
    var i: int;
    i = 0;
    while (i < sizeof(msgs)) {
      if (msgs[i].row_state == "ready" && msgs[i].token != 0 && !LeaseLive(msgs[i], now)) {
        res.affected = res.affected + 1;
        msgs[i].token = 0;
        msgs[i].lease_until = 0;
        if (msgs[i].attempts >= msgs[i].max_attempts) {
          MoveToDead(i, PrfReasonLeaseExpired());
          continue;
        }
      }
      i = i + 1;
    }
    return res;
  }

  fun DeadLetter(id: string, reason: string): tRes {
    var res: tRes;
    var i: int;
    i = FindMsg(id);
    if (i < 0 || msgs[i].row_state != "ready") {
      res.err = "not_found";
      return res;
    }
    MoveToDead(i, reason);
    return res;
  }

  // ---------------------------------------------------------------------------------------------
  // Outbox operations (docs/semantics.md, "Outbox").

  fun FindOut(id: string): int {
    var i: int;
    i = 0;
    while (i < sizeof(outbox)) {
      if (outbox[i].id == id) {
        return i;
      }
      i = i + 1;
    }
    return -1;
  }

  fun ClaimMatches(i: int, token: int): bool {
    return i >= 0 && outbox[i].row_state == "pending" && token != 0 && outbox[i].token == token;
  }

  // max_delivery_attempts 0 means the default, 10.
  fun OutboxEnqueue(id: string, target: string, key: string, priority: int, max_attempts: int,
                    payload: string, max_delivery_attempts: int): tRes {
    var res: tRes;
    if (FindOut(id) >= 0) {
      // Under the profile choice outbox_duplicate "refused", a taken id is a constraint error.
      if (PrfOutboxDuplicateRefused()) {
        res.err = "refused";
        return res;
      }
      res.duplicate = true;
      return res;
    }
    if (max_delivery_attempts == 0) {
      max_delivery_attempts = 10;
    }
    outbox += (sizeof(outbox), (id = id, target = target, key = key, priority = priority, max_attempts = max_attempts,
                                payload = payload, row_state = "pending", delivery_attempts = 0, available_at = now,
                                token = 0, claim_until = 0, seqno = nextSeq,
                                max_delivery_attempts = max_delivery_attempts, dead_reason = ""));
    nextSeq = nextSeq + 1;
    return res;
  }

  // Rows are appended in creation order, so walking outbox from the front is "smallest seq first".
  // First every pending row without a live claim that has used up its delivery attempts is
  // dead-lettered; then rows with attempts left are claimed. The "outbox-unbounded" variant does
  // neither: it claims a row however often it has been claimed before.
  fun OutboxClaim(limit: int, claim_for: int): tRes {
    var res: tRes;
    var i: int;
    var token: int;
    var bounded: bool;
    bounded = variant != VariantOutboxUnbounded();
    token = nextToken + 1;
    i = 0;
    while (bounded && i < sizeof(outbox)) {
      if (outbox[i].row_state == "pending" && !ClaimLive(outbox[i], now)
          && outbox[i].delivery_attempts >= outbox[i].max_delivery_attempts) {
        OutboxToDead(i, PrfReasonMaxDeliveryAttempts());
      }
      i = i + 1;
    }
    i = 0;
    while (i < sizeof(outbox) && sizeof(res.claimed) < limit) {
      if (outbox[i].row_state == "pending" && outbox[i].available_at <= now && !ClaimLive(outbox[i], now)
          && (!bounded || outbox[i].delivery_attempts < outbox[i].max_delivery_attempts)) {
        // The correct claim would not take a row out of delivery attempts: the batch differs.
        if (outbox[i].delivery_attempts >= outbox[i].max_delivery_attempts) {
          res.bug = true;
        }
        outbox[i].token = token;
        outbox[i].claim_until = now + claim_for;
        outbox[i].delivery_attempts = outbox[i].delivery_attempts + 1;
        res.claimed += (sizeof(res.claimed), (id = outbox[i].id, delivery_attempts = outbox[i].delivery_attempts,
                                              token = token));
      }
      i = i + 1;
    }
    if (sizeof(res.claimed) > 0) {
      nextToken = token;
    }
    return res;
  }

  fun OutboxComplete(id: string, token: int): tRes {
    var res: tRes;
    var i: int;
    i = FindOut(id);
    if (!ClaimMatches(i, token)) {
      // Under the profile choice complete_fence "silent", the failed fence reports nothing.
      if (!PrfCompleteFenceSilent()) {
        res.err = "claim_lost";
      }
      return res;
    }
    outbox[i].row_state = "completed";
    // Under the profile choice completed_claim "kept", the completed row keeps its claim.
    if (!PrfCompletedClaimKept()) {
      outbox[i].token = 0;
      outbox[i].claim_until = 0;
    }
    return res;
  }

  fun OutboxFail(id: string, token: int, delay: int): tRes {
    var res: tRes;
    var i: int;
    i = FindOut(id);
    if (!ClaimMatches(i, token)) {
      res.err = "claim_lost";
      return res;
    }
    outbox[i].token = 0;
    outbox[i].claim_until = 0;
    outbox[i].available_at = now + delay;
    return res;
  }

  fun OutboxToDead(i: int, reason: string) {
    outbox[i].row_state = "dead_letter";
    outbox[i].dead_reason = reason;
    outbox[i].token = 0;
    outbox[i].claim_until = 0;
  }

  fun OutboxDeadLetter(id: string, token: int, reason: string): tRes {
    var res: tRes;
    var i: int;
    i = FindOut(id);
    if (!ClaimMatches(i, token)) {
      // Under the profile choice outbox_dead_letter_fence "silent", the failed fence reports nothing.
      if (!PrfOutboxDeadLetterFenceSilent()) {
        res.err = "claim_lost";
      }
      return res;
    }
    OutboxToDead(i, reason);
    return res;
  }

  // ---------------------------------------------------------------------------------------------
  // Protocol steps (docs/semantics.md, "Consumer" and "Publisher").

  // fetch: expire() then lease() on the leased path, peek() on the leaseless path. The delivery is
  // remembered for the worker until its handle or a crash.
  fun Fetch(worker: int, mailbox: string, profile: tConsumerProfile, lease_for: int): tRes {
    var res: tRes;
    if (ConsumerPath(profile) == "leased") {
      // Under the profile choice fetch_sweep "none", the fetch only leases.
      if (!PrfFetchNoSweep()) {
        Expire();
      }
      res = Lease(mailbox, lease_for);
    } else {
      res = Peek(mailbox);
    }
    if (worker in fetched) {
      fetched -= (worker);
    }
    if (res.msg_id != "") {
      fetched[worker] = (mailbox = mailbox, id = res.msg_id, attempts = res.msg_attempts,
                         max_attempts = res.msg_max_attempts, token = res.msg_token);
    }
    return res;
  }

  fun AddEffect(mailbox: string, id: string) {
    var log: string;
    if (!(mailbox in effects)) {
      effects[mailbox] = default(seq[string]);
    }
    effects[mailbox] += (sizeof(effects[mailbox]), id);
    // The effect log is a checkpoint the handler saves in the same transaction (see checkpoints).
    log = format("effects/{0}", mailbox);
    checkpoints[log] = (version = sizeof(effects[mailbox]), payload = "");
  }

  // ---------------------------------------------------------------------------------------------
  // Processed messages and checkpoints (docs/semantics.md, "Processed messages", "Checkpoints").

  // mark_processed: a live mark makes a duplicate and changes nothing; an absent or expired one is
  // (re)written to expire at now + ttl. The dedup-ttl-inverted profile takes a live mark for an
  // expired one and the other way round.
  fun MarkProcessed(consumer: string, id: string, ttl: int): (duplicate: bool, version: int, err: string, bug: bool) {
    var k: (duplicate: bool, version: int, err: string, bug: bool);
    var key: string;
    var live: bool;
    var present: bool;
    key = format("{0}|{1}", consumer, id);
    // Under the profile choice processed_scope "id", one record per id serves every consumer.
    if (PrfProcessedPerId()) {
      key = format("|{0}", id);
    }
    present = key in processed;
    // Under the profile choice processed_expiry "until_cleanup", an expired mark counts as live
    // until a purge removes it.
    live = present && (processed[key] > now || PrfProcessedUntilCleanup());
    k.duplicate = live;
    if (variant == VariantDedupTtlInverted() && present) {
      k.duplicate = !live;
    }
    k.bug = k.duplicate != live;
    if (!k.duplicate) {
      processed[key] = now + ttl;
    }
    return k;
  }

  // save_checkpoint: succeeds, and bumps the version, only when the stored version is exactly
  // expect_version (0: no checkpoint yet); any other expected version is a version_conflict that
  // changes nothing. The checkpoint-reset profile lets a first save (expect_version 0) overwrite an
  // existing checkpoint with version 1.
  fun SaveCheckpoint(actor: string, expect_version: int, payload: string): (duplicate: bool, version: int, err: string, bug: bool) {
    var k: (duplicate: bool, version: int, err: string, bug: bool);
    var stored: int;
    stored = 0;
    if (actor in checkpoints) {
      stored = checkpoints[actor].version;
    }
    if (variant == VariantCheckpointReset() && expect_version == 0 && stored > 0) {
      checkpoints[actor] = (version = 1, payload = payload);
      k.version = 1;
      k.bug = true;
      return k;
    }
    // Under the profile choice checkpoint_save "overwrites" there is no version check.
    if (stored != expect_version && !PrfCheckpointOverwrites()) {
      k.err = "version_conflict";
      return k;
    }
    checkpoints[actor] = (version = stored + 1, payload = payload);
    k.version = stored + 1;
    return k;
  }

  // load_checkpoint: the stored version, or not_found.
  fun LoadCheckpoint(actor: string): (duplicate: bool, version: int, err: string, bug: bool) {
    var k: (duplicate: bool, version: int, err: string, bug: bool);
    if (!(actor in checkpoints)) {
      k.err = "not_found";
      return k;
    }
    k.version = checkpoints[actor].version;
    return k;
  }

  fun KeepReply(client: machine, k: (duplicate: bool, version: int, err: string, bug: bool)) {
    AnnounceChanges();
    send client, eKeepReply, (duplicate = k.duplicate, version = k.version, err = k.err);
  }

  // handle: the commit of the handler's outcome for the worker's fetched delivery (the handler itself
  // ran in the worker, outside the Store: Read/Commit). Every path's first store operation is the
  // only one that can fail, and a failing operation changes nothing, so the rollback of the whole
  // transaction is simply "change nothing".
  fun Handle(worker: int, profile: tConsumerProfile, outcome: string, retry_delay: int, fault: string): tRes {
    var res: tRes;
    var f: tFetched;
    if (!(worker in fetched)) {
      res.action = "idle";
      return res;
    }
    f = fetched[worker];
    fetched -= (worker);
    if (fault == "commit_fails") {
      // The transaction fails to commit: nothing changes, no retry decision is made (attempt 0),
      // and the worker no longer holds its fetch. Leased, the message stays under its lease until
      // it runs out; leaseless, it is unchanged for the next peek.
      res.action = "commit_failed";
      return res;
    }
    return HandleFetched(f, profile, outcome, retry_delay);
  }

  // The commit of one fetched delivery's outcome: a single handle's whole transaction, and one
  // message's part of a batch handle's (BatchHandle). It changes nothing when its first operation
  // fails, so a message whose fence fails contributes nothing to its batch.
  fun HandleFetched(f: tFetched, profile: tConsumerProfile, outcome: string, retry_delay: int): tRes {
    var res: tRes;
    var step: tRes;
    var leased: bool;
    var stored: int;
    var i: int;
    leased = ConsumerPath(profile) == "leased";

    if (outcome == "ok") {
      if (profile == UnfencedAck) {
        // Acknowledges by id and takes not_found for "already acknowledged": the effect commits
        // even when the worker's lease is gone and someone else has acted on the message.
        res.bug = !TokenMatches(FindMsg(f.id), f.token);
        AckById(f.id);
        AddEffect(f.mailbox, f.id);
        res.action = "acked";
        return res;
      }
      if (leased) {
        step = Ack(f.id, f.token);
      } else {
        step = AckById(f.id);
      }
      if (step.err != "") {
        res.action = "lease_lost";
        return res;
      }
      if (profile != EffectOutsideFold) {
        // EffectOutsideFold committed its effect before, in a step of its own.
        AddEffect(f.mailbox, f.id);
      }
      res.action = "acked";
      return res;
    }

    // The leaseless decision reads the row as stored now: a nack_by_id since the fetch has counted
    // attempts the fetched count does not show. A leased row whose token still matches holds the
    // count its lease set. LeaselessFetchedAttempts is the bug of deciding from the fetched count.
    stored = f.attempts;
    i = FindMsg(f.id);
    if (!leased && i >= 0 && msgs[i].row_state == "ready") {
      stored = msgs[i].attempts;
    }
    if (profile == LeaselessFetchedAttempts) {
      res.bug = EffectiveAttempt(profile, stored, f.max_attempts) != EffectiveAttempt(profile, f.attempts, f.max_attempts);
      stored = f.attempts;
    }
    res.attempt = EffectiveAttempt(profile, stored, f.max_attempts);
    if (profile == LeaselessRawAttempts) {
      res.bug = true;
    }
    if (res.attempt >= f.max_attempts) {
      if (leased) {
        // Fenced by the token: once this lease runs out, expire dead-letters the message and a
        // redrive puts it back with attempts 0, so another worker may hold a live lease on it.
        // The exhausted-dead-letter-unfenced profile skips the fence.
        step.err = "";
        if (!TokenMatches(FindMsg(f.id), f.token)) {
          step.err = "lease_lost";
          if (variant == VariantExhaustedDeadLetterUnfenced()) {
            step.err = "";
            res.bug = FindMsg(f.id) >= 0 && msgs[FindMsg(f.id)].row_state == "ready";
          }
        }
        if (step.err == "") {
          step = DeadLetter(f.id, PrfReasonMaxAttempts());
        }
      } else {
        // The bump and the move commit together, so the dead letter records the effective attempt.
        step = NackById(f.id, 0);
        if (step.err == "") {
          step = DeadLetter(f.id, PrfReasonMaxAttempts());
        }
      }
      if (step.err != "") {
        res.action = "lease_lost";
        return res;
      }
      res.action = "dead_lettered";
      return res;
    }
    if (outcome == "fail_no_retry") {
      // The retry policy declines: the message is dead-lettered with the handler's error as the
      // reason. Leased: fenced by the token (another worker may lease it once this lease runs
      // out). Leaseless: the bump and the move commit together, as at max_attempts.
      // The early-dead-letter-unfenced profile skips the fence: a worker whose lease was lost, and
      // whose message another worker may have leased since, still dead-letters it.
      if (leased) {
        step.err = "";
        if (!TokenMatches(FindMsg(f.id), f.token)) {
          step.err = "lease_lost";
          if (variant == VariantEarlyDeadLetterUnfenced()) {
            step.err = "";
            res.bug = FindMsg(f.id) >= 0 && msgs[FindMsg(f.id)].row_state == "ready";
          }
        }
      } else {
        step = NackById(f.id, 0);
      }
      if (step.err == "") {
        step = DeadLetter(f.id, "handler failed");
      }
      if (step.err != "") {
        res.action = "lease_lost";
        return res;
      }
      res.action = "dead_lettered";
      return res;
    }
    if (leased) {
      step = Nack(f.id, f.token, retry_delay);
    } else {
      step = NackById(f.id, retry_delay);
    }
    if (step.err != "") {
      res.action = "lease_lost";
      return res;
    }
    res.action = "retried";
    return res;
  }

  // ---------------------------------------------------------------------------------------------
  // Batches (docs/semantics.md, "Batches").

  // batch fetch: up to size messages in one step, in delivery order. Leased: expire() (unless the
  // profile says fetch_sweep "none"), then one lease after another, each taking the next message as
  // the state stands after the leases before it. Leaseless: the messages successive peeks would
  // return if each message returned were held by the batch. Either way a held message blocks the
  // rest of its key, so a batch holds at most one message per key, its head. BatchSkipsLeasedHead
  // lets a head under a live lease stop blocking (as SKIP LOCKED passes over a locked row);
  // res.bug marks a pick the correct rule would not make. The batch is remembered for the worker
  // until its handle or a crash.
  fun BatchFetch(worker: int, mailbox: string, profile: tBatchProfile, size: int, lease_for: int): tRes {
    var res: tRes;
    var got: seq[tFetched];
    var i: int;
    var right: int;
    var leased: bool;
    leased = BatchConsumerProfile(profile) == Leased;
    if (worker in batches) {
      batches -= (worker);
    }
    if (leased && !PrfFetchNoSweep()) {
      Expire();
    }
    while (sizeof(got) < size) {
      right = BatchNextIndex(mailbox, got, false);
      i = right;
      if (profile == BatchSkipsLeasedHead) {
        i = BatchNextIndex(mailbox, got, true);
        if (i != right) {
          res.bug = true;
        }
      }
      if (i < 0) {
        break;
      }
      if (leased) {
        nextToken = nextToken + 1;
        msgs[i].token = nextToken;
        msgs[i].lease_until = now + lease_for;
        msgs[i].attempts = msgs[i].attempts + 1;
        got += (sizeof(got), (mailbox = mailbox, id = msgs[i].id, attempts = msgs[i].attempts,
                              max_attempts = msgs[i].max_attempts, token = nextToken));
      } else {
        got += (sizeof(got), (mailbox = mailbox, id = msgs[i].id, attempts = msgs[i].attempts,
                              max_attempts = msgs[i].max_attempts, token = 0));
      }
    }
    batches[worker] = got;
    return res;
  }

  // Index of the next message of mailbox for a batch that already holds `held`, -1 for none.
  // skipLeasedHeads: the BatchSkipsLeasedHead rule (see BatchFetch).
  fun BatchNextIndex(mailbox: string, held: seq[tFetched], skipLeasedHeads: bool): int {
    var i: int;
    var best: int;
    best = -1;
    i = 0;
    while (i < sizeof(msgs)) {
      if (msgs[i].mailbox == mailbox && BatchEligible(i, held, skipLeasedHeads)) {
        if (best < 0 || DeliversBefore(msgs[i], msgs[best])) {
          best = i;
        }
      }
      i = i + 1;
    }
    return best;
  }

  // Eligible(msgs[i], now), with every message the batch holds counted as a blocking predecessor of
  // its key (a leased one already is: it holds a live lease). Under skipLeasedHeads a predecessor
  // under a live lease does not block, nor does one the batch holds.
  fun BatchEligible(i: int, held: seq[tFetched], skipLeasedHeads: bool): bool {
    var f: tFetched;
    var j: int;
    foreach (f in held) {
      if (f.id == msgs[i].id) {
        return false;
      }
    }
    if (!skipLeasedHeads) {
      if (!Eligible(i, variant)) {
        return false;
      }
      foreach (f in held) {
        j = FindMsg(f.id);
        if (msgs[i].key != "" && j >= 0 && msgs[j].key == msgs[i].key) {
          return false;
        }
      }
      return true;
    }
    if (!EligibleAlone(msgs[i], now)) {
      return false;
    }
    if (msgs[i].key == "") {
      return true;
    }
    j = 0;
    while (j < sizeof(msgs)) {
      if (msgs[j].mailbox == msgs[i].mailbox && msgs[j].key == msgs[i].key && msgs[j].seqno < msgs[i].seqno &&
          BlocksSuccessor(msgs[j], now, variant) && !LeaseLive(msgs[j], now)) {
        return false;
      }
      j = j + 1;
    }
    return true;
  }

  // batch handle: one transaction that commits every fetched message's outcome (outcomes[k] for
  // the k-th), in batch order, each exactly as a single handle would (HandleFetched). A message
  // whose fence fails changes nothing and the others still commit. A commit that fails (fault
  // "commit_fails") changes nothing at all: each message stays as the fetch left it, under its
  // lease or for the next peek, and the worker forgets the batch. The broken profiles: BatchAcksFailed
  // acknowledges (by its token) a message whose handler failed; BatchAckBeforeEffects acknowledges
  // a succeeded message here and leaves its effect to a second commit (eBatchEffectsReq).
  fun BatchHandle(worker: int, profile: tBatchProfile, outcomes: seq[string], retry_delay: int,
                  fault: string): (actions: seq[string], bug: bool) {
    var out: (actions: seq[string], bug: bool);
    var got: seq[tFetched];
    var acked: seq[tFetched];
    var f: tFetched;
    var step: tRes;
    var k: int;
    if (!(worker in batches)) {
      return out;
    }
    got = batches[worker];
    batches -= (worker);
    if (fault == "commit_fails") {
      foreach (f in got) {
        out.actions += (sizeof(out.actions), "commit_failed");
      }
      return out;
    }
    k = 0;
    while (k < sizeof(got)) {
      f = got[k];
      if ((profile == BatchAcksFailed && outcomes[k] != "ok") || (profile == BatchAckBeforeEffects && outcomes[k] == "ok")) {
        step = Ack(f.id, f.token);
        if (step.err != "") {
          out.actions += (k, "lease_lost");
        } else {
          out.actions += (k, "acked");
          // A failed handler's message acked is a result the correct store never gives. An ack
          // without its effect looks like the correct ack: the divergence is the effects' own
          // commit (eBatchEffectsReq), which the correct store owes nothing.
          if (profile == BatchAcksFailed) {
            out.bug = true;
          }
          if (outcomes[k] == "ok") {
            acked += (sizeof(acked), f);
          }
        }
      } else {
        step = HandleFetched(f, BatchConsumerProfile(profile), outcomes[k], retry_delay);
        out.actions += (k, step.action);
        if (step.bug) {
          out.bug = true;
        }
      }
      k = k + 1;
    }
    if (sizeof(acked) > 0) {
      owed[worker] = acked;
    }
    return out;
  }

  // deliver: one delivery of a claimed outbox row, then, if it failed to commit, the release of
  // the row in a commit of its own, fenced by the claim: dead-lettered when that was its last
  // delivery attempt, otherwise available again after retry_delay.
  fun Deliver(id: string, token: int, profile: tPublisherProfile, fault: string, retry_delay: int): tRes {
    var res: tRes;
    var i: int;
    res = DeliverOnce(id, token, profile, fault);
    // Under the profile choice failed_delivery "lapses", nothing releases the row: its claim runs out.
    if (res.action == "commit_failed" && !PrfFailedDeliveryLapses()) {
      i = FindOut(id);
      if (ClaimMatches(i, token)) {
        if (outbox[i].delivery_attempts >= outbox[i].max_delivery_attempts) {
          OutboxToDead(i, PrfReasonMaxDeliveryAttempts());
        } else {
          OutboxFail(id, token, retry_delay);
        }
      }
    }
    return res;
  }

  // The mailbox of the message or dead letter that already has the outbox row's id, when that is not
  // the row's target; "" when the id is free, is the row's own earlier delivery (in its target), or
  // is only retired (a purged id keeps no mailbox). docs/semantics.md, "Id collisions".
  fun CollidesWith(id: string, target: string): string {
    var i: int;
    var d: tDead;
    var mailbox: string;
    mailbox = "";
    i = FindMsg(id);
    if (i >= 0) {
      mailbox = msgs[i].mailbox;
    } else if (!PrfDeadLetterIdFree()) {
      // Under dead_letter_id "free" a dead letter does not take its id: the enqueue succeeds.
      foreach (d in dead) {
        if (d.id == id) {
          mailbox = d.mailbox;
        }
      }
    }
    if (mailbox == target) {
      return "";
    }
    return mailbox;
  }

  fun IdCollisionReason(mailbox: string): string {
    return format("id collides with a message in mailbox {0}", mailbox);
  }

  // One delivery attempt. res.duplicate reports whether the target enqueue found the id already
  // present (what the enqueue saw, whether or not its commit then held). The fault "undeliverable"
  // is the publisher's check refusing the row: it is dead-lettered, fenced by the claim, and
  // nothing is enqueued. An id collision (the id is a message or dead letter of another mailbox
  // than the row's target) puts a dead-letter of the row, fenced by the claim, in the completion's
  // place: action dead_lettered.
  fun DeliverOnce(id: string, token: int, profile: tPublisherProfile, fault: string): tRes {
    var res: tRes;
    var i: int;
    var row: tOutRow;
    var claimOk: bool;
    var completeOk: bool;
    var other: string;
    i = FindOut(id);
    claimOk = ClaimMatches(i, token);
    // Whether the completion reports success: under the profile choice complete_fence "silent" a
    // failed fence reports nothing, so the delivery goes on as if it held (and completes nothing).
    completeOk = claimOk || PrfCompleteFenceSilent();
    if (i < 0) {
      // A purge removed the row while this publisher's stale claim still held a copy: a fold
      // delivery's enqueue runs (and sees whether the id is taken), its completion finds no row.
      res.action = "claim_lost";
      if (fault != "undeliverable" && profile == AtomicFold) {
        res.duplicate = IdTaken(id);
      }
      // Under outbox_dead_letter_fence "silent", the dead letter that finds no row reports nothing.
      if (fault == "undeliverable" && PrfOutboxDeadLetterFenceSilent()) {
        res.action = "dead_lettered";
      }
      return res;
    }
    if (fault == "undeliverable") {
      if (!claimOk) {
        res.action = "claim_lost";
        // Under outbox_dead_letter_fence "silent", the failed fence reports nothing.
        if (PrfOutboxDeadLetterFenceSilent()) {
          res.action = "dead_lettered";
        }
        return res;
      }
      OutboxToDead(i, "undeliverable");
      res.action = "dead_lettered";
      return res;
    }
    row = outbox[i];
    res.duplicate = IdTaken(id);
    other = CollidesWith(id, row.target);
    if (other != "") {
      // The dead-letter is fenced by the claim whatever the complete_fence choice says.
      completeOk = claimOk;
    }

    if (profile == AtomicFold) {
      // One transaction: enqueue + complete. A lost claim rolls it back; a failing commit loses it.
      if (!completeOk) {
        res.action = "claim_lost";
        return res;
      }
      if (fault == "commit_fails") {
        res.action = "commit_failed";
        return res;
      }
      Enqueue(row.target, id, row.key, row.priority, row.max_attempts, 0, row.payload);
      if (other != "") {
        OutboxToDead(i, IdCollisionReason(other));
        res.action = "dead_lettered";
      } else {
        OutboxComplete(id, token);
        res.action = "delivered";
      }
      if (fault == "crash_between") {
        res.action = "crashed";
      }
      return res;
    }

    if (fault == "commit_fails") {
      if (profile == Split) {
        res.action = "commit_failed";
        return res;
      }
      // SplitWrite: the enqueue's commit error is dropped and the completion goes ahead without it.
      res.bug = true;
      if (!completeOk) {
        res.action = "claim_lost";
        return res;
      }
      OutboxComplete(id, token);
      res.action = "delivered";
      return res;
    }
    Enqueue(row.target, id, row.key, row.priority, row.max_attempts, 0, row.payload);
    if (fault == "crash_between") {
      res.action = "crashed";
      return res;
    }
    if (!completeOk) {
      res.action = "claim_lost";
      return res;
    }
    if (other != "") {
      OutboxToDead(i, IdCollisionReason(other));
      res.action = "dead_lettered";
      return res;
    }
    OutboxComplete(id, token);
    res.action = "delivered";
    return res;
  }

  // The earliest future time at which the answer to some request can change, -1 for none.
  fun NextEventTime(): int {
    var t: int;
    var m: tMsg;
    var r: tOutRow;
    t = -1;
    foreach (m in msgs) {
      if (m.row_state == "ready") {
        if (m.attempts < m.max_attempts && m.available_at > now && (t < 0 || m.available_at < t)) {
          t = m.available_at;
        }
        if (LeaseLive(m, now) && (t < 0 || LeaseEnds(m.lease_until) < t)) {
          t = LeaseEnds(m.lease_until);
        }
      }
    }
    foreach (r in outbox) {
      if (r.row_state == "pending") {
        if (r.available_at > now && (t < 0 || r.available_at < t)) {
          t = r.available_at;
        }
        if (ClaimLive(r, now) && (t < 0 || LeaseEnds(r.claim_until) < t)) {
          t = LeaseEnds(r.claim_until);
        }
      }
    }
    return t;
  }

  // Advances the clock to the earliest of the next event time and the ends of retired ids' dedup
  // horizons still ahead (at which an enqueue of that id changes outcome), if there is one. The
  // horizon ends are left out of NextEventTime, so they never keep a worker from stopping.
  fun Tick(): tRes {
    var res: tRes;
    var t: int;
    var id: string;
    t = NextEventTime();
    foreach (id in keys(retired)) {
      if (retired[id] > now && (t < 0 || retired[id] < t)) {
        t = retired[id];
      }
    }
    if (t > now) {
      now = t;
      res.advanced = true;
    }
    return res;
  }

  // Pending outbox rows aimed at mailbox (every pending row when mailbox is "").
  fun PendingRows(mailbox: string): int {
    var r: tOutRow;
    var n: int;
    foreach (r in outbox) {
      if (r.row_state == "pending" && (mailbox == "" || r.target == mailbox)) {
        n = n + 1;
      }
    }
    return n;
  }

  // Asked right after a fetch of mailbox found nothing: whether no delivery from mailbox can ever
  // happen again without some other worker of the mailbox acting first. That holds when nothing in
  // the store waits for a time (no live lease or claim, no delayed row) and no outbox row may still
  // deliver into mailbox. A worker stops only on this answer, so the last worker of a mailbox to
  // stop sees a state in which every message is acked, dead-lettered or stranded for good.
  fun QuietFor(mailbox: string): bool {
    return NextEventTime() < 0 && PendingRows(mailbox) == 0;
  }

  // A crash closes and reopens the store: durable rows survive, in-flight fetches are forgotten.
  fun Crash() {
    fetched = default(map[int, tFetched]);
    batches = default(map[int, seq[tFetched]]);
    owed = default(map[int, seq[tFetched]]);
    epoch = epoch + 1;
  }

  // ---------------------------------------------------------------------------------------------
  // Reporting.

  fun Begin() {
    var mb: string;
    oldMsgs = msgs;
    oldOutbox = outbox;
    oldDead = sizeof(dead);
    oldEffects = default(map[string, int]);
    foreach (mb in keys(effects)) {
      oldEffects[mb] = sizeof(effects[mb]);
    }
  }

  // Reports the state changes since Begin to the monitors, then answers the client.
  fun Reply(client: machine, res: tRes) {
    AnnounceChanges();
    send client, eReply, (msg_id = res.msg_id, msg_token = res.msg_token, action = res.action, quiet = res.quiet);
  }

  fun AnnounceChanges() {
    // Rows are matched by seqno, not id, so that a second row with an existing id (which a correct
    // enqueue never creates) is reported as an insertion rather than as a change.
    var before: map[int, tMsg];
    var maxById: map[string, int];
    var outBefore: map[string, tOutRow];
    var m: tMsg;
    var r: tOutRow;
    var i: int;
    var mb: string;
    var n: int;
    var woken: seq[tMsg];
    StampFinal();
    foreach (m in oldMsgs) {
      before[m.seqno] = m;
      maxById[m.id] = m.max_attempts;
    }
    foreach (m in msgs) {
      if (!(m.seqno in before)) {
        announce eSpecMsgInserted, (at = now, mailbox = m.mailbox, id = m.id);
        announce eSpecRow, (at = now, row = m);
        woken += (sizeof(woken), m);
      } else if (before[m.seqno] != m) {
        announce eSpecRow, (at = now, row = m);
      }
    }
    foreach (m in deletedRows) {
      announce eSpecRow, (at = now, row = m);
    }
    deletedRows = default(seq[tMsg]);
    i = oldDead;
    while (i < sizeof(dead)) {
      announce eSpecDeadLettered, (at = now, mailbox = dead[i].mailbox, id = dead[i].id, attempts = dead[i].attempts,
                                   max_attempts = maxById[dead[i].id], reason = dead[i].reason);
      i = i + 1;
    }
    foreach (m in msgs) {
      if (m.seqno in before && m.token != 0 && m.token != before[m.seqno].token) {
        announce eSpecLeased, (at = now, mailbox = m.mailbox, id = m.id);
      }
    }
    foreach (mb in keys(effects)) {
      n = 0;
      if (mb in oldEffects) {
        n = oldEffects[mb];
      }
      while (n < sizeof(effects[mb])) {
        announce eSpecEffect, (at = now, mailbox = mb, id = effects[mb][n]);
        n = n + 1;
      }
    }
    foreach (r in oldOutbox) {
      outBefore[r.id] = r;
    }
    foreach (r in outbox) {
      if (!(r.id in outBefore)) {
        announce eSpecOutboxEnqueued, (at = now, id = r.id, target = r.target);
        announce eSpecOutboxRow, (at = now, row = r);
      } else if (outBefore[r.id] != r) {
        if (r.row_state == "completed" && outBefore[r.id].row_state != "completed") {
          announce eSpecOutboxCompleted, (at = now, id = r.id, target = r.target);
        }
        announce eSpecOutboxRow, (at = now, row = r);
      }
    }
    // The request has committed: its inserted messages wake their mailboxes' subscribers.
    foreach (m in woken) {
      announce eSpecWake, (at = now, mailbox = m.mailbox, id = m.id);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Retention (docs/semantics.md, "Retention").

  // Records the time rows became final: acked messages, dead letters and final outbox rows not
  // stamped yet were finalized by the request just applied.
  fun StampFinal() {
    var m: tMsg;
    var d: tDead;
    var r: tOutRow;
    foreach (m in msgs) {
      if (m.row_state == "acked" && !(m.id in ackedAt)) {
        ackedAt[m.id] = now;
      }
    }
    foreach (d in dead) {
      if (!(d.id in deadAt)) {
        deadAt[d.id] = now;
      }
    }
    foreach (r in outbox) {
      if (r.row_state != "pending" && !(r.id in outFinalAt)) {
        outFinalAt[r.id] = now;
      }
    }
  }

  // The up to limit entries of times with a time at or before cutoff, oldest first, then by id.
  fun Oldest(times: map[string, int], cutoff: int, limit: int): seq[string] {
    var out: seq[string];
    var id: string;
    var i: int;
    foreach (id in keys(times)) {
      if (times[id] <= cutoff) {
        i = 0;
        while (i < sizeof(out) && (times[out[i]] < times[id] || (times[out[i]] == times[id] && out[i] < id))) {
          i = i + 1;
        }
        out += (i, id);
      }
    }
    while (sizeof(out) > limit) {
      out -= (sizeof(out) - 1);
    }
    return out;
  }

  // Keeps a purged message or dead-letter id until its dedup horizon ends (not at all when that
  // is already past). The monitors learn of every removal, whatever is kept.
  // The purge-forgets-ids profile keeps none: the id is free at once.
  fun Retire(id: string, finalAt: int, horizon: int) {
    announce eSpecPurged, (at = now, id = id, horizon_end = finalAt + horizon);
    if (finalAt + horizon > now) {
      if (variant == VariantPurgeForgetsIds()) {
        forgotten[id] = finalAt + horizon;
      } else {
        retired[id] = finalAt + horizon;
      }
    }
  }

  // purge(older_than, horizon, limit): up to limit acked messages, dead letters and final outbox
  // rows (completed or dead-lettered) final at or before now - older_than are removed, each kind oldest first; removed message
  // and dead-letter ids are retired until final + horizon; then up to limit retired ids whose
  // horizon has passed are forgotten. affected counts the rows removed.
  fun Purge(limit: int, older_than: int, horizon: int): tRes {
    var res: tRes;
    var id: string;
    var i: int;
    var expired: map[string, int];
    var cutoff: int;
    cutoff = now - older_than;
    foreach (id in Oldest(ackedAt, cutoff, limit)) {
      i = FindMsg(id);
      msgs -= (i);
      Retire(id, ackedAt[id], horizon);
      ackedAt -= (id);
      res.affected = res.affected + 1;
    }
    foreach (id in Oldest(deadAt, cutoff, limit)) {
      i = 0;
      while (dead[i].id != id) {
        i = i + 1;
      }
      dead -= (i);
      deadRows -= (id);
      Retire(id, deadAt[id], horizon);
      deadAt -= (id);
      res.affected = res.affected + 1;
    }
    foreach (id in Oldest(outFinalAt, cutoff, limit)) {
      outbox -= (FindOut(id));
      outFinalAt -= (id);
      res.affected = res.affected + 1;
    }
    foreach (id in keys(retired)) {
      if (retired[id] <= now) {
        expired[id] = retired[id];
      }
    }
    foreach (id in Oldest(expired, now, limit)) {
      retired -= (id);
    }
    // Under processed_expiry "until_cleanup" the purge is the cleanup: it removes the expired marks
    // (not counted in affected).
    if (PrfProcessedUntilCleanup()) {
      foreach (id in keys(processed)) {
        if (processed[id] <= now) {
          processed -= (id);
        }
      }
    }
    return res;
  }

  // ---------------------------------------------------------------------------------------------
  // Redrive (docs/semantics.md, "Redrive").

  // redrive(id, reason): the mailbox dead letter id, if any, goes back into its mailbox as a ready
  // message with attempts 0, available now and a new seqno (the back of its mailbox and key); the
  // outbox row id, if dead-lettered, becomes pending with delivery attempts 0, available now and no
  // reason. not_found when id names neither. The reason goes to the store's history only. The
  // redrive-keeps-attempts profile puts a message back with the attempts it was dead-lettered with.
  // The records of id in history (all of them when id is ""), oldest first.
  fun RedrivesOf(history: seq[tRedriveRec], id: string): seq[tRedriveRec] {
    var out: seq[tRedriveRec];
    var r: tRedriveRec;
    foreach (r in history) {
      if (id == "" || r.id == id) {
        out += (sizeof(out), r);
      }
    }
    return out;
  }

  // Appends the record of one move to the history (and to the correct store's), and tells the
  // monitors what the dead letter had before the move.
  fun RecordRedrive(id: string, kind: string, mailbox: string, attempts: int, dead_reason: string, reason: string) {
    var rec: tRedriveRec;
    rec = (id = id, kind = kind, mailbox = mailbox, attempts = attempts, dead_reason = dead_reason, reason = reason,
           at = now);
    rightRedrives += (sizeof(rightRedrives), rec);
    if (variant == VariantRedriveRecordsReset()) {
      // The broken store writes its record after the move, from the reset row.
      rec.attempts = 0;
    }
    redrives += (sizeof(redrives), rec);
    announce eSpecRedriven, (at = now, id = id, kind = kind, mailbox = mailbox, attempts = attempts,
                             dead_reason = dead_reason, reason = reason);
  }

  fun Redrive(id: string, reason: string): tRes {
    var res: tRes;
    var i: int;
    var m: tMsg;
    var found: bool;
    i = 0;
    // Under dead_letter_id "free" a message may hold the dead letter's id: the dead letter stays.
    while (i < sizeof(dead) && FindMsg(id) < 0) {
      if (dead[i].id == id) {
        RecordRedrive(id, "message", dead[i].mailbox, dead[i].attempts, dead[i].reason, reason);
        m = deadRows[id];
        dead -= (i);
        deadRows -= (id);
        if (id in deadAt) {
          deadAt -= (id);
        }
        m.row_state = "ready";
        if (variant == VariantRedriveKeepsAttempts()) {
          if (m.attempts > 0) {
            keptAttempts[id] = m.attempts;
          }
        } else {
          m.attempts = 0;
        }
        m.available_at = now;
        m.token = 0;
        m.lease_until = 0;
        m.seqno = nextSeq;
        nextSeq = nextSeq + 1;
        msgs += (sizeof(msgs), m);
        found = true;
        break;
      }
      i = i + 1;
    }
    i = FindOut(id);
    if (i >= 0 && outbox[i].row_state == "dead_letter") {
      RecordRedrive(id, "outbox", outbox[i].target, outbox[i].delivery_attempts, outbox[i].dead_reason, reason);
      outbox[i].row_state = "pending";
      outbox[i].dead_reason = "";
      outbox[i].delivery_attempts = 0;
      outbox[i].available_at = now;
      if (id in outFinalAt) {
        outFinalAt -= (id);
      }
      found = true;
    }
    if (!found) {
      res.err = "not_found";
    }
    return res;
  }
}
