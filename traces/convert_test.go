package traces

import (
	"io/fs"
	"math"
	"path"
	"strings"
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

// TestReadCommitted reads directories in the order given, in path order within each, and refuses a malformed pattern with an error that names it.
func TestReadCommitted(t *testing.T) {
	trs, err := ReadCommitted("hunted", "testdata/good")
	if err != nil {
		t.Fatal(err)
	}
	hunted, _ := fs.Glob(Committed(), "hunted/*.json")
	good, _ := fs.Glob(Committed(), "testdata/good/*.json")
	if len(trs) != len(hunted)+len(good) || len(hunted) == 0 || len(good) == 0 {
		t.Fatalf("read %d traces, want %d hunted then %d good", len(trs), len(hunted), len(good))
	}
	base := func(name string) string { return strings.TrimSuffix(path.Base(name), ".json") }
	if first, last := trs[0].Name, trs[len(trs)-1].Name; first != base(hunted[0]) || last != base(good[len(good)-1]) {
		t.Errorf("first %q, last %q: want %s first and %s last", first, last, hunted[0], good[len(good)-1])
	}
	if _, err := ReadCommitted("corpus["); err == nil || !strings.Contains(err.Error(), `"corpus["`) {
		t.Errorf("malformed pattern: err %v, want one naming it", err)
	}
}
