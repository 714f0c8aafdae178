package traces

import "fmt"

// Binder maps a trace's token symbols to the real tokens of one target (T is string for a store,
// int for the Go model), in the two namespaces of [TokenSpace]. It is the one implementation of
// the symbol rules of docs/trace-format.md; the model run, replay and the property tests all bind
// through it, so they cannot disagree about which symbol stands for which token.
//
// The rules:
//   - A symbol is bound to a real token the first time it appears in a result ([Binder.Result]
//     or [Binder.Observe]): where the trace expects symbol k and the target issued token x, k
//     stands for x from then on, unless k or x is bound already.
//   - A token argument with a bound symbol is sent as its real token; any other symbol, 0 ("no
//     token") included, is sent as a forged token, which no target ever issues and so matches
//     nothing ([Binder.Arg]).
//   - A real token the trace never bound (the target issued a token where the trace expected none,
//     or a different one) shows as a negative symbol, stable for the run and never bound, so a
//     comparison names it without claiming a binding the trace never made ([Binder.Lookup]).
//
// Invariant, per namespace: real[s] == r if and only if sym[r] == s.
//
// A Binder is not safe for concurrent use. Its zero value is not usable; call [NewBinder].
type Binder[T comparable] struct {
	ns    [2]tokenSpace[T]
	forge func(s TokenSpace, symbol int) T
}

type tokenSpace[T comparable] struct {
	real  map[int]T
	sym   map[T]int
	stray map[T]int
	// top is the highest symbol bound so far; Auto hands out top+1.
	top int
}

// NewBinder returns an empty binder. forge(s, k) is the token sent for symbol k of namespace s
// when k is not bound (k may be 0). It must never return a token the target issues, nor T's zero
// value, which the binder reads as "no token".
func NewBinder[T comparable](forge func(s TokenSpace, symbol int) T) *Binder[T] {
	b := &Binder[T]{forge: forge}
	for i := range b.ns {
		b.ns[i] = tokenSpace[T]{real: map[int]T{}, sym: map[T]int{}, stray: map[T]int{}}
	}
	return b
}

// ForgedToken is the forged store token of symbol k in namespace s: a non-empty string no store
// issues, so the store takes it as a well-formed token and answers lease_lost or claim_lost.
func ForgedToken(s TokenSpace, symbol int) string {
	return fmt.Sprintf("forged-%s-%d", s, symbol)
}

func (b *Binder[T]) space(s TokenSpace) *tokenSpace[T] {
	if s == ClaimTokens {
		return &b.ns[1]
	}
	return &b.ns[0]
}

// Arg is the real token to send for symbol, the token argument of op: its bound token, else a
// forged one.
func (b *Binder[T]) Arg(op Op, symbol int) T {
	s := Spec[op].Tokens
	if r, ok := b.space(s).real[symbol]; ok && symbol != 0 {
		return r
	}
	return b.forge(s, symbol)
}

// Observe maps a real token found in a result to a symbol. want is the symbol the trace expects
// at that place (0 when it expects none). The first appearance of an unbound want binds it to real,
// unless real stands for another symbol already. T's zero value (no token) maps to 0.
func (b *Binder[T]) Observe(s TokenSpace, want int, real T) int {
	var zero T
	if real == zero {
		return 0
	}
	sp := b.space(s)
	if k, ok := sp.sym[real]; ok {
		return k
	}
	if want > 0 {
		if _, taken := sp.real[want]; !taken {
			sp.bind(want, real)
			return want
		}
	}
	return b.Lookup(s, real)
}

// Auto maps a real token to its symbol, binding the next unused one on its first appearance.
// It suits results with no expected symbols to bind against (command scripts).
func (b *Binder[T]) Auto(s TokenSpace, real T) int {
	var zero T
	if real == zero {
		return 0
	}
	sp := b.space(s)
	if k, ok := sp.sym[real]; ok {
		return k
	}
	k := sp.top + 1
	sp.bind(k, real)
	return k
}

// Lookup maps a real token to its bound symbol, or to a stable negative symbol when it was never
// bound. It never binds. T's zero value maps to 0.
func (b *Binder[T]) Lookup(s TokenSpace, real T) int {
	var zero T
	if real == zero {
		return 0
	}
	sp := b.space(s)
	if k, ok := sp.sym[real]; ok {
		return k
	}
	if k, ok := sp.stray[real]; ok {
		return k
	}
	k := -(len(sp.stray) + 1)
	sp.stray[real] = k
	return k
}

// Result maps the real tokens of one result to symbols: message, the returned message's token
// (lease namespace), and claimed, the claimed rows' tokens in order (claim namespace). want is
// the expected result whose symbols bind at their first appearance, position by position; with
// want nil every new token gets the next unused symbol ([Binder.Auto]).
func (b *Binder[T]) Result(want *Result, message T, claimed []T) (messageSym int, claimedSyms []int) {
	sym := func(s TokenSpace, w int, real T) int {
		if want == nil {
			return b.Auto(s, real)
		}
		return b.Observe(s, w, real)
	}
	w := 0
	if want != nil && want.Message != nil {
		w = want.Message.Token
	}
	messageSym = sym(LeaseTokens, w, message)
	for i, c := range claimed {
		w := 0
		if want != nil && i < len(want.Claimed) {
			w = want.Claimed[i].Token
		}
		claimedSyms = append(claimedSyms, sym(ClaimTokens, w, c))
	}
	return messageSym, claimedSyms
}

// Messages maps the real lease tokens of a batch fetch's messages, in batch order, to symbols,
// as [Binder.Result] maps a single message's: against want's messages position by position, or
// auto-bound when want is nil.
func (b *Binder[T]) Messages(want *Result, tokens []T) []int {
	out := make([]int, len(tokens))
	for i, real := range tokens {
		w := 0
		if want != nil && i < len(want.Messages) {
			w = want.Messages[i].Token
		}
		if want == nil {
			out[i] = b.Auto(LeaseTokens, real)
		} else {
			out[i] = b.Observe(LeaseTokens, w, real)
		}
	}
	return out
}

// Bound returns a copy of namespace s's bindings, symbol to real token.
func (b *Binder[T]) Bound(s TokenSpace) map[int]T {
	sp := b.space(s)
	out := make(map[int]T, len(sp.real))
	for k, r := range sp.real {
		out[k] = r
	}
	return out
}

func (sp *tokenSpace[T]) bind(symbol int, real T) {
	sp.real[symbol] = real
	sp.sym[real] = symbol
	sp.top = max(sp.top, symbol)
}
