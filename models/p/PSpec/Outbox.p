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
