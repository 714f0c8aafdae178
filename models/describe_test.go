package models

import (
	"strings"
	"testing"

	"github.com/pconform/pconform/traces"
)

// TestDescribeOpKnowsEveryArgument: every argument traces.Spec names renders as its value, so a
// field added to the format shows in failure messages instead of as "?".
func TestDescribeOpKnowsEveryArgument(t *testing.T) {
	a := traces.Args{Mailbox: "mb", ID: "m1", Key: "k", Priority: 1, MaxAttempts: 2, Delay: 3, Payload: "p",
		MaxDeliveryAttempts: 4, LeaseFor: 5, Token: 6, Reason: "r", Target: "t", Limit: 7, ClaimFor: 8, Worker: 9,
		Publisher: 10, Profile: "leased", Outcome: "fail_no_retry", RetryDelay: 11, Fault: "none", OlderThan: 12,
		Horizon: 13, Consumer: "c", TTL: 14, Actor: "a", ExpectVersion: 15, Size: 16, Outcomes: []string{"ok"},
		IDs: []string{"o1"}, Reasons: []string{"r"}}
	for op, spec := range traces.Spec {
		for _, name := range append(append([]string{}, spec.Args...), spec.OptionalArgs...) {
			if v := argValue(name, a); v == "?" {
				t.Errorf("%s: argument %q renders as %q", op, name, v)
			}
		}
		if d := DescribeOp(op, traces.Args{Outcomes: []string{"ok"}}); strings.Contains(d, "reasons=") {
			t.Errorf("%s: absent reasons rendered: %s", op, d)
		}
	}
}
