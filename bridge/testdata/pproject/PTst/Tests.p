// tcBridgeGreen: a consumer and a publisher race on the toy store; every interleaving is green.
// tcLeaselessRawAttemptsCounterexample: the raw-attempts handle is flagged as a bug and the
// NoBugObserved monitor fails the schedule there, as the real models' counterexamples do.

machine GreenDriver {
  start state Init {
    entry {
      var store: machine;
      store = new Store(false);
      new Consumer(store);
      new Publisher(store);
    }
  }
}

machine BadDriver {
  start state Init {
    entry {
      var store: machine;
      store = new Store(true);
      new Consumer(store);
    }
  }
}

test tcBridgeGreen [main=GreenDriver]:
  assert NoBugObserved in { GreenDriver, Store, Consumer, Publisher };
test tcLeaselessRawAttemptsCounterexample [main=BadDriver]:
  assert NoBugObserved in { BadDriver, Store, Consumer };
