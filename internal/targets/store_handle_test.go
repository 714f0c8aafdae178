package targets

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// TestStoreHandleCommitFails runs a single handle whose commit fails on the correct store and on
// every target whose broken consumer replaces Consumer.Handle, on both paths and for each
// handler outcome: it reports commit_failed with attempt 0, changes nothing at all (the snapshot
// before the handle is the snapshot after it), and leaves the worker holding nothing (its next
// handle is idle).
func TestStoreHandleCommitFails(t *testing.T) {
	ctx := context.Background()
	names := []string{Store}
	for name, b := range builds() {
		if b.store.handle != nil {
			names = append(names, name)
		}
	}
	if len(names) < 2 {
		t.Fatalf("no target replaces Consumer.Handle: %v", names)
	}
	for _, name := range names {
		for _, profile := range []string{traces.ProfileLeased, traces.ProfileLeaseless} {
			for _, outcome := range []string{traces.OutcomeOK, traces.OutcomeFail, traces.OutcomeFailNoRetry} {
				t.Run(name+"/"+profile+"/"+outcome, func(t *testing.T) {
					tg, err := New(name, t.TempDir())
					if err != nil {
						t.Fatal(err)
					}
					defer tg.Close()
					do := stepAt0(ctx, t, tg)
					do(traces.OpEnqueue, replay.Args{Mailbox: "mb", ID: "m1", MaxAttempts: 2})
					if got := do(traces.OpConsumerFetch, replay.Args{Worker: 1, Mailbox: "mb", Profile: profile, LeaseFor: 10}); got.Message == nil {
						t.Fatal("the fetch got nothing")
					}
					before, err := tg.Snapshot(ctx)
					if err != nil {
						t.Fatal(err)
					}
					handle := replay.Args{Worker: 1, Mailbox: "mb", Profile: profile, Outcome: outcome, Fault: traces.FaultCommitFails, RetryDelay: 3}
					if got := do(traces.OpConsumerHandle, handle); got.Action != traces.ActionCommitFailed || got.Attempt != 0 {
						t.Errorf("the failed handle reported %q attempt %d, want commit_failed attempt 0", got.Action, got.Attempt)
					}
					after, err := tg.Snapshot(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if d := cmp.Diff(before, after); d != "" {
						t.Errorf("the failed commit changed the store (-before +after):\n%s", d)
					}
					handle.Fault = ""
					if got := do(traces.OpConsumerHandle, handle); got.Action != traces.ActionIdle {
						t.Errorf("the next handle reported %q, want idle: the worker still held its fetch", got.Action)
					}
				})
			}
		}
	}
}

// TestStoreDeclinedReason: a consumer_handle whose retry policy declines dead-letters with the
// reason the step states (the handler's error text), or errHandlerFails' when it states none.
func TestStoreDeclinedReason(t *testing.T) {
	ctx := context.Background()
	for _, profile := range []string{traces.ProfileLeased, traces.ProfileLeaseless} {
		for _, reason := range []string{"", "disk full"} {
			t.Run(profile+"/"+reason, func(t *testing.T) {
				tg, err := NewStoreTarget(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				defer tg.Close()
				do := stepAt0(ctx, t, tg)
				do(traces.OpEnqueue, replay.Args{Mailbox: "mb", ID: "m1", MaxAttempts: 3})
				do(traces.OpConsumerFetch, replay.Args{Worker: 1, Mailbox: "mb", Profile: profile, LeaseFor: 10})
				got := do(traces.OpConsumerHandle, replay.Args{Worker: 1, Mailbox: "mb", Profile: profile, Outcome: traces.OutcomeFailNoRetry, Reason: reason})
				if got.Action != traces.ActionDeadLettered {
					t.Fatalf("the handle reported %q, want dead_lettered", got.Action)
				}
				after, err := tg.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				want := reason
				if want == "" {
					want = errHandlerFails.Error()
				}
				if len(after.DeadLetters) != 1 || after.DeadLetters[0].Reason != want {
					t.Errorf("dead letters %+v, want m1 with reason %q", after.DeadLetters, want)
				}
			})
		}
	}
}
