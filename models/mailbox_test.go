package models

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/traces"
)

const (
	leased    = traces.ProfileLeased
	leaseless = traces.ProfileLeaseless
)

func TestMailbox(t *testing.T) {
	runCases(t, []stepCase{
		{
			// The ready index holds the first lease's end twice (lease, nack, the same lease
			// again): expire still counts the row once.
			name:  "a lease taken twice with the same end expires once",
			steps: []traces.Step{enqueue(0, "a", "m1", 3), lease(0, "a", 5), nack(0, "m1", 1, 0), lease(0, "a", 5), expire(5), peek(5, "a")},
			want:  []traces.Result{okR, msg("m1", 1, 1), okR, msg("m1", 2, 2), affected(1), msg("m1", 2, 0)},
		},
		{
			name:  "enqueue lease ack",
			steps: []traces.Step{enqueue(0, "a", "m1", 3), lease(0, "a", 10), ack(1, "m1", 1), lease(2, "a", 10), peek(2, "a")},
			want:  []traces.Result{okR, msg("m1", 1, 1), okR, none, none},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m1", State: traces.StateAcked, Attempts: 1, MaxAttempts: 3})
			},
		},
		{
			name: "duplicate enqueue: same mailbox, other mailbox, after ack, after dead letter",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), enqueue(0, "a", "m1", 3), enqueue(0, "b", "m1", 2),
				lease(0, "a", 10), ack(0, "m1", 1), enqueue(1, "a", "m1", 3),
				enqueue(1, "a", "m2", 3), deadLetterOp(1, "m2", "poison"), enqueue(2, "b", "m2", 3), peek(2, "b"),
			},
			want: []traces.Result{okR, dup, dup, msg("m1", 1, 1), okR, dup, okR, okR, dup, none},
			check: func(t *testing.T, snap traces.Snapshot) {
				if len(snap.Messages) != 1 {
					t.Errorf("messages %+v, want only the acked m1", snap.Messages)
				}
				wantDead(t, snap, traces.DeadLetterRow{Mailbox: "a", ID: "m2", Attempts: 0, MaxAttempts: 3, Reason: "poison", DeadAt: 1})
			},
		},
		{
			name: "lease boundary: lease_until == now has expired",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), lease(0, "a", 10), lease(9, "a", 10), peek(9, "a"),
				lease(10, "a", 5), ack(11, "m1", 1), ack(11, "m1", 2),
			},
			want: []traces.Result{okR, msg("m1", 1, 1), none, none, msg("m1", 2, 2), leaseLost, okR},
		},
		{
			name:  "an expired lease still matches until something clears or replaces it",
			steps: []traces.Step{enqueue(0, "a", "m1", 3), lease(0, "a", 5), ack(20, "m1", 1)},
			want:  []traces.Result{okR, msg("m1", 1, 1), okR},
		},
		{
			name:  "a lease cleared by expire never matches again",
			steps: []traces.Step{enqueue(0, "a", "m1", 3), lease(0, "a", 5), expire(5), nack(6, "m1", 1, 0), extend(6, "m1", 1, 5), peek(6, "a")},
			want:  []traces.Result{okR, msg("m1", 1, 1), affected(1), leaseLost, leaseLost, msg("m1", 1, 0)},
		},
		{
			name:  "attempts == max_attempts is not eligible",
			steps: []traces.Step{enqueue(0, "a", "m1", 1), lease(0, "a", 5), peek(5, "a"), lease(5, "a", 5), expire(5)},
			want:  []traces.Result{okR, msg("m1", 1, 1), none, none, affected(1)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantDead(t, snap, traces.DeadLetterRow{Mailbox: "a", ID: "m1", Attempts: 1, MaxAttempts: 1, Reason: traces.ReasonLeaseExpired, DeadAt: 5})
			},
		},
		{
			name: "keyed FIFO: a live predecessor blocks, its ack releases the next",
			steps: []traces.Step{
				keyed(enqueue(0, "a", "m1", 3), "k"), keyed(enqueue(0, "a", "m2", 3), "k"),
				lease(0, "a", 10), lease(0, "a", 10), peek(0, "a"), ack(1, "m1", 1), lease(1, "a", 10),
			},
			want: []traces.Result{okR, okR, msg("m1", 1, 1), none, none, okR, msg("m2", 1, 2)},
		},
		{
			name: "keyed FIFO: a predecessor that is not yet available still blocks",
			steps: []traces.Step{
				delayed(keyed(enqueue(0, "a", "m1", 3), "k"), 10), keyed(enqueue(0, "a", "m2", 3), "k"), enqueue(0, "a", "m3", 3),
				peek(0, "a"), lease(0, "a", 5), lease(0, "a", 5), ack(1, "m3", 1), lease(10, "a", 5),
			},
			want: []traces.Result{okR, okR, okR, msg("m3", 0, 0), msg("m3", 1, 1), none, okR, msg("m1", 1, 2)},
		},
		{
			name: "keyed FIFO: a live-leased predecessor on its last attempt blocks; once exhausted it does not",
			steps: []traces.Step{
				keyed(enqueue(0, "a", "m1", 1), "k"), keyed(enqueue(0, "a", "m2", 3), "k"),
				lease(0, "a", 5), lease(4, "a", 5), peek(4, "a"), peek(5, "a"), lease(5, "a", 5),
			},
			want: []traces.Result{okR, okR, msg("m1", 1, 1), none, none, msg("m2", 0, 0), msg("m2", 1, 2)},
			check: func(t *testing.T, snap traces.Snapshot) {
				// Nothing ran expire: the exhausted row keeps its stale lease and stays ready.
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m1", Key: "k", State: traces.StateReady,
					Attempts: 1, MaxAttempts: 1, Token: 1, LeaseUntil: 5})
			},
		},
		{
			name: "keyed FIFO: acked and dead-lettered predecessors do not block",
			steps: []traces.Step{
				keyed(enqueue(0, "a", "m1", 3), "k"), keyed(enqueue(0, "a", "m2", 3), "k"), keyed(enqueue(0, "a", "m3", 3), "k"),
				deadLetterOp(0, "m1", "x"), lease(0, "a", 5), ack(0, "m2", 1), peek(0, "a"),
			},
			want: []traces.Result{okR, okR, okR, okR, msg("m2", 1, 1), okR, msg("m3", 0, 0)},
		},
		{
			name: "keys, mailboxes and unkeyed messages are independent",
			steps: []traces.Step{
				keyed(enqueue(0, "a", "m1", 3), "k"), keyed(enqueue(0, "a", "m2", 3), "j"), keyed(enqueue(0, "b", "m3", 3), "k"),
				enqueue(0, "a", "m4", 3), enqueue(0, "a", "m5", 3),
				lease(0, "a", 9), lease(0, "a", 9), lease(0, "a", 9), lease(0, "a", 9), lease(0, "a", 9), lease(0, "b", 9),
			},
			want: []traces.Result{okR, okR, okR, okR, okR,
				msg("m1", 1, 1), msg("m2", 1, 2), msg("m4", 1, 3), msg("m5", 1, 4), none, msg("m3", 1, 5)},
		},
		{
			name: "order: priority desc, then available_at asc, then seq asc",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3),
				prio(delayed(enqueue(0, "a", "m2", 3), 5), 1),
				prio(delayed(enqueue(0, "a", "m3", 3), 2), 1),
				prio(delayed(enqueue(0, "a", "m4", 3), 2), 1),
				prio(delayed(enqueue(0, "a", "m5", 3), 4), -1),
				peek(1, "a"),
				lease(5, "a", 100), lease(5, "a", 100), lease(5, "a", 100), lease(5, "a", 100), lease(5, "a", 100), lease(5, "a", 100),
			},
			want: []traces.Result{okR, okR, okR, okR, okR, msg("m1", 0, 0),
				msg("m3", 1, 1), msg("m4", 1, 2), msg("m2", 1, 3), msg("m1", 1, 4), msg("m5", 1, 5), none},
		},
		{
			name: "nack is fenced, keeps attempts, delays the message",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), lease(0, "a", 10), nack(1, "m1", 2, 0), nack(1, "m1", 0, 0),
				nack(1, "m1", 1, 5), nack(1, "m1", 1, 0), peek(5, "a"), peek(6, "a"), nack(6, "nope", 1, 0),
			},
			want: []traces.Result{okR, msg("m1", 1, 1), leaseLost, leaseLost, okR, leaseLost, none, msg("m1", 1, 0), leaseLost},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m1", State: traces.StateReady, Attempts: 1, MaxAttempts: 3, AvailableAt: 6})
			},
		},
		{
			name: "ack_by_id acks a ready row whatever its lease, then not_found",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), lease(0, "a", 10), ackByID(1, "m1"), ackByID(1, "m1"), ackByID(1, "zz"), ack(1, "m1", 1),
			},
			want: []traces.Result{okR, msg("m1", 1, 1), okR, notFound, notFound, leaseLost},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m1", State: traces.StateAcked, Attempts: 1, MaxAttempts: 3})
			},
		},
		{
			name: "nack_by_id counts an attempt, capped at max_attempts, and clears the lease",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 2), lease(0, "a", 10), nackByID(1, "m1", 3), nackByID(1, "m1", 0),
				peek(1, "a"), ack(1, "m1", 1), nackByID(1, "zz", 0), ackByID(2, "m1"), nackByID(2, "m1", 0),
			},
			want: []traces.Result{okR, msg("m1", 1, 1), okR, okR, none, leaseLost, notFound, okR, notFound},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m1", State: traces.StateAcked, Attempts: 2, MaxAttempts: 2, AvailableAt: 1})
			},
		},
		{
			name: "extend moves the lease end; a stale token cannot extend",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), lease(0, "a", 5), extend(3, "m1", 1, 10), lease(12, "a", 5),
				extend(12, "m1", 2, 10), lease(13, "a", 5), extend(13, "m1", 1, 10), extend(13, "m1", 2, 1),
			},
			want: []traces.Result{okR, msg("m1", 1, 1), okR, none, leaseLost, msg("m1", 2, 2), leaseLost, okR},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m1", State: traces.StateReady, Attempts: 2, MaxAttempts: 3, Token: 2, LeaseUntil: 14})
			},
		},
		{
			name: "expire clears run-out leases and dead-letters rows with no attempts left",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), enqueue(0, "a", "m2", 1), enqueue(0, "b", "m3", 3),
				lease(0, "a", 5), lease(0, "a", 5), lease(0, "b", 10),
				expire(4), expire(5), expire(5), ack(5, "m1", 1), ack(5, "m2", 2),
			},
			want: []traces.Result{okR, okR, okR, msg("m1", 1, 1), msg("m2", 1, 2), msg("m3", 1, 3),
				affected(0), affected(2), affected(0), leaseLost, leaseLost},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantDead(t, snap, traces.DeadLetterRow{Mailbox: "a", ID: "m2", Attempts: 1, MaxAttempts: 1, Reason: traces.ReasonLeaseExpired, DeadAt: 5})
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m1", State: traces.StateReady, Attempts: 1, MaxAttempts: 3})
				wantMessage(t, snap, traces.MessageRow{Mailbox: "b", ID: "m3", State: traces.StateReady, Attempts: 1, MaxAttempts: 3, Token: 3, LeaseUntil: 10})
			},
		},
		{
			name: "dead_letter moves a ready row with its attempts; anything else is not_found",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), lease(0, "a", 5), deadLetterOp(1, "m1", "poison"), deadLetterOp(1, "m1", "again"),
				ack(1, "m1", 1), ackByID(1, "m1"), enqueue(1, "a", "m2", 3), ackByID(1, "m2"), deadLetterOp(1, "m2", "x"),
				deadLetterOp(1, "zz", "x"),
			},
			want: []traces.Result{okR, msg("m1", 1, 1), okR, notFound, leaseLost, notFound, okR, okR, notFound, notFound},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantDead(t, snap, traces.DeadLetterRow{Mailbox: "a", ID: "m1", Attempts: 1, MaxAttempts: 3, Reason: "poison", DeadAt: 1})
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m2", State: traces.StateAcked, MaxAttempts: 3, AvailableAt: 1})
			},
		},
		{
			name:  "tokens that were never issued match nothing",
			steps: []traces.Step{enqueue(0, "a", "m1", 3), ack(0, "m1", 0), ack(0, "m1", 1), nack(0, "m1", -1, 0), extend(0, "m1", 7, 5)},
			want:  []traces.Result{okR, leaseLost, leaseLost, leaseLost, leaseLost},
		},
		{
			name:  "advance_clock changes nothing durable",
			steps: []traces.Step{delayed(enqueue(0, "a", "m1", 3), 5), advance(4), peek(4, "a"), advance(5), peek(5, "a")},
			want:  []traces.Result{okR, okR, none, okR, msg("m1", 0, 0)},
		},
	})
}

