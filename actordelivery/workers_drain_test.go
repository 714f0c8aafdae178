package actordelivery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestWorkersDrainTimeout: a delivery still in flight when the drain timeout runs out has its
// handler's context cancelled with cause ErrDrainTimeout and commits nothing, whether its handler
// then fails or succeeds: the message stays as stored (leased: under its lease, attempt counted;
// leaseless: untouched), and the lease or peek rules deliver it again afterwards.
func TestWorkersDrainTimeout(t *testing.T) { forEachBackend(t, testWorkersDrainTimeout) }

func testWorkersDrainTimeout(t *testing.T, b Backend) {
	const leaseFor = time.Minute
	for _, path := range []Path{PathLeased, PathLeaseless} {
		for _, handler := range []struct {
			name string
			// after is what the handler returns once its context was cancelled.
			after func(s *Store, ctx context.Context, id string) (Effects, error)
		}{
			{"honours cancellation", func(_ *Store, ctx context.Context, _ string) (Effects, error) {
				return nil, context.Cause(ctx)
			}},
			{"succeeds anyway", func(s *Store, _ context.Context, id string) (Effects, error) {
				return countEffect(s, id), nil
			}},
		} {
			t.Run(path.String()+"/"+handler.name, func(t *testing.T) {
				inBubble(t, b, func(t *testing.T, settle func()) {
					s, clk := testStore(t, b)
					mustEnqueue(t, s, NewMessage{Mailbox: "a", ID: "a-0", MaxAttempts: 3})
					started := make(chan struct{}, 1)
					causes := make(chan error, 1)
					h := func(ctx context.Context, m *Message) (Effects, error) {
						started <- struct{}{}
						<-ctx.Done()
						causes <- context.Cause(ctx)
						return handler.after(s, ctx, m.ID)
					}
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan error, 1)
					go func() {
						done <- RunWorkers(ctx, s, []string{"a"}, 1, h,
							ConsumerOptions{Path: path, LeaseFor: leaseFor, DrainTimeout: 50 * time.Millisecond})
					}()
					<-started
					cancel()
					if err := <-done; err != nil {
						t.Fatalf("RunWorkers = %v after the drain timeout, want nil", err)
					}
					if cause := <-causes; !errors.Is(cause, ErrDrainTimeout) {
						t.Fatalf("handler context's cause = %v, want ErrDrainTimeout", cause)
					}
					m := mustGet(t, s, "a-0")
					if n := effectCount(t, s, "a-0"); n != 0 {
						t.Fatalf("the abandoned delivery committed its effect %d times", n)
					}
					switch {
					case m.State != StateReady:
						t.Fatalf("after the drain timeout: state %s, want ready", m.State)
					case path == PathLeased && (m.Token == "" || m.Attempts != 1):
						t.Fatalf("leased, after the drain timeout: token %q attempts %d, want the lease and 1", m.Token, m.Attempts)
					case path == PathLeaseless && (m.Token != "" || m.Attempts != 0):
						t.Fatalf("leaseless, after the drain timeout: token %q attempts %d, want untouched", m.Token, m.Attempts)
					}
					// What the rules do with it next: the lease runs out and a fetch takes it
					// again; the leaseless path peeks it again at once.
					if path == PathLeased {
						c := newConsumer(t, s, okHandler, ConsumerOptions{Mailbox: "a", Path: path, LeaseFor: leaseFor})
						if out, err := c.Step(context.Background()); err != nil || out.Action != ActionIdle {
							t.Fatalf("step under the live lease = %+v, %v, want idle", out, err)
						}
						clk.Advance(leaseFor)
					}
					c := newConsumer(t, s, okHandler, ConsumerOptions{Mailbox: "a", Path: path, LeaseFor: leaseFor})
					if out, err := c.Step(context.Background()); err != nil || out.Action != ActionAcked {
						t.Fatalf("redelivery = %+v, %v, want acked", out, err)
					}
					if m := mustGet(t, s, "a-0"); m.State != StateAcked {
						t.Fatalf("after the redelivery: %s, want acked", m.State)
					}
				})
			})
		}
	}
}

// TestWorkersDrainTimeoutBadInput: a negative or too long drain timeout is refused by name.
func TestWorkersDrainTimeoutBadInput(t *testing.T) {
	forEachBackend(t, testWorkersDrainTimeoutBadInput)
}

func testWorkersDrainTimeoutBadInput(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	for _, d := range []time.Duration{-time.Second, MaxDuration + 1} {
		err := RunWorkers(context.Background(), s, []string{"a"}, 1, okHandler, ConsumerOptions{DrainTimeout: d})
		wantErr(t, err, ErrInvalidArgument)
		if !strings.Contains(err.Error(), "drain_timeout") {
			t.Fatalf("DrainTimeout %v: error %q does not name drain_timeout", d, err)
		}
	}
}
