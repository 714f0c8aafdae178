package observe

import "time"

// Late wakes. The store records a wake when the consumer it woke takes it, after the commit that
// caused it. A NOTIFY can reach its consumer late: its listener was slow, or the consumer was busy
// and took the wake only when it next waited. By then another fetch may have handled the message,
// and purge removed it. Once the message's dedup horizon has passed the model knows its id no
// more, and could not tell such a wake from one for a message that never committed. The purge
// is in the log, though: the checker keeps each purged message's mailbox for a window after the
// purge (models.Config.LateWakes), and a wake for it inside that window is one for a committed
// message. A wake later than that is still reported (not_committed), so the window bounds both
// what the check accepts and what it keeps: the messages purged within the window, not every
// message the log ever purged.

// DefaultLateWakes is the window CheckOptions.LateWakes takes when zero: ten minutes of the log's
// time, far longer than a NOTIFY waits in a healthy service, and short enough that what the
// checker keeps for it stays small (the messages purged in the last ten minutes).
const DefaultLateWakes = 10 * time.Minute

// lateWakeTicks is the window d (zero: DefaultLateWakes; negative: none) in the model's time
// units.
func lateWakeTicks(d time.Duration) int64 {
	switch {
	case d < 0:
		return 0
	case d == 0:
		d = DefaultLateWakes
	}
	return int64(d / tick)
}
