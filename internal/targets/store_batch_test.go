package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// TestStoreBatchHandle runs a batch fetch and handle on the real store, on both consumer paths,
// with and without commit_fails: a committed batch acknowledges the ok message with its effect,
// retries the failed one and dead-letters the fail_no_retry one with the single step's reason; a
// batch whose commit fails changes nothing at all (the snapshot before the handle is the snapshot
// after it) and every message reports commit_failed.
func TestStoreBatchHandle(t *testing.T) {
	ctx := context.Background()
	outcomes := []string{traces.OutcomeOK, traces.OutcomeFail, traces.OutcomeFailNoRetry}
	// The leased steps state no reason (the declined failure's is the default), the leaseless
	// ones the handler's own text.
	reasons := map[string][]string{traces.ProfileLeaseless: {"", "", "disk full"}}
	wantReason := map[string]string{traces.ProfileLeased: errHandlerFails.Error(), traces.ProfileLeaseless: "disk full"}
	for _, profile := range []string{traces.ProfileLeased, traces.ProfileLeaseless} {
		for _, fault := range []string{traces.FaultNone, traces.FaultCommitFails} {
			t.Run(profile+"/"+fault, func(t *testing.T) {
				tg, err := NewStoreTarget(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				defer tg.Close()
				do := stepAt0(ctx, t, tg)
				for _, id := range []string{"m1", "m2", "m3"} {
					do(traces.OpEnqueue, replay.Args{Mailbox: "mb", ID: id, Key: id, MaxAttempts: 3})
				}
				fetched := do(traces.OpConsumerFetchBatch, replay.Args{Worker: 1, Mailbox: "mb", Profile: profile, Size: 3, LeaseFor: 10})
				var ids []string
				for _, m := range fetched.Messages {
					ids = append(ids, m.ID)
					if (m.Token != "") != (profile == traces.ProfileLeased) {
						t.Errorf("fetched %s with token %q on the %s path", m.ID, m.Token, profile)
					}
				}
				if !slices.Equal(ids, []string{"m1", "m2", "m3"}) {
					t.Fatalf("fetched %v, want m1 m2 m3", ids)
				}
				before, err := tg.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got := do(traces.OpConsumerHandleBatch, replay.Args{Worker: 1, Mailbox: "mb", Profile: profile,
					Outcomes: outcomes, Fault: fault, RetryDelay: 5, Reasons: reasons[profile]})
				after, err := tg.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if fault == traces.FaultCommitFails {
					want := []string{traces.ActionCommitFailed, traces.ActionCommitFailed, traces.ActionCommitFailed}
					if !slices.Equal(got.Actions, want) {
						t.Errorf("actions %v, want %v", got.Actions, want)
					}
					if d := cmp.Diff(before, after); d != "" {
						t.Errorf("the failed commit changed the store (-before +after):\n%s", d)
					}
					return
				}
				want := []string{traces.ActionAcked, traces.ActionRetried, traces.ActionDeadLettered}
				if !slices.Equal(got.Actions, want) {
					t.Errorf("actions %v, want %v", got.Actions, want)
				}
				if !slices.Equal(after.Effects["mb"], []string{"m1"}) {
					t.Errorf("effects %v, want [m1]", after.Effects["mb"])
				}
				if len(after.DeadLetters) != 1 || after.DeadLetters[0].ID != "m3" || after.DeadLetters[0].Reason != wantReason[profile] {
					t.Errorf("dead letters %+v, want m3 with reason %q", after.DeadLetters, wantReason[profile])
				}
				// The batch is handled: a second handle finds none, as the model's idle worker.
				if o := do(traces.OpConsumerHandleBatch, replay.Args{Worker: 1, Mailbox: "mb", Profile: profile, Outcomes: outcomes}); len(o.Actions) != 0 {
					t.Errorf("second handle: actions %v, want none", o.Actions)
				}
			})
		}
	}
}

// TestStoreBatchUnsupported: a variant that replaces Consumer.Handle has no batch handle, and
// says so instead of running the store's own.
func TestStoreBatchUnsupported(t *testing.T) {
	tg, err := New(UnfencedAck, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if tg.(interface{ Capabilities() replay.Capabilities }).Capabilities().Supports(traces.OpConsumerHandleBatch) {
		t.Error("a replaced Consumer.Handle claims a batch handle")
	}
	ctx := context.Background()
	for _, s := range []struct {
		op traces.Op
		a  replay.Args
	}{
		{traces.OpEnqueue, replay.Args{Mailbox: "mb", ID: "m1", MaxAttempts: 2}},
		{traces.OpConsumerFetchBatch, replay.Args{Worker: 1, Mailbox: "mb", Profile: traces.ProfileLeased, Size: 2, LeaseFor: 2}},
	} {
		if _, err := tg.Do(ctx, s.op, 0, s.a); err != nil {
			t.Fatalf("%s: %v", s.op, err)
		}
	}
	_, err = tg.Do(ctx, traces.OpConsumerHandleBatch, 0, replay.Args{Worker: 1, Mailbox: "mb", Profile: traces.ProfileLeased, Outcomes: []string{traces.OutcomeOK}})
	if !errors.Is(err, replay.ErrUnsupported) {
		t.Errorf("batch handle on %s: %v, want ErrUnsupported", UnfencedAck, err)
	}
	st, err := NewStoreTarget(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if u := st.Capabilities().Unsupported; len(u) != 0 {
		t.Errorf("the store declares %v unsupported, want none", u)
	}
}

// TestStoreBatchFetchCopy: the copied batch fetch (eligibility-copy, rules unchanged) takes what
// the store's takes, one message per key, on both paths; batch-skips-key-head's takes the key's
// next message behind the head the same batch leased.
func TestStoreBatchFetchCopy(t *testing.T) {
	ctx := context.Background()
	fetch := func(t *testing.T, name, profile string) []string {
		tg, err := New(name, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close()
		for _, id := range []string{"m1", "m2", "m3"} {
			key := "k1"
			if id == "m3" {
				key = ""
			}
			if _, err := tg.Do(ctx, traces.OpEnqueue, 0, replay.Args{Mailbox: "mb", ID: id, Key: key, MaxAttempts: 2}); err != nil {
				t.Fatal(err)
			}
		}
		o, err := tg.Do(ctx, traces.OpConsumerFetchBatch, 0, replay.Args{Worker: 1, Mailbox: "mb", Profile: profile, Size: 3, LeaseFor: 2})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range o.Messages {
			ids = append(ids, fmt.Sprintf("%s@%d", m.ID, m.Attempts))
		}
		return ids
	}
	for _, profile := range []string{traces.ProfileLeased, traces.ProfileLeaseless} {
		want := fetch(t, Store, profile)
		if got := fetch(t, EligibilityCopy, profile); !slices.Equal(got, want) {
			t.Errorf("%s: the copy fetched %v, the store %v", profile, got, want)
		}
	}
	if got, want := fetch(t, BatchSkipsKeyHead, traces.ProfileLeased), []string{"m1@1", "m2@1", "m3@1"}; !slices.Equal(got, want) {
		t.Errorf("%s fetched %v, want %v", BatchSkipsKeyHead, got, want)
	}
}

// stepAt0 runs steps on tg at time 0, failing t on an error.
func stepAt0(ctx context.Context, t *testing.T, tg replay.Target) func(traces.Op, replay.Args) replay.Observation {
	return func(op traces.Op, a replay.Args) replay.Observation {
		t.Helper()
		o, err := tg.Do(ctx, op, 0, a)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		return o
	}
}
