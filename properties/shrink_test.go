package properties

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/pconform/pconform/traces"
)

func render(cmds []*cmd) string {
	var b strings.Builder
	for _, c := range cmds {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// TestSimplifications checks the rewrites of the own shrinking pass on a fixed sequence.
func TestSimplifications(t *testing.T) {
	seq := []*cmd{
		{serial: 1, op: traces.OpEnqueue, at: 5, args: traces.Args{Mailbox: "b", ID: "m4", MaxAttempts: 2}},
		{serial: 2, op: traces.OpOutboxEnqueue, at: 5, args: traces.Args{ID: "m6", Target: "a", MaxAttempts: 1}},
		{serial: 3, op: traces.OpConsumerFetch, at: 7, args: traces.Args{Worker: 3, Mailbox: "b", Profile: "leaseless"}},
		{serial: 4, op: traces.OpPublisherDeliver, at: 9, tok: 4, args: traces.Args{ID: "m4", Publisher: 2, Profile: "fold", Fault: "none"}},
	}
	for _, c := range []struct {
		name string
		f    func([]*cmd) []*cmd
		want string
	}{
		{"ids", renameIDs, `#1 @5 enqueue mailbox=b id=m1 max_attempts=2
#2 @5 outbox_enqueue id=m2 max_attempts=1 target=a
#3 @7 consumer_fetch mailbox=b worker=3 profile=leaseless
#4 @9 publisher_deliver id=m1 token=4 publisher=2 profile=fold fault=none
`},
		{"mailboxes", renameMailboxes, `#1 @5 enqueue mailbox=a id=m4 max_attempts=2
#2 @5 outbox_enqueue id=m6 max_attempts=1 target=b
#3 @7 consumer_fetch mailbox=a worker=3 profile=leaseless
#4 @9 publisher_deliver id=m4 token=4 publisher=2 profile=fold fault=none
`},
		{"workers and publishers", func(c []*cmd) []*cmd { return onePublisher(renameWorkers(c)) }, `#1 @5 enqueue mailbox=b id=m4 max_attempts=2
#2 @5 outbox_enqueue id=m6 max_attempts=1 target=a
#3 @7 consumer_fetch mailbox=b worker=1 profile=leaseless
#4 @9 publisher_deliver id=m4 token=4 publisher=1 profile=fold fault=none
`},
		{"time", func(c []*cmd) []*cmd { return shiftFrom(shiftTime(c), 3, 1) }, `#1 @0 enqueue mailbox=b id=m4 max_attempts=2
#2 @0 outbox_enqueue id=m6 max_attempts=1 target=a
#3 @2 consumer_fetch mailbox=b worker=3 profile=leaseless
#4 @3 publisher_deliver id=m4 token=4 publisher=2 profile=fold fault=none
`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := render(seq)
			if got := render(c.f(seq)); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
			if render(seq) != before {
				t.Error("the rewrite changed its input")
			}
		})
	}
}

// TestRenumber checks that a trace names issued tokens 1, 2, ... in issue order per namespace and
// puts never-issued ones above them.
func TestRenumber(t *testing.T) {
	steps := []traces.Step{
		{Op: traces.OpAck, Args: traces.Args{ID: "m1", Token: 40}},
		{Op: traces.OpLease, Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 7}}},
		{Op: traces.OpOutboxClaim, Result: traces.Result{Claimed: []traces.Claimed{{ID: "o1", DeliveryAttempts: 1, Token: 9}, {ID: "o2", DeliveryAttempts: 1, Token: 9}}}},
		{Op: traces.OpAck, Args: traces.Args{ID: "m1", Token: 7}},
		{Op: traces.OpPublisherDeliver, Args: traces.Args{ID: "o1", Token: 9}},
		{Op: traces.OpOutboxComplete, Args: traces.Args{ID: "o1", Token: 55}},
	}
	final := traces.Snapshot{
		Messages: []traces.MessageRow{{ID: "m1", Token: 7}},
		Outbox:   []traces.OutboxRow{{ID: "o2", Token: 9}},
	}
	renumber(steps, &final)
	got := []int{steps[0].Args.Token, steps[1].Result.Message.Token, steps[2].Result.Claimed[0].Token, steps[2].Result.Claimed[1].Token,
		steps[3].Args.Token, steps[4].Args.Token, steps[5].Args.Token, final.Messages[0].Token, final.Outbox[0].Token}
	want := []int{2, 1, 1, 1, 1, 1, 2, 1, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("symbols %v, want %v", got, want)
		}
	}
}

