/*****************************************************************************************************
 * Wake-up monitor (docs/semantics.md, "Wake-ups").
 *****************************************************************************************************/

// A wake follows the commit that caused it: a wake of a mailbox for message id comes only after a
// committed step inserted id into that mailbox (an enqueue, a delivery or a redrive), never before
// it, and never for an insert that rolled back. The model's store announces its wakes after each
// request; an observed history's wakes are the consumers' recorded ones (bridge.PDriver).
spec WakeFollowsCommit observes eSpecMsgInserted, eSpecWake {
  var committed: map[string, string]; // message id -> the mailbox a committed step inserted it into

  start state Watching {
    on eSpecMsgInserted do (e: (at: int, mailbox: string, id: string)) {
      committed[e.id] = e.mailbox;
    }
    on eSpecWake do (e: (at: int, mailbox: string, id: string)) {
      assert e.id in committed && committed[e.id] == e.mailbox,
        format("a wake of mailbox {0} for message {1} at t={2} came before any committed step put {1} into {0}",
               e.mailbox, e.id, e.at);
    }
  }
}

// A woken consumer fetches before its next poll tick: once a worker was woken for a committed
// message of a mailbox (a wake whose result states no err), its next poll tick there comes only
// after a fetch of it from that mailbox (single or batch). A crash forgets every wake (the restarted process's
// workers are new). The model's consumers neither wait nor tick, so only an observed history,
// whose wakes, fetches and ticks are the consumers' recorded ones (bridge.PDriver and
// bridge.SpecDeriver), gives this monitor events.
spec WokenWorkerFetchesBeforeTick observes eObsWake, eObsConsumerFetch, eObsConsumerFetchBatch, eObsPollTick, eObsCrash {
  var owed: map[int, set[string]]; // worker -> the mailboxes it was woken for and has not fetched from since

  start state Watching {
    on eObsWake do (e: (at: int, worker: int, mailbox: string, id: string, profile: string, err: string)) {
      if (e.err != "") {
        return;
      }
      if (!(e.worker in owed)) {
        owed[e.worker] = default(set[string]);
      }
      owed[e.worker] += (e.mailbox);
    }
    on eObsConsumerFetch do (e: (at: int, worker: int, mailbox: string, profile: string, lease_for: int,
                                 msg_id: string, msg_attempts: int, msg_token: int, bug: bool)) {
      if (e.worker in owed && e.mailbox in owed[e.worker]) {
        owed[e.worker] -= (e.mailbox);
      }
    }
    // A batch fetch is a fetch.
    on eObsConsumerFetchBatch do (e: (at: int, worker: int, mailbox: string, profile: string, size: int,
                                      lease_for: int, messages: seq[tFetched], bug: bool)) {
      if (e.worker in owed && e.mailbox in owed[e.worker]) {
        owed[e.worker] -= (e.mailbox);
      }
    }
    on eObsPollTick do (e: (at: int, worker: int, mailbox: string, err: string)) {
      assert !(e.worker in owed && e.mailbox in owed[e.worker]),
        format("worker {0} was woken for a committed message of mailbox {1} and reached its next poll tick there at t={2} without fetching from it",
               e.worker, e.mailbox, e.at);
    }
    on eObsCrash do (e: (at: int)) {
      owed = default(map[int, set[string]]);
    }
  }
}
