package models

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/traces"
)

// Step builders for the table tests: each returns a step at time at with just the arguments the
// op takes. Tokens are model tokens (the first lease or claim gets 1, the next 2, ...).

func enqueue(at int64, mailbox, id string, max int) traces.Step {
	return traces.Step{Op: traces.OpEnqueue, At: at, Args: traces.Args{Mailbox: mailbox, ID: id, MaxAttempts: max}}
}

// keyed sets the key of an enqueue or outbox_enqueue step.
func keyed(st traces.Step, key string) traces.Step { st.Args.Key = key; return st }

// prio sets the priority of an enqueue step.
func prio(st traces.Step, p int) traces.Step { st.Args.Priority = p; return st }

// delayed sets the delay of an enqueue, nack, nack_by_id or outbox_fail step.
func delayed(st traces.Step, d int64) traces.Step { st.Args.Delay = d; return st }

// withPayload sets the payload of an enqueue or outbox_enqueue step.
func withPayload(st traces.Step, p string) traces.Step { st.Args.Payload = p; return st }

func lease(at int64, mailbox string, leaseFor int64) traces.Step {
	return traces.Step{Op: traces.OpLease, At: at, Args: traces.Args{Mailbox: mailbox, LeaseFor: leaseFor}}
}

func peek(at int64, mailbox string) traces.Step {
	return traces.Step{Op: traces.OpPeek, At: at, Args: traces.Args{Mailbox: mailbox}}
}

func ack(at int64, id string, token int) traces.Step {
	return traces.Step{Op: traces.OpAck, At: at, Args: traces.Args{ID: id, Token: token}}
}

func nack(at int64, id string, token int, delay int64) traces.Step {
	return traces.Step{Op: traces.OpNack, At: at, Args: traces.Args{ID: id, Token: token, Delay: delay}}
}

func ackByID(at int64, id string) traces.Step {
	return traces.Step{Op: traces.OpAckByID, At: at, Args: traces.Args{ID: id}}
}

func nackByID(at int64, id string, delay int64) traces.Step {
	return traces.Step{Op: traces.OpNackByID, At: at, Args: traces.Args{ID: id, Delay: delay}}
}

func extend(at int64, id string, token int, leaseFor int64) traces.Step {
	return traces.Step{Op: traces.OpExtend, At: at, Args: traces.Args{ID: id, Token: token, LeaseFor: leaseFor}}
}

func expire(at int64) traces.Step { return traces.Step{Op: traces.OpExpire, At: at} }

func deadLetterOp(at int64, id, reason string) traces.Step {
	return traces.Step{Op: traces.OpDeadLetter, At: at, Args: traces.Args{ID: id, Reason: reason}}
}

func outboxEnqueue(at int64, id, target string, max int) traces.Step {
	return traces.Step{Op: traces.OpOutboxEnqueue, At: at, Args: traces.Args{ID: id, Target: target, MaxAttempts: max}}
}

func outboxEnqueueMax(at int64, id, target string, max, maxDelivery int) traces.Step {
	s := outboxEnqueue(at, id, target, max)
	s.Args.MaxDeliveryAttempts = maxDelivery
	return s
}

func outboxDeadLetter(at int64, id string, token int, reason string) traces.Step {
	return traces.Step{Op: traces.OpOutboxDeadLetter, At: at, Args: traces.Args{ID: id, Token: token, Reason: reason}}
}

func deliverRetry(at int64, id string, token int, profile, fault string, retryDelay int64) traces.Step {
	s := deliver(at, id, token, profile, fault)
	s.Args.RetryDelay = retryDelay
	return s
}

func outboxClaim(at int64, limit int, claimFor int64) traces.Step {
	return traces.Step{Op: traces.OpOutboxClaim, At: at, Args: traces.Args{Limit: limit, ClaimFor: claimFor}}
}

func outboxComplete(at int64, id string, token int) traces.Step {
	return traces.Step{Op: traces.OpOutboxComplete, At: at, Args: traces.Args{ID: id, Token: token}}
}

func outboxFail(at int64, id string, token int, delay int64) traces.Step {
	return traces.Step{Op: traces.OpOutboxFail, At: at, Args: traces.Args{ID: id, Token: token, Delay: delay}}
}

func advance(at int64) traces.Step { return traces.Step{Op: traces.OpAdvanceClock, At: at} }

func fetch(at int64, worker int, mailbox, profile string, leaseFor int64) traces.Step {
	return traces.Step{Op: traces.OpConsumerFetch, At: at, Args: traces.Args{Worker: worker, Mailbox: mailbox, Profile: profile, LeaseFor: leaseFor}}
}

