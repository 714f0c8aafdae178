package models

import (
	"fmt"
	"testing"

	"github.com/pconform/pconform/traces"
)

// BenchmarkRun runs one fixed generated sequence of 200 steps (seed 1) from Init and reports the
// cost per step, which includes the copy Step makes of the whole state.
func BenchmarkRun(b *testing.B) {
	g := newGen(1)
	s := Init(Config{})
	steps := make([]traces.Step, 0, 200)
	for range 200 {
		st := g.step()
		next, r, err := Step(s, st.Op, st.At, st.Args)
		if err != nil {
			b.Fatal(err)
		}
		g.observe(st, r)
		s = next
		steps = append(steps, st)
	}
	for b.Loop() {
		if _, _, err := Run(Config{}, steps); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(steps)), "ns/step")
}

// historyTrace returns a trace of n steps shaped like a long observed history: a small backlog
// that stays small (two mailboxes, a few keys, a row or two waiting on a retry delay) while the
// acked rows, the completed outbox rows and the effects grow with every round. Each round
// enqueues a message, fetches and handles twice on the leased path (its fetch expires leases
// first) or the leaseless one, fails one round's handles in five for a retry, and passes one
// outbox row through a claim and a delivery. Every result is the model's own, so the trace
// replays to a match.
func historyTrace(tb testing.TB, n int) *traces.Trace {
	tb.Helper()
	m := NewMachine(Init(Config{}))
	tr := &traces.Trace{Format: traces.Format, Name: fmt.Sprintf("history-%d", n), Origin: traces.Origin{Kind: traces.OriginHand}}
	do := func(st traces.Step) traces.Result {
		r, err := m.Step(st.Op, st.At, st.Args)
		if err != nil {
			tb.Fatalf("step %d (%s): %v", len(tr.Steps), DescribeOp(st.Op, st.Args), err)
		}
		st.Result = r
		tr.Steps = append(tr.Steps, st)
		return r
	}
	for i := 0; len(tr.Steps) < n; i++ {
		at := int64(i)
		mailbox, profile := "a", traces.ProfileLeased
		if i%2 == 1 {
			mailbox, profile = "b", traces.ProfileLeaseless
		}
		do(keyed(enqueue(at, mailbox, fmt.Sprintf("m%d", i), 3), fmt.Sprintf("k%d", i%3)))
		for range 2 { // two fetches per enqueue keep the backlog from growing
			if r := do(fetch(at, 1, mailbox, profile, 5)); r.Message != nil {
				outcome := traces.OutcomeOK
				if i%5 == 0 {
					outcome = traces.OutcomeFail
				}
				do(handle(at, 1, mailbox, profile, outcome, 2))
			}
		}
		do(outboxEnqueue(at, fmt.Sprintf("o%d", i), "c", 3))
		if r := do(outboxClaim(at, 1, 5)); len(r.Claimed) == 1 {
			do(deliver(at, r.Claimed[0].ID, r.Claimed[0].Token, traces.ProfileFold, traces.FaultNone))
		}
		if r := do(lease(at, "c", 5)); r.Message != nil {
			do(ack(at, r.Message.ID, r.Message.Token))
		}
	}
	tr.Steps = tr.Steps[:n]
	return tr
}

// BenchmarkHistory steps the model through history traces of 1,000 and 20,000 steps, in place (a
// Machine, as replay's model target and pconform explain do) and through RunTrace (the observe
// oracle's path), and reports steps per second. A model whose cost per step grows with the trace
// shows it as a lower rate on the long trace.
func BenchmarkHistory(b *testing.B) {
	for _, n := range []int{1_000, 20_000} {
		tr := historyTrace(b, n)
		b.Run(fmt.Sprintf("machine/steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				m := NewMachine(Init(Config{}))
				for _, st := range tr.Steps {
					if _, err := m.Step(st.Op, st.At, st.Args); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "steps/s")
		})
		b.Run(fmt.Sprintf("runtrace/steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := RunTrace(Config{}, tr); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkKeyBacklog acks the head of one key's backlog of ready messages and enqueues one
// behind it, so the backlog stays at its size. A step's cost must not follow the backlog: the
// head leaves the key's list without the rest of it moving up.
func BenchmarkKeyBacklog(b *testing.B) {
	for _, backlog := range []int{100, 10_000, 100_000} {
		b.Run(fmt.Sprintf("backlog=%d", backlog), func(b *testing.B) {
			m := NewMachine(Init(Config{}))
			next := 0
			enqueue := func() {
				next++
				a := traces.Args{Mailbox: "inbox", ID: fmt.Sprintf("m%d", next), Key: "k", MaxAttempts: 3}
				if _, err := m.Step(traces.OpEnqueue, 0, a); err != nil {
					b.Fatal(err)
				}
			}
			for range backlog {
				enqueue()
			}
			for b.Loop() {
				r, err := m.Step(traces.OpLease, 0, traces.Args{Mailbox: "inbox", LeaseFor: 30})
				if err != nil || r.Message == nil {
					b.Fatalf("lease: %v %+v", err, r)
				}
				if r, err := m.Step(traces.OpAck, 0, traces.Args{ID: r.Message.ID, Token: r.Message.Token}); err != nil || r.Err != "" {
					b.Fatalf("ack: %v %+v", err, r)
				}
				enqueue()
			}
		})
	}
}
