package models

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// TestBatchRules runs one short history per batch rule of docs/semantics.md ("Batches") on the
// correct model and on each broken batch consumer, and checks the step where they part.
func TestBatchRules(t *testing.T) {
	enq := func(id, key string) traces.Args {
		return traces.Args{Mailbox: "a", ID: id, Key: key, MaxAttempts: 2}
	}
	fetch := func(w int) traces.Args {
		return traces.Args{Worker: w, Mailbox: "a", Profile: traces.ProfileLeased, Size: 3, LeaseFor: 10}
	}
	handle := func(w int, fault string, outcomes ...string) traces.Args {
		return traces.Args{Worker: w, Mailbox: "a", Profile: traces.ProfileLeased, Outcomes: outcomes, Fault: fault}
	}
	ids := func(r traces.Result) []string {
		var out []string
		for _, m := range r.Messages {
			out = append(out, m.ID)
		}
		return out
	}
	run := func(t *testing.T, cfg Config, steps []traces.Step) ([]traces.Result, traces.Snapshot) {
		t.Helper()
		m := NewMachine(Init(cfg))
		var rs []traces.Result
		for i, s := range steps {
			r, err := m.Step(s.Op, s.At, s.Args)
			if err != nil {
				t.Fatalf("step %d (%s): %v", i, s.Op, err)
			}
			rs = append(rs, r)
		}
		return rs, m.Snapshot()
	}
	t.Run("a batch takes only key heads, and a second worker not the next of a held key", func(t *testing.T) {
		steps := []traces.Step{
			{Op: traces.OpEnqueue, Args: enq("m1", "k")}, {Op: traces.OpEnqueue, Args: enq("m2", "k")},
			{Op: traces.OpEnqueue, Args: enq("m3", "")},
			{Op: traces.OpConsumerFetchBatch, Args: traces.Args{Worker: 1, Mailbox: "a", Profile: traces.ProfileLeased, Size: 1, LeaseFor: 10}},
			{Op: traces.OpConsumerFetchBatch, Args: fetch(2)},
		}
		rs, _ := run(t, Config{}, steps)
		if got := ids(rs[3]); !slices.Equal(got, []string{"m1"}) {
			t.Errorf("worker 1 took %q, want [m1]", got)
		}
		if got := ids(rs[4]); !slices.Equal(got, []string{"m3"}) {
			t.Errorf("worker 2 took %q, want [m3]: m2 waits behind m1's lease", got)
		}
		rs, _ = run(t, Config{BatchBug: BatchSkipsLeasedHead}, steps)
		if got := ids(rs[4]); !slices.Equal(got, []string{"m2", "m3"}) {
			t.Errorf("the skips-leased-head batch took %q, want [m2 m3]", got)
		}
	})
	t.Run("a head leased on its last attempt still holds its key in the batch", func(t *testing.T) {
		// exhausted_leased_head "passes" lets a later fetch pass a head leased on its last
		// attempt, but the batch that holds the head takes nothing else of its key.
		steps := []traces.Step{
			{Op: traces.OpEnqueue, Args: enq("m1", "k")}, {Op: traces.OpEnqueue, Args: enq("m2", "k")},
			{Op: traces.OpConsumerFetchBatch, Args: fetch(1)},
			{Op: traces.OpConsumerHandleBatch, Args: handle(1, traces.FaultNone, traces.OutcomeFail)},
			{Op: traces.OpConsumerFetchBatch, Args: fetch(1)},
			{Op: traces.OpConsumerFetchBatch, Args: fetch(2)},
		}
		cfg := Config{Profile: profile.Profile{ExhaustedLeasedHeadPasses: true}}
		rs, _ := run(t, cfg, steps)
		if got := ids(rs[4]); !slices.Equal(got, []string{"m1"}) {
			t.Errorf("the batch holding m1 on its last attempt took %q, want [m1]", got)
		}
		if got := ids(rs[5]); !slices.Equal(got, []string{"m2"}) {
			t.Errorf("worker 2 took %q, want [m2]: the exhausted head m1 lets it pass", got)
		}
		rs, _ = run(t, Config{}, steps)
		if got := ids(rs[5]); len(got) != 0 {
			t.Errorf("default profile: worker 2 took %q, want nothing while m1's lease is live", got)
		}
	})
	t.Run("a failed commit changes nothing; a failed handler is never acked", func(t *testing.T) {
		steps := []traces.Step{
			{Op: traces.OpEnqueue, Args: enq("m1", "")}, {Op: traces.OpEnqueue, Args: enq("m2", "")},
			{Op: traces.OpConsumerFetchBatch, Args: fetch(1)},
			{Op: traces.OpConsumerHandleBatch, Args: handle(1, traces.FaultNone, traces.OutcomeOK, traces.OutcomeFail)},
		}
		rs, snap := run(t, Config{}, steps)
		if got := rs[3].Actions; !slices.Equal(got, []string{traces.ActionAcked, traces.ActionRetried}) {
			t.Errorf("actions %q, want [acked retried]", got)
		}
		if got := snap.Effects["a"]; !slices.Equal(got, []string{"m1"}) {
			t.Errorf("effects %q, want [m1]", got)
		}
		rs, _ = run(t, Config{BatchBug: BatchAcksFailed}, steps)
		if got := rs[3].Actions; !slices.Equal(got, []string{traces.ActionAcked, traces.ActionAcked}) {
			t.Errorf("the acks-failed batch: actions %q, want [acked acked]", got)
		}
		failed := slices.Clone(steps)
		failed[3].Args = handle(1, traces.FaultCommitFails, traces.OutcomeOK, traces.OutcomeFail)
		_, before := run(t, Config{}, failed[:3])
		_, after := run(t, Config{}, failed)
		if !slices.Equal(before.Messages, after.Messages) || len(after.Effects) != 0 {
			t.Errorf("a failed batch commit changed the rows:\nbefore %+v\nafter  %+v", before.Messages, after.Messages)
		}
	})
	t.Run("effects commit with their acks", func(t *testing.T) {
		steps := []traces.Step{
			{Op: traces.OpEnqueue, Args: enq("m1", "")},
			{Op: traces.OpConsumerFetchBatch, Args: fetch(1)},
			{Op: traces.OpConsumerHandleBatch, Args: handle(1, traces.FaultNone, traces.OutcomeOK)},
			{Op: traces.OpConsumerEffectsBatch, Args: traces.Args{Worker: 1, Mailbox: "a", Fault: traces.FaultCommitFails}},
		}
		rs, snap := run(t, Config{}, steps)
		if len(rs[3].Effects) != 0 || !slices.Equal(snap.Effects["a"], []string{"m1"}) {
			t.Errorf("correct batch: effects step %q, effects %q; want none owed and m1 committed", rs[3].Effects, snap.Effects["a"])
		}
		rs, snap = run(t, Config{BatchBug: BatchAckBeforeEffects}, steps)
		if !slices.Equal(rs[3].Effects, []string{"m1"}) || len(snap.Effects["a"]) != 0 || snap.Messages[0].State != traces.StateAcked {
			t.Errorf("ack-before-effects batch: effects step %q, effects %q, m1 %s; want m1 owed, acked, its effect lost",
				rs[3].Effects, snap.Effects["a"], snap.Messages[0].State)
		}
	})
	t.Run("a faulted batch delivery reports what each row's part did", func(t *testing.T) {
		// o1 and o2 are claimed (token 1); o3 never is, so the batch's claim does not hold for it.
		// o2's id is a message of mailbox b: its part dead-letters it.
		setup := []traces.Step{
			{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "b", ID: "o2", MaxAttempts: 1}},
			{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o1", Target: "a", MaxAttempts: 3}},
			{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o2", Target: "a", MaxAttempts: 3}},
			{Op: traces.OpOutboxClaim, Args: traces.Args{Limit: 2, ClaimFor: 10}},
			{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o3", Target: "a", MaxAttempts: 3}},
		}
		deliver := func(fault string) traces.Step {
			return traces.Step{Op: traces.OpPublisherDeliverBatch, At: 1,
				Args: traces.Args{Publisher: 1, IDs: []string{"o1", "o2", "o3"}, Token: 1, Fault: fault}}
		}
		for _, tc := range []struct {
			fault string
			want  []string
		}{
			{traces.FaultNone, []string{traces.ActionDelivered, traces.ActionDeadLettered, traces.ActionClaimLost}},
			// The one commit happened: a delivered row is crashed, the others say what they did.
			{traces.FaultCrashBetween, []string{traces.ActionCrashed, traces.ActionDeadLettered, traces.ActionClaimLost}},
			// Nothing commits; the row under a lost claim is still claim_lost.
			{traces.FaultCommitFails, []string{traces.ActionCommitFailed, traces.ActionCommitFailed, traces.ActionClaimLost}},
		} {
			rs, _ := run(t, Config{}, append(slices.Clone(setup), deliver(tc.fault)))
			if got := rs[len(rs)-1].Actions; !slices.Equal(got, tc.want) {
				t.Errorf("%s: actions %q, want %q", tc.fault, got, tc.want)
			}
		}
	})
}

// heldCopyBatch is the leaseless batch fetch by its definition (docs/semantics.md, "Batches"):
// size peeks on a copy of the state in which each message taken is held under a lease that never
// ends. peekBatch must take the same messages without the copy.
func heldCopyBatch(s *State, mailbox string, now int64, size int) []traces.Message {
	scratch := s.clone()
	var got []traces.Message
	for len(got) < size {
		m, ok := scratch.next(mailbox, now)
		if !ok {
			break
		}
		got = append(got, traces.Message{ID: m.id, Attempts: m.attempts})
		m.token, m.leaseUntil = -1, 1<<62
		scratch.putReady(m)
	}
	return got
}

// TestPeekBatchMatchesHeldCopy drives the model through random histories of keyed, prioritized
// and delayed messages, leases that run out, acks, nacks and dead letters, and at every step
// compares the leaseless batch fetch with its definition (heldCopyBatch), for batch sizes 1 to 6,
// on the model's own state (so a fetch that left the index wrong shows in a later step).
// Seeds 1-40; a failure names the seed and the step.
func TestPeekBatchMatchesHeldCopy(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		m := NewMachine(Init(Config{}))
		var at int64
		var leased []traces.Message
		for step := range 300 {
			at += int64(rng.IntN(3))
			var err error
			switch k := rng.IntN(10); {
			case k < 4:
				_, err = m.Step(traces.OpEnqueue, at, traces.Args{Mailbox: "a", ID: fmt.Sprintf("m%d", step),
					Key: []string{"", "", "k1", "k2", "k3"}[rng.IntN(5)], Priority: rng.IntN(3), MaxAttempts: 1 + rng.IntN(3),
					Delay: int64(rng.IntN(4))})
			case k < 6:
				var r traces.Result
				r, err = m.Step(traces.OpLease, at, traces.Args{Mailbox: "a", LeaseFor: int64(1 + rng.IntN(5))})
				if r.Message != nil {
					leased = append(leased, *r.Message)
				}
			case k < 9 && len(leased) > 0:
				i := rng.IntN(len(leased))
				l := leased[i]
				leased = slices.Delete(leased, i, i+1)
				switch rng.IntN(3) {
				case 0:
					_, err = m.Step(traces.OpAck, at, traces.Args{ID: l.ID, Token: l.Token})
				case 1:
					_, err = m.Step(traces.OpNack, at, traces.Args{ID: l.ID, Token: l.Token, Delay: int64(rng.IntN(3))})
				default:
					_, err = m.Step(traces.OpDeadLetter, at, traces.Args{ID: l.ID, Reason: "r"})
				}
			default:
				_, err = m.Step(traces.OpExpire, at, traces.Args{})
			}
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			now := at // the fetch's own time: the model's state is at it
			// Every definition first, then every fetch: one that left the index wrong would
			// then differ at the next size.
			var want [7][]traces.Message
			for size := 1; size <= 6; size++ {
				want[size] = heldCopyBatch(&m.s, "a", now, size)
			}
			for size := 1; size <= 6; size++ {
				if got := m.s.peekBatch("a", now, size); !slices.Equal(got, want[size]) {
					t.Fatalf("seed %d step %d size %d at %d: peekBatch %v, held copy %v\n%s", seed, step, size, now, got, want[size], DescribeState(m.s))
				}
			}
		}
	}
}