// TestWorldLegal checks the preconditions beyond the model's own: the leaseless single-worker
// rule, handle pairing, and dangling token references standing for forged tokens.
func TestWorldLegal(t *testing.T) {
	set := newSetup(DefaultMix(), nil)
	step := func(w *world, c *cmd) *world {
		t.Helper()
		if why := w.legal(c); why != "" {
			t.Fatalf("%s is illegal: %s", c, why)
		}
		n, _ := w.apply(c)
		return n
	}
	w := newWorld(set)
	w = step(w, &cmd{serial: 1, op: traces.OpEnqueue, args: traces.Args{Mailbox: "b", ID: "m1", MaxAttempts: 1}})
	w = step(w, &cmd{serial: 2, op: traces.OpConsumerFetch, args: traces.Args{Worker: 3, Mailbox: "b", Profile: "leaseless"}})
	for _, c := range []struct {
		c    *cmd
		want string
	}{
		{&cmd{serial: 3, op: traces.OpConsumerFetch, args: traces.Args{Worker: 1, Mailbox: "b", Profile: "leaseless"}}, "mailbox served otherwise"},
		{&cmd{serial: 3, op: traces.OpConsumerFetch, args: traces.Args{Worker: 1, Mailbox: "b", Profile: "leased", LeaseFor: 1}}, "mailbox served otherwise"},
		{&cmd{serial: 3, op: traces.OpConsumerFetch, args: traces.Args{Worker: 3, Mailbox: "a", Profile: "leaseless"}}, "still holds"},
		{&cmd{serial: 3, op: traces.OpConsumerHandle, args: traces.Args{Worker: 3, Mailbox: "a", Profile: "leaseless", Outcome: "ok"}}, "does not pair"},
		{&cmd{serial: 3, op: traces.OpAdvanceClock, at: -1}, "time goes back"},
	} {
		if got := w.legal(c.c); !strings.Contains(got, c.want) {
			t.Errorf("%s: legal says %q, want %q", c.c, got, c.want)
		}
	}
	// A reference to a command that issued nothing stands for a forged token: the ack is legal
	// and loses its lease.
	w = step(w, &cmd{serial: 4, op: traces.OpEnqueue, args: traces.Args{Mailbox: "a", ID: "m2", MaxAttempts: 1}})
	w = step(w, &cmd{serial: 5, op: traces.OpLease, args: traces.Args{Mailbox: "a", LeaseFor: 5}})
	if w.last.Message == nil || w.last.Message.Token != 5 {
		t.Fatalf("the lease's token is not named by its serial: %+v", w.last)
	}
	w = step(w, &cmd{serial: 6, op: traces.OpAck, tok: 99, args: traces.Args{ID: "m2"}})
	if w.last.Err != traces.ErrKindLeaseLost {
		t.Errorf("a dangling token matched: %+v", w.last)
	}
	w = step(w, &cmd{serial: 7, op: traces.OpAck, tok: 5, args: traces.Args{ID: "m2"}})
	if w.last.Err != "" {
		t.Errorf("the issued token did not match: %+v", w.last)
	}
}

// TestFailedHandlesDrawn draws long sequences from the default setup and counts the single
// handles whose commit fails: the generator must draw them (where the target runs the real
// Consumer.Handle, as its batch handles show), each of a worker that holds a fetch, and none
// when the mix has no batch handle (a variant that replaces Handle).
func TestFailedHandlesDrawn(t *testing.T) {
	count := func(mix Mix) (failed, handles int) {
		set := newSetup(mix, nil)
		r := rand.New(rand.NewSource(1))
		for range 50 {
			w := newWorld(set)
			for range 40 {
				c := set.generate(w, r)
				if why := w.legal(c); why != "" {
					continue
				}
				if c.op == traces.OpConsumerHandle {
					handles++
					if c.args.Fault == traces.FaultCommitFails {
						if _, held := w.held[c.args.Worker]; !held {
							t.Fatalf("a failed commit drawn for worker %d, which holds no fetch", c.args.Worker)
						}
						failed++
					}
				}
				n, err := w.apply(c)
				if err != nil {
					t.Fatal(err)
				}
				w = n
			}
		}
		return failed, handles
	}
	failed, handles := count(DefaultMix())
	if failed == 0 {
		t.Errorf("default mix: no failed commit among %d single handles", handles)
	}
	t.Logf("default mix: %d failed commits among %d single handles", failed, handles)
	mix := DefaultMix()
	delete(mix, traces.OpConsumerHandleBatch)
	delete(mix, traces.OpConsumerFetchBatch)
	if failed, handles := count(mix); failed != 0 || handles == 0 {
		t.Errorf("a mix without batch handles: %d failed commits among %d single handles, want none", failed, handles)
	}
}