func handle(at int64, worker int, mailbox, profile, outcome string, retryDelay int64) traces.Step {
	return traces.Step{Op: traces.OpConsumerHandle, At: at, Args: traces.Args{Worker: worker, Mailbox: mailbox, Profile: profile, Outcome: outcome, RetryDelay: retryDelay}}
}

func deliver(at int64, id string, token int, profile, fault string) traces.Step {
	return traces.Step{Op: traces.OpPublisherDeliver, At: at, Args: traces.Args{Publisher: 1, ID: id, Token: token, Profile: profile, Fault: fault}}
}

func crash(at int64) traces.Step { return traces.Step{Op: traces.OpCrash, At: at} }

// Result builders.

var okR = traces.Result{}

func msg(id string, attempts, token int) traces.Result {
	return traces.Result{Message: &traces.Message{ID: id, Attempts: attempts, Token: token}}
}

func errR(kind string) traces.Result { return traces.Result{Err: kind} }

var (
	none       = traces.Result{}
	dup        = traces.Result{Duplicate: true}
	leaseLost  = errR(traces.ErrKindLeaseLost)
	notFound   = errR(traces.ErrKindNotFound)
	claimLost  = errR(traces.ErrKindClaimLost)
	actionIdle = action(traces.ActionIdle, 0)
)

func affected(n int) traces.Result { return traces.Result{Affected: n} }

func claimed(token int, rows ...traces.Claimed) traces.Result {
	for i := range rows {
		rows[i].Token = token
	}
	return traces.Result{Claimed: rows}
}

func row(id string, deliveryAttempts int) traces.Claimed {
	return traces.Claimed{ID: id, DeliveryAttempts: deliveryAttempts}
}

func action(a string, attempt int) traces.Result { return traces.Result{Action: a, Attempt: attempt} }

func delivered(a string, duplicate bool) traces.Result {
	return traces.Result{Action: a, Duplicate: duplicate}
}

// stepCase is one table test: steps run from Init(cfg); want holds every step's result; check, if
// set, looks at the final snapshot.
type stepCase struct {
	name  string
	cfg   Config
	steps []traces.Step
	want  []traces.Result
	check func(t *testing.T, snap traces.Snapshot)
}

func runCases(t *testing.T, cases []stepCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.want) != len(c.steps) {
				t.Fatalf("table error: %d steps but %d results", len(c.steps), len(c.want))
			}
			s, got, err := Run(c.cfg, c.steps)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			for i := range c.steps {
				if d := cmp.Diff(c.want[i], got[i]); d != "" {
					t.Errorf("step #%d %s at %d: result (-want +got):\n%s", i, DescribeOp(c.steps[i].Op, c.steps[i].Args), c.steps[i].At, d)
				}
			}
			if t.Failed() {
				t.Logf("final state:\n%s", DescribeState(s))
			}
			if c.check != nil {
				c.check(t, s.Snapshot())
			}
		})
	}
}

// findMessage returns the snapshot row of id, failing the test when it is absent.
func findMessage(t *testing.T, snap traces.Snapshot, id string) traces.MessageRow {
	t.Helper()
	for _, m := range snap.Messages {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("message %q not in snapshot %+v", id, snap.Messages)
	return traces.MessageRow{}
}

func findOutbox(t *testing.T, snap traces.Snapshot, id string) traces.OutboxRow {
	t.Helper()
	for _, o := range snap.Outbox {
		if o.ID == id {
			return o
		}
	}
	t.Fatalf("outbox row %q not in snapshot %+v", id, snap.Outbox)
	return traces.OutboxRow{}
}

func wantMessage(t *testing.T, snap traces.Snapshot, want traces.MessageRow) {
	t.Helper()
	if d := cmp.Diff(want, findMessage(t, snap, want.ID)); d != "" {
		t.Errorf("message %q (-want +got):\n%s", want.ID, d)
	}
}

func wantDead(t *testing.T, snap traces.Snapshot, want ...traces.DeadLetterRow) {
	t.Helper()
	if want == nil {
		want = []traces.DeadLetterRow{}
	}
	if d := cmp.Diff(want, snap.DeadLetters); d != "" {
		t.Errorf("dead letters (-want +got):\n%s", d)
	}
}

func wantEffects(t *testing.T, snap traces.Snapshot, want map[string][]string) {
	t.Helper()
	if d := cmp.Diff(want, snap.Effects); d != "" {
		t.Errorf("effects (-want +got):\n%s", d)
	}
}

func wantMalformed(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("error %v, want one wrapping ErrMalformed", err)
	}
}

func purgeOp(at, olderThan, horizon int64, limit int) traces.Step {
	return traces.Step{Op: traces.OpPurge, At: at, Args: traces.Args{OlderThan: olderThan, Horizon: horizon, Limit: limit}}
}
