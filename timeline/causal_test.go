package timeline

import (
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

func step(op traces.Op, a traces.Args, r traces.Result) traces.Step {
	return traces.Step{Op: op, Args: a, Result: r}
}

func msg(id string, token int) *traces.Message { return &traces.Message{ID: id, Token: token} }

// TestCausal follows ids and tokens backwards from a focus step, table-driven over small traces.
func TestCausal(t *testing.T) {
	fetch := func(w int, m *traces.Message) traces.Step {
		return step(traces.OpConsumerFetch, traces.Args{Worker: w, Mailbox: "a", Profile: traces.ProfileLeased}, traces.Result{Message: m})
	}
	handle := func(w int, action string) traces.Step {
		return step(traces.OpConsumerHandle, traces.Args{Worker: w, Mailbox: "a", Profile: traces.ProfileLeased, Outcome: traces.OutcomeOK}, traces.Result{Action: action})
	}
	enqueue := func(id string) traces.Step {
		return step(traces.OpEnqueue, traces.Args{Mailbox: "a", ID: id, MaxAttempts: 1}, traces.Result{})
	}
	for _, tc := range []struct {
		name  string
		steps []traces.Step
		focus int
		extra []string
		want  []int
	}{
		{
			name: "a handle leads to its worker's fetch, the other holder and the enqueue",
			steps: []traces.Step{
				enqueue("m1"),          // 0: m1
				enqueue("m2"),          // 1: unrelated
				fetch(1, msg("m1", 1)), // 2: worker 1 takes m1 under token 1
				fetch(2, msg("m2", 2)), // 3: unrelated
				step(traces.OpAdvanceClock, traces.Args{}, traces.Result{}), // 4: touches every lease
				fetch(3, msg("m1", 3)), // 5: the lease expired; worker 3 takes m1
				handle(3, "acked"),     // 6: worker 3 acks m1
				handle(2, "acked"),     // 7: unrelated
				handle(1, "acked"),     // 8: focus: worker 1 acks under its lost lease
			},
			focus: 8,
			want:  []int{0, 2, 4, 5, 6, 8},
		},
		{
			name: "a token leads to the extend under it",
			steps: []traces.Step{
				enqueue("m1"),
				fetch(1, msg("m1", 1)),
				step(traces.OpExtend, traces.Args{ID: "m1", Token: 1, LeaseFor: 5}, traces.Result{}),
				enqueue("m2"),
				handle(1, "acked"),
			},
			focus: 4,
			want:  []int{0, 1, 2, 4},
		},
		{
			name: "a claim joins only the followed rows",
			steps: []traces.Step{
				step(traces.OpOutboxEnqueue, traces.Args{ID: "o1", Target: "a"}, traces.Result{}),
				step(traces.OpOutboxEnqueue, traces.Args{ID: "o2", Target: "a"}, traces.Result{}),
				step(traces.OpOutboxClaim, traces.Args{Limit: 2}, traces.Result{Claimed: []traces.Claimed{{ID: "o1", Token: 1}, {ID: "o2", Token: 2}}}),
				step(traces.OpOutboxComplete, traces.Args{ID: "o2", Token: 2}, traces.Result{}),
				step(traces.OpOutboxComplete, traces.Args{ID: "o1", Token: 1}, traces.Result{}),
			},
			focus: 4,
			want:  []int{0, 2, 4},
		},
		{
			name:  "extra ids are followed from the start",
			steps: []traces.Step{enqueue("m1"), enqueue("m2"), enqueue("m3"), fetch(1, msg("m1", 1))},
			focus: 3,
			extra: []string{"m3"},
			want:  []int{0, 2, 3},
		},
		{
			name:  "a focus past the end is the last step",
			steps: []traces.Step{enqueue("m1"), enqueue("m2")},
			focus: 9,
			want:  []int{1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &traces.Trace{Steps: tc.steps}
			if got := Causal(tr, tc.focus, tc.extra...); !slices.Equal(got, tc.want) {
				t.Errorf("Causal = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestObservedUnfencedAckShowsTheCausingFetch: in a run observed against unfenced-ack (the first
// 131 steps of `pconform observe --target unfenced-ack --seed 3`, kept in testdata since a new run
// interleaves differently), the reference model refuses a handle whose lease another worker took
// over. The explain view against the model must show, uncollapsed and marked causal, the fetch
// that gave the handling worker its lease, and name the message the handle works on.
func TestObservedUnfencedAckShowsTheCausingFetch(t *testing.T) {
	tl, tr, v := replayed(t, "testdata/observed-unfenced-ack-seed3.json", targets.Model)
	if v.Outcome != replay.Diverged || tl.Divergence == nil {
		t.Fatalf("the model does not refuse the observed unfenced ack: %s", v)
	}
	d := tr.Steps[v.Step]
	if d.Op != traces.OpConsumerHandle {
		t.Fatalf("the divergence is a %s, want the consumer_handle under a lost lease", d.Op)
	}
	cause := -1 // the handling worker's last fetch before the divergence, found independently
	for i := v.Step - 1; i >= 0; i-- {
		if s := tr.Steps[i]; s.Op == traces.OpConsumerFetch && s.Args.Worker == d.Args.Worker {
			cause = i
			break
		}
	}
	if cause < 0 || tr.Steps[cause].Result.Message == nil {
		t.Fatalf("no fetch by worker %d with a message before step #%d", d.Args.Worker, v.Step)
	}
	held := tr.Steps[cause].Result.Message
	if v.Step-cause <= 2*DefaultWindow {
		t.Fatalf("the fetch #%d is within the window of the divergence #%d: the test would not test causality", cause, v.Step)
	}
	rows := map[int]Row{}
	for _, r := range tl.Rows {
		if r.Gap == 0 {
			rows[r.Index] = r
		}
	}
	r, ok := rows[cause]
	if !ok {
		t.Fatalf("the causing fetch #%d (worker %d takes %s with token %d) is collapsed", cause, d.Args.Worker, held.ID, held.Token)
	}
	if !r.Causal {
		t.Errorf("the causing fetch #%d is not marked causal", cause)
	}
	if want := held.ID; !strings.HasPrefix(rows[v.Step].Handles, want+" ") {
		t.Errorf("the diverging handle names %q, want the message %s it handles", rows[v.Step].Handles, want)
	}
	// Every other fetch of the same message is shown too: the takeover is the bug's other half.
	for i := cause + 1; i < v.Step; i++ {
		if s := tr.Steps[i]; s.Op == traces.OpConsumerFetch && s.Result.Message != nil && s.Result.Message.ID == held.ID {
			if _, ok := rows[i]; !ok {
				t.Errorf("the takeover fetch #%d of %s is collapsed", i, held.ID)
			}
		}
	}
	if tl.Collapsed == 0 || len(tl.Others) == 0 {
		t.Errorf("nothing collapsed (%d steps, other lanes %v): the view does not focus", tl.Collapsed, tl.Others)
	}
}
