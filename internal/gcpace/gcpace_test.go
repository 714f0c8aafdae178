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
		live uint64
		want int
	}{
		{0, MaxPercent},
		{1 * mb, MaxPercent},
		{Headroom / 4, MaxPercent},
		{Headroom/4 + mb, 387}, // 128/33 MB
		{Headroom / 2, 200},
		{Headroom, MinPercent},
		{4 * Headroom, MinPercent},
	} {
		if got := Percent(c.live); got != c.want {
			t.Errorf("Percent(%d MB) = %d, want %d", c.live/mb, got, c.want)
		}
	}
}

// The headroom Percent gives stays within Headroom between a quarter of it and all of it, and is
// the live heap itself beyond.
func TestPercentBoundsTheHeadroom(t *testing.T) {
	for live := uint64(1 << 20); live < 8*Headroom; live += 3 << 20 {
		room := live * uint64(Percent(live)) / 100
		switch {
		case live <= Headroom/4:
			if room != 4*live {
				t.Fatalf("live %d: headroom %d, want 4x", live, room)
			}
		case live < Headroom:
			if room > Headroom || room+live/100 < Headroom {
				t.Fatalf("live %d: headroom %d, want about %d", live, room, Headroom)
			}
		default:
			if room != live {
				t.Fatalf("live %d: headroom %d, want the live heap", live, room)
			}
		}
	}
}

// Start lowers the percentage once the live heap is large, and stop restores the one it found.
func TestStartFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)
	stop := Start()
	held := make([]byte, 2*Headroom)
	for i := range held {
		held[i] = byte(i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(2 * period)
		p := gogc()
		if p == MinPercent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the percentage is %d with %d MB live, want %d", p, len(held)>>20, MinPercent)
		}
	}
	runtime.KeepAlive(held)
	stop()
	if p := gogc(); p != 123 {
		t.Fatalf("after stop the percentage is %d, want the 123 it found", p)
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
