package models

import (
	"errors"
	"testing"

	"github.com/pconform/pconform/traces"
)

// Step builders for the tests that build steps in Go (the step-by-step cases are scripts in
// testdata/script): each returns a step at time at with just the arguments the op takes. Tokens are model tokens (the first lease or claim gets 1, the next 2, ...).

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

func action(a string, attempt int) traces.Result { return traces.Result{Action: a, Attempt: attempt} }

func wantMalformed(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("error %v, want one wrapping ErrMalformed", err)
	}
}
