package actordelivery

import "testing"

func TestParseMachineTicks(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       machineTicks
	}{
		{"ten columns", "cpu  100 2 30 800 5 1 2 60 7 0\ncpu0 50 1 15 400 2 0 1 30 3 0\n", machineTicks{total: 1000, steal: 60, ok: true}},
		{"eight columns, no guest", "cpu 1 1 1 1 1 1 1 3\n", machineTicks{total: 10, steal: 3, ok: true}},
		{"too few columns", "cpu 1 2 3 4 5 6 7\n", machineTicks{}},
		{"a per-CPU line first", "cpu0 1 1 1 1 1 1 1 1\n", machineTicks{}},
		{"not a number", "cpu 1 2 3 x 5 6 7 8\n", machineTicks{}},
		{"empty", "", machineTicks{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseMachineTicks(tc.stat); got != tc.want {
				t.Errorf("parseMachineTicks(%q) = %+v, want %+v", tc.stat, got, tc.want)
			}
		})
	}
}
