package traces

import "slices"

// Column names one field of one snapshot table, as "<table>.<field>" with the JSON names
// ("dead_letters.max_attempts"). A snapshot's [Snapshot.Unknown] lists the columns it does not
// state: a store whose schema has no such column, or a file of an earlier format version that did
// not carry it. An unknown column is absent from every row of its table and is left out of every
// comparison; it is never filled with a guessed value.
type Column string

// The columns a snapshot may declare unknown: the ones a reasonable store may not keep. Row
// identity (mailbox, id), state, attempts, times the semantics turn on and tokens are always known.
const (
	ColMessageKey            Column = "messages.key"
	ColMessagePriority       Column = "messages.priority"
	ColMessagePayload        Column = "messages.payload"
	ColMessageMaxAttempts    Column = "messages.max_attempts"
	ColOutboxKey             Column = "outbox.key"
	ColOutboxPriority        Column = "outbox.priority"
	ColOutboxPayload         Column = "outbox.payload"
	ColOutboxMaxAttempts     Column = "outbox.max_attempts"
	ColOutboxReason          Column = "outbox.reason"
	ColDeadLetterKey         Column = "dead_letters.key"
	ColDeadLetterPriority    Column = "dead_letters.priority"
	ColDeadLetterPayload     Column = "dead_letters.payload"
	ColDeadLetterMaxAttempts Column = "dead_letters.max_attempts"
	ColDeadLetterDeadAt      Column = "dead_letters.dead_at"
)

// Unknowable lists every column a snapshot may declare unknown, sorted.
var Unknowable = []Column{
	ColDeadLetterDeadAt, ColDeadLetterKey, ColDeadLetterMaxAttempts, ColDeadLetterPayload, ColDeadLetterPriority,
	ColMessageKey, ColMessageMaxAttempts, ColMessagePayload, ColMessagePriority,
	ColOutboxKey, ColOutboxMaxAttempts, ColOutboxPayload, ColOutboxPriority, ColOutboxReason,
}

// unknown reports whether s declares column c unknown; a nil snapshot declares nothing.
func (s *Snapshot) unknown(c Column) bool { return s != nil && slices.Contains(s.Unknown, c) }

// unknownIn reports whether a column named table.field is among cols.
func unknownIn(cols []Column, table, field string) bool {
	return slices.Contains(cols, Column(table+"."+field))
}

// Blank clears, in every row of s, the fields of the given columns, so that two snapshots that
// differ only there compare equal. It is how a comparison leaves out what either side declared
// unknown. Columns outside [Unknowable] are ignored.
func Blank(s *Snapshot, cols []Column) {
	if s == nil || len(cols) == 0 {
		return
	}
	has := func(c Column) bool { return slices.Contains(cols, c) }
	for i := range s.Messages {
		r := &s.Messages[i]
		if has(ColMessageKey) {
			r.Key = ""
		}
		if has(ColMessagePriority) {
			r.Priority = 0
		}
		if has(ColMessagePayload) {
			r.Payload = ""
		}
		if has(ColMessageMaxAttempts) {
			r.MaxAttempts = 0
		}
	}
	for i := range s.Outbox {
		r := &s.Outbox[i]
		if has(ColOutboxKey) {
			r.Key = ""
		}
		if has(ColOutboxPriority) {
			r.Priority = 0
		}
		if has(ColOutboxPayload) {
			r.Payload = ""
		}
		if has(ColOutboxMaxAttempts) {
			r.MaxAttempts = 0
		}
		if has(ColOutboxReason) {
			r.Reason = ""
		}
	}
	for i := range s.DeadLetters {
		r := &s.DeadLetters[i]
		if has(ColDeadLetterKey) {
			r.Key = ""
		}
		if has(ColDeadLetterPriority) {
			r.Priority = 0
		}
		if has(ColDeadLetterPayload) {
			r.Payload = ""
		}
		if has(ColDeadLetterMaxAttempts) {
			r.MaxAttempts = 0
		}
		if has(ColDeadLetterDeadAt) {
			r.DeadAt = 0
		}
	}
}

// Reported lists the columns of cols that some row of s states: a non-zero value where the column
// is declared unknown. Empty for a snapshot that keeps its declaration.
func Reported(s *Snapshot, cols []Column) []Column {
	if s == nil {
		return nil
	}
	var out []Column
	for _, c := range cols {
		probe := cloneRows(s)
		Blank(&probe, []Column{c})
		if !sameRows(s, &probe) {
			out = append(out, c)
		}
	}
	return out
}

// UnionColumns returns the sorted union of a and b without repeats.
func UnionColumns(a, b []Column) []Column {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

func cloneRows(s *Snapshot) Snapshot {
	return Snapshot{
		Messages: slices.Clone(s.Messages), Outbox: slices.Clone(s.Outbox), DeadLetters: slices.Clone(s.DeadLetters),
	}
}

func sameRows(a, b *Snapshot) bool {
	return slices.Equal(a.Messages, b.Messages) && slices.Equal(a.Outbox, b.Outbox) && slices.Equal(a.DeadLetters, b.DeadLetters)
}
