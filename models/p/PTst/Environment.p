/*****************************************************************************************************
 * The test environment: the Scenario driver that sets a scenario up, runs its participants and
 * announces the final state once all of them have finished; the Crasher that restarts the process
 * at a point the checker chooses; and the RawClient that issues arbitrary store operations.
 *****************************************************************************************************/

// Sets up the store (messages, then outbox rows, each as an announced enqueue), starts every
// participant, waits for each to report eDone, then has the Store announce eObsFinal.
machine Scenario {
  var store: machine;
  var running: int;

  start state Setup {
    entry (sc: tScenario) {
      var e: tEnqCfg;
      var o: tOutCfg;
      var c: tConsumerCfg;
      var p: tPublisherCfg;
      var b: tBatchCfg;
      store = new Store(sc.variant);
      foreach (e in sc.messages) {
        send store, eEnqueueReq, (client = this, mailbox = e.mailbox, id = e.id, key = e.key, priority = e.priority,
                                  max_attempts = e.max_attempts, delay = e.delay, payload = e.payload);
        receive { case eReply: (r: tReply) { } }
      }
      foreach (o in sc.outbox) {
        send store, eOutboxEnqueueReq, (client = this, id = o.id, target = o.target, key = o.key,
                                        priority = o.priority, max_attempts = o.max_attempts, payload = o.payload,
                                        max_delivery_attempts = o.max_delivery_attempts);
        receive { case eReply: (r: tReply) { } }
      }
      foreach (c in sc.consumers) {
        new ConsumerWorker((store = store, driver = this, cfg = c));
        running = running + 1;
      }
      foreach (b in sc.batches) {
        new BatchWorker((store = store, driver = this, cfg = b));
        running = running + 1;
      }
      foreach (p in sc.publishers) {
        new Publisher((store = store, driver = this, cfg = p));
        running = running + 1;
      }
      if (sc.crashes > 0) {
        new Crasher((store = store, driver = this, crashes = sc.crashes));
        running = running + 1;
      }
      if (sc.dead_letterer) {
        new DeadLetterClient((store = store, driver = this));
        running = running + 1;
      }
      if (sc.raw_ops > 0 || sc.raw_script != "") {
        new RawClient((store = store, driver = this, ops = sc.raw_ops, script = sc.raw_script));
        running = running + 1;
      }
      if (sc.janitor > 0) {
        new Janitor((store = store, driver = this, rounds = sc.janitor, ids = sc.janitor_ids));
        running = running + 1;
      }
      if (sc.dedup > 0) {
        new DedupClient((store = store, driver = this, expire = sc.dedup == 2));
        running = running + 1;
      }
      if (sc.checkpointer) {
        new CheckpointClient((store = store, driver = this, effects = sc.checkpoint_effects, loads = sc.checkpoint_loads));
        running = running + 1;
      }
      if (sc.redrives > 0) {
        new Redriver((store = store, driver = this, redrives = sc.redrives, ids = sc.redrive_ids,
                      worker = sc.redrive_worker));
        running = running + 1;
      }
      goto Running;
    }
  }

  state Running {
    on eDone do {
      running = running - 1;
      if (running == 0) {
        send store, eFinalReq, (client = this,);
        goto Finished;
      }
    }
  }

  // eObsFinal has been announced; the scenario is over.
  state Finished {
    ignore eReply;
  }
}

// Lets a few scheduling points pass, a number the checker chooses, so that what follows can land
// anywhere among the other machines' steps.
fun YieldCount(): int {
  return choose(8);
}

// Crashes and restarts the process up to `crashes` times, each time after a delay the checker
// chooses, and each time only if the checker chooses to.
machine Crasher {
  start state Run {
    entry (init: (store: machine, driver: machine, crashes: int)) {
      var i: int;
      var n: int;
      i = 0;
      while (i < init.crashes) {
        n = YieldCount();
        while (n > 0) {
          send this, eYield;
          receive { case eYield: { } }
          n = n - 1;
        }
        if ($) {
          send init.store, eCrashReq, (client = this,);
          receive { case eReply: (r: tReply) { } }
        }
        i = i + 1;
      }
      send init.driver, eDone, (who = this,);
    }
  }
}

// A raw client that issues one nack_by_id(id, 0), then tells the worker that started it. It is what
// the leaseless worker races against: another party counting a failed attempt of the message the
// worker has fetched and not handled yet.
machine RawNacker {
  start state Run {
    entry (init: (store: machine, worker: machine, id: string)) {
      send init.store, eNackByIdReq, (client = this, id = init.id, delay = 0);
      receive { case eReply: (r: tReply) { } }
      send init.worker, eRaced;
    }
  }
}

