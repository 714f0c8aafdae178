/*****************************************************************************************************
 * BatchWorker: a consumer worker that takes its mailbox's messages in batches (docs/semantics.md,
 * "Batches"). Each iteration is a batch fetch of up to cfg.size messages and, when it fetched any,
 * one batch handle that commits every message's outcome; the broken BatchAckBeforeEffects profile
 * follows it with a second commit, of the effects. Each handler's outcome is the checker's choice
 * when the configuration lets handlers fail, and so is, up to cfg.max_faults times, a commit that
 * fails. Between the requests other workers, the clock and crashes interleave, as for
 * ConsumerWorker, and it stops, as ConsumerWorker does, when a fetch finds its mailbox quiet.
 *****************************************************************************************************/

machine BatchWorker {
  var store: machine;
  var driver: machine;
  var cfg: tBatchCfg;
  var faults: int;

  start state Run {
    entry (init: (store: machine, driver: machine, cfg: tBatchCfg)) {
      var count: int;
      var quiet: bool;
      var outcomes: seq[string];
      var outcome: string;
      var think: int;
      var k: int;
      store = init.store;
      driver = init.driver;
      cfg = init.cfg;
      while (true) {
        send store, eBatchFetchReq, (client = this, worker = cfg.worker, mailbox = cfg.mailbox, profile = cfg.profile,
                                     size = cfg.size, lease_for = cfg.lease_for);
        receive {
          case eBatchReply: (r: (count: int, quiet: bool)) {
            count = r.count;
            quiet = r.quiet;
          }
        }
        if (count == 0) {
          if (quiet) {
            break;
          }
          send store, eTickReq, (client = this,);
          Await();
          continue;
        }
        // The handlers run outside the store, one per message: each outcome is the checker's.
        outcomes = default(seq[string]);
        k = 0;
        while (k < count) {
          outcome = "ok";
          if (cfg.may_fail && $) {
            outcome = "fail";
            if (cfg.may_decline && $) {
              outcome = "fail_no_retry";
            }
          }
          outcomes += (k, outcome);
          k = k + 1;
        }
        think = choose(cfg.think + 1);
        while (think > 0) {
          send this, eYield;
          receive { case eYield: { } }
          think = think - 1;
        }
        send store, eBatchHandleReq, (client = this, worker = cfg.worker, mailbox = cfg.mailbox, profile = cfg.profile,
                                      outcomes = outcomes, retry_delay = cfg.retry_delay, fault = Fault());
        Await();
        if (cfg.profile == BatchAckBeforeEffects) {
          send store, eBatchEffectsReq, (client = this, worker = cfg.worker, mailbox = cfg.mailbox, fault = Fault());
          Await();
        }
      }
      send driver, eDone, (who = this,);
    }
  }

  // The fault of the next commit: "commit_fails" while faults are left and the checker chooses.
  fun Fault(): string {
    if (faults < cfg.max_faults && $) {
      faults = faults + 1;
      return "commit_fails";
    }
    return "";
  }

  fun Await() {
    receive { case eReply: (r: tReply) { } }
  }
}
