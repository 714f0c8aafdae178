package models

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pconform/pconform/traces"
)

// ErrUnfit is wrapped by Reexpect's error for a trace whose steps cannot all run under the
// profile (see Reexpect).
var ErrUnfit = errors.New("models: the trace's steps do not fit the profile")

// Reexpect returns a copy of t whose expected results and final snapshot are the model's under
// cfg (cfg.Profile above all), and whose expect.profile is cfg.Profile. So one trace, whatever
// made it (the corpus, a hunt, a hand, an observed run), serves every profile: its steps stay,
// and what a correct store under the profile would answer replaces what t expected.
//
// Token symbols: a token the model issues where t's result issued one (the same step, the same
// place in the result) keeps t's symbol; any other gets a fresh symbol past every symbol of t. A
// token argument stands for the token issued where t's result issued its symbol; when the model
// issues none there, the argument becomes a symbol that no step issues, which matches nothing. A final snapshot t did not have (nil) stays nil;
// columns t's snapshot declared unknown are blanked in the new one.
//
// A variant trace (expect.variant set) describes a broken store; its re-expectation describes the
// correct one under the profile, so expect.variant, diverges_at and violates are cleared.
//
// A trace's protocol steps were chosen by whoever made it, knowing the results it expected: a
// consumer_fetch, say, follows a fetch that found nothing. Under another profile an earlier fetch
// may find a message, and the later fetch of the same worker is no step of any execution. For
// such a step Reexpect returns an error wrapping both [ErrUnfit] and [ErrMalformed], naming the
// step: the trace does not fit the profile and has no re-expectation. It returns [ErrNilTrace]
// for a nil t. t is not changed.
func Reexpect(cfg Config, t *traces.Trace) (*traces.Trace, error) {
	if t == nil {
		return nil, ErrNilTrace
	}
	// Where t's results issued each symbol: step index and place (-1: the message; i: claimed[i];
	// -2-j: messages[j] of a batch fetch).
	type place struct{ step, at int }
	issued := [2]map[int]place{{}, {}}
	for i, st := range t.Steps {
		if m := st.Result.Message; m != nil && m.Token != 0 {
			if _, seen := issued[traces.LeaseTokens][m.Token]; !seen {
				issued[traces.LeaseTokens][m.Token] = place{i, -1}
			}
		}
		for j, c := range st.Result.Claimed {
			if _, seen := issued[traces.ClaimTokens][c.Token]; !seen && c.Token != 0 {
				issued[traces.ClaimTokens][c.Token] = place{i, j}
			}
		}
		for j, m := range st.Result.Messages {
			if _, seen := issued[traces.LeaseTokens][m.Token]; !seen && m.Token != 0 {
				issued[traces.LeaseTokens][m.Token] = place{i, -2 - j}
			}
		}
	}
	// The model's tokens as they are issued in this run, by place, and the symbols they get: the
	// symbol t's result had at the same place when it is still free, else a fresh one past every
	// symbol t names.
	got := map[place]int{}
	symbol := [2]map[int]int{{}, {}}
	taken := [2]map[int]bool{{}, {}}
	next := maxSymbol(t)
	issue := func(ns traces.TokenSpace, tok, want int, p place) int {
		if tok == 0 {
			return 0
		}
		got[p] = tok
		if k, ok := symbol[ns][tok]; ok {
			return k
		}
		k := want
		if k == 0 || taken[ns][k] {
			next++
			k = next
		}
		symbol[ns][tok], taken[ns][k] = k, true
		return k
	}
	// unmatched collects the token arguments of t that stand for no token of this run; they get
	// their symbols after the run (t's own when no step of the run issues it).
	type argRef struct {
		step int
		ns   traces.TokenSpace
		old  int
	}
	var unmatched []argRef

	out := *t
	out.Steps = slices.Clone(t.Steps)
	out.Expect = traces.Expect{DivergesAt: -1, Profile: cfg.Profile}
	m := NewMachine(Init(cfg))
	for i, st := range t.Steps {
		args := st.Args
		ns := traces.Spec[st.Op].Tokens
		if args.Token != 0 {
			model := -1 // matches nothing
			if p, ok := issued[ns][args.Token]; ok {
				if tok, ok := got[p]; ok {
					model = tok
				}
			}
			if model < 0 {
				unmatched = append(unmatched, argRef{i, ns, args.Token})
			}
			args.Token = model
		}
		r, err := m.Step(st.Op, st.At, args)
		if err != nil {
			return nil, fmt.Errorf("models: re-expect trace %q step %d (%s): %w: %w", t.Name, i, DescribeOp(st.Op, st.Args), ErrUnfit, err)
		}
		if r.Message != nil {
			msg := *r.Message
			want := 0
			if st.Result.Message != nil {
				want = st.Result.Message.Token
			}
			msg.Token = issue(traces.LeaseTokens, msg.Token, want, place{i, -1})
			r.Message = &msg
		}
		if r.Claimed != nil {
			claimed := slices.Clone(r.Claimed)
			for j := range claimed {
				want := 0
				if j < len(st.Result.Claimed) {
					want = st.Result.Claimed[j].Token
				}
				claimed[j].Token = issue(traces.ClaimTokens, claimed[j].Token, want, place{i, j})
			}
			r.Claimed = claimed
		}
		if r.Messages != nil {
			msgs := slices.Clone(r.Messages)
			for j := range msgs {
				want := 0
				if j < len(st.Result.Messages) {
					want = st.Result.Messages[j].Token
				}
				msgs[j].Token = issue(traces.LeaseTokens, msgs[j].Token, want, place{i, -2 - j})
			}
			r.Messages = msgs
		}
		out.Steps[i] = traces.Step{Op: st.Op, At: st.At, Args: st.Args, Result: r}
		if args.Token > 0 {
			out.Steps[i].Args.Token = symbol[ns][args.Token]
		}
	}
	// Arguments that stand for no token of this run get symbols no step issues: their own
	// when it is free, else a fresh one.
	stray := [2]map[int]int{{}, {}}
	for _, u := range unmatched {
		k, ok := stray[u.ns][u.old]
		if !ok {
			k = u.old
			if taken[u.ns][k] {
				next++
				k = next
			}
			stray[u.ns][u.old] = k
		}
		out.Steps[u.step].Args.Token = k
	}
	if t.Final != nil {
		snap := m.Snapshot()
		for i := range snap.Messages {
			snap.Messages[i].Token = symbol[traces.LeaseTokens][snap.Messages[i].Token]
		}
		for i := range snap.Outbox {
			snap.Outbox[i].Token = symbol[traces.ClaimTokens][snap.Outbox[i].Token]
		}
		traces.Blank(&snap, t.Final.Unknown)
		snap.Unknown = slices.Clone(t.Final.Unknown)
		out.Final = &snap
	}
	if err := traces.Validate(&out); err != nil {
		return nil, fmt.Errorf("models: re-expect trace %q: %w", t.Name, err)
	}
	return &out, nil
}

// maxSymbol is the largest token symbol t names anywhere.
func maxSymbol(t *traces.Trace) int {
	m := 0
	for _, st := range t.Steps {
		m = max(m, st.Args.Token)
		if st.Result.Message != nil {
			m = max(m, st.Result.Message.Token)
		}
		for _, c := range st.Result.Messages {
			m = max(m, c.Token)
		}
		for _, c := range st.Result.Claimed {
			m = max(m, c.Token)
		}
	}
	if t.Final != nil {
		for _, r := range t.Final.Messages {
			m = max(m, r.Token)
		}
		for _, r := range t.Final.Outbox {
			m = max(m, r.Token)
		}
	}
	return m
}
