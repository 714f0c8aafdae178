package actordelivery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

var errPaymentDeclined = errors.New("payment declined")

// TestOuterContextInCallbackIsRefused is the program of issue 41: the callback writes the order
// through its own context, then calls OutboxEnqueue with the outer context, then fails. The call
// must fail with ErrOutsideTransaction at once (no hang on SQLite, no commit outside the
// transaction on PostgreSQL), and neither the order nor the outbox row may exist afterwards.
func TestOuterContextInCallbackIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		s, _ := testStore(t, b)
		createOrders(t, s)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var callErr error
		err := s.ExecTx(ctx, false, func(txctx context.Context) error {
			q, err := Tx(txctx)
			if err != nil {
				return err
			}
			if _, err := q.ExecContext(txctx, insertOrder, "o1", 100); err != nil {
				return err
			}
			_, callErr = s.OutboxEnqueue(ctx, OutboxMessage{ID: "o1", Target: appTxMailbox, MaxAttempts: 3}) //pconform:ignore txboundary the mistake whose refusal this test checks
			return errPaymentDeclined
		})
		if !errors.Is(err, errPaymentDeclined) {
			t.Fatalf("ExecTx = %v, want the callback's error", err)
		}
		wantErr(t, callErr, ErrOutsideTransaction)
		if !strings.Contains(callErr.Error(), "OutboxEnqueue") {
			t.Errorf("error %q does not name the call", callErr)
		}
		if ctx.Err() != nil {
			t.Fatalf("the refused call waited for its deadline: %v", ctx.Err())
		}
		if ids := outboxIDs(t, s); len(ids) != 0 {
			t.Errorf("outbox rows %q were written outside the rolled-back transaction", ids)
		}
		if n := orderCount(t, s, "o1"); n != 0 {
			t.Errorf("order o1 committed (%d rows)", n)
		}
	})
}

// TestOuterContextRefusedForEveryCallKind: every kind of store call, and a nested ExecTx, made
// with the outer context inside a callback (read-write or read-only) is refused, and the
// transaction can still commit what it wrote through its own context.
func TestOuterContextRefusedForEveryCallKind(t *testing.T) {
	calls := []struct {
		name string
		call func(ctx context.Context, s *Store) error
	}{
		{"Enqueue", func(ctx context.Context, s *Store) error {
			_, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "x", MaxAttempts: 1})
			return err
		}},
		{"OutboxEnqueue", func(ctx context.Context, s *Store) error {
			_, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "x", Target: "m", MaxAttempts: 1})
			return err
		}},
		{"AckByID", func(ctx context.Context, s *Store) error { return s.AckByID(ctx, "seed") }},
		{"Lease", func(ctx context.Context, s *Store) error { _, err := s.Lease(ctx, "m", time.Second); return err }},
		{"Peek", func(ctx context.Context, s *Store) error { _, err := s.Peek(ctx, "m"); return err }},
		{"GetMessage", func(ctx context.Context, s *Store) error { _, err := s.GetMessage(ctx, "seed"); return err }},
		{"SaveCheckpoint", func(ctx context.Context, s *Store) error {
			_, err := s.SaveCheckpoint(ctx, "actor", []byte("s"), 0)
			return err
		}},
		{"ExecTx", func(ctx context.Context, s *Store) error {
			return s.ExecTx(ctx, false, func(context.Context) error { return nil })
		}},
	}
	forEachBackend(t, func(t *testing.T, b Backend) {
		s, _ := testStore(t, b)
		mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "seed"})
		outer, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, readOnly := range []bool{false, true} {
			for _, c := range calls {
				err := s.ExecTx(outer, readOnly, func(txctx context.Context) error {
					return c.call(outer, s)
				})
				if !errors.Is(err, ErrOutsideTransaction) {
					t.Errorf("readOnly=%v: %s with the outer context = %v, want ErrOutsideTransaction", readOnly, c.name, err)
				}
			}
		}
		if outer.Err() != nil {
			t.Fatalf("a refused call waited for the deadline: %v", outer.Err())
		}
		// Nothing was written, and the seed is untouched.
		if m := mustGet(t, s, "seed"); m.Attempts != 0 || m.Token != "" {
			t.Errorf("seed changed: %+v", m)
		}
		if _, err := s.GetMessage(context.Background(), "x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("message x: %v, want ErrNotFound", err)
		}
		if ids := outboxIDs(t, s); len(ids) != 0 {
			t.Errorf("outbox rows %q written", ids)
		}
		// The same calls with the callback's context work, and a callback that ended leaves
		// no trace: the outer context serves again.
		err := s.ExecTx(outer, false, func(txctx context.Context) error {
			_, err := s.Enqueue(txctx, NewMessage{Mailbox: "m", ID: "in", MaxAttempts: 1})
			return err
		})
		if err != nil {
			t.Fatalf("Enqueue with the callback's context: %v", err)
		}
		mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "after"})
	})
}

