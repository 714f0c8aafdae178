package observe

import (
	"testing"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// TestOracleLeaseAtUntil: the model oracle takes the trace's profile. A second lease at t ==
// until of m1's first lease finds m1 again only where that lease has run out then (the default);
// under lease_at_until "live" it finds nothing. Each history is accepted under its own profile and
// refused under the other.
func TestOracleLeaseAtUntil(t *testing.T) {
	again := &traces.Message{ID: "m1", Attempts: 2, Token: 2}
	history := func(p profile.Profile, got *traces.Message) *traces.Trace {
		return &traces.Trace{Format: traces.Format, Name: "lease-at-until", Origin: traces.Origin{Kind: traces.OriginObserved},
			Expect: traces.Expect{DivergesAt: -1, Profile: p}, Steps: []traces.Step{
				{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 3}},
				{Op: traces.OpLease, Args: traces.Args{Mailbox: "inbox", LeaseFor: 10},
					Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}},
				{Op: traces.OpLease, At: 10, Args: traces.Args{Mailbox: "inbox", LeaseFor: 10}, Result: traces.Result{Message: got}},
			}}
	}
	def, live := profile.Profile{}, profile.Profile{LeaseLiveAtUntil: true}
	for _, c := range []struct {
		p       profile.Profile
		got     *traces.Message
		refused bool
	}{
		{def, again, false},
		{live, again, true},
		{live, nil, false},
		{def, nil, true},
	} {
		f, err := CheckModel(history(c.p, c.got))
		if err != nil {
			t.Fatal(err)
		}
		if (f != nil) != c.refused {
			t.Errorf("lease at t=until giving %v under profile %s: finding %v, want refused=%v", c.got, c.p, f, c.refused)
		}
		if f != nil && f.Step != 2 {
			t.Errorf("lease at t=until giving %v under profile %s: the finding names step %d, want the lease (2)", c.got, c.p, f.Step)
		}
	}
}
