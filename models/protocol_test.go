package models

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/traces"
)

const (
	fold          = traces.ProfileFold
	split         = traces.ProfileSplit
	outcomeOK     = traces.OutcomeOK
	outcomeFail   = traces.OutcomeFail
	faultNone     = traces.FaultNone
	commitFails   = traces.FaultCommitFails
	crashBetween  = traces.FaultCrashBetween
	undeliverable = traces.FaultUndeliverable
)

var noEffects = map[string][]string{}

func TestConsumer(t *testing.T) {
	runCases(t, []stepCase{
		{
			name: "leased: success acks and records the effect",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leased, 10), handle(1, 1, "a", leased, outcomeOK, 0),
				fetch(1, 1, "a", leased, 10), handle(1, 1, "a", leased, outcomeOK, 0),
			},
			want: []traces.Result{okR, msg("m1", 1, 1), action(traces.ActionAcked, 0), none, actionIdle},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantEffects(t, snap, map[string][]string{"a": {"m1"}})
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m1", State: traces.StateAcked, Attempts: 1, MaxAttempts: 3})
			},
		},
		{
			name:  "leased: the fetch expires leases first, dead-lettering exhausted rows",
			steps: []traces.Step{enqueue(0, "a", "m1", 1), lease(0, "a", 5), fetch(5, 1, "a", leased, 10)},
			want:  []traces.Result{okR, msg("m1", 1, 1), none},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantDead(t, snap, traces.DeadLetterRow{Mailbox: "a", ID: "m1", Attempts: 1, MaxAttempts: 1, Reason: traces.ReasonLeaseExpired, DeadAt: 5})
			},
		},
		{
			name: "leased: a failure is retried after the policy's delay, then dead-lettered at max",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 2), fetch(0, 1, "a", leased, 10), handle(1, 1, "a", leased, outcomeFail, 3),
				fetch(3, 1, "a", leased, 10), fetch(4, 1, "a", leased, 10), handle(5, 1, "a", leased, outcomeFail, 3),
			},
			want: []traces.Result{okR, msg("m1", 1, 1), action(traces.ActionRetried, 1),
				none, msg("m1", 2, 2), action(traces.ActionDeadLettered, 2)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantDead(t, snap, traces.DeadLetterRow{Mailbox: "a", ID: "m1", Attempts: 2, MaxAttempts: 2, Reason: traces.ReasonMaxAttempts, DeadAt: 5})
				wantEffects(t, snap, noEffects)
			},
		},
		{
			name: "leased: a handle whose lease was taken over loses it, effect included",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leased, 5), fetch(5, 2, "a", leased, 5),
				handle(6, 1, "a", leased, outcomeOK, 0), handle(6, 2, "a", leased, outcomeFail, 0),
				fetch(6, 1, "a", leased, 5), handle(7, 1, "a", leased, outcomeFail, 0),
			},
			want: []traces.Result{okR, msg("m1", 1, 1), msg("m1", 2, 2),
				action(traces.ActionLeaseLost, 0), action(traces.ActionRetried, 2),
				msg("m1", 3, 3), action(traces.ActionDeadLettered, 3)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantEffects(t, snap, noEffects)
				wantDead(t, snap, traces.DeadLetterRow{Mailbox: "a", ID: "m1", Attempts: 3, MaxAttempts: 3, Reason: traces.ReasonMaxAttempts, DeadAt: 7})
			},
		},
		{
			name: "leased: a failed retry whose lease was taken over is lease_lost",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leased, 5), fetch(5, 2, "a", leased, 5),
				handle(6, 1, "a", leased, outcomeFail, 0), handle(6, 2, "a", leased, outcomeOK, 0),
			},
			want: []traces.Result{okR, msg("m1", 1, 1), msg("m1", 2, 2),
				action(traces.ActionLeaseLost, 1), action(traces.ActionAcked, 0)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantEffects(t, snap, map[string][]string{"a": {"m1"}})
			},
		},
		{
			name: "leased: dead-lettering a row expire already moved is lease_lost",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 1), fetch(0, 1, "a", leased, 5), expire(5), handle(5, 1, "a", leased, outcomeFail, 0),
			},
			want: []traces.Result{okR, msg("m1", 1, 1), affected(1), action(traces.ActionLeaseLost, 1)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantDead(t, snap, traces.DeadLetterRow{Mailbox: "a", ID: "m1", Attempts: 1, MaxAttempts: 1, Reason: traces.ReasonLeaseExpired, DeadAt: 5})
			},
		},
		{
			name: "leaseless: failures up to max end dead-lettered with attempts == max",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3),
				fetch(0, 1, "a", leaseless, 0), handle(0, 1, "a", leaseless, outcomeFail, 0),
				fetch(0, 1, "a", leaseless, 0), handle(0, 1, "a", leaseless, outcomeFail, 0),
				fetch(0, 1, "a", leaseless, 0), handle(0, 1, "a", leaseless, outcomeFail, 0),
				fetch(0, 1, "a", leaseless, 0), handle(0, 1, "a", leaseless, outcomeFail, 0),
			},
			want: []traces.Result{okR,
				msg("m1", 0, 0), action(traces.ActionRetried, 1),
				msg("m1", 1, 0), action(traces.ActionRetried, 2),
				msg("m1", 2, 0), action(traces.ActionDeadLettered, 3),
				none, actionIdle},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantDead(t, snap, traces.DeadLetterRow{Mailbox: "a", ID: "m1", Attempts: 3, MaxAttempts: 3, Reason: traces.ReasonMaxAttempts})
				if len(snap.Messages) != 0 {
					t.Errorf("messages %+v, want none", snap.Messages)
				}
			},
		},
		{
			name: "leaseless: nack_by_ids between fetch and a failing handle count; the decision reads the row",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leaseless, 0),
				nackByID(0, "m1", 0), nackByID(0, "m1", 0), handle(0, 1, "a", leaseless, outcomeFail, 0),
				enqueue(0, "a", "m2", 3), fetch(0, 1, "a", leaseless, 0),
				nackByID(0, "m2", 0), handle(0, 1, "a", leaseless, outcomeFail, 0),
			},
			want: []traces.Result{okR, msg("m1", 0, 0), okR, okR, action(traces.ActionDeadLettered, 3),
				okR, msg("m2", 0, 0), okR, action(traces.ActionRetried, 2)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantDead(t, snap, traces.DeadLetterRow{Mailbox: "a", ID: "m1", Attempts: 3, MaxAttempts: 3, Reason: traces.ReasonMaxAttempts})
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m2", State: traces.StateReady, Attempts: 2, MaxAttempts: 3})
			},
		},
		{
			name: "a declining retry policy dead-letters before max_attempts with the handler's error",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leaseless, 0), handle(0, 1, "a", leaseless, traces.OutcomeFailNoRetry, 0),
				enqueue(0, "a", "m2", 3), fetch(0, 1, "a", leased, 5), handle(0, 1, "a", leased, traces.OutcomeFailNoRetry, 0),
				enqueue(0, "a", "m3", 3), fetch(0, 1, "a", leased, 5), fetch(5, 2, "a", leased, 5),
				handle(6, 1, "a", leased, traces.OutcomeFailNoRetry, 0),
			},
			want: []traces.Result{okR, msg("m1", 0, 0), action(traces.ActionDeadLettered, 1),
				okR, msg("m2", 1, 1), action(traces.ActionDeadLettered, 1),
				okR, msg("m3", 1, 2), msg("m3", 2, 3), action(traces.ActionLeaseLost, 1)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantDead(t, snap,
					traces.DeadLetterRow{Mailbox: "a", ID: "m1", Attempts: 1, MaxAttempts: 3, Reason: traces.ReasonHandlerFailed},
					traces.DeadLetterRow{Mailbox: "a", ID: "m2", Attempts: 1, MaxAttempts: 3, Reason: traces.ReasonHandlerFailed})
			},
		},
		{
			name: "leaseless with raw attempts: the row is stranded at attempts == max, never dead-lettered",
			cfg:  Config{Attempts: rawAttempts},
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3),
				fetch(0, 1, "a", leaseless, 0), handle(0, 1, "a", leaseless, outcomeFail, 0),
				fetch(0, 1, "a", leaseless, 0), handle(0, 1, "a", leaseless, outcomeFail, 0),
				fetch(0, 1, "a", leaseless, 0), handle(0, 1, "a", leaseless, outcomeFail, 0),
				fetch(0, 1, "a", leaseless, 0), handle(0, 1, "a", leaseless, outcomeFail, 0), expire(100),
			},
			want: []traces.Result{okR,
				msg("m1", 0, 0), action(traces.ActionRetried, 0),
				msg("m1", 1, 0), action(traces.ActionRetried, 1),
				msg("m1", 2, 0), action(traces.ActionRetried, 2),
				none, actionIdle, affected(0)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantDead(t, snap)
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m1", State: traces.StateReady, Attempts: 3, MaxAttempts: 3})
			},
		},
		{
			name: "leaseless: success acks by id; the retry delay is honoured",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leaseless, 0), handle(0, 1, "a", leaseless, outcomeFail, 5),
				fetch(4, 1, "a", leaseless, 0), fetch(5, 1, "a", leaseless, 0), handle(5, 1, "a", leaseless, outcomeOK, 0),
			},
			want: []traces.Result{okR, msg("m1", 0, 0), action(traces.ActionRetried, 1),
				none, msg("m1", 1, 0), action(traces.ActionAcked, 0)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantEffects(t, snap, map[string][]string{"a": {"m1"}})
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m1", State: traces.StateAcked, Attempts: 1, MaxAttempts: 3, AvailableAt: 5})
			},
		},
		{
			name: "leaseless: a row that left the mailbox or was acked meanwhile is lease_lost",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leaseless, 0), deadLetterOp(0, "m1", "x"), handle(0, 1, "a", leaseless, outcomeOK, 0),
				enqueue(0, "a", "m2", 3), fetch(0, 2, "a", leaseless, 0), ackByID(0, "m2"), handle(0, 2, "a", leaseless, outcomeFail, 0),
				enqueue(0, "b", "m3", 1), fetch(0, 3, "b", leaseless, 0), ackByID(0, "m3"), handle(0, 3, "b", leaseless, outcomeFail, 0),
			},
			want: []traces.Result{
				okR, msg("m1", 0, 0), okR, action(traces.ActionLeaseLost, 0),
				okR, msg("m2", 0, 0), okR, action(traces.ActionLeaseLost, 1),
				okR, msg("m3", 0, 0), okR, action(traces.ActionLeaseLost, 1),
			},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantEffects(t, snap, noEffects)
				wantMessage(t, snap, traces.MessageRow{Mailbox: "b", ID: "m3", State: traces.StateAcked, MaxAttempts: 1})
			},
		},
		{
			name: "a crash forgets every fetched delivery; durable state stays",
			steps: []traces.Step{
				enqueue(0, "a", "m1", 3), enqueue(0, "a", "m2", 3),
				fetch(0, 1, "a", leased, 5), fetch(0, 2, "a", leaseless, 0), crash(1),
				handle(1, 1, "a", leased, outcomeOK, 0), handle(1, 2, "a", leaseless, outcomeOK, 0),
				fetch(5, 1, "a", leased, 5),
			},
			want: []traces.Result{okR, okR, msg("m1", 1, 1), msg("m2", 0, 0), okR, actionIdle, actionIdle, msg("m1", 2, 2)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantEffects(t, snap, noEffects)
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "m2", State: traces.StateReady, MaxAttempts: 3})
			},
		},
		{
			name: "a worker with nothing fetched is idle",
			steps: []traces.Step{
				handle(0, 1, "a", leased, outcomeOK, 0), fetch(0, 1, "a", leased, 5), handle(0, 1, "a", leased, outcomeFail, 9),
			},
			want: []traces.Result{actionIdle, none, actionIdle},
		},
	})
}