// TestOuterContextFromAnotherGoroutineIsServed: the check keys on the goroutine, not the context
// value. Another goroutine writing and reading with the very context the callback's ExecTx got,
// while the callback runs, is an ordinary concurrent caller and must not be refused.
func TestOuterContextFromAnotherGoroutineIsServed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		s, _ := testStore(t, b)
		mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "seed"})
		outer, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		readDone := make(chan error, 1)
		writeDone := make(chan error, 1)
		err := s.ExecTx(outer, false, func(txctx context.Context) error {
			go func() {
				_, err := s.Peek(outer, "m")
				readDone <- err
			}()
			go func() {
				_, err := s.Enqueue(outer, NewMessage{Mailbox: "m", ID: "other", MaxAttempts: 1})
				writeDone <- err
			}()
			// The read never waits for the writer: it must be served while the callback runs.
			if err := <-readDone; err != nil {
				t.Errorf("Peek from another goroutine with the outer context: %v", err)
			}
			// The write waits for the writer connection on SQLite, so it may finish after the
			// commit; if it finishes now, it must have succeeded.
			select {
			case err := <-writeDone:
				writeDone <- err
			case <-time.After(100 * time.Millisecond):
			}
			_, err := s.Enqueue(txctx, NewMessage{Mailbox: "m", ID: "mine", MaxAttempts: 1})
			return err
		})
		if err != nil {
			t.Fatalf("ExecTx: %v", err)
		}
		if err := <-writeDone; err != nil {
			t.Fatalf("Enqueue from another goroutine with the outer context: %v", err)
		}
		mustGet(t, s, "other")
		mustGet(t, s, "mine")
	})
}

// TestOuterContextInEffectsIsRefused: a Handler's Effects run inside the acknowledgement's
// transaction; a store call there with the handler's (outer) context is refused, the delivery
// fails, and nothing of the Effects is committed.
func TestOuterContextInEffectsIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		s, _ := testStore(t, b)
		mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "in"})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var effErr error
		c, err := NewConsumer(s, func(hctx context.Context, m *Message) (Effects, error) {
			return func(txctx context.Context) error {
				_, effErr = s.OutboxEnqueue(hctx, OutboxMessage{ID: "out", Target: "n", MaxAttempts: 1}) //pconform:ignore txboundary the mistake whose refusal this test checks
				return effErr
			}, nil
		}, ConsumerOptions{Mailbox: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Step(ctx); err != nil && !errors.Is(err, ErrOutsideTransaction) {
			t.Fatalf("Step: %v", err)
		}
		wantErr(t, effErr, ErrOutsideTransaction)
		if ctx.Err() != nil {
			t.Fatalf("the refused call waited: %v", ctx.Err())
		}
		if ids := outboxIDs(t, s); len(ids) != 0 {
			t.Errorf("outbox rows %q written outside the delivery's transaction", ids)
		}
	})
}

// BenchmarkBoundaryCheck measures the per-call cost of the transaction-boundary check that a
// store call outside a transaction pays: idle (no callback in flight: one atomic load) and busy
// (another goroutine runs a callback: the caller's goroutine id is read and looked up).
//
//	go test -run '^$' -bench BoundaryCheck ./actordelivery/
func BenchmarkBoundaryCheck(b *testing.B) {
	for _, busy := range []bool{false, true} {
		b.Run(map[bool]string{false: "idle", true: "callback-in-flight"}[busy], func(b *testing.B) {
			var c callbacks
			if busy {
				entered, release := make(chan struct{}), make(chan struct{})
				go func() {
					leave := c.enter()
					close(entered)
					<-release
					leave()
				}()
				<-entered
				defer close(release)
			}
			refused := 0
			for b.Loop() {
				if c.running() {
					refused++
				}
			}
			if refused != 0 {
				b.Fatalf("%d calls from a goroutine that runs no callback were refused", refused)
			}
		})
	}
}

// TestGoroutineKey: the key is the same for every read on one goroutine and differs between two
// goroutines alive at once, which is all the boundary check relies on.
func TestGoroutineKey(t *testing.T) {
	k := goroutineKey()
	if k == 0 || goroutineKey() != k {
		t.Fatalf("goroutineKey() = %d, then %d: not stable on one goroutine", k, goroutineKey())
	}
	const n = 8
	keys := make(chan uint64, n)
	hold := make(chan struct{})
	for range n {
		go func() {
			keys <- goroutineKey()
			<-hold
		}()
	}
	seen := map[uint64]bool{k: true}
	for range n {
		g := <-keys
		if seen[g] {
			t.Errorf("two live goroutines share the key %d", g)
		}
		seen[g] = true
	}
	close(hold)
	if goroutineID() == 0 {
		t.Error("goroutineID() = 0: the stack trace's first line did not parse")
	}
}
