package models

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/traces"
)

func TestOutbox(t *testing.T) {
	runCases(t, []stepCase{
		{
			name: "claims go by seq, up to the limit, one token per batch; claims are fenced",
			steps: []traces.Step{
				outboxEnqueue(0, "o1", "a", 3), outboxEnqueue(0, "o2", "a", 3), outboxEnqueue(0, "o3", "b", 3), outboxEnqueue(0, "o1", "b", 1),
				outboxClaim(0, 2, 10), outboxClaim(0, 5, 10), outboxClaim(0, 5, 10),
				outboxComplete(1, "o1", 1), outboxComplete(1, "o1", 1), outboxComplete(1, "o2", 2),
				outboxFail(1, "o2", 1, 5), outboxFail(1, "o2", 1, 0),
				outboxClaim(5, 5, 10), outboxClaim(6, 5, 10),
				outboxClaim(10, 5, 10), outboxComplete(10, "o3", 2), outboxComplete(10, "zz", 4), outboxFail(10, "o3", 0, 0),
			},
			want: []traces.Result{okR, okR, okR, dup,
				claimed(1, row("o1", 1), row("o2", 1)), claimed(2, row("o3", 1)), none,
				okR, claimLost, claimLost,
				okR, claimLost,
				none, claimed(3, row("o2", 2)),
				claimed(4, row("o3", 2)), claimLost, claimLost, claimLost,
			},
			check: func(t *testing.T, snap traces.Snapshot) {
				want := []traces.OutboxRow{
					{ID: "o1", Target: "a", MaxAttempts: 3, State: traces.StateCompleted, DeliveryAttempts: 1},
					{ID: "o2", Target: "a", MaxAttempts: 3, State: traces.StatePending, DeliveryAttempts: 2, AvailableAt: 6, Token: 3, ClaimUntil: 16},
					{ID: "o3", Target: "b", MaxAttempts: 3, State: traces.StatePending, DeliveryAttempts: 2, Token: 4, ClaimUntil: 20},
				}
				if d := cmp.Diff(want, snap.Outbox); d != "" {
					t.Errorf("outbox (-want +got):\n%s", d)
				}
			},
		},
		{
			name:  "an empty claim issues no token",
			steps: []traces.Step{outboxClaim(0, 1, 5), enqueue(0, "a", "m1", 3), lease(0, "a", 5)},
			want:  []traces.Result{none, okR, msg("m1", 1, 1)},
		},
		{
			name: "outbox ids and message ids are separate",
			steps: []traces.Step{
				enqueue(0, "a", "x", 1), outboxEnqueue(0, "x", "a", 3), outboxEnqueue(0, "x", "a", 3), enqueue(0, "b", "x", 1),
			},
			want: []traces.Result{okR, okR, dup, dup},
		},
	})
}
