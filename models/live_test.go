package models

import (
	"errors"
	"fmt"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/traces"
)

// TestForgetKeepsResults runs the property test's random sequences on two machines, one of which
// forgets (Machine.Forget) after every few steps, and requires the same result at every step:
// what Forget drops, no later step can tell from absent. It also requires HeldTokens to name
// exactly the tokens a later step can still match, by checking every token it leaves out is
// refused as stale.
func TestForgetKeepsResults(t *testing.T) {
	runs := 100
	if testing.Short() {
		runs = 20
	}
	forgot := 0
	for i := range runs {
		seed := *seedFlag + uint64(i)
		g := newGen(seed)
		plain, pruned := NewMachine(Init(Config{})), NewMachine(Init(Config{}))
		for j := range *stepsFlag * 2 {
			st := g.step()
			want, err1 := plain.Step(st.Op, st.At, st.Args)
			got, err2 := pruned.Step(st.Op, st.At, st.Args)
			if (err1 == nil) != (err2 == nil) || gocmp.Diff(want, got) != "" {
				t.Fatalf("seed %d step #%d %s: without Forget %v (%v), with it %v (%v)", seed, j, DescribeOp(st.Op, st.Args), want, err1, got, err2)
			}
			g.observe(st, want)
			if j%3 == 2 {
				before := len(pruned.s.processed) + len(pruned.s.retired) + len(pruned.s.effects)
				pruned.Forget()
				forgot += before - len(pruned.s.processed) - len(pruned.s.retired) - len(pruned.s.effects)
			}
		}
		held := map[traces.TokenSpace]map[int]bool{traces.LeaseTokens: {}, traces.ClaimTokens: {}}
		pruned.HeldTokens(func(s traces.TokenSpace, tok int) { held[s][tok] = true })
		for tok := 1; tok <= pruned.s.lastToken; tok++ {
			for id, m := range pruned.s.messages {
				if m.token == tok && !held[traces.LeaseTokens][tok] {
					t.Fatalf("seed %d: message %s carries token %d, which HeldTokens leaves out", seed, id, tok)
				}
			}
			for id, o := range pruned.s.outbox {
				if o.token == tok && !held[traces.ClaimTokens][tok] {
					t.Fatalf("seed %d: outbox row %s carries token %d, which HeldTokens leaves out", seed, id, tok)
				}
			}
		}
	}
	if forgot == 0 {
		t.Fatalf("Forget dropped nothing in %d sequences: the test shows nothing", runs)
	}
}

// TestForgetBoundsPurgedOutbox runs a long history of outbox rows, each delivered and purged,
// and requires Forget to keep the remembered purged ids to those inside their dedup horizon:
// without Forget they grow with every row. Inside the horizon a stale delivery of a purged row
// is still claim_lost after Forget; past it the model refuses it as an id it does not hold.
func TestForgetBoundsPurgedOutbox(t *testing.T) {
	const rows, horizon = 5000, 3
	plain, pruned := NewMachine(Init(Config{})), NewMachine(Init(Config{}))
	run := func(m *Machine, op traces.Op, at int64, a traces.Args) traces.Result {
		t.Helper()
		r, err := m.Step(op, at, a)
		if err != nil {
			t.Fatalf("%s at %d: %v", DescribeOp(op, a), at, err)
		}
		return r
	}
	most := 0
	for i := range rows {
		at := int64(i)
		id := fmt.Sprintf("e%d", i)
		for _, m := range []*Machine{plain, pruned} {
			run(m, traces.OpOutboxEnqueue, at, traces.Args{ID: id, Target: "inbox", MaxAttempts: 1})
			c := run(m, traces.OpOutboxClaim, at, traces.Args{Limit: 1, ClaimFor: 5})
			if len(c.Claimed) != 1 {
				t.Fatalf("row %s: claimed %v", id, c.Claimed)
			}
			if r := run(m, traces.OpPublisherDeliver, at, traces.Args{Publisher: 1, ID: id, Token: c.Claimed[0].Token,
				Profile: traces.ProfileFold, Fault: traces.FaultNone}); r.Action != traces.ActionDelivered {
				t.Fatalf("row %s: delivery %v", id, r)
			}
			run(m, traces.OpPurge, at, traces.Args{Limit: 10, Horizon: horizon})
		}
		pruned.Forget()
		most = max(most, len(pruned.s.purgedOutbox))
	}
	if got := len(plain.s.purgedOutbox); got != rows {
		t.Fatalf("without Forget the model remembers %d purged ids, want all %d", got, rows)
	}
	if most > horizon+2 {
		t.Fatalf("with Forget the model remembered up to %d purged ids, want at most %d (those inside the horizon)", most, horizon+2)
	}
	last := int64(rows - 1)
	stale := traces.Args{Publisher: 2, ID: fmt.Sprintf("e%d", rows-1), Token: 1, Profile: traces.ProfileFold, Fault: traces.FaultNone}
	if r, err := pruned.Step(traces.OpPublisherDeliver, last+horizon, stale); err != nil || r.Action != traces.ActionClaimLost {
		t.Fatalf("a stale delivery inside the horizon: %v, %v; want claim_lost", r, err)
	}
	run(pruned, traces.OpAdvanceClock, last+horizon+1, traces.Args{})
	pruned.Forget()
	if _, err := pruned.Step(traces.OpPublisherDeliver, last+horizon+1, stale); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a stale delivery past the horizon after Forget: %v, want ErrMalformed", err)
	}
}
