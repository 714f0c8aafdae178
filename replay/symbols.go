package replay

import (
	"slices"

	"github.com/pconform/pconform/traces"
)

// Binding maps one replay's token symbols to the target's real tokens through the one binder
// every path shares ([traces.Binder]); unbound symbols, 0 included, are sent as
// [traces.ForgedToken]s. A driver other than [Run] that calls a [Target] step by step uses one
// Binding per run.
type Binding struct {
	b *traces.Binder[string]
}

// NewBinding returns a Binding with nothing bound.
func NewBinding() *Binding { return &Binding{b: NewBinder()} }

// NewBinder returns the binder a store target's tokens need: unbound symbols, 0 included, are
// sent as [traces.ForgedToken]s.
func NewBinder() *traces.Binder[string] { return traces.NewBinder(traces.ForgedToken) }

// Tokens are a replay's bindings at its end, symbol to real token, per namespace.
type Tokens struct {
	Lease, Claim map[int]string
}

// Tokens returns the bindings so far, symbol to real token.
func (b *Binding) Tokens() Tokens {
	return Tokens{Lease: b.b.Bound(traces.LeaseTokens), Claim: b.b.Bound(traces.ClaimTokens)}
}

// Args converts a step's arguments for the target.
func (b *Binding) Args(op traces.Op, a traces.Args) Args {
	return TargetArgs(a, b.b.Arg(op, a.Token))
}

// Result maps an observation to symbols against the expected result want (see [Symbolize]).
func (b *Binding) Result(want *traces.Result, o Observation) traces.Result {
	return Symbolize(b.b, want, o)
}

// Snapshot maps a target snapshot to symbols without binding anything.
func (b *Binding) Snapshot(s Snapshot) traces.Snapshot { return SymbolizeSnapshot(b.b, s) }

// Symbolize maps an observation to symbols through b, position by position against the
// expected result want, so that first appearances bind ([traces.Binder.Result]). With want nil
// every new token is auto-bound.
func Symbolize(b *traces.Binder[string], want *traces.Result, o Observation) traces.Result {
	r := resultOf(o)
	var msgTok string
	if o.Message != nil {
		msgTok = o.Message.Token
	}
	claimed := make([]string, len(o.Claimed))
	for i, c := range o.Claimed {
		claimed[i] = c.Token
	}
	msgSym, claimedSyms := b.Result(want, msgTok, claimed)
	if o.Message != nil {
		m := traceMessage(*o.Message, msgSym)
		r.Message = &m
	}
	for i, c := range o.Claimed {
		r.Claimed = append(r.Claimed, traceClaimed(c, claimedSyms[i]))
	}
	toks := make([]string, len(o.Messages))
	for i, m := range o.Messages {
		toks[i] = m.Token
	}
	for i, sym := range b.Messages(want, toks) {
		r.Messages = append(r.Messages, traceMessage(o.Messages[i], sym))
	}
	return r
}

// SymbolizeSnapshot maps a target snapshot to symbols through b without binding anything. It
// does not canonicalize.
func SymbolizeSnapshot(b *traces.Binder[string], s Snapshot) traces.Snapshot {
	out := traces.Snapshot{Unknown: slices.Clone(s.Unknown), Effects: map[string][]string{}}
	for _, m := range s.Messages {
		out.Messages = append(out.Messages, traceMessageRow(m, b.Lookup(traces.LeaseTokens, m.Token)))
	}
	for _, o := range s.Outbox {
		out.Outbox = append(out.Outbox, traceOutboxRow(o, b.Lookup(traces.ClaimTokens, o.Token)))
	}
	out.DeadLetters = append(out.DeadLetters, s.DeadLetters...)
	for mb, ids := range s.Effects {
		out.Effects[mb] = append([]string(nil), ids...)
	}
	return out
}