// The second leased worker of a takeover (tConsumerCfg.takeover): it fetches from the mailbox once
// the stalled worker's lease has run out, so its lease replaces that one; it tells the stalled
// worker, waits until that worker has handled its stale delivery, handles its own (the handler
// succeeds) and tells the worker again.
machine Taker {
  start state Run {
    entry (init: (store: machine, worker: machine, cfg: tConsumerCfg)) {
      send init.store, eFetchReq, (client = this, worker = init.cfg.worker, mailbox = init.cfg.mailbox,
                                   profile = init.cfg.profile, lease_for = init.cfg.lease_for);
      receive { case eReply: (r: tReply) { } }
      send init.worker, eRaced;
      receive { case eRaced: { } }
      send init.store, eHandleReq, (client = this, worker = init.cfg.worker, mailbox = init.cfg.mailbox,
                                    profile = init.cfg.profile, outcome = "ok", retry_delay = 0, fault = "");
      receive { case eReply: (r: tReply) { } }
      send init.worker, eRaced;
    }
  }
}

// Issues `ops` store operations chosen by the checker, with arguments drawn from small pools and
// tokens taken from earlier lease and claim results (fresh or stale), so that every store operation
// and every error path appears in the observations.
machine RawClient {
  var store: machine;
  var leases: seq[(id: string, token: int)];
  var claims: seq[(id: string, token: int)];
  var ids: seq[string];
  var outIds: seq[string];

  start state Run {
    entry (init: (store: machine, driver: machine, ops: int, script: string)) {
      var i: int;
      store = init.store;
      ids += (0, "m1");
      ids += (1, "m2");
      ids += (2, "m3");
      outIds += (0, "o1");
      outIds += (1, "o2");
      if (init.script == "stale-leases") {
        StaleLeases();
      } else {
        EveryOperation();
      }
      i = 0;
      while (i < init.ops) {
        Step(choose(15));
        i = i + 1;
      }
      send init.driver, eDone, (who = this,);
    }
  }

  // A fixed prologue that runs every store operation at least once in every schedule, so that a
  // handful of schedules already cover them all: claim o1, fail it (releasing the claim), claim
  // again, complete with a token from either claim (a stale one reports claim_lost); lease, extend,
  // ack; lease, nack; peek, expire, ack/nack/dead-letter by id, outbox and mailbox enqueue.
  fun EveryOperation() {
    Step(11);
    Step(13);
    Step(11);
    Step(12);
    Step(1);
    Step(7);
    Step(3);
    Step(1);
    Step(4);
    Step(2);
    Step(8);
    Step(5);
    Step(6);
    Step(9);
    Step(10);
    Step(0);
  }

  // The situations a fencing or boundary slip hides in, met in every schedule. The scenario's
  // messages (in seq order): m1 unkeyed with max_attempts 3, m2 unkeyed with 2, m3 and m4 keyed
  // "k" with 2, all of one priority and available at once, so that each lease below takes the
  // message named. The script asserts that it does.
  //
  // Stale tokens and lease boundaries: lease m1 (token A); tick to A's lease_until; at that
  // instant, where A is no longer live, peek and lease m1 again (token B, live); extend, ack and
  // nack with A while B is live (each lease_lost: the row carries B), in an order the checker
  // chooses; tick to B's lease_until, peek there and expire (it clears B and m1 is ready again);
  // lease m1 a third time, tick to that lease's end and expire (it clears the lease and, with the
  // attempts used up, dead-letters m1); extend and ack with tokens of a message that is gone.
  //
  // Exhausted and keyed heads: lease m2 and nack it, then nack_by_id uses its last attempt;
  // lease m3 and nack it with a delay, and peek while m3, the head of key k, waits in backoff ahead
  // of m4; nack_by_id m3 to its last attempt and peek (m4 is next: an exhausted head no longer
  // blocks); dead-letter m3 while m4 is ready.
  fun StaleLeases() {
    var a: (id: string, token: int);
    var l: (id: string, token: int);
    var n: int;
    var order: seq[int];
    a = LeaseOf("m1");
    Step(14);
    Step(2);
    l = LeaseOf("m1");
    order += (0, 3);
    order += (1, 4);
    order += (2, 7);
    while (sizeof(order) > 0) {
      n = choose(sizeof(order));
      UseToken(order[n], a, 0);
      order -= (n);
    }
    Step(14);
    Step(2);
    Step(8);
    l = LeaseOf("m1");
    Step(14);
    Step(8);
    UseToken(7, a, 0);
    UseToken(3, l, 0);

    l = LeaseOf("m2");
    UseToken(4, l, 0);
    ById(eNackByIdReq, "m2");
    l = LeaseOf("m3");
    UseToken(4, l, 1);
    Step(2);
    ById(eNackByIdReq, "m3");
    Step(2);
    ById(eDeadLetterReq, "m3");
  }

  // Leases from inbox and returns the lease, which must be of the message id.
  fun LeaseOf(id: string): (id: string, token: int) {
    var n: int;
    n = sizeof(leases);
    Step(1);
    assert sizeof(leases) == n + 1 && leases[n].id == id,
      format("RawClient.StaleLeases: the script's lease of {0} took another message or none", id);
    return leases[n];
  }

  // Ack (3), nack (4, with delay) or extend (7) with the lease l, whatever the row carries now.
  fun UseToken(op: int, l: (id: string, token: int), delay: int) {
    if (op == 3) {
      send store, eAckReq, (client = this, id = l.id, token = l.token);
    } else if (op == 4) {
      send store, eNackReq, (client = this, id = l.id, token = l.token, delay = delay);
    } else {
      send store, eExtendReq, (client = this, id = l.id, token = l.token, lease_for = 2);
    }
    receive { case eReply: (r: tReply) { } }
  }

  // nack_by_id(id, 0) or dead_letter(id, "manual").
  fun ById(e: event, id: string) {
    if (e == eNackByIdReq) {
      send store, eNackByIdReq, (client = this, id = id, delay = 0);
    } else {
      send store, eDeadLetterReq, (client = this, id = id, reason = "manual");
    }
    receive { case eReply: (r: tReply) { } }
  }

  fun Step(op: int) {
    var res: tReply;
    var batch: (claimed: seq[tClaimed], quiet: bool, epoch: int);
    var l: (id: string, token: int);
    var c: tClaimed;
    var key: string;
    if ((op == 3 || op == 4 || op == 7) && sizeof(leases) == 0) {
      op = 1;
    }
    if ((op == 12 || op == 13 || op == 15) && sizeof(claims) == 0) {
      op = 11;
    }
    if (op == 0) {
      key = "";
      if ($) {
        key = "k";
      }
      send store, eEnqueueReq, (client = this, mailbox = "inbox", id = choose(ids), key = key, priority = choose(2),
                                max_attempts = 2, delay = choose(2), payload = "p");
    } else if (op == 1) {
      send store, eLeaseReq, (client = this, mailbox = "inbox", lease_for = 2);
    } else if (op == 2) {
      send store, ePeekReq, (client = this, mailbox = "inbox");
    } else if (op == 3) {
      l = choose(leases);
      send store, eAckReq, (client = this, id = l.id, token = l.token);
    } else if (op == 4) {
      l = choose(leases);
      send store, eNackReq, (client = this, id = l.id, token = l.token, delay = choose(2));
    } else if (op == 5) {
      send store, eAckByIdReq, (client = this, id = choose(ids));
    } else if (op == 6) {
      send store, eNackByIdReq, (client = this, id = choose(ids), delay = choose(2));
    } else if (op == 7) {
      l = choose(leases);
      send store, eExtendReq, (client = this, id = l.id, token = l.token, lease_for = 2);
    } else if (op == 8) {
      send store, eExpireReq, (client = this,);
    } else if (op == 9) {
      send store, eDeadLetterReq, (client = this, id = choose(ids), reason = "manual");
    } else if (op == 10) {
      send store, eOutboxEnqueueReq, (client = this, id = choose(outIds), target = "inbox", key = "", priority = 0,
                                      max_attempts = 2, payload = "p", max_delivery_attempts = 0);
    } else if (op == 11) {
      send store, eOutboxClaimReq, (client = this, limit = 1 + choose(2), claim_for = 2);
    } else if (op == 12) {
      l = choose(claims);
      send store, eOutboxCompleteReq, (client = this, id = l.id, token = l.token);
    } else if (op == 13) {
      l = choose(claims);
      send store, eOutboxFailReq, (client = this, id = l.id, token = l.token, delay = choose(2));
    } else if (op == 15) {
      l = choose(claims);
      send store, eOutboxDeadLetterReq, (client = this, id = l.id, token = l.token, reason = "manual");
    } else {
      send store, eTickReq, (client = this,);
    }
    if (op == 11) {
      receive {
        case eClaimReply: (r: (claimed: seq[tClaimed], quiet: bool, epoch: int)) {
          batch = r;
        }
      }
      foreach (c in batch.claimed) {
        claims += (sizeof(claims), (id = c.id, token = c.token));
      }
      return;
    }
    receive {
      case eReply: (r: tReply) {
        res = r;
      }
    }
    if (res.msg_token != 0) {
      leases += (sizeof(leases), (id = res.msg_id, token = res.msg_token));
    }
  }
}

