// Package a holds rawattempts' positive and negative cases.
package a

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"

	"rawattempts/marked"
)

var errHandler = errors.New("handler failed")

// ---- raw counts reaching retry decisions ----

func direct(policy actordelivery.RetryPolicy, m *actordelivery.Message) time.Duration {
	d, _ := policy.Retry(errHandler, m.Attempts) // want `raw stored attempt count m.Attempts reaches retry decision policy.Retry`
	return d
}

func viaLocal(b actordelivery.Backoff, m actordelivery.Message) bool {
	a := m.Attempts
	_, ok := b.Retry(errHandler, a) // want `raw stored attempt count m.Attempts reaches retry decision b.Retry`
	return ok
}

func handComputed(policy actordelivery.RetryPolicy, m *actordelivery.Message) {
	a := m.Attempts + 1
	policy.Retry(errHandler, a) // want `raw stored attempt count m.Attempts reaches`
}

func throughDelivery(policy actordelivery.RetryPolicy, d *actordelivery.Delivery) {
	policy.Retry(errHandler, max(d.Message.Attempts, 1)) // want `raw stored attempt count d.Message.Attempts reaches`
}

func markedDecision(m *actordelivery.Message) bool {
	return marked.Decide(int64(m.Attempts)) // want `raw stored attempt count m.Attempts reaches retry decision marked.Decide`
}

func markedInterface(p marked.Policy, j marked.Job) bool {
	return p.Again(errHandler, j.Tries) // want `raw stored attempt count j.Tries reaches retry decision p.Again`
}

func branchOnlySanitises(policy actordelivery.RetryPolicy, m *actordelivery.Message, path actordelivery.Path) {
	a := m.Attempts
	if path == actordelivery.PathLeaseless {
		a = actordelivery.EffectiveAttempts(a, path)
	}
	policy.Retry(errHandler, a) // want `raw stored attempt count m.Attempts reaches`
}

func inClosure(ctx context.Context, st *actordelivery.Store, policy actordelivery.RetryPolicy, m *actordelivery.Message) error {
	a := m.Attempts
	return st.ExecTx(ctx, false, func(ctx context.Context) error {
		d, _ := policy.Retry(errHandler, a) // want `raw stored attempt count m.Attempts reaches`
		return st.NackByID(ctx, m.ID, d)
	})
}

func opAssign(policy actordelivery.RetryPolicy, m *actordelivery.Message) {
	a := 0
	a += m.Attempts
	policy.Retry(errHandler, a) // want `raw stored attempt count m.Attempts reaches`
}

func clamp(n, lo, hi int) int { return max(lo, min(n, hi)) }

func throughOtherFunc(policy actordelivery.RetryPolicy, m *actordelivery.Message) {
	policy.Retry(errHandler, clamp(m.Attempts, 1, 10)) // want `raw stored attempt count m.Attempts reaches`
}

// ---- raw comparisons deciding a retry ----

func deadLetterBranch(ctx context.Context, st *actordelivery.Store, m *actordelivery.Message) error {
	if m.Attempts >= m.MaxAttempts { // want `raw stored attempt count m.Attempts compared with MaxAttempts in a retry decision`
		return st.DeadLetter(ctx, m.ID, "max attempts reached")
	}
	return st.NackByID(ctx, m.ID, time.Second)
}

func viaBool(ctx context.Context, st *actordelivery.Store, m *actordelivery.Message) error {
	a := m.Attempts
	exhausted := m.MaxAttempts <= a // want `raw stored attempt count m.Attempts compared with MaxAttempts`
	if !exhausted {
		return nil
	}
	return st.ExecTx(ctx, false, func(ctx context.Context) error {
		return st.DeadLetter(ctx, m.ID, "max attempts reached")
	})
}

type consumer struct{ st *actordelivery.Store }

func (c *consumer) deadLetter(ctx context.Context, m *actordelivery.Message) error { return nil }

func switchCase(ctx context.Context, c *consumer, m *actordelivery.Message) error {
	switch {
	case m.Attempts+1 > m.MaxAttempts: // want `compared with MaxAttempts in a retry decision`
		return c.deadLetter(ctx, m)
	default:
		return nil
	}
}

func combined(ctx context.Context, st *actordelivery.Store, m *actordelivery.Message, failed bool) error {
	if failed && (m.Attempts == m.MaxAttempts) { // want `compared with MaxAttempts`
		return st.DeadLetter(ctx, m.ID, "max attempts reached")
	}
	return nil
}

// ---- clean ----

func helper(policy actordelivery.RetryPolicy, m *actordelivery.Message, path actordelivery.Path, ctx context.Context, st *actordelivery.Store) error {
	eff := actordelivery.EffectiveAttempts(m.Attempts, path)
	if eff >= m.MaxAttempts {
		return st.DeadLetter(ctx, m.ID, "max attempts reached")
	}
	d, _ := policy.Retry(errHandler, eff)
	return st.NackByID(ctx, m.ID, d)
}

// counter holds a function of the helper's shape in a field; calling it is a sanitiser.
type counter struct {
	attempts func(stored int, path actordelivery.Path) int
}

func hook(c counter, opts actordelivery.ConsumerOptions, d *actordelivery.Delivery) {
	eff := c.attempts(d.Message.Attempts, d.Path)
	opts.Retry.Retry(errHandler, eff)
}

func hookWithDefault(c counter, opts actordelivery.ConsumerOptions, d *actordelivery.Delivery) {
	attempts := c.attempts
	if attempts == nil {
		attempts = actordelivery.EffectiveAttempts
	}
	opts.Retry.Retry(errHandler, attempts(d.Message.Attempts, d.Path))
}

func markedHelper(p marked.Policy, j marked.Job) bool {
	return p.Again(errHandler, marked.Bump(j.Tries))
}

func overwrittenInBlock(policy actordelivery.RetryPolicy, m *actordelivery.Message, path actordelivery.Path) {
	a := m.Attempts
	a = actordelivery.EffectiveAttempts(a, path)
	policy.Retry(errHandler, a)
}

// rawVariant has the helper's shape: it is how replay swaps in the raw count on purpose.
func rawVariant(stored int, _ actordelivery.Path) int { return stored }

func deliberateVariant(policy actordelivery.RetryPolicy, m *actordelivery.Message, path actordelivery.Path) {
	policy.Retry(errHandler, rawVariant(m.Attempts, path))
}

func invariant(t *testing.T, msgs []actordelivery.Message) {
	for _, m := range msgs {
		if m.Attempts > m.MaxAttempts {
			t.Errorf("message %s: attempts %d > max %d", m.ID, m.Attempts, m.MaxAttempts)
		}
	}
}

func eligible(msgs []actordelivery.Message) []actordelivery.Message {
	var out []actordelivery.Message
	for _, m := range msgs {
		if m.Attempts < m.MaxAttempts {
			out = append(out, m)
		}
	}
	return out
}

func notAStoredCount(policy actordelivery.RetryPolicy, row actordelivery.OutboxRow) {
	policy.Retry(errHandler, row.DeliveryAttempts)
	policy.Retry(errHandler, 3)
}
