package actordelivery

import (
	"sync"
	"time"
)

// Clock is the store's only source of time. Every time the store writes (available_at, lease and
// claim expiry, created_at, dead_at, dedup expiry) and every eligibility decision reads Now from
// the clock the store was opened with, so a test or a replay controls time completely.
type Clock interface {
	Now() time.Time
}

// systemClock is the default Clock: the wall clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that only moves when told to. The zero value reads as the zero time; it is
// safe for concurrent use.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock returns a ManualClock reading t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now returns the clock's current reading.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t (backwards too: the clock trusts its caller; the store's semantics assume
// time never decreases along a run).
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Times are stored as integer milliseconds since the Unix epoch. A zero time.Time stands for "no
// time" (a message without a lease) and is stored as NULL, never as a number.
func toMillis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func durMillis(d time.Duration) int64 { return d.Milliseconds() }
