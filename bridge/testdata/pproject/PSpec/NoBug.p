// Fails the schedule at the first observation flagged as a deliberate bug, the way the real
// models' counterexample tests end.
spec NoBugObserved observes eObsConsumerHandle {
  start state Watch {
    on eObsConsumerHandle do (obs: (at: int, worker: int, mailbox: string, profile: string, outcome: string,
        retry_delay: int, fault: string, reason: string, action: string, attempt: int, bug: bool)) {
      assert !obs.bug, format("bug observed: {0} attempt {1}", obs.action, obs.attempt);
    }
  }
}
