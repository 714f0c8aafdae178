package bridge

import (
	"testing"

	"github.com/pconform/pconform/traces"
)

// TestSpecDeriverFailedHandle: a single handle whose commit fails raises its observation, with
// its fault, and nothing else (no eSpecHandled, no row: it changed nothing), as the P model's
// store announces it (PSrc/Store.p); the worker no longer holds its fetch, so its next handle
// handles nothing either. Rows: at, mailbox, id, key, priority, payload, state, attempts,
// max_attempts, available_at, token, lease_until, seq.
func TestSpecDeriverFailedHandle(t *testing.T) {
	enq := traces.Step{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 2}}
	fetch := func(at int64, profile string, m *traces.Message) traces.Step {
		return traces.Step{Op: traces.OpConsumerFetch, At: at, Args: traces.Args{Worker: 1, Mailbox: "a", Profile: profile, LeaseFor: 5},
			Result: traces.Result{Message: m}}
	}
	handle := func(at int64, profile, outcome, fault, action string) traces.Step {
		return traces.Step{Op: traces.OpConsumerHandle, At: at, Args: traces.Args{Worker: 1, Mailbox: "a", Profile: profile, Outcome: outcome, Fault: fault},
			Result: traces.Result{Action: action}}
	}
	declined := traces.Step{Op: traces.OpConsumerHandle, At: 2, Args: traces.Args{Worker: 1, Mailbox: "a", Profile: "leased",
		Outcome: traces.OutcomeFailNoRetry, Reason: "disk full"}, Result: traces.Result{Action: traces.ActionDeadLettered, Attempt: 1}}
	for _, tc := range []struct {
		name  string
		steps []traces.Step
		want  [][]string // per step
	}{
		{"leased", []traces.Step{
			enq,
			fetch(1, "leased", &traces.Message{ID: "m1", Attempts: 1, Token: 1}),
			handle(2, "leased", "ok", "commit_fails", "commit_failed"),
			handle(2, "leased", "ok", "", "idle"),
		}, [][]string{
			{"MsgInserted a m1", "Row a m1  0  ready 0 2 0 0 0 1"},
			{"ConsumerFetch 1 a leased 5 m1 1 1 false", "Row a m1  0  ready 1 2 0 1 6 1", "Leased a m1"},
			{"ConsumerHandle 1 a leased ok 0 commit_fails  commit_failed 0 false"},
			{"ConsumerHandle 1 a leased ok 0   idle 0 false"},
		}},
		{"leaseless", []traces.Step{
			enq,
			fetch(1, "leaseless", &traces.Message{ID: "m1"}),
			handle(2, "leaseless", "fail", "commit_fails", "commit_failed"),
		}, [][]string{
			{"MsgInserted a m1", "Row a m1  0  ready 0 2 0 0 0 1"},
			{"ConsumerFetch 1 a leaseless 5 m1 0 0 false"},
			{"ConsumerHandle 1 a leaseless fail 0 commit_fails  commit_failed 0 false"},
		}},
		{"declined with the handler's text", []traces.Step{
			enq,
			fetch(1, "leased", &traces.Message{ID: "m1", Attempts: 1, Token: 1}),
			declined,
		}, [][]string{
			{"MsgInserted a m1", "Row a m1  0  ready 0 2 0 0 0 1"},
			{"ConsumerFetch 1 a leased 5 m1 1 1 false", "Row a m1  0  ready 1 2 0 1 6 1", "Leased a m1"},
			{"ConsumerHandle 1 a leased fail_no_retry 0  disk full dead_lettered 1 false", "Handled 1 m1 1 dead_lettered", "DeadLettered a m1 1 2 disk full"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkDerived(t, tc.steps, tc.want)
		})
	}
}
