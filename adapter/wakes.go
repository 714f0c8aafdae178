package adapter

import (
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// Wakes is what a target keeps to answer poll_tick (docs/semantics.md, "Wake-ups": a consumer
// woken for a committed message fetches it before its next poll tick). A store cannot be asked
// whether a worker was woken, so the record is the trace's own: the wakes the target answered
// with no err, and the fetches since. It is the reference model's record (models.Wakes), so the
// rule is the model's. The zero value is empty and ready to use.
type Wakes struct {
	models.Wakes
}

// PollTick answers a poll_tick of worker on mailbox: the Observation's Err, ErrKindWakeNotFetched
// when the worker was woken there and has not fetched from the mailbox since.
func (w *Wakes) PollTick(worker int, mailbox string) string {
	if w.Owed(worker, mailbox) {
		return traces.ErrKindWakeNotFetched
	}
	return ""
}
