/*****************************************************************************************************
 * Processed-message dedup and checkpoint specifications. Both watch the store's observations
 * (eObs*), so they hold the store to what every caller saw: the marks and checkpoint versions
 * they track are exactly those the observed operations wrote.
 *****************************************************************************************************/

// A processed-message mark honours its ttl: a mark_processed of a (consumer, id) whose mark is still
// live (at < the time it expires) reports a duplicate, so a redelivered message is not applied twice
// while its mark lives; one whose mark expired (or that has none) is applied and writes a mark that
// expires ttl seconds later.
spec DedupMarkHonoursTtl observes eObsMarkProcessed {
  var expires: map[string, int];

  start state Watching {
    on eObsMarkProcessed do (o: (at: int, consumer: string, id: string, ttl: int, duplicate: bool, bug: bool)) {
      var key: string;
      var live: bool;
      key = format("{0}|{1}", o.consumer, o.id);
      live = key in expires && expires[key] > o.at;
      if (live) {
        assert o.duplicate,
          format("message {0} was applied twice by consumer {1}: mark_processed at t={2} found no live mark, but the mark written before expires at t={3}",
                 o.id, o.consumer, o.at, expires[key]);
      } else {
        assert !o.duplicate,
          format("mark_processed of {0} by consumer {1} at t={2} reported a duplicate, but its mark is absent or expired, so the redelivery was never applied",
                 o.id, o.consumer, o.at);
        expires[key] = o.at + o.ttl;
      }
    }
  }
}

// A checkpoint's version only grows, one per successful save, and a save whose expected version is
// not the stored one changes nothing (version_conflict); a load returns the version the last
// successful save wrote. A mailbox's effect log (the checkpoint "effects/<mailbox>") is saved in the
// acknowledgement's transaction, so its version counts exactly the handles that acknowledged: it
// never reflects a message whose acknowledgement did not commit.
spec CheckpointVersionsOnlyGrow observes eObsSaveCheckpoint, eObsLoadCheckpoint, eObsConsumerHandle {
  var version: map[string, int];

  start state Watching {
    on eObsSaveCheckpoint do (o: (at: int, actor: string, expect_version: int, payload: string, version: int,
                                  err: string, bug: bool)) {
      var stored: int;
      stored = Stored(o.actor);
      if (o.expect_version == stored) {
        assert o.err == "" && o.version == stored + 1,
          format("save_checkpoint of {0} at t={1} expected the stored version {2} but got version {3}, err \"{4}\"",
                 o.actor, o.at, stored, o.version, o.err);
        version[o.actor] = o.version;
      } else {
        assert o.err == "version_conflict",
          format("save_checkpoint of {0} at t={1} with the stale expected version {2} (stored: {3}) was accepted and set version {4}",
                 o.actor, o.at, o.expect_version, stored, o.version);
      }
    }
    on eObsLoadCheckpoint do (o: (at: int, actor: string, version: int, err: string)) {
      var stored: int;
      stored = Stored(o.actor);
      if (stored == 0) {
        assert o.err == "not_found",
          format("load_checkpoint of {0} at t={1} returned version {2}, but no save of it (and no acknowledged effect) committed",
                 o.actor, o.at, o.version);
      } else {
        assert o.err == "" && o.version == stored,
          format("load_checkpoint of {0} at t={1} returned version {2} (err \"{3}\"); the committed saves and acknowledgements made it {4}",
                 o.actor, o.at, o.version, o.err, stored);
      }
    }
    on eObsConsumerHandle do (o: (at: int, worker: int, mailbox: string, profile: string, outcome: string,
                                  retry_delay: int, fault: string, reason: string, action: string, attempt: int, bug: bool)) {
      var log: string;
      if (o.action == "acked") {
        log = format("effects/{0}", o.mailbox);
        version[log] = Stored(log) + 1;
      }
    }
  }

  fun Stored(actor: string): int {
    if (actor in version) {
      return version[actor];
    }
    return 0;
  }
}