// Claims one outbox row and dead-letters it by hand (outbox_dead_letter), then tries again with
// the same, now stale, token (claim_lost).
machine DeadLetterClient {
  start state Run {
    entry (init: (store: machine, driver: machine)) {
      var batch: (claimed: seq[tClaimed], quiet: bool, epoch: int);
      var i: int;
      send init.store, eOutboxClaimReq, (client = this, limit = 1, claim_for = 2);
      receive {
        case eClaimReply: (r: (claimed: seq[tClaimed], quiet: bool, epoch: int)) {
          batch = r;
        }
      }
      if (sizeof(batch.claimed) > 0) {
        i = 0;
        while (i < 2) {
          send init.store, eOutboxDeadLetterReq, (client = this, id = batch.claimed[0].id,
                                                  token = batch.claimed[0].token, reason = "manual");
          receive { case eReply: (r: tReply) { } }
          i = i + 1;
        }
      }
      send init.driver, eDone, (who = this,);
    }
  }
}

// Retention (docs/semantics.md, "Retention"): `rounds` times, after a few scheduling points the
// checker chooses, purges final rows (a batch of 1 or 2, an age of 0 or 1, a dedup horizon of 0 to
// 2, all chosen by the checker), enqueues one of `ids` again (an id the purge may just have
// retired), moves the clock to its next event time (which may be the end of a horizon), and
// enqueues one of `ids` again, so that an enqueue lands both inside and after a horizon.
machine Janitor {
  var store: machine;
  var ids: seq[string];

  start state Run {
    entry (init: (store: machine, driver: machine, rounds: int, ids: seq[string])) {
      var i: int;
      var n: int;
      store = init.store;
      ids = init.ids;
      while (i < init.rounds) {
        n = YieldCount();
        while (n > 0) {
          send this, eYield;
          receive { case eYield: { } }
          n = n - 1;
        }
        send store, ePurgeReq, (client = this, limit = 1 + choose(2), older_than = choose(2), horizon = choose(3));
        receive { case eReply: (r: tReply) { } }
        EnqueueAgain();
        send store, eTickReq, (client = this,);
        receive { case eReply: (r: tReply) { } }
        EnqueueAgain();
        i = i + 1;
      }
      send init.driver, eDone, (who = this,);
    }
  }

  fun EnqueueAgain() {
    var id: string;
    id = choose(ids);
    send store, eEnqueueReq, (client = this, mailbox = "inbox", id = id, key = "", priority = 0, max_attempts = 1,
                              delay = 0, payload = format("again-{0}", id));
    receive { case eReply: (r: tReply) { } }
  }
}

