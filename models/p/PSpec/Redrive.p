/*****************************************************************************************************
 * Redrive monitors (docs/semantics.md, "Redrive").
 *****************************************************************************************************/

// A redriven dead letter can be delivered again: the row the redrive leaves is a ready message
// with attempts 0 (so below its max_attempts: fetchable), or a pending outbox row with no delivery
// attempts. The store announces the redrive, then the row's new state; the monitor checks the row,
// not the announcement, and is hot until the row has been seen (a redrive that leaves no row
// behind is a liveness bug at the end of the schedule).
spec RedrivenDeadLettersDeliverable observes eSpecRedriven, eSpecRow, eSpecOutboxRow {
  var messages: set[string];
  var rows: set[string];

  start cold state Settled {
    ignore eSpecRow, eSpecOutboxRow;
    on eSpecRedriven do (e: (at: int, id: string, kind: string)) {
      Expect(e.id, e.kind);
    }
  }

  hot state Awaiting {
    on eSpecRedriven do (e: (at: int, id: string, kind: string)) {
      Expect(e.id, e.kind);
    }
    on eSpecRow do (e: (at: int, row: tMsg)) {
      if (e.row.id in messages) {
        assert e.row.row_state == "ready" && e.row.attempts == 0 && e.row.attempts < e.row.max_attempts &&
               e.row.token == 0 && e.row.available_at <= e.at,
          format("message {0} was redriven at t={1} but is {2} with attempts {3}/{4}, available at {5}",
                 e.row.id, e.at, e.row.row_state, e.row.attempts, e.row.max_attempts, e.row.available_at);
        messages -= (e.row.id);
        Settle();
      }
    }
    on eSpecOutboxRow do (e: (at: int, row: tOutRow)) {
      if (e.row.id in rows) {
        assert e.row.row_state == "pending" && e.row.delivery_attempts == 0 && e.row.dead_reason == "" &&
               e.row.token == 0 && e.row.available_at <= e.at,
          format("outbox row {0} was redriven at t={1} but is {2} with {3} delivery attempts, available at {4}",
                 e.row.id, e.at, e.row.row_state, e.row.delivery_attempts, e.row.available_at);
        rows -= (e.row.id);
        Settle();
      }
    }
  }

  fun Expect(id: string, kind: string) {
    if (kind == "message") {
      messages += (id);
    } else {
      rows += (id);
    }
    goto Awaiting;
  }

  fun Settle() {
    if (sizeof(messages) == 0 && sizeof(rows) == 0) {
      goto Settled;
    }
  }
}
