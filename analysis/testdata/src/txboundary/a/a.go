// Package a holds txboundary's cases: store calls inside ExecTx callbacks and Effects, with the
// callback's context (accepted) and with another one (reported).
package a

import (
	"context"
	"errors"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

var errDeclined = errors.New("payment declined")

// issue41 is the program from issue 41: the outbox row is written with the outer context.
func issue41(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, func(txctx context.Context) error {
		if _, err := st.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: "o1", Target: "billing"}); err != nil { // want `store call inside a transaction's callback with a context that does not carry the transaction: .*; pass txctx`
			return err
		}
		return errDeclined
	})
}

// background uses a fresh context inside the callback.
func background(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, func(txctx context.Context) error {
		_, err := st.Enqueue(context.Background(), actordelivery.NewMessage{ID: "m"}) // want `store call inside a transaction's callback`
		return err
	})
}

// good uses the callback's context, directly and derived.
func good(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, func(txctx context.Context) error {
		if _, err := st.Enqueue(txctx, actordelivery.NewMessage{ID: "m"}); err != nil {
			return err
		}
		tctx, cancel := context.WithTimeout(txctx, time.Second)
		defer cancel()
		var vctx = context.WithValue(tctx, key{}, 1)
		if _, err := st.Peek(vctx, "m"); err != nil {
			return err
		}
		return st.AckByID(context.WithoutCancel(txctx), "m")
	})
}

type key struct{}

// shadowed names the callback's parameter ctx, as the store's own code does: fine.
func shadowed(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, func(ctx context.Context) error {
		return st.AckByID(ctx, "m")
	})
}

// nested runs a nested ExecTx: with the callback's context it joins, with the outer one it is
// reported; the nested callback's calls use its own parameter.
func nested(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, func(txctx context.Context) error {
		if err := st.ExecTx(txctx, false, func(inner context.Context) error {
			return st.AckByID(inner, "a")
		}); err != nil {
			return err
		}
		if err := st.ExecTx(txctx, false, func(inner context.Context) error {
			return st.AckByID(txctx, "b") // the outer callback's context carries the same transaction
		}); err != nil {
			return err
		}
		return st.ExecTx(ctx, false, func(inner context.Context) error { // want `store call inside a transaction's callback`
			return st.AckByID(inner, "c")
		})
	})
}

// goroutine starts another goroutine: its calls are not the callback's.
func goroutine(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, func(txctx context.Context) error {
		go func() {
			_, _ = st.Peek(ctx, "m")
		}()
		return nil
	})
}

// closure calls the store from a closure that runs on the callback's goroutine.
func closure(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, func(txctx context.Context) error {
		ack := func(id string) error { return st.AckByID(ctx, id) } // want `store call inside a transaction's callback`
		return ack("m")
	})
}

// unnamed has no parameter name to suggest: reported without a fix.
func unnamed(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, func(context.Context) error {
		return st.AckByID(ctx, "m") // want `store call inside a transaction's callback with a context that does not carry the transaction: it does not join the transaction \(the store refuses it with ErrOutsideTransaction\)$`
	})
}

// handler returns Effects that use the handler's context.
func handler(st *actordelivery.Store) actordelivery.Handler {
	return func(ctx context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		return func(txctx context.Context) error {
			_, err := st.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: m.ID}) // want `store call inside a transaction's callback`
			return err
		}, nil
	}
}

// effectsVar declares and converts Effects.
func effectsVar(ctx context.Context, st *actordelivery.Store) []actordelivery.Effects {
	var e actordelivery.Effects = func(txctx context.Context) error {
		return st.AckByID(ctx, "v") // want `store call inside a transaction's callback`
	}
	var f actordelivery.Effects
	f = func(txctx context.Context) error {
		return st.AckByID(txctx, "w")
	}
	g := actordelivery.Effects(func(txctx context.Context) error {
		return st.AckByID(ctx, "x") // want `store call inside a transaction's callback`
	})
	return []actordelivery.Effects{e, f, g}
}

// notACallback is an ordinary function literal: its context is its own business.
func notACallback(ctx context.Context, st *actordelivery.Store) func(context.Context) error {
	return func(other context.Context) error {
		return st.AckByID(ctx, "m")
	}
}

// suppressed breaks the rule on purpose.
func suppressed(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, func(txctx context.Context) error {
		return st.AckByID(ctx, "m") //pconform:ignore txboundary a test of the run-time refusal
	})
}
