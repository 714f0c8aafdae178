package profile

import "testing"

func TestHeld(t *testing.T) {
	live := Profile{LeaseLiveAtUntil: true}
	for _, tc := range []struct {
		name       string
		p          Profile
		token      int
		until, now int64
		want       bool
	}{
		{"no token is never held", Profile{}, 0, 10, 5, false},
		{"before its end", Profile{}, 3, 10, 9, true},
		{"at its end, default: run out", Profile{}, 3, 10, 10, false},
		{"at its end, live at until: held", live, 3, 10, 10, true},
		{"after its end, live at until: run out", live, 3, 10, 11, false},
		{"no token under live at until", live, 0, 10, 10, false},
	} {
		if got := tc.p.Held(tc.token, tc.until, tc.now); got != tc.want {
			t.Errorf("%s: Held(%d, %d, %d) = %v, want %v", tc.name, tc.token, tc.until, tc.now, got, tc.want)
		}
	}
}
