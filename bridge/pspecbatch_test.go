package bridge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// short renders ev as its event's name without the "eSpec"/"eObs" prefix and its values,
// separated by spaces, the at value left out.
func short(ev SpecEvent) string {
	name := strings.TrimPrefix(strings.TrimPrefix(SpecEventTypes[ev.Kind].Event, "eSpec"), "eObs")
	var b strings.Builder
	b.WriteString(name)
	for _, v := range ev.Values[1:] {
		fmt.Fprintf(&b, " %v", v)
	}
	return b.String()
}

// TestSpecDeriverBatchSteps: the spec events of each batch step, as the P model's store
// announces them for the same step (PSrc/Store.p): the step's observation first; a leased batch's rows in creation order, then
// its leases; a batch handle's eSpecHandled per committed part, then its rows, its dead letters;
// the effect of an acknowledged part owed until the worker's next step, which commits it (the
// correct store's single commit) unless that step is the worker's effects commit, whose failure
// leaves it unpaid; a failed handler's acknowledged part owes none; a batch delivery's inserted
// messages before its completions. Rows: at, mailbox, id, key, priority, payload, state, attempts,
// max_attempts, available_at, token, lease_until, seq.
func TestSpecDeriverBatchSteps(t *testing.T) {
	enq := func(id, key string) traces.Step {
		return traces.Step{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "a", ID: id, Key: key, MaxAttempts: 2}}
	}
	fetchBatch := func(at int64, w int, profile string, msgs ...traces.Message) traces.Step {
		return traces.Step{Op: traces.OpConsumerFetchBatch, At: at, Args: traces.Args{Worker: w, Mailbox: "a", Profile: profile, Size: 4, LeaseFor: 5},
			Result: traces.Result{Messages: msgs}}
	}
	handleBatch := func(at int64, w int, profile, fault string, outcomes, actions []string) traces.Step {
		return traces.Step{Op: traces.OpConsumerHandleBatch, At: at, Args: traces.Args{Worker: w, Mailbox: "a", Profile: profile, Fault: fault,
			Outcomes: outcomes, RetryDelay: 3}, Result: traces.Result{Actions: actions}}
	}
	effects := func(at int64, w int, fault string, ids ...string) traces.Step {
		return traces.Step{Op: traces.OpConsumerEffectsBatch, At: at, Args: traces.Args{Worker: w, Mailbox: "a", Fault: fault},
			Result: traces.Result{Effects: ids}}
	}
	l := func(ss ...string) []string { return ss }
	for _, tc := range []struct {
		name  string
		steps []traces.Step
		want  [][]string // per step
	}{
		{"leased batch acked, retried, dead-lettered; effect paid by the next fetch", []traces.Step{
			enq("m1", ""), enq("m2", "k"), enq("m3", ""),
			fetchBatch(1, 1, "leased", traces.Message{ID: "m2", Attempts: 1, Token: 7}, traces.Message{ID: "m1", Attempts: 1, Token: 8},
				traces.Message{ID: "m3", Attempts: 1, Token: 9}),
			handleBatch(2, 1, "leased", "none", l("ok", "fail", "fail_no_retry"), l("acked", "retried", "dead_lettered")),
			fetchBatch(3, 1, "leased"),
		}, [][]string{
			{"MsgInserted a m1", "Row a m1  0  ready 0 2 0 0 0 1"},
			{"MsgInserted a m2", "Row a m2 k 0  ready 0 2 0 0 0 2"},
			{"MsgInserted a m3", "Row a m3  0  ready 0 2 0 0 0 3"},
			{"ConsumerFetchBatch 1 a leased 4 5 3 a m2 1 2 7 a m1 1 2 8 a m3 1 2 9 false",
				"Row a m1  0  ready 1 2 0 8 6 1", "Row a m2 k 0  ready 1 2 0 7 6 2", "Row a m3  0  ready 1 2 0 9 6 3",
				"Leased a m1", "Leased a m2", "Leased a m3"},
			{"ConsumerHandleBatch 1 a leased 3 ok fail fail_no_retry 3 none 3 acked retried dead_lettered false",
				"Handled 1 m2 7 acked", "Handled 1 m1 8 retried", "Handled 1 m3 9 dead_lettered",
				"Row a m1  0  ready 1 2 5 0 0 1", "Row a m2 k 0  acked 1 2 0 0 0 2",
				"DeadLettered a m3 1 2 handler failed"},
			{"Effect a m2", "ConsumerFetchBatch 1 a leased 4 5 0 false"},
		}},
		{"ack before effects: the failed effects commit pays nothing", []traces.Step{
			enq("m1", ""),
			fetchBatch(1, 1, "leased", traces.Message{ID: "m1", Attempts: 1, Token: 1}),
			handleBatch(2, 1, "leased", "none", l("ok"), l("acked")),
			effects(3, 1, "commit_fails", "m1"),
			fetchBatch(4, 1, "leased"),
		}, [][]string{
			{"MsgInserted a m1", "Row a m1  0  ready 0 2 0 0 0 1"},
			{"ConsumerFetchBatch 1 a leased 4 5 1 a m1 1 2 1 false", "Row a m1  0  ready 1 2 0 1 6 1", "Leased a m1"},
			{"ConsumerHandleBatch 1 a leased 1 ok 3 none 1 acked false", "Handled 1 m1 1 acked", "Row a m1  0  acked 1 2 0 0 0 1"},
			nil,
			{"ConsumerFetchBatch 1 a leased 4 5 0 false"},
		}},
		{"a failed handler's part acked owes no effect; a failed commit changes nothing", []traces.Step{
			enq("m1", ""), enq("m2", ""),
			fetchBatch(1, 1, "leased", traces.Message{ID: "m1", Attempts: 1, Token: 1}, traces.Message{ID: "m2", Attempts: 1, Token: 2}),
			handleBatch(2, 1, "leased", "commit_fails", l("ok", "ok"), l("commit_failed", "commit_failed")),
			fetchBatch(7, 1, "leased", traces.Message{ID: "m1", Attempts: 2, Token: 3}),
			handleBatch(8, 1, "leased", "none", l("fail"), l("acked")),
			{Op: traces.OpCrash, At: 9},
		}, [][]string{
			{"MsgInserted a m1", "Row a m1  0  ready 0 2 0 0 0 1"},
			{"MsgInserted a m2", "Row a m2  0  ready 0 2 0 0 0 2"},
			{"ConsumerFetchBatch 1 a leased 4 5 2 a m1 1 2 1 a m2 1 2 2 false",
				"Row a m1  0  ready 1 2 0 1 6 1", "Row a m2  0  ready 1 2 0 2 6 2", "Leased a m1", "Leased a m2"},
			{"ConsumerHandleBatch 1 a leased 2 ok ok 3 commit_fails 2 commit_failed commit_failed false"},
			// The sweep takes both leases off; m1 is leased again.
			{"ConsumerFetchBatch 1 a leased 4 5 1 a m1 2 2 3 false",
				"Row a m1  0  ready 1 2 0 0 0 1", "Row a m2  0  ready 1 2 0 0 0 2", "Row a m1  0  ready 2 2 0 3 12 1", "Leased a m1"},
			{"ConsumerHandleBatch 1 a leased 1 fail 3 none 1 acked false", "Handled 1 m1 3 acked", "Row a m1  0  acked 2 2 0 0 0 1"},
			{"Crash"},
		}},
		{"leaseless batch: a peek, a dead letter counting the bump, a retry the result does not state", []traces.Step{
			enq("m1", ""), enq("m2", ""),
			fetchBatch(1, 2, "leaseless", traces.Message{ID: "m1", Attempts: 1}, traces.Message{ID: "m2", Attempts: 0}),
			handleBatch(2, 2, "leaseless", "none", l("fail", "fail"), l("dead_lettered", "retried")),
		}, [][]string{
			{"MsgInserted a m1", "Row a m1  0  ready 0 2 0 0 0 1"},
			{"MsgInserted a m2", "Row a m2  0  ready 0 2 0 0 0 2"},
			{"ConsumerFetchBatch 2 a leaseless 4 0 2 a m1 1 2 0 a m2 0 2 0 false", "Row a m1  0  ready 1 2 0 0 0 1"},
			{"ConsumerHandleBatch 2 a leaseless 2 fail fail 3 none 2 dead_lettered retried false",
				"Handled 2 m1 0 dead_lettered", "Handled 2 m2 0 retried", "Row a m2  0  unstated 0 2 0 0 0 2",
				"DeadLettered a m1 2 2 max attempts reached"},
		}},
		{"batch delivery: inserts, then completions", []traces.Step{
			{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o1", Target: "b", MaxAttempts: 3}},
			{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o2", Target: "b", MaxAttempts: 3}},
			{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o3", Target: "b", MaxAttempts: 3}},
			{Op: traces.OpPublisherDeliverBatch, At: 1, Args: traces.Args{Publisher: 1, IDs: []string{"o1", "o2", "o3"}, Token: 4, Fault: "none"},
				Result: traces.Result{Actions: []string{"delivered", "claim_lost", "delivered"}, Duplicates: []bool{false, false, true}}},
		}, [][]string{
			{"OutboxEnqueued o1 b", "OutboxRow o1 b  0 3  pending 0 0 0 0 0 10 "},
			{"OutboxEnqueued o2 b", "OutboxRow o2 b  0 3  pending 0 0 0 0 0 10 "},
			{"OutboxEnqueued o3 b", "OutboxRow o3 b  0 3  pending 0 0 0 0 0 10 "},
			{"MsgInserted b o1", "Row b o1  0  ready 0 3 1 0 0 1", "OutboxCompleted o1 b", "OutboxCompleted o3 b"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := checkDerived(t, tc.steps, tc.want)
			if evs := d.Flush(nil); len(evs) != 0 {
				t.Errorf("owed at the end: %v", evs)
			}
		})
	}
}

// checkDerived runs a fresh SpecDeriver over steps and requires, per step, the spec events want
// gives it (each as short writes it), each fitting its event's declaration. It returns the
// deriver, for what the caller asks of it after the steps.
func checkDerived(t *testing.T, steps []traces.Step, want [][]string) *SpecDeriver {
	t.Helper()
	d := NewSpecDeriver(profile.Profile{})
	var evs []SpecEvent
	for i, st := range steps {
		evs = d.Step(st, evs[:0])
		var got []string
		for _, ev := range evs {
			if err := fits(ev); err != "" {
				t.Fatalf("step %d: %s: %s", i, short(ev), err)
			}
			got = append(got, short(ev))
		}
		if strings.Join(got, "\n") != strings.Join(want[i], "\n") {
			t.Errorf("step %d (%s): got\n\t%s\nwant\n\t%s", i, st.Op, strings.Join(got, "\n\t"), strings.Join(want[i], "\n\t"))
		}
	}
	return d
}