// A consumer that makes its effect idempotent with processed-message marks (ttl 3): it applies a
// delivery only when mark_processed reports no live mark. It delivers m1 to consumer c1, to c2 (a
// mark is per consumer), and redelivers it to c1 after a gap the checker chooses: below the ttl
// (expire false: the mark is live, so the redelivery must not be applied again) or at or past it
// (expire true: the mark ran out, so the redelivery is applied, as documented, and marks again).
// A last redelivery right after finds the live mark either way.
machine DedupClient {
  var store: machine;
  // (consumer|id) -> how often this client applied it.
  var applied: map[string, int];

  start state Run {
    entry (init: (store: machine, driver: machine, expire: bool)) {
      var gap: int;
      var again: bool;
      store = init.store;
      assert Apply("c1", "m1"), "the first delivery of m1 to c1 found a mark nobody wrote";
      if ($) {
        assert Apply("c2", "m1"), "c1's mark of m1 kept c2 from applying it";
      }
      if (init.expire) {
        gap = 3 + choose(2);
      } else {
        gap = choose(3);
      }
      send store, eAdvanceReq, (client = this, by = gap);
      receive { case eReply: (r: tReply) { } }
      again = Apply("c1", "m1");
      if (init.expire) {
        assert again, format("m1's mark expired {0} s before its redelivery, yet the redelivery was not applied", gap - 3);
      } else {
        assert !again, format("m1 was applied twice by c1: redelivered {0} s after its mark, within the ttl of 3 s", gap);
      }
      assert !Apply("c1", "m1"), "an immediate redelivery of m1 to c1 was applied again";
      send init.driver, eDone, (who = this,);
    }
  }

  // Delivers id to consumer: marks it, and applies it when the mark reports no duplicate.
  fun Apply(consumer: string, id: string): bool {
    var dup: bool;
    var key: string;
    send store, eMarkProcessedReq, (client = this, consumer = consumer, id = id, ttl = 3);
    receive {
      case eKeepReply: (r: (duplicate: bool, version: int, err: string)) {
        dup = r.duplicate;
      }
    }
    if (dup) {
      return false;
    }
    key = format("{0}|{1}", consumer, id);
    if (!(key in applied)) {
      applied[key] = 0;
    }
    applied[key] = applied[key] + 1;
    return true;
  }
}

