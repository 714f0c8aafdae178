package observe_test

import (
	"strings"
	"testing"

	"github.com/pconform/pconform/observe"
)

// TestCheckRefusesRowLockResults: the results a store with a broken row lock gives when its
// transactions race, written as the recorder records them, must each be a finding of the
// streaming oracle. While a store records, its write transactions run one at a time (the commit
// counter's lock), so each event is judged at its place in the commit order (docs/observed.md).
func TestCheckRefusesRowLockResults(t *testing.T) {
	const leased = `"profile":"leased","lease_for":5000000000`
	for _, tc := range []struct {
		name, log, mention string
		step               int
	}{
		{
			name: "an empty leased fetch while an eligible message waits",
			log: ev(1, false, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`) +
				ev(1, true, 0, "consumer_fetch", `{"worker":1,"mailbox":"a",`+leased+`}`, `{}`),
			mention: "m1", step: 1,
		},
		{
			name: "two workers leasing one head from one stale read",
			log: ev(1, false, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`) +
				ev(2, false, 0, "consumer_fetch", `{"worker":1,"mailbox":"a",`+leased+`}`, `{"message":{"id":"m1","attempts":1,"token":"T1"}}`) +
				ev(3, false, 0, "consumer_fetch", `{"worker":2,"mailbox":"a",`+leased+`}`, `{"message":{"id":"m1","attempts":1,"token":"T2"}}`),
			mention: "m1", step: 2,
		},
		{
			name: "a leaseless decision from the count a nack had changed",
			log: ev(1, false, 0, "enqueue", `{"mailbox":"q","id":"m1","max_attempts":3}`, `{}`) +
				ev(1, true, 0, "consumer_fetch", `{"worker":1,"mailbox":"q","profile":"leaseless"}`, `{"message":{"id":"m1","attempts":0}}`) +
				ev(2, false, 0, "nack_by_id", `{"id":"m1"}`, `{}`) +
				ev(3, false, 0, "nack_by_id", `{"id":"m1"}`, `{}`) +
				// The store decided from attempts 0 as the fetch saw them; the row holds 2.
				ev(4, false, 0, "consumer_handle", `{"worker":1,"mailbox":"q","profile":"leaseless","outcome":"fail"}`, `{"action":"retried","attempt":1}`),
			mention: "dead_lettered", step: 4,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, f, err := streamCheck([]byte(tc.log), observe.CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if f == nil || f.Step != tc.step || !strings.Contains(f.Message, tc.mention) {
				t.Fatalf("got %v, want a finding at event %d mentioning %q", f, tc.step, tc.mention)
			}
		})
	}
}
