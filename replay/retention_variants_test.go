package replay_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// driveOn is drive on backend b: the steps' results (tokens as symbols) and the final snapshot.
func driveOn(t *testing.T, target string, b actordelivery.Backend, steps []traces.Step) ([]traces.Result, replay.Snapshot) {
	t.Helper()
	tg, err := targets.NewOn(target, storeDB(t, b))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx := context.Background()
	bind := replay.NewBinding()
	var results []traces.Result
	for i, s := range steps {
		obs, err := tg.Do(ctx, s.Op, s.At, bind.Args(s.Op, s.Args))
		if err != nil {
			t.Fatalf("%s on %s: step #%d: %v", target, b, i, err)
		}
		results = append(results, bind.Result(nil, obs))
	}
	snap, err := tg.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Tokens are the targets' own (random for the store, "copy-<n>" for the copies).
	for i := range snap.Messages {
		snap.Messages[i].Token = ""
	}
	for i := range snap.Outbox {
		snap.Outbox[i].Token = ""
	}
	return results, snap
}

// TestRetentionRedriveTargets drives the purge-forgets-ids and redrive-keeps-attempts variants,
// the eligibility copy and the store, on every backend, through the step each variant changes:
// an acked message purged and enqueued again inside its dedup horizon, and a dead letter (of the
// mailbox and of the outbox) redriven and fetched again. The store and the eligibility copy (the
// copied purge and redrive statements with the store's rules) must agree on every result and on
// the final snapshot; each variant differs from them exactly at the step its rule changes.
func TestRetentionRedriveTargets(t *testing.T) {
	fetch := func(worker int, at int64) traces.Step {
		return step(traces.OpConsumerFetch, at, traces.Args{Worker: worker, Mailbox: "in", Profile: traces.ProfileLeased, LeaseFor: 5})
	}
	handle := func(worker int, at int64, outcome string) traces.Step {
		return step(traces.OpConsumerHandle, at, traces.Args{Worker: worker, Mailbox: "in", Profile: traces.ProfileLeased, Outcome: outcome})
	}
	purge := []traces.Step{
		step(traces.OpEnqueue, 0, traces.Args{Mailbox: "in", ID: "m1", MaxAttempts: 1}),
		fetch(1, 0), handle(1, 1, traces.OutcomeOK),
		step(traces.OpPurge, 2, traces.Args{Limit: 10, OlderThan: 0, Horizon: 5}),
		step(traces.OpEnqueue, 3, traces.Args{Mailbox: "in", ID: "m1", MaxAttempts: 1}),
		// After the horizon (acked at 1, horizon 5: free from 6) the id is free in every target.
		step(traces.OpPurge, 6, traces.Args{Limit: 10, OlderThan: 0, Horizon: 0}),
		step(traces.OpEnqueue, 6, traces.Args{Mailbox: "in", ID: "m2", MaxAttempts: 1}),
	}
	redrive := []traces.Step{
		step(traces.OpEnqueue, 0, traces.Args{Mailbox: "in", ID: "m1", MaxAttempts: 1}),
		fetch(1, 0), handle(1, 0, traces.OutcomeFail),
		step(traces.OpOutboxEnqueue, 0, traces.Args{ID: "o1", Target: "out", MaxAttempts: 1, MaxDeliveryAttempts: 1}),
		step(traces.OpOutboxClaim, 0, traces.Args{Limit: 1, ClaimFor: 5}),
		step(traces.OpOutboxDeadLetter, 0, traces.Args{ID: "o1", Token: 1, Reason: "undeliverable"}),
		step(traces.OpRedrive, 1, traces.Args{ID: "m1", Reason: "fixed"}),
		step(traces.OpRedrive, 1, traces.Args{ID: "o1", Reason: "fixed"}),
		step(traces.OpRedrive, 1, traces.Args{ID: "m9", Reason: "fixed"}),
		fetch(2, 1),
	}
	for _, c := range []struct {
		name    string
		variant string
		steps   []traces.Step
		// at is the step the variant changes; want its result there, and the store's.
		at              int
		broken, correct traces.Result
	}{
		{"purged id enqueued inside its horizon", targets.PurgeForgetsIDs, purge, 4,
			traces.Result{}, traces.Result{Duplicate: true}},
		{"redriven dead letter fetched again", targets.RedriveKeepsAttempts, redrive, 9,
			traces.Result{}, traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 2}}},
	} {
		for _, b := range testBackends(t) {
			t.Run(c.name+"@"+string(b), func(t *testing.T) {
				storeRes, storeSnap := driveOn(t, targets.Store, b, c.steps)
				copyRes, copySnap := driveOn(t, targets.EligibilityCopy, b, c.steps)
				if d := cmp.Diff(storeRes, copyRes); d != "" {
					t.Errorf("eligibility-copy results differ from the store's (-store +copy):\n%s", d)
				}
				if d := cmp.Diff(storeSnap, copySnap); d != "" {
					t.Errorf("eligibility-copy snapshot differs from the store's (-store +copy):\n%s", d)
				}
				for i, r := range storeRes {
					if r.Err != "" && c.steps[i].Args.ID != "m9" {
						t.Errorf("store: step #%d %s: %s", i, c.steps[i].Op, r.Err)
					}
				}
				varRes, _ := driveOn(t, c.variant, b, c.steps)
				if d := cmp.Diff(c.correct, storeRes[c.at]); d != "" {
					t.Errorf("store: step #%d (-want +got):\n%s", c.at, d)
				}
				if d := cmp.Diff(c.broken, varRes[c.at]); d != "" {
					t.Errorf("%s: step #%d (-want +got):\n%s", c.variant, c.at, d)
				}
				if d := cmp.Diff(storeRes[:c.at], varRes[:c.at]); d != "" {
					t.Errorf("%s differs from the store before step #%d (-store +variant):\n%s", c.variant, c.at, d)
				}
			})
		}
	}
}
