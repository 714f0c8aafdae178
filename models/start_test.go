package models

import (
	"strings"
	"testing"

	"github.com/pconform/pconform/traces"
)

// TestAdoptRefuses: a starting row that no store state holds is an error naming what is wrong,
// and the machine is left as it was.
func TestAdoptRefuses(t *testing.T) {
	ready := StartRow{Table: StartMessage, Mailbox: "a", ID: "m1", State: traces.StateReady, MaxAttempts: 2, AvailableAt: 5}
	pending := StartRow{Table: StartOutbox, ID: "o1", Target: "b", State: traces.StatePending, MaxAttempts: 1, MaxDelivery: 3}
	with := func(r StartRow, f func(*StartRow)) StartRow { f(&r); return r }
	for _, tc := range []struct {
		name string
		rows []StartRow
		want string
	}{
		{"an id held twice", []StartRow{ready, with(ready, func(r *StartRow) { r.Mailbox = "b" })}, "the id is held already"},
		{"a dead letter of a message's id", []StartRow{ready, {Table: StartDeadLetter, Mailbox: "a", ID: "m1", MaxAttempts: 1}}, "the id is held already"},
		{"attempts above the bound", []StartRow{with(ready, func(r *StartRow) { r.Attempts = 3 })}, "attempts 3 exceed max_attempts 2"},
		{"a lease on an acked row", []StartRow{with(ready, func(r *StartRow) { r.State, r.Leased = traces.StateAcked, true })}, "an acked row carries a lease"},
		{"an unknown state", []StartRow{with(ready, func(r *StartRow) { r.State = "gone" })}, `state "gone" is neither ready nor acked`},
		{"a claim on a completed row", []StartRow{with(pending, func(r *StartRow) { r.State, r.Leased = traces.StateCompleted, true })}, "a completed row carries a claim"},
		{"a reason on a pending row", []StartRow{with(pending, func(r *StartRow) { r.Reason = "x" })}, "a reason belongs on exactly a dead_letter row"},
		{"a token never issued", []StartRow{with(pending, func(r *StartRow) { r.Leased, r.Token = true, 4 })}, "token 4 was never issued"},
		{"a checkpoint at version 0", []StartRow{{Table: StartCheckpoint, Actor: "x"}}, "at version 0"},
		{"an unknown table", []StartRow{{Table: "sessions", ID: "s"}}, `unknown table "sessions"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(Init(Config{}))
			var err error
			for _, r := range tc.rows {
				if _, err = m.Adopt(10, r); err != nil {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("adopt: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestAdoptThenStep: adopted rows behave as rows the history made, and Compare holds a restated
// row to them: a leased row is taken again once its lease ran out, with the next attempt and a new
// token; the restated row then differs from the adopted one in its attempts.
func TestAdoptThenStep(t *testing.T) {
	m := NewMachine(Init(Config{}))
	leased := StartRow{Table: StartMessage, Mailbox: "a", ID: "m1", State: traces.StateReady, Attempts: 1, MaxAttempts: 3, Leased: true, Until: 20}
	tok, err := m.Adopt(10, leased)
	if err != nil || tok != 1 {
		t.Fatalf("adopt: token %d, %v; want token 1", tok, err)
	}
	if _, diff := m.Compare(10, leased); diff != "" {
		t.Fatalf("compare the row just adopted: %s", diff)
	}
	r, err := m.Step(traces.OpLease, 15, traces.Args{Mailbox: "a", LeaseFor: 5})
	if err != nil || r.Message != nil {
		t.Fatalf("lease while the adopted lease holds: %+v, %v; want nothing", r, err)
	}
	r, err = m.Step(traces.OpLease, 20, traces.Args{Mailbox: "a", LeaseFor: 5})
	if err != nil || r.Message == nil || r.Message.Attempts != 2 || r.Message.Token != 2 {
		t.Fatalf("lease once the adopted lease ran out: %+v, %v; want m1 at attempt 2, token 2", r, err)
	}
	if _, diff := m.Compare(20, leased); !strings.Contains(diff, "the store states") {
		t.Fatalf("compare the stale statement: %q, want a difference", diff)
	}
	if c := m.Counts(20); c != (StartCounts{Messages: 1}) {
		t.Fatalf("counts %+v, want one message", c)
	}
}
