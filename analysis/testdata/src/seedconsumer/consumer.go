// Package seedconsumer is a copy of the seed design's leaseless consumer bug: on a handler
// failure it hands the raw stored attempt count to the retry decision. Nothing has bumped that
// count on the leaseless path, so after MaxAttempts failures the row has Attempts ==
// MaxAttempts, is never eligible again, and is never dead-lettered.
package seedconsumer

import (
	"context"

	"github.com/pconform/pconform/actordelivery"
)

type Consumer struct {
	st      *actordelivery.Store
	h       actordelivery.Handler
	policy  actordelivery.RetryPolicy
	mailbox string
}

// Step peeks (leaseless: one worker per mailbox), handles, and on failure retries or
// dead-letters by the stored count.
func (c *Consumer) Step(ctx context.Context) (string, error) {
	m, err := c.st.Peek(ctx, c.mailbox)
	if err != nil || m == nil {
		return "idle", err
	}
	herr := c.st.ExecTx(ctx, false, func(ctx context.Context) error {
		if _, err := c.h(ctx, m); err != nil {
			return err
		}
		return c.st.AckByID(ctx, m.ID)
	})
	if herr == nil {
		return "acked", nil
	}
	if m.Attempts >= m.MaxAttempts { // want `raw stored attempt count m.Attempts compared with MaxAttempts in a retry decision`
		return "dead_lettered", c.st.ExecTx(ctx, false, func(ctx context.Context) error {
			return c.st.DeadLetter(ctx, m.ID, "max attempts reached")
		})
	}
	delay, retry := c.policy.Retry(herr, m.Attempts) // want `raw stored attempt count m.Attempts reaches retry decision c.policy.Retry`
	if !retry {
		return "dead_lettered", c.st.DeadLetter(ctx, m.ID, "retry policy gave up")
	}
	return "retried", c.st.NackByID(ctx, m.ID, delay)
}
