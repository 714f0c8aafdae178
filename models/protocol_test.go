package models

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/traces"
)

const (
	fold          = traces.ProfileFold
	split         = traces.ProfileSplit
	outcomeOK     = traces.OutcomeOK
	outcomeFail   = traces.OutcomeFail
	faultNone     = traces.FaultNone
	commitFails   = traces.FaultCommitFails
	crashBetween  = traces.FaultCrashBetween
	undeliverable = traces.FaultUndeliverable
)

func TestConsumerMalformed(t *testing.T) {
	setup := []traces.Step{enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leased, 5)}
	for _, c := range []struct {
		name    string
		step    traces.Step
		mention string
	}{
		{"handle for another mailbox", handle(1, 1, "b", leased, outcomeOK, 0), `handles mailbox "b"`},
		{"handle on another path", handle(1, 1, "a", leaseless, outcomeOK, 0), "on the leased path but handles it on the leaseless path"},
		{"second fetch before the handle", fetch(1, 1, "a", leased, 5), "still holds its fetch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Run(Config{}, append(setup[:len(setup):len(setup)], c.step))
			wantMalformed(t, err)
			if !strings.Contains(err.Error(), c.mention) || !strings.Contains(err.Error(), "step 2") {
				t.Errorf("error %q should name step 2 and mention %q", err, c.mention)
			}
		})
	}
}

// TestHandleCommitFails runs a consumer_handle whose commit fails after a fetch on each path,
// then goes on as a worker does: the step changes no row, the worker no longer holds its fetch
// (its next fetch is no malformed step), and the message comes back as the path says: leaseless
// at once, leased once its lease runs out.
func TestHandleCommitFails(t *testing.T) {
	failing := func(at int64, profile, outcome, fault string) traces.Step {
		st := handle(at, 1, "a", profile, outcome, 3)
		st.Args.Fault = fault
		return st
	}
	for _, c := range []struct {
		name    string
		profile string
		outcome string
		// next is the message the worker's fetch at t=1 gets ("" none; the handle after it acks
		// what it got), later the one its fetch at t=6 gets: a leased message stays under its
		// lease (5s) until it runs out.
		next, later string
	}{
		{"leased ok", leased, outcomeOK, "", "m1"},
		{"leased fail", leased, outcomeFail, "", "m1"},
		{"leaseless ok", leaseless, outcomeOK, "m1", ""},
		{"leaseless fail", leaseless, outcomeFail, "m1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			setup := []traces.Step{enqueue(0, "a", "m1", 3), fetch(0, 1, "a", c.profile, 5)}
			before, _, err := Run(Config{}, setup)
			if err != nil {
				t.Fatal(err)
			}
			steps := append(slices.Clone(setup), failing(1, c.profile, c.outcome, commitFails))
			after, rs, err := Run(Config{}, steps)
			if err != nil {
				t.Fatal(err)
			}
			if got := rs[2]; !reflect.DeepEqual(got, traces.Result{Action: traces.ActionCommitFailed}) {
				t.Errorf("result %+v, want commit_failed with attempt 0", got)
			}
			if b, a := before.Snapshot(), after.Snapshot(); !reflect.DeepEqual(b, a) {
				t.Errorf("a failed commit changed the store:\nbefore %+v\nafter  %+v", b, a)
			}
			steps = append(steps, fetch(1, 1, "a", c.profile, 5), handle(1, 1, "a", c.profile, outcomeOK, 0),
				advance(6), fetch(6, 1, "a", c.profile, 5))
			_, rs, err = Run(Config{}, steps)
			if err != nil {
				t.Fatalf("the worker's fetch after the failed commit: %v", err)
			}
			if got, want := msgID(rs[3]), c.next; got != want {
				t.Errorf("the fetch right after the failed commit got %q, want %q", got, want)
			}
			if got, want := msgID(rs[6]), c.later; got != want {
				t.Errorf("the fetch once the lease ran out got %q, want %q", got, want)
			}
		})
	}
	t.Run("idle worker", func(t *testing.T) {
		_, rs, err := Run(Config{}, []traces.Step{enqueue(0, "a", "m1", 3), failing(0, leased, outcomeOK, commitFails)})
		if err != nil || rs[1].Action != traces.ActionIdle {
			t.Fatalf("a worker that holds nothing: %+v, %v; want idle", rs, err)
		}
	})
	t.Run("fault none is no fault", func(t *testing.T) {
		_, rs, err := Run(Config{}, []traces.Step{enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leased, 5), failing(1, leased, outcomeOK, faultNone)})
		if err != nil || rs[2].Action != traces.ActionAcked {
			t.Fatalf("fault none: %+v, %v; want acked", rs, err)
		}
	})
	t.Run("unknown fault", func(t *testing.T) {
		_, _, err := Run(Config{}, []traces.Step{failing(0, leased, outcomeOK, crashBetween)})
		wantMalformed(t, err)
	})
}

// msgID is the id of the message a fetch's result holds, "" for none.
func msgID(r traces.Result) string {
	if r.Message == nil {
		return ""
	}
	return r.Message.ID
}
