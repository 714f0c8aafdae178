package bridge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/traces"
)

// observedSplitWrite is an observed history of the split-write bug: the enqueue's commit failed,
// the broken publisher completed the row anyway, then a fold delivery of another row.
func observedSplitWrite() *traces.Trace {
	return &traces.Trace{Format: traces.Format, Name: "split-write-observed", Origin: traces.Origin{Kind: traces.OriginObserved},
		Expect: traces.Expect{Variant: "split-write", DivergesAt: -1},
		Steps: []traces.Step{
			{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o1", Target: "inbox", MaxAttempts: 2}},
			{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o2", Target: "inbox", MaxAttempts: 2}},
			{Op: traces.OpOutboxClaim, Args: traces.Args{Limit: 2, ClaimFor: 5}, Result: traces.Result{Claimed: []traces.Claimed{
				{ID: "o1", DeliveryAttempts: 1, Token: 1}, {ID: "o2", DeliveryAttempts: 1, Token: 1}}}},
			{Op: traces.OpPublisherDeliver, At: 1, Args: traces.Args{Publisher: 1, ID: "o2", Token: 1, Profile: "fold", Fault: "none"},
				Result: traces.Result{Action: traces.ActionDelivered}},
			{Op: traces.OpConsumerFetch, At: 1, Args: traces.Args{Worker: 1, Mailbox: "inbox", Profile: "leaseless"},
				Result: traces.Result{Message: &traces.Message{ID: "o2"}}},
			{Op: traces.OpConsumerHandle, At: 2, Args: traces.Args{Worker: 1, Mailbox: "inbox", Profile: "leaseless", Outcome: "ok"},
				Result: traces.Result{Action: traces.ActionAcked}},
			{Op: traces.OpOutboxComplete, At: 2, Args: traces.Args{ID: "o1", Token: 1}},
		}}
}

// TestObservedDriver: the driver announces the spec events the observed results state, in
// order, and asserts the project's monitors.
func TestObservedDriver(t *testing.T) {
	src, err := bridge.ObservedDriver(observedSplitWrite())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`announce eSpecOutboxEnqueued, (at = 0, id = "o1", target = "inbox");`,
		`announce eSpecOutboxEnqueued, (at = 0, id = "o2", target = "inbox");`,
		`announce eSpecMsgInserted, (at = 1, mailbox = "inbox", id = "o2");`,
		`announce eSpecOutboxCompleted, (at = 1, id = "o2", target = "inbox");`,
		`announce eSpecEffect, (at = 2, mailbox = "inbox", id = "o2");`,
		`announce eSpecOutboxCompleted, (at = 2, id = "o1", target = "inbox");`,
		`test tcObservedHistory0000 [main=ObservedHistory0000]: assert OutboxCompletionImpliesDelivery, OutboxTargetDeliveredAtMostOnce, EffectAppliedAtMostOnce, AttemptsNeverExceedMax in { ObservedHistory0000 };`,
	}
	at := 0
	for _, w := range want {
		i := strings.Index(src[at:], w)
		if i < 0 {
			t.Fatalf("driver lacks, in order, %s\n%s", w, src)
		}
		at += i + len(w)
	}
	bad := observedSplitWrite()
	bad.Steps[0].Args.ID = `o"1`
	if _, err := bridge.ObservedDriver(bad); err == nil || !strings.Contains(err.Error(), "cannot be written into P") {
		t.Fatalf("an id with a quote: %v", err)
	}
}

// TestCheckObservedOnTheChecker compiles the drivers of the split-write history and of the same
// history without the broken completion with the project's own monitors and runs the real P
// checker: the first is refused in the monitor's words, the second holds. -short skips it.
func TestCheckObservedOnTheChecker(t *testing.T) {
	requireP(t)
	if testing.Short() {
		t.Skip("-short: skipping the P compile and checker run")
	}
	good := observedSplitWrite()
	good.Name = "fold-only"
	good.Steps = good.Steps[:len(good.Steps)-1]
	msgs, err := bridge.CheckObservedAll(context.Background(), bridge.Config{ProjectDir: modelsDir}, []*traces.Trace{observedSplitWrite(), good})
	if err != nil {
		t.Fatal(err)
	}
	if want := "outbox row o1 completed at t=2 but no message o1 was ever enqueued in mailbox inbox"; msgs[0] != want {
		t.Errorf("split-write history: %q, want %q", msgs[0], want)
	}
	if msgs[1] != "" {
		t.Errorf("the history without the broken completion: %q, want every monitor to hold", msgs[1])
	}
}
