package properties

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/traces"
)

// obs is one step fed to a history: the command, its result and the target's state after it.
type obs struct {
	c    *cmd
	r    traces.Result
	snap traces.Snapshot
}

func row(id, state string, attempts, maxAttempts, token int, leaseUntil int64) traces.MessageRow {
	return traces.MessageRow{Mailbox: "a", ID: id, State: state, Attempts: attempts, MaxAttempts: maxAttempts, Token: token, LeaseUntil: leaseUntil}
}

func keyed(r traces.MessageRow, key string) traces.MessageRow { r.Key = key; return r }

func msgs(rows ...traces.MessageRow) traces.Snapshot { return traces.Snapshot{Messages: rows} }

func op(o traces.Op, at int64, a traces.Args) *cmd { return &cmd{op: o, at: at, args: a} }

var enqueueM1 = obs{op(traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 1}), traces.Result{},
	msgs(row("m1", "ready", 0, 1, 0, 0))}

// reenqueuedWhileFetched is the shrunk trace of PCONFORM_SEED=8 TestPropertyStore: worker 2 holds
// a fetch of m1 (max_attempts 2) when expire dead-letters it, a purge removes it at the end of its
// horizon, and m1 is enqueued again with max_attempts 1; then worker 2's handle fails with the
// purged row's attempt (handed is its Attempt).
func reenqueuedWhileFetched(handed int) []obs {
	fetch := func(at int64, worker, attempts, token int) obs {
		return obs{op(traces.OpConsumerFetch, at, traces.Args{Worker: worker, Mailbox: "a", Profile: "leased", LeaseFor: 1}),
			traces.Result{Message: &traces.Message{ID: "m1", Attempts: attempts, Token: token}}, msgs(row("m1", "ready", attempts, 2, token, at+1))}
	}
	fresh := msgs(row("m1", "ready", 0, 1, 0, 0))
	return []obs{
		{op(traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 2}), traces.Result{}, msgs(row("m1", "ready", 0, 2, 0, 0))},
		fetch(2, 1, 1, 1),
		fetch(5, 2, 2, 2),
		{op(traces.OpExpire, 6, traces.Args{}), traces.Result{Affected: 1},
			traces.Snapshot{DeadLetters: []traces.DeadLetterRow{{Mailbox: "a", ID: "m1", Attempts: 2, Reason: "lease expired after max attempts"}}}},
		{op(traces.OpPurge, 8, traces.Args{Limit: 1, OlderThan: 2, Horizon: 2}), traces.Result{Affected: 1}, traces.Snapshot{}},
		{op(traces.OpEnqueue, 8, traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 1}), traces.Result{}, fresh},
		{op(traces.OpConsumerHandle, 8, traces.Args{Worker: 2, Mailbox: "a", Profile: "leased", Outcome: "fail"}),
			traces.Result{Action: "lease_lost", Attempt: handed}, fresh},
	}
}

