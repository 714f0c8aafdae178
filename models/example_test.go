package models_test

import (
	"fmt"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// Step by step: enqueue two messages under one key, lease the first, and see that the second waits
// for it (keyed FIFO) until the first is acked.
func ExampleStep() {
	s := models.Init(models.Config{})
	apply := func(op traces.Op, at int64, a traces.Args) traces.Result {
		next, r, err := models.Step(s, op, at, a)
		if err != nil {
			fmt.Println(err)
		}
		s = next
		return r
	}
	apply(traces.OpEnqueue, 0, traces.Args{Mailbox: "inbox", ID: "m1", Key: "order-7", MaxAttempts: 3})
	apply(traces.OpEnqueue, 0, traces.Args{Mailbox: "inbox", ID: "m2", Key: "order-7", MaxAttempts: 3})
	first := apply(traces.OpLease, 0, traces.Args{Mailbox: "inbox", LeaseFor: 30})
	fmt.Printf("lease: %s attempt %d token %d\n", first.Message.ID, first.Message.Attempts, first.Message.Token)
	fmt.Printf("lease while m1 is out: %v\n", apply(traces.OpLease, 1, traces.Args{Mailbox: "inbox", LeaseFor: 30}).Message)
	fmt.Printf("ack with a wrong token: %s\n", apply(traces.OpAck, 2, traces.Args{ID: "m1", Token: 99}).Err)
	apply(traces.OpAck, 2, traces.Args{ID: "m1", Token: first.Message.Token})
	second := apply(traces.OpLease, 3, traces.Args{Mailbox: "inbox", LeaseFor: 30})
	fmt.Printf("lease: %s attempt %d token %d\n", second.Message.ID, second.Message.Attempts, second.Message.Token)
	// Output:
	// lease: m1 attempt 1 token 1
	// lease while m1 is out: <nil>
	// ack with a wrong token: lease_lost
	// lease: m2 attempt 1 token 2
}

// The leaseless consumer counts a failure as stored + 1, so three failures of a message with
// max_attempts 3 dead-letter it. Handing it the raw stored count instead strands it: attempts
// reach max_attempts, it is never eligible again and never dead-lettered.
func ExampleConfig() {
	steps := []traces.Step{{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 3}}}
	for range 4 {
		steps = append(steps,
			traces.Step{Op: traces.OpConsumerFetch, Args: traces.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeaseless}},
			traces.Step{Op: traces.OpConsumerHandle, Args: traces.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeaseless, Outcome: traces.OutcomeFail}})
	}
	raw := func(stored int, _ bool) int { return stored }
	for _, c := range []struct {
		name string
		cfg  models.Config
	}{{"correct", models.Config{}}, {"raw attempts", models.Config{Attempts: raw}}} {
		s, results, err := models.Run(c.cfg, steps)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s:", c.name)
		for i := 2; i < len(results); i += 2 {
			fmt.Printf(" %s(%d)", results[i].Action, results[i].Attempt)
		}
		snap := s.Snapshot()
		fmt.Printf("; %d message(s) left, %d dead letter(s)\n", len(snap.Messages), len(snap.DeadLetters))
	}
	// Output:
	// correct: retried(1) retried(2) dead_lettered(3) idle(0); 0 message(s) left, 1 dead letter(s)
	// raw attempts: retried(0) retried(1) retried(2) idle(0); 1 message(s) left, 0 dead letter(s)
}

// RunTrace binds the trace's token symbols to the model's tokens, so its results compare directly
// with the trace's expected results.
func ExampleRunTrace() {
	tr := &traces.Trace{
		Format: traces.Format,
		Name:   "lease-then-ack",
		Expect: traces.Expect{DivergesAt: -1},
		Steps: []traces.Step{
			{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 2}},
			{Op: traces.OpLease, Args: traces.Args{Mailbox: "inbox", LeaseFor: 10},
				Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 5}}},
			{Op: traces.OpAck, At: 4, Args: traces.Args{ID: "m1", Token: 5}},
		},
	}
	results, final, err := models.RunTrace(models.Config{}, tr)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("lease token symbol:", results[1].Message.Token)
	fmt.Printf("ack err: %q\n", results[2].Err)
	fmt.Println("final:", final.Messages[0].ID, final.Messages[0].State)
	// Output:
	// lease token symbol: 5
	// ack err: ""
	// final: m1 acked
}

// DescribeOp and DescribeState render steps and states for failure messages.
func ExampleDescribeState() {
	s, _, err := models.Run(models.Config{}, []traces.Step{
		{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "inbox", ID: "m1", Key: "k", MaxAttempts: 2}},
		{Op: traces.OpConsumerFetch, At: 1, Args: traces.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeased, LeaseFor: 10}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(models.DescribeOp(traces.OpLease, traces.Args{Mailbox: "inbox", LeaseFor: 10}))
	fmt.Print(models.DescribeState(s))
	// Output:
	// lease(mailbox="inbox", lease_for=10)
	// time 1, last token 1, last seq 1
	// mailbox "inbox":
	//   #1 "m1" ready attempts 1/2 available_at 0 key "k" token 1 until 11
	// worker 1 holds "m1" from "inbox" (leased, attempts 1, token 1)
}
