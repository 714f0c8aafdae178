package models

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/traces"
)

const (
	leased    = traces.ProfileLeased
	leaseless = traces.ProfileLeaseless
)

func TestMalformedSteps(t *testing.T) {
	later, _, err := Run(Config{}, []traces.Step{enqueue(0, "a", "m1", 3), advance(5)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		state   State
		step    traces.Step
		mention string // the error must name the culprit
	}{
		{"unknown op", Init(Config{}), traces.Step{Op: "frobnicate"}, "unknown operation"},
		{"negative time", Init(Config{}), advance(-1), "negative"},
		{"time going back", later, advance(4), "before the previous step's time 5"},
		{"empty mailbox", Init(Config{}), enqueue(0, "", "m1", 3), "mailbox is empty"},
		{"empty id", Init(Config{}), enqueue(0, "a", "", 3), "id is empty"},
		{"max_attempts 0", Init(Config{}), enqueue(0, "a", "m1", 0), "max_attempts 0"},
		{"negative delay", Init(Config{}), delayed(enqueue(0, "a", "m1", 1), -1), "delay -1"},
		{"negative lease_for", Init(Config{}), lease(0, "a", -1), "lease_for -1"},
		{"empty peek mailbox", Init(Config{}), peek(0, ""), "mailbox is empty"},
		{"ack without id", Init(Config{}), ack(0, "", 1), "id is empty"},
		{"nack negative delay", Init(Config{}), nack(0, "m1", 1, -2), "delay -2"},
		{"outbox without target", Init(Config{}), outboxEnqueue(0, "o1", "", 1), "target is empty"},
		{"claim limit 0", Init(Config{}), outboxClaim(0, 0, 5), "limit 0"},
		{"bad consumer profile", Init(Config{}), fetch(0, 1, "a", "fold", 5), "profile"},
		{"bad outcome", Init(Config{}), handle(0, 1, "a", leased, "maybe", 0), "outcome"},
		{"negative retry delay", Init(Config{}), handle(0, 1, "a", leased, traces.OutcomeFail, -1), "retry_delay -1"},
		{"bad publisher profile", Init(Config{}), deliver(0, "o1", 1, leased, traces.FaultNone), "profile"},
		{"bad fault", Init(Config{}), deliver(0, "o1", 1, traces.ProfileFold, "meteor"), "fault"},
		{"split delivery of a row that does not exist", Init(Config{}), deliver(0, "o1", 1, traces.ProfileSplit, traces.FaultNone), `outbox row "o1" does not exist`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := DescribeState(c.state)
			next, r, err := Step(c.state, c.step.Op, c.step.At, c.step.Args)
			wantMalformed(t, err)
			if !strings.Contains(err.Error(), c.mention) {
				t.Errorf("error %q does not mention %q", err, c.mention)
			}
			if !Equal(next, c.state) || DescribeState(c.state) != before {
				t.Errorf("a malformed step changed the state")
			}
			if !cmp.Equal(r, traces.Result{}) {
				t.Errorf("a malformed step returned result %+v", r)
			}
		})
	}
}
