package models

import (
	"errors"
	"fmt"

	"github.com/pconform/pconform/traces"
)

// Run applies steps in order to [Init](cfg) and returns the final state and each step's result.
// Token arguments are handed to Step as they are, so Run suits steps written against the model's
// own tokens (the first lease or claim gets token 1, the next 2, ...); for a trace whose tokens are
// symbols, use [RunTrace]. The expected results in steps are ignored.
//
// On a malformed step Run returns the state before it, the results so far and an error wrapping
// [ErrMalformed] that names the step's index.
//
// Run steps one state in place (a [Machine]), so n steps cost time linear in n.
func Run(cfg Config, steps []traces.Step) (State, []traces.Result, error) {
	m := NewMachine(Init(cfg))
	results := make([]traces.Result, 0, len(steps))
	for i, st := range steps {
		r, err := m.Step(st.Op, st.At, st.Args)
		if err != nil {
			return rerun(cfg, steps[:i]), results, fmt.Errorf("models: step %d: %w", i, err)
		}
		results = append(results, r)
	}
	return m.s, results, nil
}

// rerun returns the state steps lead to from [Init](cfg), steps being ones that ran without an
// error. A Machine whose step failed may hold a half-changed state, so the state before the
// failing step is made again (a run is deterministic); this costs only on a malformed step.
func rerun(cfg Config, steps []traces.Step) State {
	m := NewMachine(Init(cfg))
	for _, st := range steps {
		if _, err := m.Step(st.Op, st.At, st.Args); err != nil {
			panic(fmt.Sprintf("models: a step that ran once fails when run again: %v", err))
		}
	}
	return m.s
}

// ErrNilTrace is returned by RunTrace for a nil trace.
var ErrNilTrace = errors.New("models: nil trace")

// RunTrace runs t's steps against [Init](cfg), translating between the trace's token symbols and
// the model's tokens with [traces.Binder], the binder replay and the property tests use too, and
// returns the model's result for every step and its final snapshot, both with tokens written as
// the trace's symbols so they compare directly with t's expected results and t.Final.
//
// A symbol is bound to a model token the first time it appears in a result, in its own namespace
// (lease or claim tokens, as the trace format says). A token argument whose symbol is bound is
// passed as its model token; any other (0, "no token", included) as a negative token, which no
// lease or claim ever carries, so it matches nothing. A model token the trace never bound (the
// model issued a token where t expected none, or a different one) shows as a negative symbol,
// so the mismatch shows in the comparison.
//
// RunTrace does not act on t.Expect and does not read t.Final: the caller picks cfg for the
// variant it wants (a raw-attempts Config for Expect.Variant "raw-attempts") and compares results
// and snapshot itself.
//
// On a malformed step RunTrace returns the results so far, the snapshot before the step and an
// error wrapping [ErrMalformed] that names the step. A nil t gives [ErrNilTrace].
func RunTrace(cfg Config, t *traces.Trace) (results []traces.Result, final traces.Snapshot, err error) {
	if t == nil {
		return nil, Init(cfg).Snapshot(), ErrNilTrace
	}
	b := traces.NewBinder(forgedToken)
	m := NewMachine(Init(cfg))
	// ran holds the steps as the model ran them (tokens bound), for remaking the state before a
	// malformed step.
	ran := make([]traces.Step, 0, len(t.Steps))
	results = make([]traces.Result, 0, len(t.Steps))
	for i, st := range t.Steps {
		args := st.Args
		args.Token = b.Arg(st.Op, args.Token)
		r, err := m.Step(st.Op, st.At, args)
		if err != nil {
			return results, snapshot(b, rerun(cfg, ran).Snapshot()), fmt.Errorf("models: trace %q step %d (%s): %w",
				t.Name, i, DescribeOp(st.Op, st.Args), err)
		}
		ran = append(ran, traces.Step{Op: st.Op, At: st.At, Args: args})
		results = append(results, result(b, r, st.Result))
	}
	return results, snapshot(b, m.Snapshot()), nil
}

// forgedToken is the model token sent for a token symbol that is not bound (k may be 0): a
// negative number, which no lease or claim ever carries.
func forgedToken(_ traces.TokenSpace, symbol int) int { return -(symbol + 1) }

// result translates the tokens in the model's result r, binding against the expected result want.
func result(b *traces.Binder[int], r, want traces.Result) traces.Result {
	var msgTok int
	if r.Message != nil {
		msgTok = r.Message.Token
	}
	claimed := make([]int, len(r.Claimed))
	for i, c := range r.Claimed {
		claimed[i] = c.Token
	}
	msgSym, claimedSyms := b.Result(&want, msgTok, claimed)
	if r.Message != nil {
		m := *r.Message
		m.Token = msgSym
		r.Message = &m
	}
	if r.Claimed != nil {
		out := make([]traces.Claimed, len(r.Claimed))
		for i, c := range r.Claimed {
			c.Token = claimedSyms[i]
			out[i] = c
		}
		r.Claimed = out
	}
	if r.Messages != nil {
		toks := make([]int, len(r.Messages))
		for i, m := range r.Messages {
			toks[i] = m.Token
		}
		out := make([]traces.Message, len(r.Messages))
		for i, sym := range b.Messages(&want, toks) {
			out[i] = r.Messages[i]
			out[i].Token = sym
		}
		r.Messages = out
	}
	return r
}

// snapshot rewrites the model tokens in snap as symbols, without binding any.
func snapshot(b *traces.Binder[int], snap traces.Snapshot) traces.Snapshot {
	for i := range snap.Messages {
		snap.Messages[i].Token = b.Lookup(traces.LeaseTokens, snap.Messages[i].Token)
	}
	for i := range snap.Outbox {
		snap.Outbox[i].Token = b.Lookup(traces.ClaimTokens, snap.Outbox[i].Token)
	}
	return snap
}
