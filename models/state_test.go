package models

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/traces"
)

// deepCopy copies s down to every slice, so no later write through s's maps or slices can reach it.
func deepCopy(s State) State {
	n := s
	n.messages = maps.Clone(s.messages)
	n.dead = maps.Clone(s.dead)
	n.outbox = maps.Clone(s.outbox)
	n.claims = s.claims.clone()
	n.inflight = maps.Clone(s.inflight)
	n.idx = s.idx.clone()
	n.effects = map[string][]string{}
	for k, v := range s.effects {
		n.effects[k] = slices.Clone(v)
	}
	return n
}

// richState has something in every part of the state: messages in two mailboxes (keyed, leased,
// acked), a dead letter, effects, outbox rows (claimed, completed) and two workers holding fetches
// of the same mailbox.
func richState(t *testing.T) State {
	t.Helper()
	s, _, err := Run(Config{}, []traces.Step{
		keyed(enqueue(0, "a", "m1", 3), "k"), keyed(enqueue(0, "a", "m2", 3), "k"), enqueue(0, "a", "m3", 3),
		enqueue(0, "a", "m4", 2), enqueue(0, "b", "m5", 1), enqueue(0, "a", "m6", 3),
		fetch(0, 9, "a", leased, 10), handle(0, 9, "a", leased, outcomeOK, 0), // effects a: [m1]
		fetch(1, 1, "a", leased, 10), fetch(1, 2, "a", leaseless, 0),
		lease(1, "b", 10), deadLetterOp(1, "m6", "x"),
		outboxEnqueue(1, "o1", "a", 3), outboxEnqueue(1, "o2", "b", 3), outboxClaim(1, 1, 10),
		outboxEnqueue(1, "o3", "a", 1), outboxClaim(1, 1, 10), outboxComplete(1, "o2", 5),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// everyOp returns one well-formed step of every op at time 2, against richState.
func everyOp() []traces.Step {
	return []traces.Step{
		enqueue(2, "a", "n1", 3), keyed(enqueue(2, "a", "n2", 3), "k"), enqueue(2, "a", "m1", 3),
		lease(2, "a", 5), lease(2, "b", 5), peek(2, "a"),
		ack(2, "m2", 2), ack(2, "m5", 3), nack(2, "m2", 2, 1), ackByID(2, "m3"), nackByID(2, "m4", 1),
		extend(2, "m2", 2, 9), expire(20), deadLetterOp(2, "m3", "y"),
		outboxEnqueue(2, "o9", "a", 1), outboxClaim(20, 5, 5), outboxComplete(2, "o1", 4), outboxFail(2, "o1", 4, 3),
		advance(3), fetch(2, 3, "a", leased, 5), fetch(2, 4, "a", leaseless, 0),
		handle(2, 1, "a", leased, outcomeOK, 0), handle(2, 2, "a", leaseless, outcomeOK, 0),
		handle(2, 1, "a", leased, outcomeFail, 1), handle(2, 2, "a", leaseless, outcomeFail, 1),
		deliver(2, "o1", 4, fold, faultNone), deliver(2, "o1", 4, split, crashBetween), deliver(2, "o3", 5, fold, faultNone), deliver(2, "o2", 5, split, faultNone),
		crash(2),
	}
}

func TestStepDoesNotChangeItsInput(t *testing.T) {
	s := richState(t)
	if len(s.inflight) != 2 || len(s.effects["a"]) != 1 || len(s.dead) != 1 || len(s.outbox) != 3 {
		t.Fatalf("richState is not rich:\n%s", DescribeState(s))
	}
	want := deepCopy(s)
	wantDesc := DescribeState(s)
	steps := everyOp()
	// Step from the same state along every pair of ops, and check each earlier branch is still
	// what it was: a step that wrote into an array shared with its input would show here even
	// when its input's contents look unchanged.
	for i, a := range steps {
		si, _, err := Step(s, a.Op, a.At, a.Args)
		if err != nil {
			t.Fatalf("step %s: %v", DescribeOp(a.Op, a.Args), err)
		}
		siCopy, siDesc := deepCopy(si), DescribeState(si)
		for _, b := range steps[i+1:] {
			if _, _, err := Step(s, b.Op, b.At, b.Args); err != nil {
				t.Fatalf("step %s: %v", DescribeOp(b.Op, b.Args), err)
			}
			if !Equal(si, siCopy) || DescribeState(si) != siDesc {
				t.Fatalf("stepping %s from the same state changed the result of %s:\nwant:\n%sgot:\n%s",
					DescribeOp(b.Op, b.Args), DescribeOp(a.Op, a.Args), siDesc, DescribeState(si))
			}
		}
	}
	if !Equal(s, want) || DescribeState(s) != wantDesc {
		t.Fatalf("Step changed its input:\nwant:\n%sgot:\n%s", wantDesc, DescribeState(s))
	}
}

func TestEqual(t *testing.T) {
	steps := []traces.Step{enqueue(0, "a", "m1", 3), fetch(0, 1, "a", leased, 5)}
	a, _, errA := Run(Config{}, steps)
	b, _, errB := Run(Config{Attempts: rawAttempts}, steps) // the Config is not compared
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if !Equal(a, b) {
		t.Fatalf("equal runs compare unequal:\n%s\n%s", DescribeState(a), DescribeState(b))
	}
	later, _, _ := Step(a, traces.OpAdvanceClock, 1, traces.Args{})
	crashed, _, _ := Step(a, traces.OpCrash, 0, traces.Args{})
	peeked, _, _ := Step(a, traces.OpPeek, 0, traces.Args{Mailbox: "a"})
	for name, c := range map[string]struct {
		other State
		equal bool
	}{
		"a later time":                {later, false},
		"no in-flight fetch":          {crashed, false},
		"after a read-only peek":      {peeked, true},
		"the empty state":             {Init(Config{}), false},
		"the zero State against Init": {State{}, false},
	} {
		if got := Equal(a, c.other); got != c.equal {
			t.Errorf("%s: Equal = %v, want %v", name, got, c.equal)
		}
	}
	if !Equal(State{}, Init(Config{})) {
		t.Errorf("the zero State and Init(Config{}) differ")
	}
}

func TestZeroStateSteps(t *testing.T) {
	var s State
	s, _, err := Step(s, traces.OpEnqueue, 0, traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err = Step(s, traces.OpConsumerFetch, 0, traces.Args{Worker: 1, Mailbox: "a", Profile: leaseless})
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := Step(s, traces.OpConsumerHandle, 0, traces.Args{Worker: 1, Mailbox: "a", Profile: leaseless, Outcome: outcomeFail})
	if err != nil {
		t.Fatal(err)
	}
	if want := action(traces.ActionDeadLettered, 1); !cmp.Equal(r, want) {
		t.Fatalf("the zero State runs the default consumer: got %+v, want %+v", r, want)
	}
	if s.Config().Attempts == nil || s.Now() != 0 {
		t.Fatalf("zero State: Config().Attempts filled = %v, Now = %d", s.Config().Attempts != nil, s.Now())
	}
	later, _, _ := Step(s, traces.OpAdvanceClock, 7, traces.Args{})
	if later.Now() != 7 || later.Config().Attempts(2, true) != 3 {
		t.Fatalf("after advance_clock to 7: Now = %d, default Attempts(2, leaseless) = %d", later.Now(), later.Config().Attempts(2, true))
	}
}

func TestSnapshot(t *testing.T) {
	empty := Init(Config{}).Snapshot()
	if empty.Messages == nil || empty.Outbox == nil || empty.DeadLetters == nil || empty.Effects == nil {
		t.Fatalf("empty snapshot has nil parts: %#v", empty)
	}
	s, _, err := Run(Config{}, []traces.Step{
		enqueue(0, "b", "m1", 3), withPayload(prio(keyed(enqueue(0, "a", "m9", 2), "k"), 4), "p9"), enqueue(0, "a", "m2", 3),
		deadLetterOp(3, "m9", "x"), enqueue(3, "a", "m0", 3), deadLetterOp(3, "m0", "y"),
		outboxEnqueue(3, "o2", "a", 1), outboxEnqueue(3, "o1", "a", 1),
		fetch(3, 1, "b", leased, 5), handle(3, 1, "b", leased, outcomeOK, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	want := traces.Snapshot{
		Messages: []traces.MessageRow{
			{Mailbox: "a", ID: "m2", State: traces.StateReady, MaxAttempts: 3},
			{Mailbox: "b", ID: "m1", State: traces.StateAcked, Attempts: 1, MaxAttempts: 3},
		},
		Outbox: []traces.OutboxRow{
			{ID: "o1", Target: "a", MaxAttempts: 1, State: traces.StatePending, AvailableAt: 3},
			{ID: "o2", Target: "a", MaxAttempts: 1, State: traces.StatePending, AvailableAt: 3},
		},
		// A dead letter is the message's whole row as it was moved, with the reason and the time.
		DeadLetters: []traces.DeadLetterRow{
			{Mailbox: "a", ID: "m0", MaxAttempts: 3, Reason: "y", DeadAt: 3},
			{Mailbox: "a", ID: "m9", Key: "k", Priority: 4, Payload: "p9", MaxAttempts: 2, Reason: "x", DeadAt: 3},
		},
		Effects: map[string][]string{"b": {"m1"}},
	}
	if d := cmp.Diff(want, snap); d != "" {
		t.Fatalf("snapshot (-want +got):\n%s", d)
	}
	// The snapshot is the caller's: changing it leaves the state alone.
	snap.Effects["b"][0] = "changed"
	if got := s.Snapshot().Effects["b"][0]; got != "m1" {
		t.Fatalf("changing a snapshot reached the state: effects now %q", got)
	}
}

func TestDescribeOp(t *testing.T) {
	for _, c := range []struct {
		step traces.Step
		want string
	}{
		{enqueue(0, "a", "m1", 3), `enqueue(mailbox="a", id="m1", max_attempts=3)`},
		{prio(delayed(keyed(enqueue(0, "a", "m1", 3), "k"), 5), 2), `enqueue(mailbox="a", id="m1", max_attempts=3, key="k", priority=2, delay=5)`},
		{lease(0, "a", 30), `lease(mailbox="a", lease_for=30)`},
		{nack(0, "m1", 2, 0), `nack(id="m1", token=2)`},
		{expire(0), `expire()`},
		{handle(0, 1, "a", leaseless, outcomeFail, 4), `consumer_handle(worker=1, mailbox="a", profile="leaseless", outcome="fail", retry_delay=4)`},
		{deliver(0, "o1", 3, split, crashBetween), `publisher_deliver(publisher=1, id="o1", token=3, profile="split", fault="crash_between")`},
		{traces.Step{Op: "frobnicate"}, `frobnicate()`},
	} {
		if got := DescribeOp(c.step.Op, c.step.Args); got != c.want {
			t.Errorf("DescribeOp = %s, want %s", got, c.want)
		}
	}
}

func TestDescribeState(t *testing.T) {
	s := richState(t)
	got := DescribeState(s)
	want := `time 1, last token 5, last seq 9
mailbox "a":
  #1 "m1" acked attempts 1/3 available_at 0 key "k"
  #2 "m2" ready attempts 1/3 available_at 0 key "k" token 2 until 11
  #3 "m3" ready attempts 0/3 available_at 0
  #4 "m4" ready attempts 0/2 available_at 0
mailbox "b":
  #5 "m5" ready attempts 1/1 available_at 0 token 3 until 11
dead letters:
  "m6" from "a" attempts 0 reason "x"
outbox:
  #7 "o1" -> "a" pending delivery_attempts 1/10 available_at 1 token 4 until 11
  #8 "o2" -> "b" completed delivery_attempts 1/10 available_at 1
  #9 "o3" -> "a" pending delivery_attempts 0/10 available_at 1
effects "a": ["m1"]
worker 1 holds "m2" from "a" (leased, attempts 1, token 2)
worker 2 holds "m3" from "a" (leaseless, attempts 0)
`
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("DescribeState (-want +got):\n%s", d)
	}
}
