package actordelivery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The application's table in these tests: an order and the outbox row announcing it are meant to
// commit together. "$1" placeholders work on both backends.
const (
	ordersTable  = `CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, total BIGINT NOT NULL)`
	insertOrder  = `INSERT INTO orders (id, total) VALUES ($1, $2)`
	countOrders  = `SELECT count(*) FROM orders WHERE id = $1`
	appTxMailbox = "billing"
)

var errBusinessRule = errors.New("business rule refused the order")

func createOrders(t testing.TB, s *Store) {
	t.Helper()
	err := s.ExecTx(context.Background(), false, func(ctx context.Context) error {
		q, err := Tx(ctx)
		if err != nil {
			return err
		}
		_, err = q.ExecContext(ctx, ordersTable)
		return err
	})
	if err != nil {
		t.Fatalf("create the application's table: %v", err)
	}
}

// placeOrder writes the order and its outbox row in one ExecTx; fail, if set, is returned after
// both writes.
func placeOrder(s *Store, id string, fail error) error {
	return s.ExecTx(context.Background(), false, func(ctx context.Context) error {
		q, err := Tx(ctx)
		if err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, insertOrder, id, 100); err != nil {
			return err
		}
		if _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: id, Target: appTxMailbox, MaxAttempts: 3}); err != nil {
			return err
		}
		return fail
	})
}

// orderCount reads how many orders id has (0 or 1) through a read-only transaction's handle.
func orderCount(t testing.TB, s *Store, id string) int {
	t.Helper()
	var n int
	err := s.ExecTx(context.Background(), true, func(ctx context.Context) error {
		q, err := Tx(ctx)
		if err != nil {
			return err
		}
		return q.QueryRowContext(ctx, countOrders, id).Scan(&n)
	})
	if err != nil {
		t.Fatalf("count orders %q: %v", id, err)
	}
	return n
}

