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
    on eSpecRedriven do (e: tSpecRedriven) {
      Expect(e.id, e.kind);
    }
  }

  hot state Awaiting {
    on eSpecRedriven do (e: tSpecRedriven) {
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

// The redrive history is kept: every move a redrive makes leaves exactly one record, with what
// the dead letter had just before the move (kind, mailbox, attempts, dead-letter reason), the
// redrive's reason and its time; and no record is ever changed or removed (purge included). The
// monitor keeps its own history from the redrives the store really made (eSpecRedriven, taken
// from the state before the move) and asserts, at every list_redrives, that the store listed
// exactly that history (of the id asked for, or all of it), in order.
spec RedriveHistoryKept observes eSpecRedriven, eSpecRedrivesListed {
  var history: seq[tRedriveRec];

  start state Watching {
    on eSpecRedriven do (e: tSpecRedriven) {
      history += (sizeof(history), (id = e.id, kind = e.kind, mailbox = e.mailbox, attempts = e.attempts,
                                    dead_reason = e.dead_reason, reason = e.reason, at = e.at));
    }
    on eSpecRedrivesListed do (e: (at: int, id: string, redrives: seq[tRedriveRec])) {
      var want: seq[tRedriveRec];
      var r: tRedriveRec;
      var i: int;
      foreach (r in history) {
        if (e.id == "" || r.id == e.id) {
          want += (sizeof(want), r);
        }
      }
      assert sizeof(e.redrives) == sizeof(want),
        format("list_redrives({0}) at {1} listed {2} records, but {3} redrives of it were made: {4}",
               e.id, e.at, sizeof(e.redrives), sizeof(want), want);
      i = 0;
      while (i < sizeof(want)) {
        assert e.redrives[i] == want[i],
          format("list_redrives({0}) at {1}: record {2} is {3}, but the redrive made {4}", e.id, e.at, i,
                 e.redrives[i], want[i]);
        i = i + 1;
      }
    }
  }
}
