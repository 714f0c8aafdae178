package models

import (
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
