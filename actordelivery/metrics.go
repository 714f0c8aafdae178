package actordelivery

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Counter names one of the delivery counters a Metrics receives.
type Counter int

const (
	// CounterFetched: a consumer fetched a message (a lease on the leased path, a peek on the
	// leaseless one). Labelled with the mailbox.
	CounterFetched Counter = iota
	// CounterAcked: a delivery's acknowledgement committed. Labelled with the mailbox.
	CounterAcked
	// CounterRetried: a failed delivery was nacked for a retry. Labelled with the mailbox.
	CounterRetried
	// CounterDeadLettered: a failed delivery moved the message to the dead letters. Labelled with
	// the mailbox.
	CounterDeadLettered
	// CounterOutboxDelivered: a publisher delivered an outbox row (its enqueue and completion
	// committed). Labelled with the row's target mailbox.
	CounterOutboxDelivered
	// CounterOutboxFailed: a publisher's delivery of an outbox row failed ("commit_failed"); the row
	// is delivered again once its claim runs out. Labelled with the target mailbox.
	CounterOutboxFailed
	numCounters
)

var counterNames = [numCounters]string{"fetched", "acked", "retried", "dead_lettered", "outbox_delivered", "outbox_failed"}

// String returns the counter's name in snake_case ("fetched", "dead_lettered", ...).
func (c Counter) String() string {
	if c >= 0 && c < numCounters {
		return counterNames[c]
	}
	return fmt.Sprintf("Counter(%d)", int(c))
}

// Metrics receives the store's counters and observations. Set it in Options.Metrics; nil means
// NopMetrics. Implementations must be safe for concurrent use.
//
// The store calls Metrics only after a transaction has ended, never while it holds a transaction
// (and so, on SQLite, never while it holds the writer lock): a slow implementation slows the
// goroutine that reports, never another goroutine's commit. Still, a call is made on the
// delivery's own goroutine, so an implementation should return quickly (add to an atomic, hand
// the value to a buffered channel) rather than do I/O.
type Metrics interface {
	// Count adds n to counter c for mailbox.
	Count(c Counter, mailbox string, n int64)
	// ObserveCommit records how long the COMMIT of a write transaction took (real time, from the
	// monotonic clock; the store's Clock governs only the times stored in rows). With
	// Options.GroupCommit it is called once per COMMIT, however many transactions it carried.
	ObserveCommit(d time.Duration)
	// QueueDepth records how many messages of mailbox are ready (not acked; eligible now or
	// later), as RunWorkers samples it.
	QueueDepth(mailbox string, n int64)
}

// NopMetrics discards everything; it is what a nil Options.Metrics means.
type NopMetrics struct{}

// Count implements Metrics.
func (NopMetrics) Count(Counter, string, int64) {}

// ObserveCommit implements Metrics.
func (NopMetrics) ObserveCommit(time.Duration) {}

// QueueDepth implements Metrics.
func (NopMetrics) QueueDepth(string, int64) {}

// ExpvarMetrics is a Metrics that keeps its figures in memory and shows them as an expvar.Var:
// publish it with expvar.Publish("actordelivery", m) and it appears in /debug/vars as
//
//	{"counters": {"acked": {"mb": 3}, ...}, "queue_depth": {"mb": 7},
//	 "commit": {"count": 12, "total_seconds": 0.004, "max_seconds": 0.001}}
//
// Recording never takes a lock that a reader holds: counters and depths are atomics in sync.Maps,
// and String builds its snapshot from them without stopping writers, so a slow /debug/vars
// client never blocks a commit. (It does not use expvar.Map, whose Add takes the map's key lock
// for every new key while a reader of /debug/vars may hold it.) The zero value is ready to use.
type ExpvarMetrics struct {
	counters [numCounters]sync.Map // mailbox -> *atomic.Int64
	depth    sync.Map              // mailbox -> *atomic.Int64
	commits  atomic.Int64
	// commitNanos and maxCommitNanos sum and bound the observed commit durations.
	commitNanos, maxCommitNanos atomic.Int64
}

func cell(m *sync.Map, key string) *atomic.Int64 {
	if v, ok := m.Load(key); ok {
		return v.(*atomic.Int64)
	}
	v, _ := m.LoadOrStore(key, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// Count implements Metrics.
func (e *ExpvarMetrics) Count(c Counter, mailbox string, n int64) {
	if c < 0 || c >= numCounters {
		return
	}
	cell(&e.counters[c], mailbox).Add(n)
}

// ObserveCommit implements Metrics.
func (e *ExpvarMetrics) ObserveCommit(d time.Duration) {
	e.commits.Add(1)
	e.commitNanos.Add(int64(d))
	for {
		old := e.maxCommitNanos.Load()
		if int64(d) <= old || e.maxCommitNanos.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// QueueDepth implements Metrics.
func (e *ExpvarMetrics) QueueDepth(mailbox string, n int64) { cell(&e.depth, mailbox).Store(n) }

// Counter returns counter c's total for mailbox.
func (e *ExpvarMetrics) Counter(c Counter, mailbox string) int64 {
	if c < 0 || c >= numCounters {
		return 0
	}
	if v, ok := e.counters[c].Load(mailbox); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func snapshot(m *sync.Map) map[string]int64 {
	out := map[string]int64{}
	m.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// String implements expvar.Var: the figures as one JSON object.
func (e *ExpvarMetrics) String() string {
	counters := map[string]map[string]int64{}
	for c := range numCounters {
		counters[c.String()] = snapshot(&e.counters[c])
	}
	v := struct {
		Counters   map[string]map[string]int64 `json:"counters"`
		QueueDepth map[string]int64            `json:"queue_depth"`
		Commit     struct {
			Count        int64   `json:"count"`
			TotalSeconds float64 `json:"total_seconds"`
			MaxSeconds   float64 `json:"max_seconds"`
		} `json:"commit"`
	}{Counters: counters, QueueDepth: snapshot(&e.depth)}
	v.Commit.Count = e.commits.Load()
	v.Commit.TotalSeconds = time.Duration(e.commitNanos.Load()).Seconds()
	v.Commit.MaxSeconds = time.Duration(e.maxCommitNanos.Load()).Seconds()
	b, err := json.Marshal(v)
	if err != nil {
		// Maps of strings and numbers always marshal.
		panic(fmt.Sprintf("actordelivery: ExpvarMetrics: %v", err))
	}
	return string(b)
}
