package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/pconform/pconform/traces"
)

// Record runs t's steps against target and returns a copy of t whose results and final snapshot
// are the target's own: the trace of what target does with t's steps. Unlike [Run] it never stops
// at a difference, so a broken variant's whole behaviour is written down, bug included.
//
// Token symbols keep t's numbering wherever target issues a token where t expects one; a token t
// does not expect gets a fresh symbol above every symbol t uses, so no later step's argument can
// name it by accident. Record returns an error when the run could not happen (an invalid trace, an
// operation the target cannot run, a step or snapshot that failed) or when the recording is not
// a valid trace. It does not close target.
func Record(ctx context.Context, t *traces.Trace, target Target) (*traces.Trace, error) {
	if t == nil || target == nil {
		return nil, errors.New("replay: Record needs a trace and a target")
	}
	if err := traces.Validate(t); err != nil {
		return nil, fmt.Errorf("replay: trace %q: %w", t.Name, err)
	}
	b := NewBinder()
	fresh := highestSymbols(t)
	out := *t
	out.Steps = make([]traces.Step, 0, len(t.Steps))
	for i, step := range t.Steps {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("replay: recording %q stopped before step #%d: %w", t.Name, i, err)
		}
		obs, err := target.Do(ctx, step.Op, step.At, TargetArgs(step.Args, b.Arg(step.Op, step.Args.Token)))
		if err != nil {
			return nil, fmt.Errorf("replay: recording %q: step #%d (%s): %w", t.Name, i, step.Op, err)
		}
		want := expectedSymbols(b, step.Result, obs, &fresh)
		step.Result = Symbolize(b, &want, obs)
		out.Steps = append(out.Steps, step)
	}
	if t.Final != nil {
		snap, err := target.Snapshot(ctx)
		if err != nil {
			return nil, fmt.Errorf("replay: recording %q: final snapshot: %w", t.Name, err)
		}
		final := SymbolizeSnapshot(b, snap)
		traces.Canonicalize(&final)
		out.Final = &final
	}
	if err := traces.Validate(&out); err != nil {
		return nil, fmt.Errorf("replay: the recording of %q against the target is not a valid trace: %w", t.Name, err)
	}
	return &out, nil
}

// expectedSymbols is the result whose symbols obs's tokens should bind to: want's symbol at the
// same place when it is still free (or already this token's), else the next fresh symbol.
func expectedSymbols(b *traces.Binder[string], want traces.Result, obs Observation, fresh *[2]int) traces.Result {
	pick := func(s traces.TokenSpace, wantSym int, real string) int {
		if real == "" {
			return wantSym
		}
		bound := b.Bound(s)
		for k, r := range bound {
			if r == real {
				return k
			}
		}
		if _, taken := bound[wantSym]; wantSym > 0 && !taken {
			return wantSym
		}
		n := &fresh[0]
		if s == traces.ClaimTokens {
			n = &fresh[1]
		}
		*n++
		return *n
	}
	r := traces.Result{}
	if obs.Message != nil {
		w := 0
		if want.Message != nil {
			w = want.Message.Token
		}
		r.Message = &traces.Message{Token: pick(traces.LeaseTokens, w, obs.Message.Token)}
	}
	for i, c := range obs.Claimed {
		w := 0
		if i < len(want.Claimed) {
			w = want.Claimed[i].Token
		}
		r.Claimed = append(r.Claimed, traces.Claimed{Token: pick(traces.ClaimTokens, w, c.Token)})
	}
	for i, m := range obs.Messages {
		w := 0
		if i < len(want.Messages) {
			w = want.Messages[i].Token
		}
		r.Messages = append(r.Messages, traces.Message{Token: pick(traces.LeaseTokens, w, m.Token)})
	}
	return r
}

// highestSymbols is the highest token symbol t uses anywhere, per namespace (lease, claim).
func highestSymbols(t *traces.Trace) [2]int {
	var top [2]int
	see := func(claim bool, k int) {
		i := 0
		if claim {
			i = 1
		}
		top[i] = max(top[i], k)
	}
	for _, s := range t.Steps {
		see(traces.Spec[s.Op].Tokens == traces.ClaimTokens, s.Args.Token)
		if m := s.Result.Message; m != nil {
			see(false, m.Token)
		}
		for _, c := range s.Result.Claimed {
			see(true, c.Token)
		}
	}
	if f := t.Final; f != nil {
		for _, m := range f.Messages {
			see(false, m.Token)
		}
		for _, o := range f.Outbox {
			see(true, o.Token)
		}
	}
	return top
}
