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
func Run(cfg Config, steps []traces.Step) (State, []traces.Result, error) {
	s := Init(cfg)
	results := make([]traces.Result, 0, len(steps))
	for i, st := range steps {
		next, r, err := Step(s, st.Op, st.At, st.Args)
		if err != nil {
			return s, results, fmt.Errorf("models: step %d: %w", i, err)
		}
		s = next
		results = append(results, r)
	}
	return s, results, nil
}

// ErrNilTrace is returned by RunTrace for a nil trace.
var ErrNilTrace = errors.New("models: nil trace")

// RunTrace runs t's steps against [Init](cfg), translating between the trace's token symbols and
// the model's tokens, and returns the model's result for every step and its final snapshot, both
// with tokens written as the trace's symbols so they compare directly with t's expected results
// and t.Final.
//
// A symbol is bound to a model token the first time it appears in a result: where t expects
// symbol k (a lease's or consumer_fetch's message token, the i-th claimed row's token) and the
// model issued token x, k is bound to x, unless either is already bound. A token argument whose
// symbol is bound is passed as its model token; an unbound one as a token no lease or claim ever
// carries, so it matches nothing. A model token with no symbol of its own (the model issued a
// token where t expected none, or a different one) is given a fresh symbol larger than any symbol
// in t, so the mismatch shows in the comparison.
//
// RunTrace does not act on t.Expect, and reads t.Final only to keep fresh symbols clear of the
// ones it names: the caller picks cfg for the variant it wants (a raw-attempts Config for
// Expect.Variant "raw-attempts") and compares results and snapshot itself.
//
// On a malformed step RunTrace returns the results so far, the snapshot before the step and an
// error wrapping [ErrMalformed] that names the step. A nil t gives [ErrNilTrace].
func RunTrace(cfg Config, t *traces.Trace) (results []traces.Result, final traces.Snapshot, err error) {
	if t == nil {
		return nil, Init(cfg).Snapshot(), ErrNilTrace
	}
	b := newBinder(t)
	s := Init(cfg)
	results = make([]traces.Result, 0, len(t.Steps))
	for i, st := range t.Steps {
		args := st.Args
		args.Token = b.arg(args.Token)
		next, r, err := Step(s, st.Op, st.At, args)
		if err != nil {
			return results, b.snapshot(s.Snapshot()), fmt.Errorf("models: trace %q step %d (%s): %w",
				t.Name, i, DescribeOp(st.Op, st.Args), err)
		}
		s = next
		results = append(results, b.result(r, st.Result))
	}
	return results, b.snapshot(s.Snapshot()), nil
}

// binder is the two-way map between a trace's token symbols and the model's tokens.
type binder struct {
	toModel map[int]int // symbol -> model token
	toSym   map[int]int // model token -> symbol
	// fresh is the last symbol handed to a model token the trace never named. It starts at the
	// largest symbol in the trace, so a fresh symbol never collides with one the trace uses.
	fresh int
}

func newBinder(t *traces.Trace) *binder {
	b := &binder{toModel: map[int]int{}, toSym: map[int]int{}}
	see := func(sym int) { b.fresh = max(b.fresh, sym) }
	for _, st := range t.Steps {
		see(st.Args.Token)
		if st.Result.Message != nil {
			see(st.Result.Message.Token)
		}
		for _, c := range st.Result.Claimed {
			see(c.Token)
		}
	}
	if t.Final != nil {
		for _, m := range t.Final.Messages {
			see(m.Token)
		}
		for _, o := range t.Final.Outbox {
			see(o.Token)
		}
	}
	return b
}

// arg translates a token argument. Model tokens are positive, so a non-positive value never
// matches: an unbound symbol k > 0 becomes -k, and 0 (no token) and negative symbols stay as they
// are.
func (b *binder) arg(sym int) int {
	if tok, ok := b.toModel[sym]; ok {
		return tok
	}
	if sym > 0 {
		return -sym
	}
	return sym
}

// token translates a model token in a result, binding it to want (the symbol the trace expects at
// that place) when neither is bound yet.
func (b *binder) token(tok, want int) int {
	if tok == 0 {
		return 0
	}
	if sym, ok := b.toSym[tok]; ok {
		return sym
	}
	sym := want
	if _, taken := b.toModel[want]; taken || want <= 0 {
		b.fresh++
		sym = b.fresh
	}
	b.toModel[sym] = tok
	b.toSym[tok] = sym
	return sym
}

// result translates the tokens in the model's result r, binding against the expected result want.
func (b *binder) result(r, want traces.Result) traces.Result {
	if r.Message != nil {
		m := *r.Message
		wantTok := 0
		if want.Message != nil {
			wantTok = want.Message.Token
		}
		m.Token = b.token(m.Token, wantTok)
		r.Message = &m
	}
	if r.Claimed != nil {
		claimed := make([]traces.Claimed, len(r.Claimed))
		for i, c := range r.Claimed {
			wantTok := 0
			if i < len(want.Claimed) {
				wantTok = want.Claimed[i].Token
			}
			c.Token = b.token(c.Token, wantTok)
			claimed[i] = c
		}
		r.Claimed = claimed
	}
	return r
}

// snapshot rewrites the model tokens in snap as symbols.
func (b *binder) snapshot(snap traces.Snapshot) traces.Snapshot {
	for i := range snap.Messages {
		snap.Messages[i].Token = b.token(snap.Messages[i].Token, 0)
	}
	for i := range snap.Outbox {
		snap.Outbox[i].Token = b.token(snap.Outbox[i].Token, 0)
	}
	return snap
}
