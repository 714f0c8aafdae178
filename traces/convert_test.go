package traces

import (
	"io/fs"
	"math"
	"testing"
	"time"
)

func TestSecondsInvertsAt(t *testing.T) {
	for _, s := range []int64{0, 1, 59, 3600, MaxSeconds, MaxInstant} {
		if got := Seconds(At(s)); got != s {
			t.Errorf("Seconds(At(%d)) = %d", s, got)
		}
	}
	if got := Seconds(time.Time{}); got != 0 {
		t.Errorf("Seconds(zero time) = %d, want 0 (no lease)", got)
	}
	if got := Seconds(Epoch.Add(-time.Second)); got != -1 {
		t.Errorf("an instant before Epoch reads %d, want -1", got)
	}
}

func TestDurationSaturates(t *testing.T) {
	cases := []struct {
		in   int64
		want time.Duration
	}{
		{0, 0}, {30, 30 * time.Second}, {MaxSeconds, MaxSeconds * time.Second},
		{math.MaxInt64, math.MaxInt64}, {math.MinInt64, math.MinInt64},
	}
	for _, c := range cases {
		if got := Duration(c.in); got != c.want {
			t.Errorf("Duration(%d) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestCommittedHoldsEveryTrace checks that the embedded file system holds exactly the committed
// trace files of the three directories.
func TestCommittedHoldsEveryTrace(t *testing.T) {
	for _, dir := range []string{"corpus", "hunted", "testdata/good", "profiles"} {
		onDisk, err := Walk(dir)
		if err != nil {
			t.Fatal(err)
		}
		pattern := dir + "/*.json"
		if dir == "profiles" {
			pattern = dir + "/*/*.json"
		}
		embedded, err := fs.Glob(Committed(), pattern)
		if err != nil {
			t.Fatal(err)
		}
		if len(onDisk) == 0 || len(embedded) != len(onDisk) {
			t.Errorf("%s: %d files embedded, %d on disk", dir, len(embedded), len(onDisk))
		}
	}
}
