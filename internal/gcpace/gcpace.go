package gcpace

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

const (
	// Headroom is what the collector may let the heap grow beyond the live heap before it
	// collects, while the live heap is between Headroom/4 and Headroom.
	Headroom = 128 << 20
	// MaxPercent is the target percentage of a small live heap, MinPercent that of a large one
	// (half Go's default: the collector's work per cycle grows with the live heap, its cycles do
	// not come more often than at a live heap of twice Headroom).
	MaxPercent = 400
	MinPercent = 50
	// ParallelMinPercent is MinPercent for a check whose goroutines keep every core busy
	// (StartParallel): Go's default.
	ParallelMinPercent = 100
	// period is how often Start reads the live heap: the heap grows by a few MB in that time.
	period = 100 * time.Millisecond
)

// Percent is the collector's target percentage for a live heap of live bytes, never less than
// floor (MinPercent or ParallelMinPercent).
func Percent(live uint64, floor int) int {
	if live == 0 {
		return MaxPercent
	}
	return int(min(MaxPercent, max(uint64(floor), uint64(Headroom)*100/live)))
}

// liveHeap is the runtime metric of the heap the last collection found live.
const liveHeap = "/gc/heap/live:bytes"

// Start paces the collector of a check that runs on one goroutine at a time, whose collector
// works on the other cores, until the returned stop is called, which restores the percentage it
// found. Without the GOGC environment variable it sets MaxPercent at once; with it, it does
// nothing.
func Start() (stop func()) { return start(MinPercent) }

// StartParallel is Start for a check whose goroutines keep every core busy (check --jobs): the
// collector's cycles then take the checkers' time, so a large live heap keeps Go's default
// percentage (ParallelMinPercent).
func StartParallel() (stop func()) { return start(ParallelMinPercent) }

func start(floor int) (stop func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(MaxPercent)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		sample := []metrics.Sample{{Name: liveHeap}}
		cur := MaxPercent
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return // a runtime without the metric: keep MaxPercent
			}
			if p := Percent(sample[0].Value.Uint64(), floor); p != cur {
				debug.SetGCPercent(p)
				cur = p
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		debug.SetGCPercent(prev)
	}
}