func TestMalformedSteps(t *testing.T) {
	later, _, err := Run(Config{}, []traces.Step{enqueue(0, "a", "m1", 3), advance(5)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		state   State
		step    traces.Step
		mention string // the error must name the culprit
	}{
		{"unknown op", Init(Config{}), traces.Step{Op: "frobnicate"}, "unknown operation"},
		{"negative time", Init(Config{}), advance(-1), "negative"},
		{"time going back", later, advance(4), "before the previous step's time 5"},
		{"empty mailbox", Init(Config{}), enqueue(0, "", "m1", 3), "mailbox is empty"},
		{"empty id", Init(Config{}), enqueue(0, "a", "", 3), "id is empty"},
		{"max_attempts 0", Init(Config{}), enqueue(0, "a", "m1", 0), "max_attempts 0"},
		{"negative delay", Init(Config{}), delayed(enqueue(0, "a", "m1", 1), -1), "delay -1"},
		{"negative lease_for", Init(Config{}), lease(0, "a", -1), "lease_for -1"},
		{"empty peek mailbox", Init(Config{}), peek(0, ""), "mailbox is empty"},
		{"ack without id", Init(Config{}), ack(0, "", 1), "id is empty"},
		{"nack negative delay", Init(Config{}), nack(0, "m1", 1, -2), "delay -2"},
		{"outbox without target", Init(Config{}), outboxEnqueue(0, "o1", "", 1), "target is empty"},
		{"claim limit 0", Init(Config{}), outboxClaim(0, 0, 5), "limit 0"},
		{"bad consumer profile", Init(Config{}), fetch(0, 1, "a", "fold", 5), "profile"},
		{"bad outcome", Init(Config{}), handle(0, 1, "a", leased, "maybe", 0), "outcome"},
		{"negative retry delay", Init(Config{}), handle(0, 1, "a", leased, traces.OutcomeFail, -1), "retry_delay -1"},
		{"bad publisher profile", Init(Config{}), deliver(0, "o1", 1, leased, traces.FaultNone), "profile"},
		{"bad fault", Init(Config{}), deliver(0, "o1", 1, traces.ProfileFold, "meteor"), "fault"},
		{"split delivery of a row that does not exist", Init(Config{}), deliver(0, "o1", 1, traces.ProfileSplit, traces.FaultNone), `outbox row "o1" does not exist`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := DescribeState(c.state)
			next, r, err := Step(c.state, c.step.Op, c.step.At, c.step.Args)
			wantMalformed(t, err)
			if !strings.Contains(err.Error(), c.mention) {
				t.Errorf("error %q does not mention %q", err, c.mention)
			}
			if !Equal(next, c.state) || DescribeState(c.state) != before {
				t.Errorf("a malformed step changed the state")
			}
			if !cmp.Equal(r, traces.Result{}) {
				t.Errorf("a malformed step returned result %+v", r)
			}
		})
	}
}
