package models

import (
	"github.com/pconform/pconform/traces"
)

// The second wake-up rule of docs/semantics.md ("Wake-ups"): a consumer woken for a committed
// message fetches it before its next poll tick. The first rule, a wake follows the commit that
// caused it, is committedIn (mailbox.go).

// wakeKey is a worker and one mailbox it serves.
type wakeKey struct {
	worker  int
	mailbox string
}

// woke notes that worker a.Worker was woken for a committed message of a.Mailbox: until it
// fetches from the mailbox, its next poll tick there breaks the rule.
func (s *State) woke(a traces.Args) {
	s.woken[wakeKey{a.Worker, a.Mailbox}] = struct{}{}
}

// fetched notes that worker w fetched from mailbox: a wake it had there is answered.
func (s *State) fetched(w int, mailbox string) {
	delete(s.woken, wakeKey{w, mailbox})
}

// pollTick judges a poll tick of worker a.Worker on a.Mailbox: false when the worker was woken
// there for a committed message and has not fetched from the mailbox since.
func (s *State) pollTick(a traces.Args) bool {
	_, owed := s.woken[wakeKey{a.Worker, a.Mailbox}]
	return !owed
}
