package timeline

import (
	"slices"

	"github.com/pconform/pconform/traces"
)

// Handled is the message a consumer_handle step works on: the one its worker's last fetch
// returned, with the lease token of that fetch (0 for a leaseless fetch).
type Handled struct {
	ID    string
	Token int
}

// HandledBy resolves, for every consumer_handle step of t, the message it handles. A worker
// holds what its last consumer_fetch returned until it handles it or a crash makes it forget;
// a handle without a held message has no entry.
func HandledBy(t *traces.Trace) map[int]Handled {
	holds := map[int]Handled{}
	out := map[int]Handled{}
	for i, s := range t.Steps {
		switch s.Op {
		case traces.OpConsumerFetch:
			if m := s.Result.Message; m != nil {
				holds[s.Args.Worker] = Handled{ID: m.ID, Token: m.Token}
			} else {
				delete(holds, s.Args.Worker)
			}
		case traces.OpConsumerHandle:
			if h, ok := holds[s.Args.Worker]; ok {
				out[i] = h
			}
			delete(holds, s.Args.Worker)
		case traces.OpCrash:
			clear(holds)
		}
	}
	return out
}

// stepRefs lists the message or outbox ids and the token symbols step i names or returns.
func stepRefs(s traces.Step, h Handled, handled bool) (ids []string, tokens []int) {
	addID := func(id string) {
		if id != "" {
			ids = append(ids, id)
		}
	}
	addToken := func(tok int) {
		if tok != 0 {
			tokens = append(tokens, tok)
		}
	}
	addID(s.Args.ID)
	addToken(s.Args.Token)
	if m := s.Result.Message; m != nil {
		addID(m.ID)
		addToken(m.Token)
	}
	for _, c := range s.Result.Claimed {
		addID(c.ID)
		addToken(c.Token)
	}
	if handled {
		addID(h.ID)
		addToken(h.Token)
	}
	return ids, tokens
}

// touchesAll reports whether a step acts on every row at once (so it can cause any divergence).
func touchesAll(op traces.Op) bool {
	return op == traces.OpCrash || op == traces.OpAdvanceClock || op == traces.OpExpire
}

// Causal returns the steps, up to and including focus, that lead to what step focus does: the
// focus itself, then, walking backwards, every step that names, returns or handles one of the ids
// or tokens followed so far. A step joins what it refers to to the followed set, so a handle leads
// to its worker's fetch, the fetch's lease token to the extends and acks under it, and the id to
// the enqueue, the outbox row and the other workers that fetched it. An outbox_claim joins only
// its claimed rows that are followed already, since its other rows are unrelated. Steps that act
// on every row (crash, advance_clock, expire) between the earliest causal step and the focus are
// causal too. extraIDs are followed from the start as well: the ids of an observed result the
// trace did not expect, or of the rows a final snapshot differs in.
//
// Causal is pure and never fails: a focus out of range gives the steps that refer to extraIDs.
// The result is sorted.
func Causal(t *traces.Trace, focus int, extraIDs ...string) []int {
	if focus >= len(t.Steps) {
		focus = len(t.Steps) - 1
	}
	handled := HandledBy(t)
	ids := map[string]bool{}
	tokens := map[int]bool{}
	for _, id := range extraIDs {
		ids[id] = true
	}
	var out []int
	for i := focus; i >= 0; i-- {
		s := t.Steps[i]
		h, isHandle := handled[i]
		refIDs, refTokens := stepRefs(s, h, isHandle)
		related := i == focus
		for _, id := range refIDs {
			related = related || ids[id]
		}
		for _, tok := range refTokens {
			related = related || tokens[tok]
		}
		if !related {
			continue
		}
		out = append(out, i)
		if s.Op == traces.OpOutboxClaim && i != focus {
			for _, c := range s.Result.Claimed {
				if ids[c.ID] || tokens[c.Token] {
					ids[c.ID], tokens[c.Token] = true, true
				}
			}
			continue
		}
		for _, id := range refIDs {
			ids[id] = true
		}
		for _, tok := range refTokens {
			tokens[tok] = true
		}
	}
	if len(out) > 0 {
		for i := out[len(out)-1] + 1; i < focus; i++ {
			if touchesAll(t.Steps[i].Op) {
				out = append(out, i)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
