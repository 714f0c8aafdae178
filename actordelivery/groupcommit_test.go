package actordelivery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// openGroup opens a SQLite store at path with group commit of size n (synchronous=FULL).
func openGroup(t testing.TB, path string, n int, rec Recorder) *Store {
	t.Helper()
	s, err := Open(path, Options{GroupCommit: n, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestGroupCommitDurable: many goroutines write at once (store calls of their own, ExecTx with
// the application's rows, a leased consumer's handles) on a store with GroupCommit 8. Every write
// acknowledged is there after Close and a reopen without group commit, and the store made fewer
// COMMITs than it committed transactions, so groups formed.
func TestGroupCommitDurable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "group.db")
	s := openGroup(t, path, 8, nil)
	if err := s.ExecTx(ctx, false, func(ctx context.Context) error {
		q, err := Tx(ctx)
		if err != nil {
			return err
		}
		_, err = q.ExecContext(ctx, `CREATE TABLE app_rows (id TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 25
	before := s.Stats()
	var mu sync.Mutex
	enqueued, rows := map[string]bool{}, map[string]bool{}
	var handled []string
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for w := range writers {
		wg.Add(2)
		go func() { // enqueues of their own, and ExecTx with an application row beside an enqueue
			defer wg.Done()
			for k := range each {
				id := fmt.Sprintf("w%d-%d", w, k)
				if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: id, MaxAttempts: 3}); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				enqueued[id] = true
				mu.Unlock()
				row := "row-" + id
				err := s.ExecTx(ctx, false, func(ctx context.Context) error {
					q, err := Tx(ctx)
					if err != nil {
						return err
					}
					if _, err := q.ExecContext(ctx, `INSERT INTO app_rows (id) VALUES (?)`, row); err != nil {
						return err
					}
					_, err = s.Enqueue(ctx, NewMessage{Mailbox: "other", ID: "x-" + id, MaxAttempts: 3})
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				rows[row], enqueued["x-"+id] = true, true
				mu.Unlock()
			}
		}()
		go func() { // a leased consumer
			defer wg.Done()
			var last string // the message the step's handler got
			c, err := NewConsumer(s, func(_ context.Context, m *Message) (Effects, error) { last = m.ID; return nil, nil },
				ConsumerOptions{Mailbox: "mb", Path: PathLeased})
			if err != nil {
				errs <- err
				return
			}
			// The writers enqueue writers*each messages into mb: each consumer acknowledges its
			// share, stepping idle while the enqueues lag.
			for acked := 0; acked < each; {
				out, err := c.Step(ctx)
				if err != nil {
					errs <- err
					return
				}
				if out.Action == ActionAcked {
					acked++
					mu.Lock()
					handled = append(handled, last)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	after := s.Stats()
	commits, txs := after.Commits-before.Commits, after.Transactions-before.Transactions
	t.Logf("%d transactions in %d commits, %d handled", txs, commits, len(handled))
	if len(handled) != writers*each {
		t.Fatalf("%d handles acknowledged, want %d", len(handled), writers*each)
	}
	if txs < 3*writers*each || commits >= txs {
		t.Fatalf("%d transactions in %d commits: want at least %d transactions, in fewer commits", txs, commits, 3*writers*each)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for id := range enqueued {
		if _, err := r.GetMessage(ctx, id); err != nil {
			t.Errorf("acknowledged enqueue %s: %v", id, err)
		}
	}
	for _, id := range handled {
		if m, err := r.GetMessage(ctx, id); err != nil || m.State != StateAcked {
			t.Errorf("acknowledged handle of %s: %+v, %v", id, m, err)
		}
	}
	for row := range rows {
		var n int
		if err := r.rdb.QueryRowContext(ctx, `SELECT count(*) FROM app_rows WHERE id = ?`, row).Scan(&n); err != nil || n != 1 {
			t.Errorf("acknowledged application row %s: count %d, %v", row, n, err)
		}
	}
}

// queued waits until n callers wait for the turn of s's group commit.
func queued(t *testing.T, s *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.group.mu.Lock()
		got := len(s.group.queue)
		s.group.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers wait for the turn, want %d", got, n)
		}
	}
}

// memberResult is what one member's ExecTx ended with: its error, or the value it panicked with.
type memberResult struct {
	err      error
	panicked any
}

// runGroup makes the members fns[0], fns[1], ... one group, in that order: fns[0] holds the turn
// until every other member waits for it, queued in order. Member i's ExecTx runs with ctxs[i]
// (the background when ctxs is shorter). It returns each ExecTx's result.
func runGroup(t *testing.T, s *Store, fns []func(ctx context.Context) error, ctxs ...context.Context) []memberResult {
	t.Helper()
	res := make([]memberResult, len(fns))
	hold := make(chan struct{})
	var wg sync.WaitGroup
	run := func(i int, fn func(ctx context.Context) error) {
		defer wg.Done()
		defer func() { res[i].panicked = recover() }()
		ctx := context.Background()
		if i < len(ctxs) && ctxs[i] != nil {
			ctx = ctxs[i]
		}
		res[i].err = s.ExecTx(ctx, false, fn)
	}
	started := make(chan struct{})
	wg.Add(1)
	go run(0, func(ctx context.Context) error {
		close(started)
		<-hold
		return fns[0](ctx)
	})
	<-started
	for i := 1; i < len(fns); i++ {
		wg.Add(1)
		go run(i, fns[i])
		queued(t, s, i)
	}
	close(hold)
	wg.Wait()
	return res
}

var errMember = errors.New("member fails")

// TestGroupCommitMemberFails: a member that fails inside a group (its fn's error, a panic, a
// context done when fn returns) rolls back alone: its writes are absent, it reports what it
// always reported, and the members before and after it commit in the group's one COMMIT.
func TestGroupCommitMemberFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fail ends the failing member's callback; cancel cancels the context its ExecTx got.
		fail func(cancel context.CancelCauseFunc) error
		// check says whether the failing member's result is the one its failure gives.
		check func(r memberResult) bool
	}{
		{"error", func(context.CancelCauseFunc) error { return errMember },
			func(r memberResult) bool { return r.err == errMember && r.panicked == nil }},
		{"panic", func(context.CancelCauseFunc) error { panic(errMember) },
			func(r memberResult) bool { return r.panicked == errMember }},
		{"context done", func(cancel context.CancelCauseFunc) error { cancel(errMember); return nil },
			func(r memberResult) bool {
				return errors.Is(r.err, context.Canceled) && errors.Is(r.err, errMember) && r.panicked == nil
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openGroup(t, filepath.Join(t.TempDir(), "group.db"), 8, nil)
			enqueue := func(id string) func(ctx context.Context) error {
				return func(ctx context.Context) error {
					_, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: id, MaxAttempts: 3})
					return err
				}
			}
			failCtx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			failing := func(ctx context.Context) error {
				if err := enqueue("b")(ctx); err != nil {
					return err
				}
				return tc.fail(cancel)
			}
			before := s.Stats()
			res := runGroup(t, s, []func(context.Context) error{enqueue("a"), failing, enqueue("c")}, nil, failCtx)
			if !tc.check(res[1]) {
				t.Errorf("failing member: error %v, panic %v", res[1].err, res[1].panicked)
			}
			for _, i := range []int{0, 2} {
				if res[i].err != nil || res[i].panicked != nil {
					t.Errorf("member %d: error %v, panic %v", i, res[i].err, res[i].panicked)
				}
			}
			for id, want := range map[string]bool{"a": true, "b": false, "c": true} {
				_, err := s.GetMessage(ctx, id)
				if got := err == nil; got != want {
					t.Errorf("message %s present %v, want %v (%v)", id, got, want, err)
				}
			}
			st := s.Stats()
			if d := (Stats{Commits: st.Commits - before.Commits, Transactions: st.Transactions - before.Transactions,
				Rollbacks: st.Rollbacks - before.Rollbacks}); d != (Stats{Commits: 1, Transactions: 2, Rollbacks: 1}) {
				t.Errorf("stats moved by %+v, want one commit of two transactions and one rollback", d)
			}
		})
	}
}

// TestGroupCommitCommitFails: when the group's COMMIT fails, every member that succeeded returns
// that failure, wrapped as a commit error, and none of their writes is there. The COMMIT fails on
// a deferred foreign key that one member leaves dangling: SQLite checks it at COMMIT only.
func TestGroupCommitCommitFails(t *testing.T) {
	ctx := context.Background()
	s := openGroup(t, filepath.Join(t.TempDir(), "group.db"), 8, nil)
	// foreign_keys is a setting of the connection, outside any transaction: the writer's one.
	if _, err := s.wdb.ExecContext(ctx, `PRAGMA foreign_keys = ON`); err != nil {
		t.Fatal(err)
	}
	if err := s.ExecTx(ctx, false, func(ctx context.Context) error {
		q, err := Tx(ctx)
		if err != nil {
			return err
		}
		for _, ddl := range []string{`CREATE TABLE parent (id INTEGER PRIMARY KEY)`,
			`CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`} {
			if _, err := q.ExecContext(ctx, ddl); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	enqueue := func(id string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: id, MaxAttempts: 3})
			return err
		}
	}
	dangling := func(ctx context.Context) error {
		if err := enqueue("b")(ctx); err != nil {
			return err
		}
		q, err := Tx(ctx)
		if err != nil {
			return err
		}
		_, err = q.ExecContext(ctx, `INSERT INTO child (id, parent) VALUES (1, 42)`)
		return err
	}
	before := s.Stats()
	res := runGroup(t, s, []func(context.Context) error{enqueue("a"), dangling, enqueue("c")})
	for i, r := range res {
		if r.panicked != nil || r.err == nil || !strings.Contains(r.err.Error(), "commit") || !strings.Contains(r.err.Error(), "FOREIGN KEY") {
			t.Errorf("member %d: error %v, panic %v; want the COMMIT's foreign key failure", i, r.err, r.panicked)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := s.GetMessage(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("message %s of the failed group: %v, want ErrNotFound", id, err)
		}
	}
	st := s.Stats()
	if st.Commits != before.Commits || st.Rollbacks-before.Rollbacks != 3 {
		t.Errorf("stats %+v after %+v: want no commit and three rollbacks", st, before)
	}
	// The writer is usable again.
	if err := enqueue("d")(ctx); err != nil {
		t.Fatalf("enqueue after the failed group: %v", err)
	}
}

// TestGroupCommitOptions: GroupCommit is refused when negative, and above 1 on PostgreSQL, at
// Open and before any connection (so no server is needed here).
func TestGroupCommitOptions(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		open func(Options) (*Store, error)
		n    int
		ok   bool
	}{
		{"sqlite/8", func(o Options) (*Store, error) { return Open(filepath.Join(dir, "a.db"), o) }, 8, true},
		{"sqlite/1", func(o Options) (*Store, error) { return Open(filepath.Join(dir, "b.db"), o) }, 1, true},
		{"sqlite/-1", func(o Options) (*Store, error) { return Open(filepath.Join(dir, "c.db"), o) }, -1, false},
		{"postgres/8", func(o Options) (*Store, error) { return OpenPostgres("postgres://nobody@127.0.0.1:1/none", o) }, 8, false},
		{"postgres-backend/2", func(o Options) (*Store, error) {
			return OpenBackend(BackendPostgres, "postgres://nobody@127.0.0.1:1/none", o)
		}, 2, false},
		{"postgres-db/8", func(o Options) (*Store, error) {
			db, err := sql.Open("pgx", "postgres://nobody@127.0.0.1:1/none")
			if err != nil {
				return nil, err
			}
			defer db.Close()
			return OpenPostgresDB(db, o)
		}, 8, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.open(Options{GroupCommit: tc.n})
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				_ = s.Close()
				return
			}
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "GroupCommit") {
				t.Fatalf("error %v, want ErrInvalidArgument naming GroupCommit", err)
			}
		})
	}
}

// TestGroupCommitWaiterGivesUp: a caller whose context ends while it waits for the turn returns
// the context's error without running its callback, and the group it would have joined still
// commits.
func TestGroupCommitWaiterGivesUp(t *testing.T) {
	ctx := context.Background()
	s := openGroup(t, filepath.Join(t.TempDir(), "group.db"), 8, nil)
	hold, started := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.ExecTx(ctx, false, func(ctx context.Context) error {
			close(started)
			<-hold
			_, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: "a", MaxAttempts: 3})
			return err
		})
	}()
	<-started
	waitCtx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	ran := false
	go func() {
		gaveUp <- s.ExecTx(waitCtx, false, func(context.Context) error { ran = true; return nil })
	}()
	queued(t, s, 1)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("waiter: error %v, callback ran %v; want context.Canceled and no run", err, ran)
	}
	queued(t, s, 0)
	close(hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetMessage(ctx, "a"); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitRecording: on a recording store the members of one group draw their numbers in
// turn order, a member that rolls back draws none, and its read, which saw the member before it,
// is recorded at that member's number once the group committed. A group whose members all fail
// still records their reads: a lease-lost handle is such a read, and without it the model sees
// the worker fetch twice in a row (observe/workload's run with group commit found it so).
func TestGroupCommitRecording(t *testing.T) {
	log := &eventLog{}
	s := openGroup(t, filepath.Join(t.TempDir(), "group.db"), 8, log)
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "m0"})
	enqueue := func(id string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: id, MaxAttempts: 3})
			return err
		}
	}
	peekThenFail := func(ctx context.Context) error {
		if _, err := s.Peek(ctx, "mb"); err != nil {
			return err
		}
		if err := enqueue("b")(ctx); err != nil {
			return err
		}
		return errMember
	}
	res := runGroup(t, s, []func(context.Context) error{enqueue("a"), peekThenFail, enqueue("c"), enqueue("d")})
	if res[1].err != errMember {
		t.Fatalf("failing member: %v", res[1].err)
	}
	for _, i := range []int{0, 2, 3} {
		if res[i].err != nil {
			t.Fatalf("member %d: %v", i, res[i].err)
		}
	}
	// A group of failed members only commits nothing, and their reads, which saw committed
	// state only, are recorded.
	res = runGroup(t, s, []func(context.Context) error{peekThenFail, peekThenFail})
	if res[0].err != errMember || res[1].err != errMember {
		t.Fatalf("failing members: %v, %v", res[0].err, res[1].err)
	}
	var got []string
	log.mu.Lock()
	for _, ev := range log.events { // in the order the Recorder got them
		got = append(got, fmt.Sprintf("%s %s read=%v seq=%d", ev.Op, ev.Args.ID, ev.Read, ev.Seq))
	}
	log.mu.Unlock()
	want := []string{"enqueue m0 read=false seq=1", "enqueue a read=false seq=2", "peek  read=true seq=2",
		"enqueue c read=false seq=3", "enqueue d read=false seq=4", "peek  read=true seq=4", "peek  read=true seq=4"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
