/*****************************************************************************************************
 * Retention monitors (docs/semantics.md, "Retention").
 *****************************************************************************************************/

// A message id that purge removed is never inserted again as a fresh message before its dedup
// horizon has passed: an enqueue of it inside the horizon is a duplicate.
spec PurgedIdsStayDuplicates observes eSpecPurged, eSpecMsgInserted {
  var horizonEnd: map[string, int];

  start state Watching {
    on eSpecPurged do (e: (at: int, id: string, horizon_end: int)) {
      horizonEnd[e.id] = e.horizon_end;
    }
    on eSpecMsgInserted do (e: (at: int, mailbox: string, id: string)) {
      if (e.id in horizonEnd) {
        assert e.at >= horizonEnd[e.id],
          format("message {0} was purged and inserted again at t={1}, inside its dedup horizon (until t={2})",
                 e.id, e.at, horizonEnd[e.id]);
      }
    }
  }
}
