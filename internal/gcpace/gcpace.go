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
	// (Go's default).
	MaxPercent = 400
	MinPercent = 100
	// period is how often Start reads the live heap: the heap grows by a few MB in that time.
	period = 100 * time.Millisecond
)

// Percent is the collector's target percentage for a live heap of live bytes.
func Percent(live uint64) int {
	if live == 0 {
		return MaxPercent
	}
	return int(min(MaxPercent, max(MinPercent, uint64(Headroom)*100/live)))
}

// liveHeap is the runtime metric of the heap the last collection found live.
const liveHeap = "/gc/heap/live:bytes"

// Start paces the collector until the returned stop is called, which restores the percentage
// it found. Without the GOGC environment variable it sets MaxPercent at once; with it, it does
// nothing.
func Start() (stop func()) {
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
			if p := Percent(sample[0].Value.Uint64()); p != cur {
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
