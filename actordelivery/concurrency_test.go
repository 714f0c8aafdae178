package actordelivery

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentPublishersAndConsumers runs three publishers (two fold, one split) moving 2000
// outbox rows into one mailbox while four leased consumers drain it, each handler failing one
// delivery in ten. Every message must take effect exactly once and, per correlation key, in
// mailbox order; none may be lost or dead-lettered.
//
// The handler's effects are store writes in its transaction: MarkProcessed (a second committed
// effect of one id would find it present) and a per-key checkpoint holding the last handled seq.
// The failure pattern comes from fixed seeds; the interleaving is the scheduler's. synchronous is
// NORMAL so the test stays within seconds: durability is covered by the crash tests, this one is
// about concurrency.
func TestConcurrentPublishersAndConsumers(t *testing.T) {
	if testing.Short() {
		t.Skip("concurrency test skipped in -short mode")
	}
	const (
		n       = 2000
		keys    = 20
		workers = 4
		seed    = 1
	)
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "conc.db"), Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	for i := 0; i < n; i += 200 {
		err := s.ExecTx(ctx, false, func(ctx context.Context) error {
			for j := i; j < i+200; j++ {
				_, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: fmt.Sprintf("m%04d", j), Target: "work",
					Key: fmt.Sprintf("k%02d", j%keys), MaxAttempts: 10})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	var duplicates, disorders, handled atomic.Int64
	var violations sync.Map // id -> description, for the failure message
	errFlaky := errors.New("flaky handler")
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	runErrs := make(chan error, 16)
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		c, err := NewConsumer(s, func(_ context.Context, m *Message) (Effects, error) {
			if rng.IntN(10) == 0 {
				return nil, errFlaky
			}
			// The checks read inside the commit transaction, so they see exactly what the
			// acknowledgement commits against.
			return func(ctx context.Context) error {
				if already, err := s.MarkProcessed(ctx, "handler", m.ID, time.Hour); err != nil {
					return err
				} else if already {
					duplicates.Add(1)
					violations.Store(m.ID, "handled after its effect committed")
				}
				actor := "last/" + m.Key
				st, ver, err := s.LoadCheckpoint(ctx, actor)
				if err != nil && !errors.Is(err, ErrNotFound) {
					return err
				}
				if last, _ := strconv.ParseInt(string(st), 10, 64); m.Seq <= last {
					disorders.Add(1)
					violations.Store(m.ID, fmt.Sprintf("seq %d handled after seq %d of key %s", m.Seq, last, m.Key))
				}
				if _, err := s.SaveCheckpoint(ctx, actor, []byte(strconv.FormatInt(m.Seq, 10)), ver); err != nil {
					return err
				}
				handled.Add(1)
				return nil
			}, nil
		}, ConsumerOptions{Mailbox: "work", Path: PathLeased, LeaseFor: time.Minute,
			Retry: Backoff{Base: time.Millisecond, Max: time.Millisecond}, PollInterval: 5 * time.Millisecond, MaxPollInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); runErrs <- c.Run(runCtx) }()
	}
	for i, mode := range []PublishMode{ModeFold, ModeFold, ModeSplit} {
		p, err := NewPublisher(s, PublisherOptions{Mode: mode, Batch: 16 + i, ClaimFor: time.Minute, PollInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); runErrs <- p.Run(runCtx) }()
	}

	deadline := time.Now().Add(60 * time.Second)
	acked := 0
	for time.Now().Before(deadline) {
		msgs, err := s.ListMessages(ctx, "work")
		if err != nil {
			t.Fatal(err)
		}
		acked = 0
		for _, m := range msgs {
			if m.State == StateAcked {
				acked++
			}
		}
		if acked == n {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	wg.Wait()
	close(runErrs)
	for err := range runErrs {
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	if acked != n {
		t.Fatalf("%d of %d messages acked before the deadline", acked, n)
	}
	violations.Range(func(k, v any) bool {
		t.Errorf("%s: %s", k, v)
		return true
	})
	if duplicates.Load() != 0 || disorders.Load() != 0 {
		t.Fatalf("%d duplicate effects, %d out-of-order effects", duplicates.Load(), disorders.Load())
	}
	if got := handled.Load(); got < n {
		t.Fatalf("handlers succeeded %d times for %d messages", got, n)
	}
	// Every effect committed exactly once: each id is marked, and the acks equal the marks.
	for i := range n {
		already, err := s.MarkProcessed(ctx, "handler", fmt.Sprintf("m%04d", i), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if !already {
			t.Fatalf("m%04d acked without its effect", i)
		}
	}
	rows, _ := s.ListOutbox(ctx)
	for _, r := range rows {
		if r.State != StateCompleted {
			t.Fatalf("outbox row left: %+v", r)
		}
	}
	if dls, _ := s.ListDeadLetters(ctx); len(dls) != 0 {
		t.Fatalf("%d dead letters, first %+v", len(dls), dls[0])
	}
	t.Logf("seed %d: %d messages, %d successful handler runs (failures and lost leases retried)", seed, n, handled.Load())
}

// TestHandlersRunOutsideTheWriteLock: a handler runs outside any write transaction (Read/Commit),
// so while one handler is blocked, a handler of another mailbox runs too and an Enqueue from another
// goroutine commits. Both handlers are held inside their bodies until the test has seen all of that;
// only then are they released to commit. Channels order every step; the context deadline is only a
// failsafe, so that a store which serialized handlers fails the test (its second handler or the
// Enqueue would wait for the writer lock until the deadline) rather than hang it.
func TestHandlersRunOutsideTheWriteLock(t *testing.T) {
	forEachBackend(t, testHandlersRunOutsideTheWriteLock)
}

func testHandlersRunOutsideTheWriteLock(t *testing.T, b Backend) {
	for _, path := range []Path{PathLeased, PathLeaseless} {
		t.Run(path.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, _ := testStore(t, b)
			mailboxes := []string{"one", "two"}
			for _, mb := range mailboxes {
				mustEnqueue(t, s, NewMessage{Mailbox: mb, ID: mb + "-1"})
			}
			release := make(chan struct{})
			type result struct {
				out Outcome
				err error
			}
			started := map[string]chan struct{}{}
			done := map[string]chan result{}
			for _, mb := range mailboxes {
				started[mb], done[mb] = make(chan struct{}), make(chan result, 1)
				c := newConsumer(t, s, func(ctx context.Context, m *Message) (Effects, error) {
					close(started[m.Mailbox])
					select {
					case <-release:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return func(ctx context.Context) error {
						_, err := s.SaveCheckpoint(ctx, "actor/"+m.Mailbox, []byte(m.ID), 0)
						return err
					}, nil
				}, ConsumerOptions{Mailbox: mb, Path: path})
				go func() {
					out, err := c.Step(ctx)
					done[mb] <- result{out, err}
				}()
			}
			for _, mb := range mailboxes {
				select {
				case <-started[mb]:
				case r := <-done[mb]:
					t.Fatalf("consumer of %q ended before its handler ran (%+v, %v): handlers are serialized", mb, r.out, r.err)
				}
			}
			// Both handlers are inside their bodies now. An enqueue must not wait for them.
			if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "one", ID: "one-2", MaxAttempts: 1}); err != nil {
				t.Fatalf("Enqueue while two handlers run: %v", err)
			}
			close(release)
			for _, mb := range mailboxes {
				r := <-done[mb]
				if r.err != nil || r.out.Action != ActionAcked {
					t.Fatalf("consumer of %q: %+v, %v", mb, r.out, r.err)
				}
				if st, _, err := s.LoadCheckpoint(ctx, "actor/"+mb); err != nil || string(st) != mb+"-1" {
					t.Fatalf("effect of %q = %q, %v", mb, st, err)
				}
				if m := mustGet(t, s, mb+"-1"); m.State != StateAcked {
					t.Fatalf("%s-1 after its handle: %+v", mb, m)
				}
			}
			if m := mustGet(t, s, "one-2"); m.State != StateReady {
				t.Fatalf("message enqueued during the handlers: %+v", m)
			}
		})
	}
}
