package models

import (
	"cmp"
	"iter"
	"maps"
	"slices"
)

// The second wake-up rule of docs/semantics.md ("Wake-ups"): a consumer woken for a committed
// message fetches it before its next poll tick. The first rule, a wake follows the commit that
// caused it, is committedIn (mailbox.go).

// Wakes is the record the second wake-up rule needs: each worker and mailbox where the worker was
// woken for a committed message and has not fetched from the mailbox since. The reference model
// keeps one in its State; a conformance target that answers poll_tick keeps one of its own
// (adapter.Wakes), since a store cannot be asked whether a worker was woken. The zero value is
// empty and ready to use.
type Wakes struct {
	owed map[wakeKey]struct{}
}

// wakeKey is a worker and one mailbox it serves.
type wakeKey struct {
	worker  int
	mailbox string
}

// Woke notes that worker was woken for a committed message of mailbox: until it fetches from the
// mailbox, its next poll tick there breaks the rule.
func (w *Wakes) Woke(worker int, mailbox string) {
	if w.owed == nil {
		w.owed = map[wakeKey]struct{}{}
	}
	w.owed[wakeKey{worker, mailbox}] = struct{}{}
}

// Fetched notes that worker fetched from mailbox, whatever the fetch returned: a wake it had
// there is answered.
func (w *Wakes) Fetched(worker int, mailbox string) { delete(w.owed, wakeKey{worker, mailbox}) }

// Crash forgets every wake: the restarted process's workers are new.
func (w *Wakes) Crash() { clear(w.owed) }

// Owed reports whether a poll tick of worker on mailbox now breaks the rule: the worker was woken
// there for a committed message and has not fetched from the mailbox since.
func (w *Wakes) Owed(worker int, mailbox string) bool {
	_, owed := w.owed[wakeKey{worker, mailbox}]
	return owed
}

// clone returns an independent copy.
func (w Wakes) clone() Wakes { return Wakes{owed: cloneMap(w.owed)} }

// equal reports whether w and o owe the same fetches.
func (w Wakes) equal(o Wakes) bool { return maps.Equal(w.owed, o.owed) }

// all yields each owed worker and mailbox, by worker then mailbox.
func (w Wakes) all() iter.Seq2[int, string] {
	keys := slices.SortedFunc(maps.Keys(w.owed), func(a, b wakeKey) int {
		return cmp.Or(cmp.Compare(a.worker, b.worker), cmp.Compare(a.mailbox, b.mailbox))
	})
	return func(yield func(int, string) bool) {
		for _, k := range keys {
			if !yield(k.worker, k.mailbox) {
				return
			}
		}
	}
}
