package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live  uint64
		floor int
		want  int
	}{
		{0, MinPercent, MaxPercent},
		{1 * mb, MinPercent, MaxPercent},
		{Headroom / 4, MinPercent, MaxPercent},
		{Headroom/4 + mb, MinPercent, 387}, // 128/33 MB
		{Headroom / 2, MinPercent, 200},
		{Headroom, MinPercent, 100},
		{2 * Headroom, MinPercent, MinPercent},
		{4 * Headroom, MinPercent, MinPercent},
		{Headroom / 2, ParallelMinPercent, 200},
		{2 * Headroom, ParallelMinPercent, ParallelMinPercent},
		{4 * Headroom, ParallelMinPercent, ParallelMinPercent},
	} {
		if got := Percent(c.live, c.floor); got != c.want {
			t.Errorf("Percent(%d MB, %d) = %d, want %d", c.live/mb, c.floor, got, c.want)
		}
	}
}

// The headroom Percent gives stays within Headroom between a quarter of it and twice it, and is
// half the live heap beyond.
func TestPercentBoundsTheHeadroom(t *testing.T) {
	for live := uint64(1 << 20); live < 8*Headroom; live += 3 << 20 {
		room := live * uint64(Percent(live, MinPercent)) / 100
		switch {
		case live <= Headroom/4:
			if room != 4*live {
				t.Fatalf("live %d: headroom %d, want 4x", live, room)
			}
		case live < 2*Headroom:
			if room > Headroom || room+live/100 < Headroom {
				t.Fatalf("live %d: headroom %d, want about %d", live, room, Headroom)
			}
		default:
			if room != live/2 {
				t.Fatalf("live %d: headroom %d, want half the live heap", live, room)
			}
		}
	}
}

// Start and StartParallel lower the percentage to their floor once the live heap is large, and
// stop restores the one they found.
func TestStartFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	for _, c := range []struct {
		name  string
		start func() func()
		floor int
	}{
		{"Start", Start, MinPercent},
		{"StartParallel", StartParallel, ParallelMinPercent},
	} {
		before := debug.SetGCPercent(123)
		stop := c.start()
		held := make([]byte, 2*Headroom)
		for i := range held {
			held[i] = byte(i)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			runtime.GC()
			time.Sleep(2 * period)
			p := gogc()
			if p == c.floor {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the percentage is %d with %d MB live, want %d", c.name, p, len(held)>>20, c.floor)
			}
		}
		runtime.KeepAlive(held)
		stop()
		if p := gogc(); p != 123 {
			t.Fatalf("%s: after stop the percentage is %d, want the 123 it found", c.name, p)
		}
		debug.SetGCPercent(before)
	}
}

// With GOGC set, Start leaves the collector alone.
func TestStartLeavesGOGCAlone(t *testing.T) {
	t.Setenv("GOGC", "150")
	before := debug.SetGCPercent(150)
	defer debug.SetGCPercent(before)
	stop := Start()
	defer stop()
	if p := gogc(); p != 150 {
		t.Fatalf("with GOGC set the percentage is %d, want 150", p)
	}
}

// gogc is the collector's target percentage now.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
