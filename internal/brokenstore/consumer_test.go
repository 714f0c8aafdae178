package brokenstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

type alwaysRetry struct{}

func (alwaysRetry) Retry(error, int) (time.Duration, bool) { return time.Second, true }

var errHandler = errors.New("handler fails")

// TestRawAttemptsStrands shows the bug HandleRawAttempts reproduces, and that the real consumer
// does not have it: after max_attempts failed leaseless deliveries, the raw count leaves the
// message ready at attempts == max_attempts, never eligible and never dead-lettered, where the
// real consumer dead-letters it.
func TestRawAttemptsStrands(t *testing.T) {
	for _, broken := range []bool{false, true} {
		ctx := context.Background()
		clk := actordelivery.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		st, err := actordelivery.Open(filepath.Join(t.TempDir(), "s.db"), actordelivery.Options{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "mb", ID: "a", MaxAttempts: 2}); err != nil {
			t.Fatal(err)
		}
		fail := func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) { return nil, errHandler }
		consumer := func(h actordelivery.Handler) (*actordelivery.Consumer, error) {
			return actordelivery.NewConsumer(st, h, actordelivery.ConsumerOptions{Mailbox: "mb", Path: actordelivery.PathLeaseless, Retry: alwaysRetry{}})
		}
		c, err := consumer(fail)
		if err != nil {
			t.Fatal(err)
		}
		for range 4 {
			d, err := c.Fetch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if broken {
				_, err = HandleRawAttempts(ctx, st, consumer, fail, alwaysRetry{}, d)
			} else {
				_, err = c.Handle(ctx, d)
			}
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Second)
		}
		dead, err := st.ListDeadLetters(ctx)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := st.ListMessages(ctx, "mb")
		if err != nil {
			t.Fatal(err)
		}
		stranded := len(dead) == 0 && len(msgs) == 1 && msgs[0].State == actordelivery.StateReady && msgs[0].Attempts == 2
		if stranded != broken {
			t.Errorf("broken=%v: messages %+v, dead letters %+v; stranded=%v", broken, msgs, dead, stranded)
		}
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}
}
