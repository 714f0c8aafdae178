package replay_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// TestBoundsAgree cross-checks the one bound written twice: the trace format's MaxSeconds and the
// store's MaxDuration, and that a time plus a duration within them neither wraps in time.Duration
// nor in traces.At.
func TestBoundsAgree(t *testing.T) {
	if got := time.Duration(traces.MaxSeconds) * time.Second; got != actordelivery.MaxDuration {
		t.Fatalf("traces.MaxSeconds is %v, actordelivery.MaxDuration %v: one bound, two values", got, actordelivery.MaxDuration)
	}
	if traces.MaxInstant > math.MaxInt64/int64(time.Second) {
		t.Fatalf("traces.MaxInstant %d s does not fit a time.Duration", traces.MaxInstant)
	}
	if got := traces.At(traces.MaxInstant).Sub(traces.Epoch); got != time.Duration(traces.MaxInstant)*time.Second {
		t.Fatalf("traces.At(MaxInstant) is %v after the epoch, want %d s", got, traces.MaxInstant)
	}
	// The value that used to wrap: 9.3e9 s is past time.Duration's end, so At went into the past.
	if at := traces.At(9_300_000_000); !at.After(traces.Epoch) {
		t.Fatalf("traces.At(9.3e9) = %v, before the epoch: it wrapped", at)
	}
	if d := traces.Duration(9_300_000_000); d <= 0 || d < actordelivery.MaxDuration {
		t.Fatalf("traces.Duration(9.3e9) = %v: it wrapped instead of saturating", d)
	}
}

// TestStoreRefusesHugeDurations: a step whose duration is beyond the bound (a trace built in code,
// never validated) reaches the store as a saturated duration, which the store refuses with
// ErrInvalidArgument; nothing wraps into an immediate retry or a lease that ended in the past.
func TestStoreRefusesHugeDurations(t *testing.T) {
	ctx := context.Background()
	huge := int64(9_300_000_000)
	for _, c := range []struct {
		name  string
		steps []handStep
	}{
		{"enqueue delay", []handStep{{traces.OpEnqueue, 0, replay.Args{Mailbox: "a", ID: "m1", MaxAttempts: 1, Delay: huge}}}},
		{"lease_for", []handStep{{traces.OpEnqueue, 0, replay.Args{Mailbox: "a", ID: "m1", MaxAttempts: 1}}, {traces.OpLease, 0, replay.Args{Mailbox: "a", LeaseFor: huge}}}},
		{"nack_by_id delay", []handStep{{traces.OpEnqueue, 0, replay.Args{Mailbox: "a", ID: "m1", MaxAttempts: 2}}, {traces.OpNackByID, 0, replay.Args{ID: "m1", Delay: huge}}}},
		{"claim_for", []handStep{{traces.OpOutboxEnqueue, 0, replay.Args{ID: "o1", Target: "a", MaxAttempts: 1}}, {traces.OpOutboxClaim, 0, replay.Args{Limit: 1, ClaimFor: huge}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg, err := targets.New(targets.Store, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			for i, s := range c.steps {
				_, err = tg.Do(ctx, s.op, s.at, s.a)
				if i < len(c.steps)-1 && err != nil {
					t.Fatal(err)
				}
			}
			if !errors.Is(err, actordelivery.ErrInvalidArgument) {
				t.Fatalf("last step: %v; want ErrInvalidArgument", err)
			}
		})
	}
}
