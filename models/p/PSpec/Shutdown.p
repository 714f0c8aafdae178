/*****************************************************************************************************
 * The shutdown rule of a worker group (docs/semantics.md, "Shutdown"), over the store's
 * observations of the workers' steps (single and batch alike): after its stop a worker starts no fetch (only one under way
 * at the stop may complete, as the worker's first step after it); a worker that drains holds no
 * fetched message it has not handled, unless the drain timed out; a drained worker takes no step.
 * A crash forgets every stop (the restarted process's workers are new).
 *****************************************************************************************************/

spec StoppedWorkerStartsNoFetch observes eObsWorkerStop, eObsWorkerDrain, eObsConsumerFetch, eObsConsumerHandle,
                                         eObsConsumerFetchBatch, eObsConsumerHandleBatch, eObsCrash {
  // mark: 1 stopped, no step since; 2 stopped and stepped since; 3 drained.
  var mark: map[int, int];
  // holding: the message each worker fetched and has not handled.
  var holding: map[int, string];

  start state Watching {
    on eObsWorkerStop do (e: (at: int, worker: int)) {
      assert !(e.worker in mark) || mark[e.worker] != 3,
        format("worker {0} was stopped at t={1} after it drained", e.worker, e.at);
      if (!(e.worker in mark)) {
        mark[e.worker] = 1;
      }
    }
    on eObsConsumerFetch do (e: (at: int, worker: int, mailbox: string, profile: string, lease_for: int,
                                 msg_id: string, msg_attempts: int, msg_token: int, bug: bool)) {
      Stepped(e.worker, e.at, "fetch");
      if (e.msg_id != "") {
        holding[e.worker] = e.msg_id;
      }
    }
    on eObsConsumerHandle do (e: (at: int, worker: int, mailbox: string, profile: string, outcome: string,
                                  retry_delay: int, fault: string, reason: string, action: string, attempt: int, bug: bool)) {
      Stepped(e.worker, e.at, "handle");
      if (e.worker in holding) {
        holding -= (e.worker);
      }
    }
    // A batch fetch and its handle are a fetch and a handle; the batch is held by its first message.
    on eObsConsumerFetchBatch do (e: (at: int, worker: int, mailbox: string, profile: string, size: int,
                                      lease_for: int, messages: seq[tFetched], bug: bool)) {
      Stepped(e.worker, e.at, "fetch");
      if (sizeof(e.messages) > 0) {
        holding[e.worker] = e.messages[0].id;
      }
    }
    on eObsConsumerHandleBatch do (e: (at: int, worker: int, mailbox: string, profile: string, outcomes: seq[string],
                                       retry_delay: int, fault: string, actions: seq[string], bug: bool)) {
      Stepped(e.worker, e.at, "handle");
      if (e.worker in holding) {
        holding -= (e.worker);
      }
    }
    on eObsWorkerDrain do (e: (at: int, worker: int, outcome: string)) {
      var held: string;
      if (e.worker in holding) {
        held = holding[e.worker];
      }
      assert e.worker in mark && mark[e.worker] != 3,
        format("worker {0} drained at t={1} without a stop before it, or twice", e.worker, e.at);
      assert !(e.worker in holding) || e.outcome == "timed_out",
        format("worker {0} drained at t={1} holding message {2}, fetched and never handled", e.worker, e.at,
               held);
      if (e.worker in holding) {
        holding -= (e.worker);
      }
      mark[e.worker] = 3;
    }
    on eObsCrash do (e: (at: int)) {
      mark = default(map[int, int]);
      holding = default(map[int, string]);
    }
  }

  fun Stepped(w: int, at: int, what: string) {
    if (!(w in mark)) {
      return;
    }
    assert mark[w] != 3, format("worker {0} took a {1} step at t={2} after it drained", w, what, at);
    assert !(what == "fetch" && mark[w] == 2),
      format("worker {0} started a new fetch at t={1} after its stop", w, at);
    mark[w] = 2;
  }
}
