// A toy store with one mailbox message (m1) and one outbox row (o1). A consumer and a publisher
// send it requests; the store serializes them and announces one observation per request, so the
// checker's interleavings give distinct observation sequences. After the last request the store
// advances the clock, peeks an empty mailbox and announces its final state.

event eFetch: machine;
event eHandle: machine;
event eClaim: machine;
event eDeliver: machine;

machine Store {
  var now: int;
  var nextToken: int;
  var leaseless: bool;
  var pending: int;
  var m1State: string;
  var m1Attempts: int;
  var m1MaxAttempts: int;
  var m1Token: int;
  var m1LeaseUntil: int;
  var o1State: string;
  var o1Attempts: int;
  var o1Token: int;
  var o1ClaimUntil: int;
  var o1Delivered: bool;
  var effects: seq[string];

  start state Serving {
    entry (isLeaseless: bool) {
      leaseless = isLeaseless;
      m1State = "ready";
      o1State = "pending";
      m1MaxAttempts = 3;
      pending = 4;
      if (leaseless) {
        m1MaxAttempts = 1;
        pending = 2;
      }
      announce eObsEnqueue, (at = now, mailbox = "inbox", id = "m1", key = "k", priority = 2,
        max_attempts = m1MaxAttempts, delay = 0, payload = "hello", duplicate = false,
        bug = false);
      if (!leaseless) {
        announce eObsOutboxEnqueue, (at = now, id = "o1", target = "inbox", key = "", priority = 0,
          max_attempts = 2, payload = "", max_delivery_attempts = 0, duplicate = false, err = "");
      }
    }

    on eFetch do (client: machine) {
      if (leaseless) {
        announce eObsConsumerFetch, (at = now, worker = 1, mailbox = "inbox", profile = "leaseless",
          lease_for = 0, msg_id = "m1", msg_attempts = m1Attempts, msg_token = 0, bug = false);
      } else {
        nextToken = nextToken + 1;
        m1Token = nextToken;
        m1Attempts = m1Attempts + 1;
        m1LeaseUntil = now + 10;
        announce eObsConsumerFetch, (at = now, worker = 1, mailbox = "inbox", profile = "leased",
          lease_for = 10, msg_id = "m1", msg_attempts = m1Attempts, msg_token = m1Token, bug = false);
      }
      Served();
    }

    on eHandle do (client: machine) {
      if (leaseless) {
        // The raw-attempts profile hands the stored count (0) to the retry decision instead of 1,
        // so it retries where the correct code would dead-letter.
        m1Attempts = m1Attempts + 1;
        announce eObsConsumerHandle, (at = now, worker = 1, mailbox = "inbox", profile = "leaseless",
          outcome = "fail", retry_delay = 5, fault = "", reason = "", action = "retried", attempt = 0, bug = true);
      } else {
        m1State = "acked";
        m1Token = 0;
        m1LeaseUntil = 0;
        effects += (sizeof(effects), "m1");
        announce eObsConsumerHandle, (at = now, worker = 1, mailbox = "inbox", profile = "leased",
          outcome = "ok", retry_delay = 0, fault = "", reason = "", action = "acked", attempt = 0, bug = false);
      }
      Served();
    }

    on eClaim do (client: machine) {
      var rows: seq[tClaimedRow];
      nextToken = nextToken + 1;
      o1Token = nextToken;
      o1Attempts = o1Attempts + 1;
      o1ClaimUntil = now + 30;
      rows += (0, (id = "o1", delivery_attempts = o1Attempts, token = o1Token));
      announce eObsOutboxClaim, (at = now, limit = 4, claim_for = 30, claimed = rows, bug = false);
      Served();
    }

    on eDeliver do (client: machine) {
      announce eObsPublisherDeliver, (at = now, publisher = 1, id = "o1", token = o1Token, profile = "fold",
        fault = "none", retry_delay = 0, action = "delivered", duplicate = false, bug = false);
      o1State = "completed";
      o1Token = 0;
      o1ClaimUntil = 0;
      o1Delivered = true;
      Served();
    }
  }

  fun Served() {
    var messages: seq[tMsgRow];
    var outbox: seq[tOutboxRow];
    var dead: seq[tDeadRow];
    var eff: map[string, seq[string]];
    pending = pending - 1;
    if (pending > 0) {
      return;
    }
    now = now + 3;
    announce eObsAdvanceClock, (at = now,);
    announce eObsPeek, (at = now, mailbox = "empty", msg_id = "", msg_attempts = 0, msg_token = 0);
    messages += (0, (mailbox = "inbox", id = "m1", key = "k", priority = 2, payload = "hello", row_state = m1State,
      attempts = m1Attempts, max_attempts = m1MaxAttempts, available_at = 0, token = m1Token,
      lease_until = m1LeaseUntil));
    if (o1Delivered) {
      messages += (1, (mailbox = "inbox", id = "o1", key = "", priority = 0, payload = "", row_state = "ready",
        attempts = 0, max_attempts = 2, available_at = 0, token = 0, lease_until = 0));
    }
    if (!leaseless) {
      outbox += (0, (id = "o1", target = "inbox", key = "", priority = 0, max_attempts = 2, payload = "",
        row_state = o1State, delivery_attempts = o1Attempts, available_at = 0, token = o1Token,
        claim_until = o1ClaimUntil, reason = ""));
    }
    eff["inbox"] = effects;
    announce eObsFinal, (messages = messages, outbox = outbox, dead_letters = dead, effects = eff);
  }
}

machine Consumer {
  start state Run {
    entry (store: machine) {
      send store, eFetch, this;
      send store, eHandle, this;
    }
  }
}

machine Publisher {
  start state Run {
    entry (store: machine) {
      send store, eClaim, this;
      send store, eDeliver, this;
    }
  }
}