func TestConsumerMalformed(t *testing.T) {
	setup := []traces.Step{enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leased, 5)}
	for _, c := range []struct {
		name    string
		step    traces.Step
		mention string
	}{
		{"handle for another mailbox", handle(1, 1, "b", leased, outcomeOK, 0), `handles mailbox "b"`},
		{"handle on another path", handle(1, 1, "a", leaseless, outcomeOK, 0), "on the leased path but handles it on the leaseless path"},
		{"second fetch before the handle", fetch(1, 1, "a", leased, 5), "still holds its fetch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Run(Config{}, append(setup[:len(setup):len(setup)], c.step))
			wantMalformed(t, err)
			if !strings.Contains(err.Error(), c.mention) || !strings.Contains(err.Error(), "step 2") {
				t.Errorf("error %q should name step 2 and mention %q", err, c.mention)
			}
		})
	}
}

func TestPublisher(t *testing.T) {
	// Every case starts with o1 (target "a", max 3) enqueued in the outbox and claimed under token 1
	// until time 10.
	start := []traces.Step{outboxEnqueue(0, "o1", "a", 3), outboxClaim(0, 1, 10)}
	started := []traces.Result{okR, claimed(1, row("o1", 1))}
	with := func(steps ...traces.Step) []traces.Step { return append(start[:len(start):len(start)], steps...) }
	then := func(results ...traces.Result) []traces.Result {
		return append(started[:len(started):len(started)], results...)
	}
	wantOutbox := func(t *testing.T, snap traces.Snapshot, want traces.OutboxRow) {
		t.Helper()
		want.ID, want.Target, want.MaxAttempts = "o1", "a", 3
		if d := cmp.Diff(want, findOutbox(t, snap, "o1")); d != "" {
			t.Errorf("outbox row o1 (-want +got):\n%s", d)
		}
	}
	noMessages := func(t *testing.T, snap traces.Snapshot) {
		t.Helper()
		if len(snap.Messages) != 0 {
			t.Errorf("messages %+v, want none", snap.Messages)
		}
	}
	delivered1 := traces.MessageRow{Mailbox: "a", ID: "o1", State: traces.StateReady, MaxAttempts: 3, AvailableAt: 1}
	runCases(t, []stepCase{
		{
			name:  "fold: enqueue and completion commit together; a second delivery is claim_lost",
			steps: with(deliver(1, "o1", 1, fold, faultNone), deliver(1, "o1", 1, fold, faultNone)),
			want:  then(delivered(traces.ActionDelivered, false), delivered(traces.ActionClaimLost, true)),
			check: func(t *testing.T, snap traces.Snapshot) {
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StateCompleted, DeliveryAttempts: 1})
				wantMessage(t, snap, delivered1)
			},
		},
		{
			name: "fold: a failed commit enqueues nothing; the publisher releases the row and it is delivered again",
			steps: with(deliver(1, "o1", 1, fold, commitFails), outboxClaim(5, 1, 10),
				deliver(5, "o1", 2, fold, faultNone)),
			want: then(delivered(traces.ActionCommitFailed, false), claimed(2, row("o1", 2)),
				delivered(traces.ActionDelivered, false)),
			check: func(t *testing.T, snap traces.Snapshot) {
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StateCompleted, DeliveryAttempts: 2, AvailableAt: 1})
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "o1", State: traces.StateReady, MaxAttempts: 3, AvailableAt: 5})
			},
		},
		{
			name:  "a failed delivery's release waits retry_delay",
			steps: with(deliverRetry(1, "o1", 1, split, commitFails, 4), outboxClaim(4, 1, 10), outboxClaim(5, 1, 10)),
			want:  then(delivered(traces.ActionCommitFailed, false), none, claimed(2, row("o1", 2))),
			check: func(t *testing.T, snap traces.Snapshot) {
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StatePending, DeliveryAttempts: 2, AvailableAt: 5, Token: 2, ClaimUntil: 15})
			},
		},
		{
			name: "a failed delivery on the row's last attempt dead-letters it",
			steps: []traces.Step{outboxEnqueueMax(0, "o1", "a", 3, 2), outboxClaim(0, 1, 10),
				deliver(1, "o1", 1, fold, commitFails), outboxClaim(1, 1, 10), deliver(1, "o1", 2, split, commitFails),
				outboxClaim(2, 1, 10)},
			want: []traces.Result{okR, claimed(1, row("o1", 1)), delivered(traces.ActionCommitFailed, false),
				claimed(2, row("o1", 2)), delivered(traces.ActionCommitFailed, false), none},
			check: func(t *testing.T, snap traces.Snapshot) {
				noMessages(t, snap)
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StateDeadLetter, DeliveryAttempts: 2, AvailableAt: 1,
					Reason: traces.ReasonMaxDeliveryAttempts})
			},
		},
		{
			name: "a claim dead-letters a row whose last claim ran out, and never claims it again",
			steps: []traces.Step{outboxEnqueueMax(0, "o1", "a", 3, 1), outboxClaim(0, 1, 10),
				deliver(1, "o1", 1, split, crashBetween), crash(1), outboxClaim(9, 1, 10), outboxClaim(10, 1, 10),
				deliver(10, "o1", 1, fold, faultNone)},
			want: []traces.Result{okR, claimed(1, row("o1", 1)), delivered(traces.ActionCrashed, false), okR, none, none,
				delivered(traces.ActionClaimLost, true)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StateDeadLetter, DeliveryAttempts: 1,
					Reason: traces.ReasonMaxDeliveryAttempts})
				wantMessage(t, snap, delivered1)
			},
		},
		{
			name:  "an undeliverable row is dead-lettered and nothing is enqueued; a lost claim changes nothing",
			steps: with(deliver(1, "o1", 1, fold, undeliverable), deliver(1, "o1", 1, split, undeliverable)),
			want:  then(delivered(traces.ActionDeadLettered, false), delivered(traces.ActionClaimLost, false)),
			check: func(t *testing.T, snap traces.Snapshot) {
				noMessages(t, snap)
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StateDeadLetter, DeliveryAttempts: 1,
					Reason: traces.ReasonUndeliverable})
			},
		},
		{
			name: "outbox_dead_letter is fenced by the claim; a completed row cannot be dead-lettered",
			steps: with(outboxDeadLetter(1, "o1", 2, "x"), deliver(1, "o1", 1, fold, faultNone),
				outboxDeadLetter(1, "o1", 1, "x")),
			want: then(errR(traces.ErrKindClaimLost), delivered(traces.ActionDelivered, false), errR(traces.ErrKindClaimLost)),
			check: func(t *testing.T, snap traces.Snapshot) {
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StateCompleted, DeliveryAttempts: 1})
			},
		},
		{
			name:  "fold: a crash after the single commit leaves it delivered",
			steps: with(deliver(1, "o1", 1, fold, crashBetween)),
			want:  then(delivered(traces.ActionCrashed, false)),
			check: func(t *testing.T, snap traces.Snapshot) {
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StateCompleted, DeliveryAttempts: 1})
				wantMessage(t, snap, delivered1)
			},
		},
		{
			name:  "fold: a lost claim rolls the enqueue back",
			steps: with(outboxClaim(10, 1, 5), deliver(11, "o1", 1, fold, faultNone), deliver(11, "o1", 1, fold, crashBetween)),
			want: then(claimed(2, row("o1", 2)), delivered(traces.ActionClaimLost, false),
				delivered(traces.ActionClaimLost, false)),
			check: func(t *testing.T, snap traces.Snapshot) {
				noMessages(t, snap)
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StatePending, DeliveryAttempts: 2, Token: 2, ClaimUntil: 15})
			},
		},
		{
			name: "fold: a stale publisher's delivery of a row a purge removed is claim_lost, reporting what its enqueue saw",
			steps: with(outboxClaim(10, 1, 5), deliver(10, "o1", 2, fold, faultNone), purgeOp(11, 0, 0, 5),
				deliver(12, "o1", 1, fold, faultNone), deliver(12, "o1", 1, fold, crashBetween),
				deliver(12, "o1", 1, fold, undeliverable), ackByID(12, "o1"), purgeOp(13, 0, 0, 5),
				deliver(13, "o1", 1, fold, faultNone)),
			want: then(claimed(2, row("o1", 2)), delivered(traces.ActionDelivered, false), affected(1),
				delivered(traces.ActionClaimLost, true), delivered(traces.ActionClaimLost, true),
				delivered(traces.ActionClaimLost, false), okR, affected(1),
				delivered(traces.ActionClaimLost, false)),
			check: func(t *testing.T, snap traces.Snapshot) {
				noMessages(t, snap)
				if len(snap.Outbox) != 0 {
					t.Errorf("outbox %+v, want none", snap.Outbox)
				}
			},
		},
		{
			name:  "fold: an id already in a mailbox is a duplicate the enqueue suppresses",
			steps: append([]traces.Step{enqueue(0, "b", "o1", 1)}, with(deliver(1, "o1", 1, fold, faultNone))...),
			want:  append([]traces.Result{okR}, then(delivered(traces.ActionDelivered, true))...),
			check: func(t *testing.T, snap traces.Snapshot) {
				wantMessage(t, snap, traces.MessageRow{Mailbox: "b", ID: "o1", State: traces.StateReady, MaxAttempts: 1})
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StateCompleted, DeliveryAttempts: 1})
			},
		},
		{
			name:  "split: a failed enqueue commit enqueues nothing and completes nothing; the row is released",
			steps: with(deliver(1, "o1", 1, split, commitFails)),
			want:  then(delivered(traces.ActionCommitFailed, false)),
			check: func(t *testing.T, snap traces.Snapshot) {
				noMessages(t, snap)
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StatePending, DeliveryAttempts: 1, AvailableAt: 1})
			},
		},
		{
			name:  "split: a failed enqueue commit still reports the duplicate the enqueue saw",
			steps: append([]traces.Step{enqueue(0, "b", "o1", 1)}, with(deliver(1, "o1", 1, split, commitFails))...),
			want:  append([]traces.Result{okR}, then(delivered(traces.ActionCommitFailed, true))...),
			check: func(t *testing.T, snap traces.Snapshot) {
				wantMessage(t, snap, traces.MessageRow{Mailbox: "b", ID: "o1", State: traces.StateReady, MaxAttempts: 1})
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StatePending, DeliveryAttempts: 1, AvailableAt: 1})
			},
		},
		{
			name: "split: a crash between the commits leaves the row pending; the redelivery is a duplicate",
			steps: with(deliver(1, "o1", 1, split, crashBetween), crash(1), outboxClaim(10, 1, 10),
				deliver(10, "o1", 2, split, faultNone)),
			want: then(delivered(traces.ActionCrashed, false), okR, claimed(2, row("o1", 2)),
				delivered(traces.ActionDelivered, true)),
			check: func(t *testing.T, snap traces.Snapshot) {
				wantMessage(t, snap, delivered1)
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StateCompleted, DeliveryAttempts: 2})
			},
		},
		{
			name:  "split: with a lost claim the enqueue still commits",
			steps: with(outboxClaim(10, 1, 5), deliver(11, "o1", 1, split, faultNone)),
			want:  then(claimed(2, row("o1", 2)), delivered(traces.ActionClaimLost, false)),
			check: func(t *testing.T, snap traces.Snapshot) {
				wantMessage(t, snap, traces.MessageRow{Mailbox: "a", ID: "o1", State: traces.StateReady, MaxAttempts: 3, AvailableAt: 11})
				wantOutbox(t, snap, traces.OutboxRow{State: traces.StatePending, DeliveryAttempts: 2, Token: 2, ClaimUntil: 15})
			},
		},
		{
			name: "a publisher crash does not forget consumer fetches",
			steps: append([]traces.Step{enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leased, 10)},
				with(deliver(1, "o1", 2, fold, crashBetween), handle(1, 1, "a", leased, outcomeOK, 0))...),
			want: []traces.Result{okR, msg("m1", 1, 1), okR, claimed(2, row("o1", 1)),
				delivered(traces.ActionCrashed, false), action(traces.ActionAcked, 0)},
			check: func(t *testing.T, snap traces.Snapshot) {
				wantEffects(t, snap, map[string][]string{"a": {"m1"}})
			},
		},
	})
}
