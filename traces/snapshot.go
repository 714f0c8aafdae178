package traces

import (
	"cmp"
	"slices"
)

// Canonicalize puts s in the canonical form the format requires and go-cmp comparisons assume:
// messages sorted by mailbox, then id; outbox rows and dead letters sorted by id; nil tables made
// empty; a nil effects map made empty and mailboxes with no effects dropped; the unknown columns
// sorted without repeats (nil when there are none). Effect lists keep
// their commit order, which is part of what a snapshot states. Canonicalize(nil) does nothing.
//
// Canonicalize does not remove repeated rows; Validate reports them.
func Canonicalize(s *Snapshot) {
	if s == nil {
		return
	}
	if s.Messages == nil {
		s.Messages = []MessageRow{}
	}
	if s.Outbox == nil {
		s.Outbox = []OutboxRow{}
	}
	if s.DeadLetters == nil {
		s.DeadLetters = []DeadLetterRow{}
	}
	if s.Effects == nil {
		s.Effects = map[string][]string{}
	}
	slices.Sort(s.Unknown)
	s.Unknown = slices.Compact(s.Unknown)
	if len(s.Unknown) == 0 {
		s.Unknown = nil
	}
	slices.SortStableFunc(s.Messages, func(a, b MessageRow) int {
		return cmp.Or(cmp.Compare(a.Mailbox, b.Mailbox), cmp.Compare(a.ID, b.ID))
	})
	slices.SortStableFunc(s.Outbox, func(a, b OutboxRow) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortStableFunc(s.DeadLetters, func(a, b DeadLetterRow) int { return cmp.Compare(a.ID, b.ID) })
	for mb, ids := range s.Effects {
		if len(ids) == 0 {
			delete(s.Effects, mb)
		}
	}
}
