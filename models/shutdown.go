package models

import (
	"github.com/pconform/pconform/traces"
)

// The shutdown rule of docs/semantics.md ("Shutdown"): a worker_stop ends a worker's fetching, and
// its worker_drain ends the worker.

// stopMark is where a worker stands in its shutdown. A worker without a mark runs.
type stopMark int8

const (
	// stopped: the worker's group was stopped and the worker has taken no step since. A fetch
	// already under way at the stop may still come, as the worker's first step after it.
	stopped stopMark = iota + 1
	// stoppedStepped: the worker has taken a step since its stop; it may not start a fetch.
	stoppedStepped
	// drained: the worker returned; it takes no step again.
	drained
)

// workerStop marks worker a.Worker stopped. A second stop of a stopped worker changes nothing; a
// stop after its drain is malformed.
func (s *State) workerStop(a *traces.Args) error {
	switch s.stops[a.Worker] {
	case drained:
		return malformed(traces.OpWorkerStop, "worker %d was stopped after its worker_drain: a drained worker takes no step again", a.Worker)
	case 0:
		s.stops[a.Worker] = stopped
	}
	return nil
}

// workerDrain ends worker a.Worker. Outcome drained: the worker must hold no fetched message (a
// stop drains what was fetched). Outcome timed_out: the drain timeout cut off the delivery it
// holds, if any, which is forgotten as a crash forgets it: its message stays as stored (leased: under
// its lease; leaseless: unchanged).
func (s *State) workerDrain(a *traces.Args) error {
	switch s.stops[a.Worker] {
	case 0:
		return malformed(traces.OpWorkerDrain, "worker %d drained without a worker_stop before it: a worker ends only after its group's stop", a.Worker)
	case drained:
		return malformed(traces.OpWorkerDrain, "worker %d drained twice", a.Worker)
	}
	if d, held := s.inflight[a.Worker]; held {
		if a.Outcome != traces.OutcomeTimedOut {
			return malformed(traces.OpWorkerDrain,
				"worker %d drained holding its fetch of %q from mailbox %q, never handled: a stop must handle and commit every fetched message (or the drain timed out, outcome timed_out)",
				a.Worker, d.id, d.mailbox)
		}
		delete(s.inflight, a.Worker)
	}
	if b, held := s.batches[a.Worker]; held {
		if a.Outcome != traces.OutcomeTimedOut {
			return malformed(traces.OpWorkerDrain,
				"worker %d drained holding its batch of %d messages from mailbox %q, never handled: a stop must handle and commit every fetched message (or the drain timed out, outcome timed_out)",
				a.Worker, len(b), b[0].mailbox)
		}
		delete(s.batches, a.Worker)
	}
	s.stops[a.Worker] = drained
	return nil
}

// stepAfterStop checks the fetch or handle op of worker w against its shutdown: after its drain the
// worker takes no step, and after its stop it starts no fetch but the one under way at the stop,
// which comes as its first step after it.
func (s *State) stepAfterStop(op traces.Op, w int) error {
	switch s.stops[w] {
	case drained:
		return malformed(op, "worker %d took a step after its worker_drain: a drained worker takes no step again", w)
	case stoppedStepped:
		if op == traces.OpConsumerFetch || op == traces.OpConsumerFetchBatch {
			return malformed(op, "worker %d started a new fetch after its worker_stop: a stopped worker starts no fetch (only one under way at the stop may complete, as its first step after it)", w)
		}
	case stopped:
		s.stops[w] = stoppedStepped
	}
	return nil
}
