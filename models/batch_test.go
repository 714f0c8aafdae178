package models

import (
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
}
