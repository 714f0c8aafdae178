package models

import (
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
