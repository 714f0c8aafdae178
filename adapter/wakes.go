package adapter

import "github.com/pconform/pconform/traces"

// Wakes is what a target keeps to answer poll_tick (docs/semantics.md, "Wake-ups": a consumer
// woken for a committed message fetches it before its next poll tick). A store cannot be asked
// whether a worker was woken, so the record is the trace's own: the wakes the target answered
// with no err, and the fetches since. The zero value is empty and ready to use.
type Wakes struct {
	// owed holds each worker and mailbox whose last answered wake came after the worker's last
	// fetch from the mailbox.
	owed map[wakeKey]struct{}
}

type wakeKey struct {
	worker  int
	mailbox string
}

// Woke notes a wake of worker for a message of mailbox that the target answered with no err.
func (w *Wakes) Woke(worker int, mailbox string) {
	if w.owed == nil {
		w.owed = map[wakeKey]struct{}{}
	}
	w.owed[wakeKey{worker, mailbox}] = struct{}{}
}

// Fetched notes a consumer_fetch of worker from mailbox, whatever it returned.
func (w *Wakes) Fetched(worker int, mailbox string) { delete(w.owed, wakeKey{worker, mailbox}) }

// Crash forgets every wake: the restarted process's workers are new.
func (w *Wakes) Crash() { clear(w.owed) }

// PollTick answers a poll_tick of worker on mailbox: the Observation's Err, ErrKindWakeNotFetched
// when the worker was woken there and has not fetched from the mailbox since.
func (w *Wakes) PollTick(worker int, mailbox string) string {
	if _, owed := w.owed[wakeKey{worker, mailbox}]; owed {
		return traces.ErrKindWakeNotFetched
	}
	return ""
}
