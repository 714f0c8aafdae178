package actordelivery

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// base is the tests' time zero (the same instant as traces.Epoch).
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testStore opens a store on a fresh database of backend b with a manual clock at base.
func testStore(t testing.TB, b Backend) (*Store, *ManualClock) {
	t.Helper()
	clk := NewManualClock(base)
	s := openAt(t, b, testTarget(t, b), Options{Clock: clk})
	return s, clk
}

// openAt opens target (from testTarget) on backend b; the store is closed when t ends.
func openAt(t testing.TB, b Backend, target string, opts Options) *Store {
	t.Helper()
	s, err := OpenBackend(b, target, opts)
	if err != nil {
		t.Fatalf("Open %s: %v", b, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func mustEnqueue(t testing.TB, s *Store, m NewMessage) {
	t.Helper()
	if m.MaxAttempts == 0 {
		m.MaxAttempts = 3
	}
	dup, err := s.Enqueue(context.Background(), m)
	if err != nil {
		t.Fatalf("Enqueue(%q): %v", m.ID, err)
	}
	if dup {
		t.Fatalf("Enqueue(%q): unexpected duplicate", m.ID)
	}
}

func mustGet(t testing.TB, s *Store, id string) *Message {
	t.Helper()
	m, err := s.GetMessage(context.Background(), id)
	if err != nil {
		t.Fatalf("GetMessage(%q): %v", id, err)
	}
	return m
}

func mustLease(t testing.TB, s *Store, mailbox string, d time.Duration) *Message {
	t.Helper()
	m, err := s.Lease(context.Background(), mailbox, d)
	if err != nil {
		t.Fatalf("Lease(%q): %v", mailbox, err)
	}
	if m == nil {
		t.Fatalf("Lease(%q): nothing eligible", mailbox)
	}
	return m
}

// peekID returns the id Peek and a (rolled back) Lease would deliver, checking they agree; "" when
// none.
func peekID(t testing.TB, s *Store, mailbox string) string {
	t.Helper()
	ctx := context.Background()
	p, err := s.Peek(ctx, mailbox)
	if err != nil {
		t.Fatalf("Peek(%q): %v", mailbox, err)
	}
	var leased *Message
	errRollback := errors.New("rollback")
	err = s.ExecTx(ctx, false, func(ctx context.Context) error {
		var err error
		leased, err = s.Lease(ctx, mailbox, time.Second)
		if err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("Lease(%q) in a rolled-back tx: %v", mailbox, err)
	}
	pid, lid := "", ""
	if p != nil {
		pid = p.ID
	}
	if leased != nil {
		lid = leased.ID
	}
	if pid != lid {
		t.Fatalf("mailbox %q: Peek chose %q but Lease chose %q", mailbox, pid, lid)
	}
	return pid
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

// inBubble runs f in a synctest bubble on SQLite, where settle is synctest.Wait: it returns once
// every goroutine of the test is durably blocked, and the bubble's clock only moves when they all
// are, so waits are exact. On PostgreSQL, whose driver blocks on the network where no bubble can
// see, f runs on real time and settle sleeps briefly.
func inBubble(t *testing.T, b Backend, f func(t *testing.T, settle func())) {
	t.Helper()
	if b == BackendSQLite {
		synctest.Test(t, func(t *testing.T) { f(t, synctest.Wait) })
		return
	}
	f(t, func() { time.Sleep(50 * time.Millisecond) })
}

// bubbled reports whether a test on backend b runs in a synctest bubble (see inBubble).
func bubbled(b Backend) bool { return b == BackendSQLite }