// TestInvariants feeds hand-made histories to the invariants: each must fire on the state that
// breaks it and stay quiet on the legitimate look-alikes (the scoping of no-loss and no-strand).
func TestInvariants(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps []obs
		// want is the check the last step breaks, "" for none; detail a fragment of its message.
		want   Check
		detail string
	}{
		{
			name:  "accepted enqueue missing",
			steps: []obs{{op(traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 1}), traces.Result{}, traces.Snapshot{}}},
			want:  CheckNoLoss, detail: "accepted by this enqueue",
		},
		{
			name:  "duplicate enqueue stores nothing new",
			steps: []obs{{op(traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 1}), traces.Result{Duplicate: true}, traces.Snapshot{}}},
		},
		{
			name:  "stored message vanishes",
			steps: []obs{enqueueM1, {op(traces.OpExpire, 1, traces.Args{}), traces.Result{}, traces.Snapshot{}}},
			want:  CheckNoLoss, detail: "was stored before",
		},
		{
			name: "dead-lettered message is not lost",
			steps: []obs{enqueueM1, {op(traces.OpDeadLetter, 1, traces.Args{ID: "m1", Reason: "x"}), traces.Result{},
				traces.Snapshot{DeadLetters: []traces.DeadLetterRow{{Mailbox: "a", ID: "m1", Attempts: 0, Reason: "x"}}}}},
			want: "",
		},
		{
			name: "delivered outbox row without its message",
			steps: []obs{{op(traces.OpPublisherDeliver, 0, traces.Args{ID: "o1", Profile: "split", Fault: "commit_fails"}), traces.Result{Action: "delivered"},
				traces.Snapshot{Outbox: []traces.OutboxRow{{ID: "o1", Target: "a", MaxAttempts: 1, State: "completed"}}}}},
			want: CheckNoLoss, detail: `completed outbox row "o1"`,
		},
		{
			name: "raw outbox_complete completes without delivering",
			steps: []obs{{op(traces.OpOutboxComplete, 0, traces.Args{ID: "o1"}), traces.Result{},
				traces.Snapshot{Outbox: []traces.OutboxRow{{ID: "o1", Target: "a", MaxAttempts: 1, State: "completed"}}}}},
		},
		{
			name:  "attempts above max",
			steps: []obs{enqueueM1, {op(traces.OpLease, 0, traces.Args{Mailbox: "a", LeaseFor: 1}), traces.Result{}, msgs(row("m1", "ready", 2, 1, 0, 0))}},
			want:  CheckAttempts, detail: "attempts 2, max_attempts 1",
		},
		{
			name: "dead letter above its max",
			steps: []obs{enqueueM1, {op(traces.OpExpire, 1, traces.Args{}), traces.Result{},
				traces.Snapshot{DeadLetters: []traces.DeadLetterRow{{Mailbox: "a", ID: "m1", Attempts: 3, Reason: "x"}}}}},
			want: CheckAttempts, detail: "dead letter",
		},
		{
			name: "handle hands on an attempt above max",
			steps: []obs{enqueueM1,
				{op(traces.OpConsumerFetch, 0, traces.Args{Worker: 1, Mailbox: "a", Profile: "leaseless"}), traces.Result{Message: &traces.Message{ID: "m1"}}, msgs(row("m1", "ready", 0, 1, 0, 0))},
				{op(traces.OpConsumerHandle, 0, traces.Args{Worker: 1, Mailbox: "a", Profile: "leaseless", Outcome: "fail"}), traces.Result{Action: "retried", Attempt: 2}, msgs(row("m1", "ready", 1, 1, 0, 0))}},
			want: CheckAttempts, detail: "handed on attempt 2",
		},
		{
			// attempts-bounded judges each row generation by its own max_attempts: the handle of a
			// fetch of a purged row by that row's, not by the re-enqueued row's.
			name:  "a handle of a purged row after its id is enqueued again",
			steps: reenqueuedWhileFetched(2),
		},
		{
			name:  "a handle of a purged row above that row's max",
			steps: reenqueuedWhileFetched(3),
			want:  CheckAttempts, detail: "handed on attempt 3, max_attempts 2",
		},
		{
			name: "consumer leaves an exhausted message behind",
			steps: []obs{enqueueM1,
				{op(traces.OpConsumerFetch, 0, traces.Args{Worker: 1, Mailbox: "a", Profile: "leaseless"}), traces.Result{Message: &traces.Message{ID: "m1"}}, msgs(row("m1", "ready", 0, 1, 0, 0))},
				{op(traces.OpConsumerHandle, 0, traces.Args{Worker: 1, Mailbox: "a", Profile: "leaseless", Outcome: "fail"}), traces.Result{Action: "retried"}, msgs(row("m1", "ready", 1, 1, 0, 0))}},
			want: CheckNoStrand, detail: "stranded",
		},
		{
			name: "an exhausted message with an expired lease waits for expire",
			steps: []obs{enqueueM1,
				{op(traces.OpConsumerFetch, 0, traces.Args{Worker: 1, Mailbox: "a", Profile: "leased", LeaseFor: 1}), traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}, msgs(row("m1", "ready", 1, 1, 1, 1))},
				{op(traces.OpCrash, 5, traces.Args{}), traces.Result{}, msgs(row("m1", "ready", 1, 1, 1, 1))}},
		},
		{
			name: "a raw nack_by_id may strand",
			steps: []obs{enqueueM1,
				{op(traces.OpNackByID, 0, traces.Args{ID: "m1"}), traces.Result{}, msgs(row("m1", "ready", 1, 1, 0, 0))}},
		},
		{
			name: "a raw nack after a consumer lease may strand",
			steps: []obs{enqueueM1,
				{op(traces.OpConsumerFetch, 0, traces.Args{Worker: 1, Mailbox: "a", Profile: "leased", LeaseFor: 1}), traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}, msgs(row("m1", "ready", 1, 1, 1, 1))},
				{op(traces.OpNack, 0, traces.Args{ID: "m1"}), traces.Result{}, msgs(row("m1", "ready", 1, 1, 0, 0))}},
		},
		{
			name: "an id in a mailbox and among the dead letters",
			steps: []obs{enqueueM1, {op(traces.OpExpire, 1, traces.Args{}), traces.Result{}, traces.Snapshot{
				Messages:    []traces.MessageRow{row("m1", "ready", 0, 1, 0, 0)},
				DeadLetters: []traces.DeadLetterRow{{Mailbox: "a", ID: "m1", Reason: "x"}}}}},
			want: CheckExactlyOnce, detail: "stored 2 times",
		},
		{
			name: "an effect committed twice",
			steps: []obs{enqueueM1, {op(traces.OpConsumerHandle, 0, traces.Args{Worker: 1, Mailbox: "a", Profile: "leased", Outcome: "ok"}), traces.Result{Action: "acked"}, traces.Snapshot{
				Messages: []traces.MessageRow{row("m1", "acked", 1, 1, 0, 0)}, Effects: map[string][]string{"a": {"m1", "m1"}}}}},
			want: CheckExactlyOnce, detail: "more than once",
		},
		{
			name: "an effect without its acknowledgement",
			steps: []obs{enqueueM1, {op(traces.OpConsumerHandle, 0, traces.Args{Worker: 1, Mailbox: "a", Profile: "leased", Outcome: "ok"}), traces.Result{Action: "acked"}, traces.Snapshot{
				Messages: []traces.MessageRow{row("m1", "ready", 1, 1, 0, 0)}, Effects: map[string][]string{"a": {"m1"}}}}},
			want: CheckExactlyOnce, detail: "not an acked message",
		},
		{
			name: "a keyed lease overtakes its head",
			steps: []obs{
				{op(traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m1", Key: "k", MaxAttempts: 2}), traces.Result{}, msgs(keyed(row("m1", "ready", 0, 2, 0, 0), "k"))},
				{op(traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m2", Key: "k", MaxAttempts: 2}), traces.Result{}, msgs(keyed(row("m1", "ready", 0, 2, 0, 0), "k"), keyed(row("m2", "ready", 0, 2, 0, 0), "k"))},
				{op(traces.OpLease, 0, traces.Args{Mailbox: "a", LeaseFor: 1}), traces.Result{Message: &traces.Message{ID: "m2", Attempts: 1, Token: 1}}, msgs(keyed(row("m1", "ready", 0, 2, 0, 0), "k"), keyed(row("m2", "ready", 1, 2, 1, 1), "k"))},
			},
			want: CheckFIFO, detail: `the earlier "m1"`,
		},
		{
			name: "an exhausted head without a live lease does not block",
			steps: []obs{
				{op(traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m1", Key: "k", MaxAttempts: 1}), traces.Result{}, msgs(keyed(row("m1", "ready", 1, 1, 1, 2), "k"))},
				{op(traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m2", Key: "k", MaxAttempts: 2}), traces.Result{}, msgs(keyed(row("m1", "ready", 1, 1, 1, 2), "k"), keyed(row("m2", "ready", 0, 2, 0, 0), "k"))},
				{op(traces.OpPeek, 2, traces.Args{Mailbox: "a"}), traces.Result{Message: &traces.Message{ID: "m2"}}, msgs(keyed(row("m1", "ready", 1, 1, 1, 2), "k"), keyed(row("m2", "ready", 0, 2, 0, 0), "k"))},
			},
		},
		{
			name: "an exhausted head with a live lease blocks",
			steps: []obs{
				{op(traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m1", Key: "k", MaxAttempts: 1}), traces.Result{}, msgs(keyed(row("m1", "ready", 1, 1, 1, 3), "k"))},
				{op(traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m2", Key: "k", MaxAttempts: 2}), traces.Result{}, msgs(keyed(row("m1", "ready", 1, 1, 1, 3), "k"), keyed(row("m2", "ready", 0, 2, 0, 0), "k"))},
				{op(traces.OpPeek, 2, traces.Args{Mailbox: "a"}), traces.Result{Message: &traces.Message{ID: "m2"}}, msgs(keyed(row("m1", "ready", 1, 1, 1, 3), "k"), keyed(row("m2", "ready", 0, 2, 0, 0), "k"))},
			},
			want: CheckFIFO, detail: "live lease true",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHistory()
			var got []violation
			for i, s := range c.steps {
				got = h.observe(s.c, s.r, s.snap)
				if i < len(c.steps)-1 && len(got) > 0 {
					t.Fatalf("step %d (setup) already broke %v", i, got)
				}
			}
			if c.want == "" {
				if len(got) > 0 {
					t.Errorf("want no violation, got %v", got)
				}
				return
			}
			i := slices.IndexFunc(got, func(v violation) bool { return v.check == c.want })
			if i < 0 {
				t.Fatalf("want %s, got %v", c.want, got)
			}
			if !strings.Contains(got[i].detail, c.detail) {
				t.Errorf("%s detail %q does not mention %q", c.want, got[i].detail, c.detail)
			}
		})
	}
}

// TestEveryCheckStatesItsProperty reads the Check constants from the source, so a new check
// cannot reach a hunted trace's expect.violates without a sentence.
func TestEveryCheckStatesItsProperty(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "commands.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok || vs.Type == nil || fmt.Sprint(vs.Type) != "Check" {
			return true
		}
		for _, v := range vs.Values {
			lit, ok := v.(*ast.BasicLit)
			if !ok {
				continue
			}
			n++
			c := Check(strings.Trim(lit.Value, `"`))
			if c.Statement() == "" {
				t.Errorf("check %q has no statement in properties/commands.go", c)
			}
		}
		return true
	})
	if n < 8 {
		t.Fatalf("found %d Check constants in commands.go, want at least 8: the parse is off", n)
	}
	f1 := &Failure{Checks: []Check{CheckResult, CheckNoStrand}}
	if got, want := f1.Violates(), "no-strand: "+CheckNoStrand.Statement()+"; result: "+CheckResult.Statement(); got != want {
		t.Errorf("Violates() = %q, want the invariant before the model comparison: %q", got, want)
	}
}