// Saves and loads the checkpoint of actor a1 the way an actor does (load, then save with the
// version it loaded): a first save, a save with the current version or the stale version 0 (the
// checker's choice), a second "first" save that must conflict, and a load. Then, when effects is a
// mailbox name, it loads that mailbox's effect log (a checkpoint the consumer's handle saves with
// its acknowledgement) `loads` times while the workers run.
machine CheckpointClient {
  var store: machine;

  start state Run {
    entry (init: (store: machine, driver: machine, effects: string, loads: int)) {
      var i: int;
      store = init.store;
      Call(eLoadCheckpointReq, (client = this, actor = "a1"));
      Call(eSaveCheckpointReq, (client = this, actor = "a1", expect_version = 0, payload = "s1"));
      Call(eSaveCheckpointReq, (client = this, actor = "a1", expect_version = choose(2), payload = "s2"));
      Call(eSaveCheckpointReq, (client = this, actor = "a1", expect_version = 0, payload = "s3"));
      Call(eLoadCheckpointReq, (client = this, actor = "a1"));
      i = 0;
      while (init.effects != "" && i < init.loads) {
        Call(eLoadCheckpointReq, (client = this, actor = format("effects/{0}", init.effects)));
        i = i + 1;
      }
      send init.driver, eDone, (who = this,);
    }
  }

  fun Call(e: event, payload: any): int {
    var v: int;
    send store, e, payload;
    receive {
      case eKeepReply: (r: (duplicate: bool, version: int, err: string)) {
        v = r.version;
      }
    }
    return v;
  }
}

// Redrive (docs/semantics.md, "Redrive"): `redrives` times, after a few scheduling points the
// checker chooses, redrives one of `ids` (the checker's choice), which may be a mailbox dead
// letter, a dead-lettered outbox row, both, or neither (not_found). The scenario's publishers may
// have stopped before a redrive makes an outbox row pending again, so the Redriver then runs a
// fold publisher of its own (without faults) until no row is pending, and waits for it. With
// `worker`, it then also runs a leased worker of its own on inbox (whose handler succeeds) until
// the mailbox is quiet, so that a redriven message is fetched after the redrive in every schedule.
// After each redrive it lists the redrive history of the id it chose; at the end it purges every
// final row and lists the whole history.
machine Redriver {
  start state Run {
    entry (init: (store: machine, driver: machine, redrives: int, ids: seq[string], worker: bool)) {
      var i: int;
      var n: int;
      var id: string;
      while (i < init.redrives) {
        n = YieldCount();
        while (n > 0) {
          send this, eYield;
          receive { case eYield: { } }
          n = n - 1;
        }
        id = choose(init.ids);
        send init.store, eRedriveReq, (client = this, id = id, reason = format("fixed-{0}", i + 1));
        receive { case eReply: (r: tReply) { } }
        ListRedrives(init.store, id);
        i = i + 1;
      }
      new Publisher((store = init.store, driver = this, cfg = Pub(9, AtomicFold, default(seq[string]), 0)));
      receive { case eDone: (d: (who: machine)) { } }
      if (init.worker) {
        new ConsumerWorker((store = init.store, driver = this, cfg = Worker(9, "inbox", Leased, false)));
        receive { case eDone: (d: (who: machine)) { } }
      }
      // Retention never touches the history: purge every final row, then list it all.
      send init.store, ePurgeReq, (client = this, limit = 5, older_than = 0, horizon = 0);
      receive { case eReply: (r: tReply) { } }
      ListRedrives(init.store, "");
      send init.driver, eDone, (who = this,);
    }
  }

  fun ListRedrives(store: machine, id: string) {
    send store, eListRedrivesReq, (client = this, id = id);
    receive { case eReply: (r: tReply) { } }
  }
}
