/*****************************************************************************************************
 * Publisher: claims batches of outbox rows and delivers each claimed row as one protocol step (the
 * AtomicFoldBatch profile: the whole batch as one step, with one fault for it). The
 * checker chooses whether a delivery carries a fault (from the configured set, at most max_faults
 * times). After a delivery that crashed, or once any crash has restarted the process since the
 * claim (the Store answers "restarted"), the publisher has forgotten the rest of its batch and starts
 * again with a claim; the rows stay claimed until their claims run out. Two publishers with the same configuration compete: when one is
 * slow, the other advances the clock past its claim, reclaims the row, and the slow one's delivery
 * becomes stale.
 *
 * A publisher stops when a claim returns nothing and no outbox row is pending; while rows are pending
 * but not claimable (claimed by the other publisher, or delayed) it advances the clock and retries.
 *****************************************************************************************************/

machine Publisher {
  var store: machine;
  var driver: machine;
  var cfg: tPublisherCfg;

  start state Run {
    entry (init: (store: machine, driver: machine, cfg: tPublisherCfg)) {
      var batch: (claimed: seq[tClaimed], quiet: bool, epoch: int);
      var d: tReply;
      var c: tClaimed;
      var fault: string;
      var faultsLeft: int;
      store = init.store;
      driver = init.driver;
      cfg = init.cfg;
      faultsLeft = cfg.max_faults;
      while (true) {
        send store, eOutboxClaimReq, (client = this, limit = cfg.limit, claim_for = cfg.claim_for);
        receive {
          case eClaimReply: (r: (claimed: seq[tClaimed], quiet: bool, epoch: int)) {
            batch = r;
          }
        }
        if (sizeof(batch.claimed) == 0) {
          if (batch.quiet) {
            break;
          }
          send store, eTickReq, (client = this,);
          Await();
          continue;
        }
        if (cfg.profile == AtomicFoldBatch) {
          fault = "none";
          if (faultsLeft > 0 && sizeof(cfg.faults) > 0 && $) {
            fault = choose(cfg.faults);
            faultsLeft = faultsLeft - 1;
          }
          send store, eDeliverBatchReq, (client = this, publisher = cfg.publisher, rows = batch.claimed, fault = fault,
                                         retry_delay = cfg.retry_delay, epoch = batch.epoch);
          Await();
          continue;
        }
        foreach (c in batch.claimed) {
          fault = "none";
          if (faultsLeft > 0 && sizeof(cfg.faults) > 0 && $) {
            fault = choose(cfg.faults);
            faultsLeft = faultsLeft - 1;
          }
          send store, eDeliverReq, (client = this, publisher = cfg.publisher, id = c.id, token = c.token,
                                    profile = cfg.profile, fault = fault, retry_delay = cfg.retry_delay,
                                    epoch = batch.epoch);
          d = Await();
          if (d.action == "crashed" || d.action == "restarted") {
            break;
          }
        }
      }
      send driver, eDone, (who = this,);
    }
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
