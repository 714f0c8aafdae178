/*****************************************************************************************************
 * Wake-up monitor (docs/semantics.md, "Wake-ups").
 *****************************************************************************************************/

// A wake follows the commit that caused it: a wake of a mailbox for message id comes only after a
// committed step inserted id into that mailbox (an enqueue, a delivery or a redrive), never before
// it, and never for an insert that rolled back. The model's store announces its wakes after each
// request; an observed history's wakes are the consumers' recorded ones (observe.PDriver).
spec WakeFollowsCommit observes eSpecMsgInserted, eSpecWake {
  var committed: map[string, string]; // message id -> the mailbox a committed step inserted it into

  start state Watching {
    on eSpecMsgInserted do (e: (at: int, mailbox: string, id: string)) {
      committed[e.id] = e.mailbox;
    }
    on eSpecWake do (e: (at: int, mailbox: string, id: string)) {
      assert e.id in committed && committed[e.id] == e.mailbox,
        format("a wake of mailbox {0} for message {1} at t={2} came before any committed step put {1} into {0}",
               e.mailbox, e.id, e.at);
    }
  }
}