// outboxIDs lists the outbox rows' ids.
func outboxIDs(t testing.TB, s *Store) []string {
	t.Helper()
	rows, err := s.ListOutbox(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestAppTxCommitsTogether: an order and its outbox row written in one ExecTx commit together;
// a failure after both writes rolls both back; the publisher delivers only the committed order's
// row, and the rolled-back enqueue woke no subscriber.
func TestAppTxCommitsTogether(t *testing.T) { forEachBackend(t, testAppTxCommitsTogether) }

func testAppTxCommitsTogether(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	createOrders(t, s)
	wake, stop := s.SubscribeOutbox()
	defer stop()

	if err := placeOrder(s, "o-rolled-back", errBusinessRule); !errors.Is(err, errBusinessRule) {
		t.Fatalf("failing ExecTx = %v, want the callback's error", err)
	}
	select {
	case <-wake:
		t.Fatal("a rolled-back outbox enqueue woke the publisher's subscription")
	default:
	}
	if n := orderCount(t, s, "o-rolled-back"); n != 0 {
		t.Fatalf("the rolled-back order is stored (%d rows)", n)
	}
	if ids := outboxIDs(t, s); len(ids) != 0 {
		t.Fatalf("the rolled-back outbox row is stored: %q", ids)
	}

	if err := placeOrder(s, "o-committed", nil); err != nil {
		t.Fatalf("ExecTx: %v", err)
	}
	if n := orderCount(t, s, "o-committed"); n != 1 {
		t.Fatalf("committed order: %d rows, want 1", n)
	}
	if ids := outboxIDs(t, s); len(ids) != 1 || ids[0] != "o-committed" {
		t.Fatalf("outbox = %q, want only o-committed", ids)
	}

	p, err := NewPublisher(s, PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Step(context.Background()); err != nil || n != 1 {
		t.Fatalf("publisher step = %d, %v, want 1 delivered", n, err)
	}
	ms, err := s.ListMessages(context.Background(), appTxMailbox)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].ID != "o-committed" {
		t.Fatalf("delivered %v, want only o-committed", ms)
	}
}

// TestAppTxInEffects: a handler's Effects write the application's row through Tx; it commits with
// the acknowledgement, and Effects that fail after writing it roll back the row and the
// acknowledgement alike.
func TestAppTxInEffects(t *testing.T) { forEachBackend(t, testAppTxInEffects) }

func testAppTxInEffects(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	createOrders(t, s)
	for _, path := range []Path{PathLeased, PathLeaseless} {
		for _, fail := range []bool{false, true} {
			id := fmt.Sprintf("%v-%v", path, fail)
			mb := "mb-" + id
			mustEnqueue(t, s, NewMessage{Mailbox: mb, ID: id, MaxAttempts: 3})
			h := func(_ context.Context, m *Message) (Effects, error) {
				return func(ctx context.Context) error {
					q, err := Tx(ctx)
					if err != nil {
						return err
					}
					if _, err := q.ExecContext(ctx, insertOrder, m.ID, 1); err != nil {
						return err
					}
					if fail {
						return errBusinessRule
					}
					return nil
				}, nil
			}
			c := newConsumer(t, s, h, ConsumerOptions{Mailbox: mb, Path: path, Retry: Backoff{Base: time.Second}})
			out, err := c.Step(context.Background())
			if err != nil {
				t.Fatalf("%s: step: %v", id, err)
			}
			wantAction, wantRows, wantState := ActionAcked, 1, StateAcked
			if fail {
				wantAction, wantRows, wantState = ActionRetried, 0, StateReady
			}
			if out.Action != wantAction {
				t.Fatalf("%s: action %s, want %s", id, out.Action, wantAction)
			}
			if n := orderCount(t, s, id); n != wantRows {
				t.Fatalf("%s: %d application rows, want %d", id, n, wantRows)
			}
			if m := mustGet(t, s, id); m.State != wantState {
				t.Fatalf("%s: message %s, want %s", id, m.State, wantState)
			}
		}
	}
}

// TestAppTxBadInput: Tx outside a transaction, a handle kept past its transaction, a read-only
// transaction's writes and statements that would end the store's transaction are refused with
// their sentinel, and nothing of them is written.
func TestAppTxBadInput(t *testing.T) { forEachBackend(t, testAppTxBadInput) }

func testAppTxBadInput(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	createOrders(t, s)
	ctx := context.Background()

	if _, err := Tx(ctx); !errors.Is(err, ErrNoTransaction) {
		t.Fatalf("Tx outside ExecTx = %v, want ErrNoTransaction", err)
	}

	var kept Querier
	var keptCtx context.Context
	if err := s.ExecTx(ctx, false, func(ctx context.Context) error {
		var err error
		kept, err = Tx(ctx)
		keptCtx = ctx
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := Tx(keptCtx); !errors.Is(err, ErrNoTransaction) {
		t.Errorf("Tx on a context whose transaction ended = %v, want ErrNoTransaction", err)
	}
	if _, err := kept.ExecContext(ctx, insertOrder, "late", 1); !errors.Is(err, ErrNoTransaction) {
		t.Errorf("ExecContext after the transaction ended = %v, want ErrNoTransaction", err)
	}
	if _, err := kept.QueryContext(ctx, countOrders, "late"); !errors.Is(err, ErrNoTransaction) {
		t.Errorf("QueryContext after the transaction ended = %v, want ErrNoTransaction", err)
	}
	var n int
	if err := kept.QueryRowContext(ctx, countOrders, "late").Scan(&n); !errors.Is(err, ErrNoTransaction) {
		t.Errorf("QueryRowContext after the transaction ended = %v, want ErrNoTransaction", err)
	}
	if n := orderCount(t, s, "late"); n != 0 {
		t.Errorf("a write through an ended transaction's handle is stored")
	}

	err := s.ExecTx(ctx, true, func(ctx context.Context) error {
		q, err := Tx(ctx)
		if err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, insertOrder, "ro", 1); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("ExecContext in a read-only ExecTx = %v, want ErrInvalidArgument naming read-only", err)
		}
		// The refusal ran nothing, so the transaction goes on: it still reads.
		var n int
		return q.QueryRowContext(ctx, countOrders, "ro").Scan(&n)
	})
	if err != nil {
		t.Fatalf("read-only ExecTx after a refused ExecContext: %v", err)
	}
	// A write smuggled through a query: the database refuses it (on PostgreSQL that aborts the
	// transaction, so the callback hands the error on).
	err = s.ExecTx(ctx, true, func(ctx context.Context) error {
		q, err := Tx(ctx)
		if err != nil {
			return err
		}
		rows, err := q.QueryContext(ctx, insertOrder+" RETURNING id", "ro", 1)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		err = rows.Err()
		_ = rows.Close()
		return err
	})
	if err == nil {
		t.Errorf("INSERT ... RETURNING through QueryContext in a read-only ExecTx succeeded")
	}
	if n := orderCount(t, s, "ro"); n != 0 {
		t.Errorf("a write in a read-only transaction is stored")
	}

	for _, stmt := range []string{"COMMIT", "  rollback", "-- note\nSAVEPOINT x", "/* c */ BEGIN", "release x", "END"} {
		err := s.ExecTx(ctx, false, func(ctx context.Context) error {
			q, err := Tx(ctx)
			if err != nil {
				return err
			}
			if _, err := q.ExecContext(ctx, insertOrder, "ctl", 1); err != nil {
				return err
			}
			_, err = q.ExecContext(ctx, stmt)
			return err
		})
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("statement %q through the handle = %v, want ErrInvalidArgument", stmt, err)
		}
		if n := orderCount(t, s, "ctl"); n != 0 {
			t.Errorf("after %q: the transaction was committed by the application", stmt)
		}
	}
}

// The crash child's mode for TestAppTxCrashBeforeCommit.
const appTxCrashMode = "apptx"

// crashAppTx writes an order and its outbox row in one ExecTx and kills the process before the
// commit.
func crashAppTx(ctx context.Context, s *Store) int {
	err := s.ExecTx(ctx, false, func(ctx context.Context) error {
		q, err := Tx(ctx)
		if err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, insertOrder, "o-crashed", 1); err != nil {
			return err
		}
		if _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "o-crashed", Target: appTxMailbox, MaxAttempts: 3}); err != nil {
			return err
		}
		fmt.Println(handlerMarker) // both written, not committed
		p, _ := os.FindProcess(os.Getpid())
		_ = p.Kill()
		time.Sleep(time.Hour)
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "did not crash:", err)
		return 2
	}
	fmt.Fprintln(os.Stderr, "did not crash: the transaction committed")
	return 2
}

// TestAppTxCrashBeforeCommit: a process killed after writing an order and its outbox row, before
// the commit, leaves neither.
func TestAppTxCrashBeforeCommit(t *testing.T) { forEachBackend(t, testAppTxCrashBeforeCommit) }

func testAppTxCrashBeforeCommit(t *testing.T, b Backend) {
	target := testTarget(t, b)
	s := openAt(t, b, target, Options{})
	createOrders(t, s)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+appTxCrashMode, crashEnv+"_DB="+target, crashEnv+"_BACKEND="+string(b))
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Success() || !strings.Contains(string(out), handlerMarker) {
		t.Fatalf("child: err = %v, stdout %q, want death by signal after the writes; stderr:\n%s", err, out, stderr.String())
	}
	if n := orderCount(t, s, "o-crashed"); n != 0 {
		t.Fatalf("the crashed transaction's order survived")
	}
	if ids := outboxIDs(t, s); len(ids) != 0 {
		t.Fatalf("the crashed transaction's outbox row survived: %q", ids)
	}
}
