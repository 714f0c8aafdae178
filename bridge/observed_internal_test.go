package bridge

import (
	"os"
	"strings"
	"testing"

	"github.com/pconform/pconform/traces"
)

// TestParseObservedRun reads the output of a real checker run over four observed test cases
// (testdata/observed/check_four.txt: the first and third found a bug) and hand-made broken
// outputs, each refused with the test case it concerns.
func TestParseObservedRun(t *testing.T) {
	real, err := os.ReadFile("testdata/observed/check_four.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseObservedRun(real)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]caseVerdict{
		"tcObservedHistory0000": {bugs: 1, log: "OUT/BugFinding/PConformObserved_0_0.txt"},
		"tcObservedHistory0001": {},
		"tcObservedHistory0002": {bugs: 1, log: "OUT/BugFinding/PConformObserved_0_1.txt"},
		"tcObservedHistory0003": {},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d test cases %v, want %d", len(got), got, len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: got %+v, want %+v", name, got[name], w)
		}
	}

	lines := strings.Split(string(real), "\n")
	drop := func(sub string) string {
		var keep []string
		for _, l := range lines {
			if !strings.Contains(l, sub) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	for _, tc := range []struct {
		name, out, err string
	}{
		{"no bug count", drop("Found 0 bugs."), "test case tcObservedHistory0001 states no bug count"},
		{"bug without a log", drop("PConformObserved_0_1.txt"), "test case tcObservedHistory0002 found 1 bug(s) but names no bug log"},
		{"a test case twice", string(real) + ".. Test case :: tcObservedHistory0003\n..... Found 0 bugs.\n", "test case tcObservedHistory0003 ran twice"},
		{"cut off after a header", ".. Test case :: tcObservedHistory0000\n", "test case tcObservedHistory0000 states no bug count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseObservedRun([]byte(tc.out))
			if err == nil || err.Error() != tc.err {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
}

// TestObservedBatches splits observed traces into compile batches: in order, each batch's steps
// within the limit, a trace longer than the limit alone, and no trace lost or repeated.
func TestObservedBatches(t *testing.T) {
	trace := func(steps int) *traces.Trace { return &traces.Trace{Steps: make([]traces.Step, steps)} }
	cases := []struct {
		name  string
		steps []int
		limit int
		want  [][]int // the steps of each batch's traces
	}{
		{"none", nil, 10, nil},
		{"one batch", []int{3, 3, 4}, 10, [][]int{{3, 3, 4}}},
		{"split at the limit", []int{4, 4, 4, 4}, 10, [][]int{{4, 4}, {4, 4}}},
		{"a long trace alone", []int{2, 12, 2}, 10, [][]int{{2}, {12}, {2}}},
		{"a long first trace", []int{11, 1}, 10, [][]int{{11}, {1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ts []*traces.Trace
			for _, n := range c.steps {
				ts = append(ts, trace(n))
			}
			got := observedBatches(ts, c.limit)
			if len(got) != len(c.want) {
				t.Fatalf("got %d batches, want %d", len(got), len(c.want))
			}
			k := 0
			for b, batch := range got {
				if len(batch) != len(c.want[b]) {
					t.Fatalf("batch %d: got %d traces, want %d", b, len(batch), len(c.want[b]))
				}
				for i, tr := range batch {
					if tr != ts[k] {
						t.Fatalf("batch %d, trace %d: not trace %d of the input", b, i, k)
					}
					if len(tr.Steps) != c.want[b][i] {
						t.Fatalf("batch %d, trace %d: %d steps, want %d", b, i, len(tr.Steps), c.want[b][i])
					}
					k++
				}
			}
			if k != len(ts) {
				t.Fatalf("batches hold %d traces, want %d", k, len(ts))
			}
		})
	}
}
