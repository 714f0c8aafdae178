/*****************************************************************************************************
 * Consumer and mailbox specifications, over the store's real state changes (eSpec*).
 *****************************************************************************************************/

// A message's handler effect commits at most once: the store's effect log never receives the same
// message id twice. Lease fencing (ack by token inside the handler's transaction) is what keeps a
// stale worker from committing a second effect.
spec EffectAppliedAtMostOnce observes eSpecEffect {
  var applied: set[string];

  start state Watching {
    on eSpecEffect do (e: (at: int, mailbox: string, id: string)) {
      var k: string;
      k = format("{0}/{1}", e.mailbox, e.id);
      assert !(k in applied),
        format("handler effect of message {0} in mailbox {1} committed a second time at t={2}", e.id, e.mailbox, e.at);
      applied += (k);
    }
  }
}

// No message ever has more deliveries counted than it allows: every row and every dead letter has
// 0 <= attempts <= max_attempts.
spec AttemptsNeverExceedMax observes eSpecRow, eSpecDeadLettered {
  start state Watching {
    on eSpecRow do (e: (at: int, row: tMsg)) {
      assert e.row.attempts >= 0 && e.row.attempts <= e.row.max_attempts,
        format("message {0} has attempts {1} with max_attempts {2} at t={3}", e.row.id, e.row.attempts,
               e.row.max_attempts, e.at);
    }
    on eSpecDeadLettered do (e: (at: int, mailbox: string, id: string, attempts: int, max_attempts: int,
                                 reason: string)) {
      assert e.attempts >= 0 && e.attempts <= e.max_attempts,
        format("dead letter {0} records attempts {1} with max_attempts {2}", e.id, e.attempts, e.max_attempts);
    }
  }
}

// Liveness: every message is eventually resolved, i.e. acked or dead-lettered. The monitor is hot
// while some enqueued message is neither; a scenario that ends in that state (a stranded message)
// is a liveness violation.
spec EveryMessageEventuallyResolved observes eSpecRow, eSpecDeadLettered {
  var open: set[string];

  start cold state AllResolved {
    on eSpecRow do (e: (at: int, row: tMsg)) {
      Track(e.row);
    }
    on eSpecDeadLettered do (e: (at: int, mailbox: string, id: string, attempts: int, max_attempts: int,
                                 reason: string)) {
      Resolve(e.id);
    }
  }

  hot state SomeUnresolved {
    on eSpecRow do (e: (at: int, row: tMsg)) {
      Track(e.row);
    }
    on eSpecDeadLettered do (e: (at: int, mailbox: string, id: string, attempts: int, max_attempts: int,
                                 reason: string)) {
      Resolve(e.id);
    }
  }

  fun Track(row: tMsg) {
    if (row.row_state == "ready") {
      open += (row.id);
    } else {
      Resolve(row.id);
      return;
    }
    goto SomeUnresolved;
  }

  fun Resolve(id: string) {
    if (id in open) {
      open -= (id);
    }
    if (sizeof(open) == 0) {
      goto AllResolved;
    } else {
      goto SomeUnresolved;
    }
  }
}

