package replay_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

type handStep struct {
	op traces.Op
	at int64
	a  replay.Args
}

// TestLeaseBoundaryTargets drives the lease-boundary targets, the eligibility copy and the store,
// on every backend, through the lease boundary by hand: where a lease with lease_until == now, or one second before it, is live or
// expired, and through every path that reads the rule (lease, peek, expire, both consumer fetches).
// Observations are compared without tokens, which differ between targets.
func TestLeaseBoundaryTargets(t *testing.T) {
	enqueue := handStep{traces.OpEnqueue, 0, replay.Args{Mailbox: "a", ID: "m1", MaxAttempts: 3}}
	lease2 := handStep{traces.OpLease, 0, replay.Args{Mailbox: "a", LeaseFor: 2}}
	got := func(id string, attempts int) replay.Observation {
		return replay.Observation{Message: &replay.Message{ID: id, Attempts: attempts}}
	}
	none := replay.Observation{}
	for _, c := range []struct {
		name  string
		steps []handStep
		// want is the last step's observation per target: store, eligibility-copy,
		// lease-boundary, lease-early.
		want [4]replay.Observation
	}{
		{"lease at lease_until", []handStep{enqueue, lease2, {traces.OpLease, 2, replay.Args{Mailbox: "a", LeaseFor: 1}}},
			[4]replay.Observation{got("m1", 2), got("m1", 2), none, got("m1", 2)}},
		{"lease a second before lease_until", []handStep{enqueue, lease2, {traces.OpLease, 1, replay.Args{Mailbox: "a", LeaseFor: 1}}},
			[4]replay.Observation{none, none, none, got("m1", 2)}},
		{"peek at lease_until", []handStep{enqueue, lease2, {traces.OpPeek, 2, replay.Args{Mailbox: "a"}}},
			[4]replay.Observation{got("m1", 1), got("m1", 1), none, got("m1", 1)}},
		{"expire at lease_until", []handStep{enqueue, lease2, {traces.OpExpire, 2, replay.Args{}}},
			[4]replay.Observation{{Affected: 1}, {Affected: 1}, {}, {Affected: 1}}},
		{"expire a second before lease_until", []handStep{enqueue, lease2, {traces.OpExpire, 1, replay.Args{}}},
			[4]replay.Observation{{}, {}, {}, {Affected: 1}}},
		{"leased fetch at lease_until", []handStep{enqueue,
			{traces.OpConsumerFetch, 0, replay.Args{Worker: 1, Mailbox: "a", Profile: "leased", LeaseFor: 2}},
			{traces.OpConsumerFetch, 2, replay.Args{Worker: 2, Mailbox: "a", Profile: "leased", LeaseFor: 2}}},
			[4]replay.Observation{got("m1", 2), got("m1", 2), none, got("m1", 2)}},
		{"leaseless fetch at lease_until", []handStep{enqueue, lease2,
			{traces.OpConsumerFetch, 2, replay.Args{Worker: 1, Mailbox: "a", Profile: "leaseless"}}},
			[4]replay.Observation{got("m1", 1), got("m1", 1), none, got("m1", 1)}},
		{"keyed head leased until now blocks", []handStep{
			{traces.OpEnqueue, 0, replay.Args{Mailbox: "a", ID: "m1", Key: "k", MaxAttempts: 1}},
			{traces.OpEnqueue, 0, replay.Args{Mailbox: "a", ID: "m2", Key: "k", MaxAttempts: 1}},
			lease2, {traces.OpPeek, 2, replay.Args{Mailbox: "a"}}},
			[4]replay.Observation{got("m2", 0), got("m2", 0), none, got("m2", 0)}},
		{"handle after a boundary fetch", []handStep{enqueue,
			{traces.OpConsumerFetch, 0, replay.Args{Worker: 1, Mailbox: "a", Profile: "leased", LeaseFor: 2}},
			{traces.OpConsumerHandle, 1, replay.Args{Worker: 1, Mailbox: "a", Profile: "leased", Outcome: "fail", RetryDelay: 1}}},
			[4]replay.Observation{{Action: "retried", Attempt: 1}, {Action: "retried", Attempt: 1}, {Action: "retried", Attempt: 1}, {Action: "retried", Attempt: 1}}},
	} {
		for _, b := range testBackends(t) {
			t.Run(c.name+"@"+string(b), func(t *testing.T) {
				for i, target := range []string{targets.Store, targets.EligibilityCopy, targets.LeaseBoundary, targets.LeaseEarly} {
					tg, err := targets.NewOn(target, storeDB(t, b))
					if err != nil {
						t.Fatal(err)
					}
					var last replay.Observation
					for _, s := range c.steps {
						if last, err = tg.Do(context.Background(), s.op, s.at, s.a); err != nil {
							t.Fatalf("%s on %s: %s: %v", target, b, s.op, err)
						}
					}
					if last.Message != nil {
						last.Message.Token = ""
					}
					if diff := cmp.Diff(c.want[i], last); diff != "" {
						t.Errorf("%s on %s: last step (-want +got):\n%s", target, b, diff)
					}
					if err := tg.Close(); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
}

// TestLeaseBoundaryEffects checks that a store target fetching through the copied SQL records handler
// effects exactly as replay's store target does: with the acknowledgement, and rolled back with a
// failure.
func TestLeaseBoundaryEffects(t *testing.T) {
	for _, b := range testBackends(t) {
		for _, target := range []string{targets.Store, targets.EligibilityCopy} {
			tg, err := targets.NewOn(target, storeDB(t, b))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, s := range []handStep{
				{traces.OpEnqueue, 0, replay.Args{Mailbox: "a", ID: "m1", MaxAttempts: 2}},
				{traces.OpEnqueue, 0, replay.Args{Mailbox: "a", ID: "m2", MaxAttempts: 2}},
				{traces.OpConsumerFetch, 0, replay.Args{Worker: 1, Mailbox: "a", Profile: "leased", LeaseFor: 2}},
				{traces.OpConsumerHandle, 0, replay.Args{Worker: 1, Mailbox: "a", Profile: "leased", Outcome: "ok"}},
				{traces.OpConsumerFetch, 0, replay.Args{Worker: 1, Mailbox: "a", Profile: "leased", LeaseFor: 2}},
				{traces.OpCrash, 0, replay.Args{}},
				{traces.OpConsumerHandle, 0, replay.Args{Worker: 1, Mailbox: "a", Profile: "leased", Outcome: "ok"}},
			} {
				if _, err := tg.Do(ctx, s.op, s.at, s.a); err != nil {
					t.Fatalf("%s on %s: %s: %v", target, b, s.op, err)
				}
			}
			snap, err := tg.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string][]string{"a": {"m1"}}; !cmp.Equal(snap.Effects, want) {
				t.Errorf("%s on %s: effects %v, want %v", target, b, snap.Effects, want)
			}
			if i := slices.IndexFunc(snap.Messages, func(m replay.MessageRow) bool { return m.ID == "m2" }); i < 0 || snap.Messages[i].Token == "" {
				t.Errorf("%s: m2 should still carry the lease the crashed worker took: %+v", target, snap.Messages)
			}
			if err := tg.Close(); err != nil {
				t.Error(err)
			}
		}
	}
}
