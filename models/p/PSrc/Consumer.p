/*****************************************************************************************************
 * ConsumerWorker: one worker of a consumer serving one mailbox. Each iteration is two protocol steps,
 * fetch then handle, sent to the Store as separate requests so that other workers, the clock and
 * crashes interleave between them. The handler's outcome is the checker's choice when the
 * configuration lets the handler fail, and so is, up to cfg.max_faults times, a handle whose commit
 * fails (fault commit_fails: nothing changes, the worker no longer holds its fetch).
 *
 * When a fetch finds nothing, the worker stops if the Store answers that the mailbox is quiet (see
 * Store.QuietFor), and otherwise asks the Store to advance the clock to the next event time and
 * fetches again. The last worker of a mailbox to stop therefore sees a state in which no further
 * delivery can happen: every message is acked or dead-lettered, or it is stranded (which
 * EveryMessageEventuallyResolved then reports).
 *****************************************************************************************************/

machine ConsumerWorker {
  var store: machine;
  var driver: machine;
  var cfg: tConsumerCfg;
  var faults: int;

  start state Run {
    entry (init: (store: machine, driver: machine, cfg: tConsumerCfg)) {
      var res: tReply;
      var outcome: string;
      var retryDelay: int;
      var think: int;
      var raced: bool;
      var tookOver: bool;
      var stopped: bool;
      store = init.store;
      driver = init.driver;
      cfg = init.cfg;
      while (true) {
        // Nested, so that a worker that is never stopped makes no extra choice.
        if (cfg.stop != 0 && !stopped) {
          if ($) {
            // The stop lands while the worker is idle: a correct worker drains at once.
            stopped = true;
            Stop();
            if (cfg.stop == 1) {
              Drain("drained");
              break;
            }
          }
        }
        send store, eFetchReq, (client = this, worker = cfg.worker, mailbox = cfg.mailbox, profile = cfg.profile,
                                lease_for = cfg.lease_for);
        res = Await();
        if (res.msg_id != "" && cfg.takeover != 0 && !tookOver) {
          tookOver = true;
          StaleDecline(res.msg_id);
        } else if (res.msg_id != "") {
          if (cfg.nack_race && !raced) {
            // A raw client's nack_by_id of the fetched message lands before this handle.
            raced = true;
            new RawNacker((store = store, worker = this, id = res.msg_id));
            receive { case eRaced: { } }
          }
          think = choose(cfg.think + 1);
          while (think > 0) {
            send this, eYield;
            receive { case eYield: { } }
            think = think - 1;
          }
          if (cfg.stop != 0 && !stopped) {
            if ($) {
              // The stop lands while the handler runs; the drain may time out before its commit.
              stopped = true;
              Stop();
              if ($) {
                Drain("timed_out");
                break;
              }
            }
          }
          outcome = "ok";
          retryDelay = 0;
          if (cfg.may_fail && $) {
            outcome = "fail";
            retryDelay = cfg.retry_delay;
            if (cfg.may_decline && $) {
              outcome = "fail_no_retry";
              retryDelay = 0;
            }
          }
          if (cfg.profile == EffectOutsideFold && outcome == "ok") {
            // The handler's effect is written with a context that does not carry the fold's
            // transaction: it commits now, on its own, whatever the handle below does.
            send store, eEffectOutsideReq, (client = this, worker = cfg.worker, mailbox = cfg.mailbox);
            Await();
          }
          send store, eHandleReq, (client = this, worker = cfg.worker, mailbox = cfg.mailbox, profile = cfg.profile,
                                   outcome = outcome, retry_delay = retryDelay, fault = Fault());
          Await();
          if (stopped && cfg.stop == 1) {
            Drain("drained");
            break;
          }
        } else {
          if (stopped && cfg.stop == 1) {
            Drain("drained");
            break;
          }
          if (res.quiet) {
            break;
          }
          send store, eTickReq, (client = this,);
          Await();
        }
      }
      send driver, eDone, (who = this,);
    }
  }

  // The scripted first delivery of a takeover worker (tConsumerCfg.takeover): the handler stalls
  // until the lease has run out (the clock moves to the lease's end, LeaseEnds: one tick past
  // lease_for when the profile keeps a lease live at its end time) and a Taker has leased the message,
  // then fails with an error the retry policy declines. The early dead-letter must be refused
  // (lease_lost): the message belongs to the Taker now, which then handles it. With
  // takeover_redrive the delivery's attempts are used up: before the Taker leases, expire
  // dead-letters the message and redrive puts it back; the handler's failure (one the policy would
  // retry) then meets max_attempts, and that dead-letter must be refused as well.
  fun StaleDecline(id: string) {
    var takerCfg: tConsumerCfg;
    var taker: machine;
    var outcome: string;
    send store, eAdvanceReq, (client = this, by = LeaseEnds(cfg.lease_for));
    Await();
    outcome = "fail_no_retry";
    if (cfg.takeover_redrive) {
      send store, eExpireReq, (client = this,);
      Await();
      send store, eRedriveReq, (client = this, id = id, reason = "fixed");
      Await();
      outcome = "fail";
    }
    takerCfg = cfg;
    takerCfg.worker = cfg.takeover;
    takerCfg.takeover = 0;
    takerCfg.takeover_redrive = false;
    taker = new Taker((store = store, worker = this, cfg = takerCfg));
    receive { case eRaced: { } }
    send store, eHandleReq, (client = this, worker = cfg.worker, mailbox = cfg.mailbox, profile = cfg.profile,
                             outcome = outcome, retry_delay = 0, fault = "");
    Await();
    send taker, eRaced;
    receive { case eRaced: { } }
  }

  // The fault of the next handle's commit: "commit_fails" while faults are left and the checker
  // chooses (as BatchWorker.Fault). The worker then fetches again, as a service's loop does after
  // the error.
  fun Fault(): string {
    if (faults < cfg.max_faults && $) {
      faults = faults + 1;
      return "commit_fails";
    }
    return "";
  }

  fun Stop() {
    send store, eWorkerStopReq, (client = this, worker = cfg.worker);
    Await();
  }

  fun Drain(outcome: string) {
    send store, eWorkerDrainReq, (client = this, worker = cfg.worker, outcome = outcome);
    Await();
  }

  fun Await(): tReply {
    var out: tReply;
    receive {
      case eReply: (r: tReply) {
        out = r;
      }
    }
    return out;
  }
}
