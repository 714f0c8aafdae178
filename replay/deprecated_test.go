package replay_test

import (
	"testing"

	"github.com/pconform/pconform/replay"
)

// TestClaimedStillCompiles keeps the deprecated name replay.Claimed usable as an adapter written
// before the rename uses it: as the element of an observation's claimed rows.
func TestClaimedStillCompiles(t *testing.T) {
	old := []replay.Claimed{{ID: "o1", DeliveryAttempts: 1, Token: "7"}}
	o := replay.Observation{Claimed: old}
	if got := o.Claimed[0]; got != (replay.ClaimedRow{ID: "o1", DeliveryAttempts: 1, Token: "7"}) {
		t.Errorf("Claimed{...} reads back as %+v", got)
	}
}
