package properties

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/traces"
)

// TestSame: the quick comparison the judge and the probes use agrees with cmp.Diff under cmpOpts,
// on values equal outright, equal only because nil and empty agree, and different.
func TestSame(t *testing.T) {
	snap := func(effects map[string][]string, rows ...traces.MessageRow) traces.Snapshot {
		return traces.Snapshot{Messages: rows, Effects: effects}
	}
	m1 := traces.MessageRow{Mailbox: "a", ID: "m1", State: traces.StateReady, MaxAttempts: 1}
	m1acked := m1
	m1acked.State = traces.StateAcked
	for _, c := range []struct {
		name      string
		want, got any
	}{
		{"equal results", traces.Result{Message: &traces.Message{ID: "m1", Token: 1}}, traces.Result{Message: &traces.Message{ID: "m1", Token: 1}}},
		{"nil and empty claimed", traces.Result{}, traces.Result{Claimed: []traces.Claimed{}}},
		{"other token", traces.Result{Message: &traces.Message{ID: "m1", Token: 1}}, traces.Result{Message: &traces.Message{ID: "m1", Token: 2}}},
		{"no message", traces.Result{Message: &traces.Message{ID: "m1"}}, traces.Result{}},
		{"equal snapshots", snap(nil, m1), snap(nil, m1)},
		{"nil and empty effects", snap(nil, m1), snap(map[string][]string{}, m1)},
		{"other state", snap(nil, m1), snap(nil, m1acked)},
		{"a row missing", snap(nil, m1), snap(nil)},
	} {
		want := cmp.Diff(c.want, c.got, cmpOpts) == ""
		if got := same(c.want, c.got); got != want {
			t.Errorf("%s: same = %v, cmp.Diff under cmpOpts says equal = %v", c.name, got, want)
		}
	}
}
