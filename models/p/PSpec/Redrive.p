/*****************************************************************************************************
 * Redrive monitors (docs/semantics.md, "Redrive").
 *****************************************************************************************************/

// A redriven dead letter can be delivered again: the row the redrive leaves is a ready message
// with attempts 0 (so below its max_attempts: fetchable), or a pending outbox row with no delivery
// attempts. The store announces the redrive, then the row's new state; the monitor checks the row,
// not the announcement, and is hot until it has seen the row in that state. A redrive that leaves
// no such row behind (none at all, or one that is exhausted, leased, delayed or final) is a
// liveness bug at the end of the schedule. It is not an assertion at the redrive, so that the
// schedule, and with it the trace the bridge makes of the bug, goes on past the redrive to the
// fetch where a caller sees the difference (a redrive's own result does not show it).
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
      if (e.row.id in messages && e.row.row_state == "ready" && e.row.attempts == 0 &&
          e.row.attempts < e.row.max_attempts && e.row.token == 0 && e.row.available_at <= e.at) {
        messages -= (e.row.id);
        Settle();
      }
    }
    on eSpecOutboxRow do (e: (at: int, row: tOutRow)) {
      if (e.row.id in rows && e.row.row_state == "pending" && e.row.delivery_attempts == 0 &&
          e.row.dead_reason == "" && e.row.token == 0 && e.row.available_at <= e.at) {
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
