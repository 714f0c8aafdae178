/*****************************************************************************************************
 * Outbox specifications. Both watch the store's real state changes (eSpec*), not what a publisher
 * claims to have done, so a publisher that reports "delivered" for a lost enqueue is still caught.
 *****************************************************************************************************/

// A completed outbox row was durably enqueued at its target: by the time a row turns completed, a
// message with the row's id has been inserted into the row's target mailbox.
spec OutboxCompletionImpliesDelivery observes eSpecMsgInserted, eSpecOutboxCompleted {
  var inserted: set[string];

  start state Watching {
    on eSpecMsgInserted do (e: (at: int, mailbox: string, id: string)) {
      inserted += (format("{0}/{1}", e.mailbox, e.id));
    }
    on eSpecOutboxCompleted do (e: (at: int, id: string, target: string)) {
      assert format("{0}/{1}", e.target, e.id) in inserted,
        format("outbox row {0} completed at t={1} but no message {0} was ever enqueued in mailbox {2}",
               e.id, e.at, e.target);
    }
  }
}

// A target mailbox never holds two deliveries of one outbox row: the message with the row's id is
// inserted into the row's target at most once, however often the row is claimed and delivered.
spec OutboxTargetDeliveredAtMostOnce observes eSpecOutboxEnqueued, eSpecMsgInserted {
  var targetOf: map[string, string];
  var inserts: map[string, int];

  start state Watching {
    on eSpecOutboxEnqueued do (e: (at: int, id: string, target: string)) {
      targetOf[e.id] = e.target;
      Check(e.id);
    }
    on eSpecMsgInserted do (e: (at: int, mailbox: string, id: string)) {
      var k: string;
      k = format("{0}/{1}", e.mailbox, e.id);
      if (!(k in inserts)) {
        inserts[k] = 0;
      }
      inserts[k] = inserts[k] + 1;
      Check(e.id);
    }
  }

  fun Check(id: string) {
    var k: string;
    if (!(id in targetOf)) {
      return;
    }
    k = format("{0}/{1}", targetOf[id], id);
    if (k in inserts) {
      assert inserts[k] <= 1,
        format("outbox row {0} was delivered {1} times into mailbox {2}", id, inserts[k], targetOf[id]);
    }
  }
}

// Outbox dead letters (docs/semantics.md, "Outbox"): no outbox row is ever claimed more often
// than its max_delivery_attempts allows, and a completed row never turns dead-lettered (nor the
// other way round: both states are final).
spec OutboxDeliveryBounded observes eSpecOutboxRow {
  var ended: map[string, string];

  start state Watching {
    on eSpecOutboxRow do (e: (at: int, row: tOutRow)) {
      assert e.row.delivery_attempts <= e.row.max_delivery_attempts,
        format("outbox row {0} was claimed {1} times at t={2}, above its max_delivery_attempts {3}",
               e.row.id, e.row.delivery_attempts, e.at, e.row.max_delivery_attempts);
      if (e.row.id in ended) {
        assert e.row.row_state == ended[e.row.id],
          format("outbox row {0} turned {1} at t={2} after it was {3}", e.row.id, e.row.row_state, e.at,
                 ended[e.row.id]);
      }
      if (e.row.row_state != "pending") {
        ended[e.row.id] = e.row.row_state;
      }
    }
  }
}

// Liveness: every outbox row ends completed or dead-lettered. The monitor is hot while some row is
// still pending; a scenario whose publishers have all stopped in that state leaves a row that
// nobody will ever deliver or give up on.
spec EveryOutboxRowEventuallyFinal observes eSpecOutboxRow {
  var open: set[string];

  start cold state AllFinal {
    on eSpecOutboxRow do (e: (at: int, row: tOutRow)) {
      Track(e.row);
    }
  }

  hot state SomePending {
    on eSpecOutboxRow do (e: (at: int, row: tOutRow)) {
      Track(e.row);
    }
  }

  fun Track(row: tOutRow) {
    if (row.row_state == "pending") {
      open += (row.id);
      goto SomePending;
    }
    if (row.id in open) {
      open -= (row.id);
    }
    if (sizeof(open) == 0) {
      goto AllFinal;
    }
  }
}