// A keyed lease never overtakes a live earlier message of its key. When a row is leased, no earlier
// row (smaller seq) of the same mailbox and key may be a blocking predecessor: ready and either with
// attempts left or holding a live lease. The monitor keeps its own copy of every row from eSpecRow
// and asks the model's own rule (BlocksSuccessor, LeaseLive in PSrc/Rules.p, under the profile the
// project is compiled with), so it judges leases by the profile's lease_at_until and
// exhausted_leased_head choices. Only ready rows with a key can block or be judged, so the copy keeps
// only those, grouped by mailbox and key: a keyed lease scans the ready rows of its own key, so the
// cost of an observed history's event follows its key's backlog, not the live rows or the history.
spec SameKeyClaimsRespectLiveHead observes eSpecRow, eSpecDeadLettered, eSpecLeased {
  var ready: map[(string, string), map[string, tMsg]]; // (mailbox, key) -> its ready rows by id
  var groupOf: map[string, (string, string)];          // id -> its (mailbox, key) in ready

  fun Forget(id: string) {
    var g: (string, string);
    if (!(id in groupOf)) {
      return;
    }
    g = groupOf[id];
    ready[g] -= (id);
    if (sizeof(ready[g]) == 0) {
      ready -= (g);
    }
    groupOf -= (id);
  }

  start state Watching {
    on eSpecRow do (e: (at: int, row: tMsg)) {
      var g: (string, string);
      Forget(e.row.id);
      if (e.row.row_state == "ready" && e.row.key != "") {
        g = (e.row.mailbox, e.row.key);
        if (!(g in ready)) {
          ready[g] = default(map[string, tMsg]);
        }
        ready[g][e.row.id] = e.row;
        groupOf[e.row.id] = g;
      }
    }
    on eSpecDeadLettered do (e: (at: int, mailbox: string, id: string, attempts: int, max_attempts: int,
                                 reason: string)) {
      Forget(e.id);
    }
    on eSpecLeased do (e: (at: int, mailbox: string, id: string)) {
      var m: tMsg;
      var p: tMsg;
      if (!(e.id in groupOf)) {
        return; // no key: nothing can block it
      }
      m = ready[groupOf[e.id]][e.id];
      foreach (p in values(ready[groupOf[e.id]])) {
        if (p.seqno < m.seqno) {
          assert !BlocksSuccessor(p, e.at, ""),
            format("message {0} (key {1}) leased at t={2} while earlier message {3} was still live (attempts {4}/{5}, token {6}, lease_until {7})",
                   m.id, m.key, e.at, p.id, p.attempts, p.max_attempts, p.token, p.lease_until);
        }
      }
    }
  }
}

// A consumer never dead-letters a message out from under another worker's live lease. A leased
// worker whose lease ran out, and whose message another worker has leased since, no longer owns
// the message: its handler's failure (above all one the retry policy declines, which dead-letters
// before max_attempts) must be fenced by its token and end lease_lost. The monitor keeps its own
// copy of every row from eSpecRow; eSpecHandled arrives before the handle's own changes, so the
// copy shows the row as the handle found it. Leaseless handles (token 0) hold no lease to fence. A
// lease is live by the model's rule (LeaseLive, under the profile's lease_at_until choice).
spec DeadLetterSparesLiveLeases observes eSpecRow, eSpecDeadLettered, eSpecHandled {
  var rows: map[string, tMsg];

  start state Watching {
    on eSpecRow do (e: (at: int, row: tMsg)) {
      rows[e.row.id] = e.row;
    }
    on eSpecDeadLettered do (e: (at: int, mailbox: string, id: string, attempts: int, max_attempts: int,
                                 reason: string)) {
      if (e.id in rows) {
        rows -= (e.id);
      }
    }
    on eSpecHandled do (e: (at: int, worker: int, id: string, token: int, action: string)) {
      var m: tMsg;
      if (e.action != "dead_lettered" || e.token == 0 || !(e.id in rows)) {
        return;
      }
      m = rows[e.id];
      assert !(m.token != e.token && LeaseLive(m, e.at)),
        format("worker {0} dead-lettered message {1} at t={2} under token {3}, while another lease (token {4}, until t={5}) was live on it",
               e.worker, e.id, e.at, e.token, m.token, m.lease_until);
    }
  }
}

// Liveness: a consumer's acknowledgement of a message commits its handler effect with it. The
// monitor is hot while some message a handle acknowledged (eSpecHandled, action acked) has no
// committed effect (eSpecEffect). A correct handle, single or batched, commits both in one step,
// so the monitor is hot only inside that step. A run that ends hot has acknowledged a message whose
// effect never committed: acked before its effects, or acked although its handler failed.
spec AcknowledgedEffectCommitted observes eSpecHandled, eSpecEffect {
  var owed: set[string];

  start cold state NoneOwed {
    on eSpecHandled do (e: (at: int, worker: int, id: string, token: int, action: string)) {
      Owe(e.id, e.action);
    }
    on eSpecEffect do (e: (at: int, mailbox: string, id: string)) {
      Pay(e.id);
    }
  }

  hot state EffectOwed {
    on eSpecHandled do (e: (at: int, worker: int, id: string, token: int, action: string)) {
      Owe(e.id, e.action);
    }
    on eSpecEffect do (e: (at: int, mailbox: string, id: string)) {
      Pay(e.id);
    }
  }

  fun Owe(id: string, action: string) {
    if (action == "acked") {
      owed += (id);
      goto EffectOwed;
    }
  }

  fun Pay(id: string) {
    if (id in owed) {
      owed -= (id);
    }
    if (sizeof(owed) == 0) {
      goto NoneOwed;
    }
  }
}
