package replay

import (
	"fmt"

	"github.com/pconform/pconform/traces"
)

// A trace names tokens in two namespaces, as the trace format does: lease tokens (issued by
// lease and the leased consumer_fetch; taken by ack, nack and extend; carried by message rows)
// and claim tokens (issued by outbox_claim; taken by outbox_complete, outbox_fail and
// publisher_deliver; carried by outbox rows). Symbol 1 of one is unrelated to symbol 1 of the
// other.
const (
	leaseNS = iota
	claimNS
)

// namespaceOf is the namespace of op's token argument.
func namespaceOf(op traces.Op) int {
	switch op {
	case traces.OpOutboxComplete, traces.OpOutboxFail, traces.OpPublisherDeliver:
		return claimNS
	}
	return leaseNS
}

// symbols maps the token symbols of one namespace to one target's real tokens.
//
// Invariant: real[s] == r if and only if sym[r] == s, so one symbol never stands for two tokens
// and one token never for two symbols. stray holds real tokens the target produced where no
// unbound symbol was expected; each shows as its own negative symbol, so a diff names it without
// claiming a binding the trace never made.
type symbols struct {
	real  map[int]string
	sym   map[string]int
	stray map[string]int
	// top is the highest symbol bound so far; auto-binding hands out top+1.
	top int
}

func newSymbols() *symbols {
	return &symbols{real: map[int]string{}, sym: map[string]int{}, stray: map[string]int{}}
}

// arg translates an argument symbol into the token sent to the target. Symbol 0 means "no
// token". A symbol that is not bound yet becomes a token no target ever issues, so it matches
// nothing, as a forged token would.
func (b *symbols) arg(symbol int) string {
	if symbol == 0 {
		return ""
	}
	if r, ok := b.real[symbol]; ok {
		return r
	}
	return fmt.Sprintf("unbound-%d", symbol)
}

// observe maps a real token from a result to a symbol. want is the symbol the expected result has
// at this position (0 when it expects none). The first appearance of an unbound symbol binds it
// to the real token, unless that token already stands for another symbol.
func (b *symbols) observe(want int, real string) int {
	if real == "" {
		return 0
	}
	if s, ok := b.sym[real]; ok {
		return s
	}
	if want > 0 {
		if _, taken := b.real[want]; !taken {
			b.bind(want, real)
			return want
		}
	}
	return b.lookup(real)
}

// auto maps a real token to its symbol, binding a fresh one (top+1) on its first appearance.
// Command scripts use it where there is no expected result to take symbols from.
func (b *symbols) auto(real string) int {
	if real == "" {
		return 0
	}
	if s, ok := b.sym[real]; ok {
		return s
	}
	s := b.top + 1
	b.bind(s, real)
	return s
}

// lookup maps a real token to its bound symbol, or to a stable negative symbol when it was never
// bound. It never binds.
func (b *symbols) lookup(real string) int {
	if real == "" {
		return 0
	}
	if s, ok := b.sym[real]; ok {
		return s
	}
	if s, ok := b.stray[real]; ok {
		return s
	}
	s := -(len(b.stray) + 1)
	b.stray[real] = s
	return s
}

func (b *symbols) bind(symbol int, real string) {
	b.real[symbol] = real
	b.sym[real] = symbol
	if symbol > b.top {
		b.top = symbol
	}
}

func (b *symbols) copy() map[int]string {
	out := make(map[int]string, len(b.real))
	for s, r := range b.real {
		out[s] = r
	}
	return out
}

// binding holds both namespaces of one replay.
type binding struct {
	ns [2]*symbols
}

func newBinding() *binding { return &binding{ns: [2]*symbols{newSymbols(), newSymbols()}} }

// Tokens are a replay's bindings at its end, symbol to real token, per namespace.
type Tokens struct {
	Lease, Claim map[int]string
}

func (b *binding) tokens() Tokens {
	return Tokens{Lease: b.ns[leaseNS].copy(), Claim: b.ns[claimNS].copy()}
}

// args converts a step's arguments for the target.
func (b *binding) args(op traces.Op, a traces.Args) Args {
	return TargetArgs(a, b.ns[namespaceOf(op)].arg(a.Token))
}

// result maps an observation to symbols, position by position against the expected result, so
// that first appearances bind. With want == nil every new token is auto-bound.
func (b *binding) result(want *traces.Result, o Observation) traces.Result {
	sym := func(ns, wantSym int, real string) int {
		if want == nil {
			return b.ns[ns].auto(real)
		}
		return b.ns[ns].observe(wantSym, real)
	}
	r := resultOf(o)
	if o.Message != nil {
		w := 0
		if want != nil && want.Message != nil {
			w = want.Message.Token
		}
		r.Message = &traces.Message{ID: o.Message.ID, Attempts: o.Message.Attempts, Token: sym(leaseNS, w, o.Message.Token)}
	}
	for i, c := range o.Claimed {
		w := 0
		if want != nil && i < len(want.Claimed) {
			w = want.Claimed[i].Token
		}
		r.Claimed = append(r.Claimed, traces.Claimed{ID: c.ID, DeliveryAttempts: c.DeliveryAttempts, Token: sym(claimNS, w, c.Token)})
	}
	return r
}

// snapshot maps a target snapshot to symbols without binding anything.
func (b *binding) snapshot(s Snapshot) traces.Snapshot {
	out := traces.Snapshot{Effects: map[string][]string{}}
	for _, m := range s.Messages {
		out.Messages = append(out.Messages, traces.MessageRow{
			Mailbox: m.Mailbox, ID: m.ID, Key: m.Key, Priority: m.Priority, Payload: m.Payload,
			State: m.State, Attempts: m.Attempts, MaxAttempts: m.MaxAttempts, AvailableAt: m.AvailableAt,
			Token: b.ns[leaseNS].lookup(m.Token), LeaseUntil: m.LeaseUntil,
		})
	}
	for _, o := range s.Outbox {
		out.Outbox = append(out.Outbox, traces.OutboxRow{
			ID: o.ID, Target: o.Target, Key: o.Key, Priority: o.Priority, MaxAttempts: o.MaxAttempts,
			Payload: o.Payload, State: o.State, DeliveryAttempts: o.DeliveryAttempts,
			AvailableAt: o.AvailableAt, Token: b.ns[claimNS].lookup(o.Token), ClaimUntil: o.ClaimUntil,
		})
	}
	out.DeadLetters = append(out.DeadLetters, s.DeadLetters...)
	for mb, ids := range s.Effects {
		out.Effects[mb] = append([]string(nil), ids...)
	}
	return out
}
