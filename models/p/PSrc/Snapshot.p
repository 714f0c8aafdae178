/*****************************************************************************************************
 * The canonical final snapshot (traces.Snapshot): rows without their internal seq, sorted.
 *****************************************************************************************************/

fun MsgSnapBefore(a: tMsgSnap, b: tMsgSnap): bool {
  if (a.mailbox != b.mailbox) {
    return a.mailbox < b.mailbox;
  }
  return a.id < b.id;
}

fun SnapshotMessages(msgs: seq[tMsg]): seq[tMsgSnap] {
  var out: seq[tMsgSnap];
  var m: tMsg;
  var s: tMsgSnap;
  var i: int;
  foreach (m in msgs) {
    s = (mailbox = m.mailbox, id = m.id, key = m.key, priority = m.priority, payload = m.payload, row_state = m.row_state,
         attempts = m.attempts, max_attempts = m.max_attempts, available_at = m.available_at, token = m.token,
         lease_until = m.lease_until);
    i = 0;
    while (i < sizeof(out) && MsgSnapBefore(out[i], s)) {
      i = i + 1;
    }
    out += (i, s);
  }
  return out;
}

fun SnapshotOutbox(outbox: seq[tOutRow]): seq[tOutSnap] {
  var out: seq[tOutSnap];
  var r: tOutRow;
  var s: tOutSnap;
  var i: int;
  foreach (r in outbox) {
    s = (id = r.id, target = r.target, key = r.key, priority = r.priority, max_attempts = r.max_attempts,
         payload = r.payload, row_state = r.row_state, delivery_attempts = r.delivery_attempts,
         available_at = r.available_at, token = r.token, claim_until = r.claim_until, reason = r.dead_reason);
    i = 0;
    while (i < sizeof(out) && out[i].id < s.id) {
      i = i + 1;
    }
    out += (i, s);
  }
  return out;
}

// A dead letter's whole row: the message's own fields as it was when it was moved (rows, by id)
// and the time of the move (deadAt, by id).
fun SnapshotDead(dead: seq[tDead], rows: map[string, tMsg], deadAt: map[string, int]): seq[tDeadSnap] {
  var out: seq[tDeadSnap];
  var d: tDead;
  var m: tMsg;
  var i: int;
  foreach (d in dead) {
    m = rows[d.id];
    i = 0;
    while (i < sizeof(out) && out[i].id < d.id) {
      i = i + 1;
    }
    out += (i, (mailbox = d.mailbox, id = d.id, key = m.key, priority = m.priority, payload = m.payload,
                attempts = d.attempts, max_attempts = m.max_attempts, reason = d.reason, dead_at = deadAt[d.id]));
  }
  return out;
}
