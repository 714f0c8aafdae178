package models

import (
	"testing"

	"github.com/pconform/pconform/traces"
)

// TestLateWakes judges a wake that comes after its message was handled, purged and forgotten:
// without Config.LateWakes the model knows the id no more and refuses it (not_committed); with
// it, a wake inside the window after the purge is one for a committed message, and one after the
// window, for another mailbox or for an id never committed is refused as before.
func TestLateWakes(t *testing.T) {
	const window = 100
	for _, tc := range []struct {
		name      string
		lateWakes int64
		mailbox   string
		id        string
		at        int64 // the wake's time; the purge runs at 10 with no dedup horizon
		want      string
	}{
		{"no window", 0, "a", "m1", 11, traces.ErrKindNotCommitted},
		{"inside the window", window, "a", "m1", 11, ""},
		{"at the window's last tick", window, "a", "m1", 10 + window - 1, ""},
		{"after the window", window, "a", "m1", 10 + window, traces.ErrKindNotCommitted},
		{"another mailbox", window, "b", "m1", 11, traces.ErrKindNotCommitted},
		{"never committed", window, "a", "m2", 11, traces.ErrKindNotCommitted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(Init(Config{LateWakes: tc.lateWakes}))
			step := func(op traces.Op, at int64, a traces.Args) traces.Result {
				t.Helper()
				r, err := m.Step(op, at, a)
				if err != nil {
					t.Fatalf("%s at %d: %v", DescribeOp(op, a), at, err)
				}
				return r
			}
			step(traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 3})
			if r := step(traces.OpPeek, 1, traces.Args{Mailbox: "a"}); r.Message == nil || r.Message.ID != "m1" {
				t.Fatalf("peek returned %+v, want m1", r.Message)
			}
			if r := step(traces.OpAckByID, 2, traces.Args{ID: "m1"}); r.Err != "" {
				t.Fatalf("ack_by_id: %s", r.Err)
			}
			if r := step(traces.OpPurge, 10, traces.Args{Limit: 10}); r.Affected != 1 {
				t.Fatalf("purge removed %d rows, want 1", r.Affected)
			}
			m.Forget()
			wake := traces.Args{Worker: 1, Mailbox: tc.mailbox, ID: tc.id, Profile: traces.WakeNotify}
			if r := step(traces.OpWake, tc.at, wake); r.Err != tc.want {
				t.Errorf("wake for %s in %s at %d: err %q, want %q", tc.id, tc.mailbox, tc.at, r.Err, tc.want)
			}
			// Forget drops what the window no longer covers, and nothing it still covers.
			m.Forget()
			if r := step(traces.OpWake, tc.at, wake); r.Err != tc.want {
				t.Errorf("after Forget, wake for %s in %s at %d: err %q, want %q", tc.id, tc.mailbox, tc.at, r.Err, tc.want)
			}
		})
	}
}
