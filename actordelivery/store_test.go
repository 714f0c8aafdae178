package actordelivery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
)

func TestOpenPragmasAndSchema(t *testing.T) {
	for _, tc := range []struct {
		sync string
		want int
	}{{"", 2}, {"FULL", 2}, {"normal", 1}} {
		t.Run("sync="+tc.sync, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.db")
			s := openAt(t, BackendSQLite, path, Options{Synchronous: tc.sync})
			var mode string
			var syncv, version int
			if err := s.wdb.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if err := s.wdb.QueryRow(`PRAGMA synchronous`).Scan(&syncv); err != nil {
				t.Fatal(err)
			}
			if err := s.wdb.QueryRow(`SELECT MAX(version) FROM schema_version`).Scan(&version); err != nil {
				t.Fatal(err)
			}
			if mode != "wal" || syncv != tc.want || version != SchemaVersion() || version < 1 {
				t.Fatalf("journal_mode=%s synchronous=%d schema=%d, want wal %d %d", mode, syncv, version, tc.want, SchemaVersion())
			}
			if s.Path() != path {
				t.Fatalf("Path() = %q, want %q", s.Path(), path)
			}
		})
	}
}

func TestOpenReopensWithoutRemigrating(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	s := openAt(t, BackendSQLite, path, Options{Clock: NewManualClock(base)})
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "x"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openAt(t, BackendSQLite, path, Options{Clock: NewManualClock(base)})
	var rows int
	if err := s2.wdb.QueryRow(`SELECT COUNT(*) FROM schema_version`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != SchemaVersion() {
		t.Fatalf("schema_version has %d rows after reopen, want %d", rows, SchemaVersion())
	}
	if m := mustGet(t, s2, "x"); m.Mailbox != "m" {
		t.Fatalf("message after reopen: %+v", m)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) { forEachBackend(t, testOpenRefusesNewerSchema) }

func testOpenRefusesNewerSchema(t *testing.T, b Backend) {
	target := testTarget(t, b)
	s := openAt(t, b, target, Options{})
	if _, err := s.wdb.Exec(`INSERT INTO schema_version (version, applied_at) VALUES (999, 0)`); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	_, err := OpenBackend(b, target, Options{})
	want := fmt.Sprintf("database schema version 999 is newer than this build's %d", SchemaVersion())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open of a newer schema: err = %v, want it to say %q", err, want)
	}
}

// TestOpenFailedMigrationLeavesNothing: a migration that fails half-way (here, a table of the same
// name already exists with other columns) rolls back whole: no table of the migration and no
// schema version remain, and the application's own table is untouched.
func TestOpenFailedMigrationLeavesNothing(t *testing.T) {
	forEachBackend(t, testOpenFailedMigrationLeavesNothing)
}

func testOpenFailedMigrationLeavesNothing(t *testing.T, b Backend) {
	target := testTarget(t, b)
	const prefix = "app_"
	var raw *sql.DB
	var err error
	if b == BackendSQLite {
		raw, err = sql.Open("sqlite3", target)
	} else {
		raw, err = sql.Open("pgx", target)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`CREATE TABLE app_outbox (mine TEXT)`); err != nil {
		t.Fatal(err)
	}
	s, err := OpenBackend(b, target, Options{TablePrefix: prefix})
	if err == nil {
		_ = s.Close()
		t.Fatal("Open succeeded over a conflicting table")
	}
	for _, table := range []string{"app_messages", "app_dead_letters", "app_schema_version"} {
		if _, err := raw.Exec(`SELECT COUNT(*) FROM ` + table); err == nil {
			t.Errorf("after the failed migration, table %s exists", table)
		}
	}
	if _, err := raw.Exec(`INSERT INTO app_outbox (mine) VALUES ('x')`); err != nil {
		t.Errorf("the application's table was changed: %v", err)
	}
	// Without the conflict, the same prefix migrates.
	if _, err := raw.Exec(`DROP TABLE app_outbox`); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, b, target, Options{TablePrefix: prefix})
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "a"})
}

// TestTablePrefix: stores with different prefixes on one database are independent; a prefix that
// is not a plain identifier is refused before anything is touched.
func TestTablePrefix(t *testing.T) { forEachBackend(t, testTablePrefix) }

func testTablePrefix(t *testing.T, be Backend) {
	target := testTarget(t, be)
	ctx := context.Background()
	a := openAt(t, be, target, Options{TablePrefix: "a_"})
	b := openAt(t, be, target, Options{TablePrefix: "b_"})
	plain := openAt(t, be, target, Options{})
	mustEnqueue(t, a, NewMessage{Mailbox: "m", ID: "x"})
	if dup, err := b.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "x", MaxAttempts: 1}); err != nil || dup {
		t.Fatalf("Enqueue of x under another prefix = %v, %v; want a fresh row", dup, err)
	}
	for _, st := range []*Store{a, b} {
		if ms, err := st.ListMessages(ctx, ""); err != nil || len(ms) != 1 {
			t.Fatalf("ListMessages = %v, %v", ms, err)
		}
	}
	if ms, err := plain.ListMessages(ctx, ""); err != nil || len(ms) != 0 {
		t.Fatalf("unprefixed store sees %v, %v", ms, err)
	}
	for _, bad := range []string{"A_", "1x", "x-y", "x y", "x;drop table messages", `"x"`, "ü", strings.Repeat("p", 41)} {
		s, err := OpenBackend(be, target, Options{TablePrefix: bad})
		if s != nil {
			_ = s.Close()
		}
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "not a plain identifier") {
			t.Errorf("prefix %q: err = %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func TestOpenBadArguments(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, path string
		opts       Options
		want       string
	}{
		{"empty path", "", Options{}, "path"},
		{"memory", ":memory:", Options{}, "in-memory"},
		{"negative busy timeout", filepath.Join(dir, "a.db"), Options{BusyTimeout: -time.Second}, "BusyTimeout"},
		{"unknown synchronous", filepath.Join(dir, "b.db"), Options{Synchronous: "SOMETIMES"}, "Synchronous"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.path, tc.opts)
			if s != nil {
				_ = s.Close()
			}
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: err = %v, want ErrInvalidArgument naming %q", err, tc.want)
			}
		})
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird#name%.db")
	s := openAt(t, BackendSQLite, path, Options{})
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "x"})
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the given path: %v", err)
	}
	if got := peekID(t, s, "m"); got != "x" {
		t.Fatalf("peek = %q", got)
	}
}

func TestClosedStore(t *testing.T) { forEachBackend(t, testClosedStore) }

func testClosedStore(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	ctx := context.Background()
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "x"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	calls := map[string]func() error{
		"Enqueue":  func() error { _, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "y", MaxAttempts: 1}); return err },
		"Lease":    func() error { _, err := s.Lease(ctx, "m", time.Second); return err },
		"Peek":     func() error { _, err := s.Peek(ctx, "m"); return err },
		"Ack":      func() error { return s.Ack(ctx, "x", "t") },
		"Nack":     func() error { return s.Nack(ctx, "x", "t", 0) },
		"AckByID":  func() error { return s.AckByID(ctx, "x") },
		"NackByID": func() error { return s.NackByID(ctx, "x", 0) },
		"Extend":   func() error { return s.ExtendLease(ctx, "x", "t", time.Second) },
		"Expire":   func() error { _, err := s.ExpireLeases(ctx); return err },
		"DeadLetter": func() error {
			return s.DeadLetter(ctx, "x", "r")
		},
		"GetMessage":      func() error { _, err := s.GetMessage(ctx, "x"); return err },
		"ListMessages":    func() error { _, err := s.ListMessages(ctx, ""); return err },
		"ListDeadLetters": func() error { _, err := s.ListDeadLetters(ctx); return err },
		"OutboxEnqueue": func() error {
			_, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "o", Target: "m", MaxAttempts: 1})
			return err
		},
		"OutboxClaim":    func() error { _, err := s.OutboxClaim(ctx, 1, time.Second); return err },
		"OutboxComplete": func() error { return s.OutboxComplete(ctx, "o", "t") },
		"OutboxFail":     func() error { return s.OutboxFail(ctx, "o", "t", 0) },
		"ListOutbox":     func() error { _, err := s.ListOutbox(ctx); return err },
		"SaveCheckpoint": func() error { _, err := s.SaveCheckpoint(ctx, "a", nil, 0); return err },
		"LoadCheckpoint": func() error { _, _, err := s.LoadCheckpoint(ctx, "a"); return err },
		"MarkProcessed":  func() error { _, err := s.MarkProcessed(ctx, "c", "x", time.Second); return err },
		"PurgeProcessed": func() error { _, err := s.PurgeProcessed(ctx); return err },
		"ExecTx":         func() error { return s.ExecTx(ctx, false, func(context.Context) error { return nil }) },
		"ExecTxReadOnly": func() error { return s.ExecTx(ctx, true, func(context.Context) error { return nil }) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) { wantErr(t, call(), ErrClosed) })
	}
}

// TestBusy holds the writer lock from a second store on the same file: writes of the first fail
// with ErrBusy (wrapping the driver's error) after its busy timeout, while its reads go on.
func TestBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	clk := NewManualClock(base)
	a := openAt(t, BackendSQLite, path, Options{Clock: clk, BusyTimeout: 30 * time.Millisecond})
	b := openAt(t, BackendSQLite, path, Options{Clock: clk})
	mustEnqueue(t, a, NewMessage{Mailbox: "m", ID: "x"})
	ctx := context.Background()

	hold, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- b.ExecTx(ctx, false, func(ctx context.Context) error {
			if _, err := b.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "from-b", MaxAttempts: 1}); err != nil {
				return err
			}
			close(hold)
			<-release
			return nil
		})
	}()
	<-hold
	_, err := a.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "y", MaxAttempts: 1})
	wantErr(t, err, ErrBusy)
	var se sqlite3.Error
	if !errors.As(err, &se) {
		t.Fatalf("ErrBusy does not wrap the driver error: %v", err)
	}
	wantErr(t, a.AckByID(ctx, "x"), ErrBusy)
	if got := mustGet(t, a, "x"); got.State != StateReady {
		t.Fatalf("read while another store writes: %+v", got)
	}
	if p, err := a.Peek(ctx, "m"); err != nil || p == nil || p.ID != "x" {
		t.Fatalf("Peek while another store holds the writer lock = %v, %v", p, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := a.GetMessage(ctx, "y"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the busy enqueue wrote a row: %v", err)
	}
}

func TestExecTx(t *testing.T) { forEachBackend(t, testExecTx) }

func testExecTx(t *testing.T, b Backend) {
	ctx := context.Background()
	boom := errors.New("boom")

	t.Run("commit", func(t *testing.T) {
		s, _ := testStore(t, b)
		before := s.Stats().Commits
		err := s.ExecTx(ctx, false, func(ctx context.Context) error {
			if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "a", MaxAttempts: 1}); err != nil {
				return err
			}
			_, err := s.SaveCheckpoint(ctx, "actor", []byte("s"), 0)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Stats().Commits - before; got != 1 {
			t.Fatalf("commits = %d, want 1 for one ExecTx", got)
		}
		mustGet(t, s, "a")
	})

	t.Run("fn error rolls back and is returned unchanged", func(t *testing.T) {
		s, _ := testStore(t, b)
		err := s.ExecTx(ctx, false, func(ctx context.Context) error {
			if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "a", MaxAttempts: 1}); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("err = %v, want boom itself", err)
		}
		_, err = s.GetMessage(ctx, "a")
		wantErr(t, err, ErrNotFound)
	})

	t.Run("nested joins the outer transaction", func(t *testing.T) {
		s, _ := testStore(t, b)
		err := s.ExecTx(ctx, false, func(ctx context.Context) error {
			if err := s.ExecTx(ctx, false, func(ctx context.Context) error {
				_, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "inner", MaxAttempts: 1})
				return err
			}); err != nil {
				return err
			}
			// The inner write is visible inside the outer transaction...
			if _, err := s.GetMessage(ctx, "inner"); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("err = %v", err)
		}
		// ...and rolled back with it.
		_, err = s.GetMessage(ctx, "inner")
		wantErr(t, err, ErrNotFound)
	})

	t.Run("panic rolls back", func(t *testing.T) {
		s, _ := testStore(t, b)
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("panic was swallowed")
				}
			}()
			_ = s.ExecTx(ctx, false, func(ctx context.Context) error {
				if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "a", MaxAttempts: 1}); err != nil {
					return err
				}
				panic("handler bug")
			})
		}()
		_, err := s.GetMessage(ctx, "a")
		wantErr(t, err, ErrNotFound)
		mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "b"}) // the writer connection is usable again
	})

	t.Run("commit error is returned", func(t *testing.T) {
		s, _ := testStore(t, b)
		cctx, cancel := context.WithCancel(ctx)
		err := s.ExecTx(cctx, false, func(ctx context.Context) error {
			if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "a", MaxAttempts: 1}); err != nil {
				return err
			}
			cancel() // database/sql rolls the transaction back; the commit must fail loudly
			time.Sleep(10 * time.Millisecond)
			return nil
		})
		if err == nil {
			t.Fatal("ExecTx returned nil though its commit could not happen")
		}
		if !strings.HasPrefix(err.Error(), "actordelivery: commit") {
			t.Fatalf("commit error not wrapped by the package: %v", err)
		}
		_, gerr := s.GetMessage(ctx, "a")
		wantErr(t, gerr, ErrNotFound)
		if s.Stats().Rollbacks == 0 {
			t.Fatal("failed commit not counted as a rollback")
		}
	})

	t.Run("read-only refuses writes", func(t *testing.T) {
		s, _ := testStore(t, b)
		err := s.ExecTx(ctx, true, func(ctx context.Context) error {
			_, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "a", MaxAttempts: 1})
			return err
		})
		wantErr(t, err, ErrInvalidArgument)
		if !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("err = %v", err)
		}
		err = s.ExecTx(ctx, true, func(ctx context.Context) error {
			return s.ExecTx(ctx, false, func(context.Context) error { return nil })
		})
		wantErr(t, err, ErrInvalidArgument)
		wantErr(t, s.ExecTx(ctx, false, nil), ErrInvalidArgument)
	})

	t.Run("read-only does not take the writer lock", func(t *testing.T) {
		s, _ := testStore(t, b)
		mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "a"})
		inWrite, release := make(chan struct{}), make(chan struct{})
		done := make(chan error)
		go func() {
			done <- s.ExecTx(ctx, false, func(ctx context.Context) error {
				if err := s.AckByID(ctx, "a"); err != nil {
					return err
				}
				close(inWrite)
				<-release
				return nil
			})
		}()
		<-inWrite
		// While the write transaction holds the only writer connection and SQLite's writer lock,
		// a read-only transaction and a Peek complete, seeing the last committed state.
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		err := s.ExecTx(tctx, true, func(ctx context.Context) error {
			m, err := s.GetMessage(ctx, "a")
			if err != nil {
				return err
			}
			if m.State != StateReady {
				t.Errorf("read-only tx saw uncommitted state %q", m.State)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("read-only tx during a write tx: %v", err)
		}
		if p, err := s.Peek(tctx, "m"); err != nil || p == nil {
			t.Fatalf("Peek during a write tx: %v, %v", p, err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})

	t.Run("another store's transaction is not joined", func(t *testing.T) {
		s1, _ := testStore(t, b)
		s2, _ := testStore(t, b)
		err := s1.ExecTx(ctx, false, func(ctx context.Context) error {
			_, err := s2.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "a", MaxAttempts: 1})
			if err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatal(err)
		}
		mustGet(t, s2, "a") // committed on its own
	})
}

func TestNotify(t *testing.T) { forEachBackend(t, testNotify) }

func testNotify(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	ctx := context.Background()
	ch, cancel := s.Subscribe("m")
	defer cancel()
	other, cancelOther := s.Subscribe("other")
	defer cancelOther()

	// Inside a transaction the signal waits for the commit, and a rollback sends none.
	_ = s.ExecTx(ctx, false, func(ctx context.Context) error {
		_, _ = s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "rolled-back", MaxAttempts: 1})
		return errors.New("no")
	})
	err := s.ExecTx(ctx, false, func(ctx context.Context) error {
		_, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "a", MaxAttempts: 1})
		if err != nil {
			return err
		}
		select {
		case <-ch:
			t.Error("signal before commit")
		default:
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("no signal after the commit")
	}
	// A duplicate adds nothing and signals nothing.
	if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "a", MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("signal for a duplicate")
	case <-other:
		t.Fatal("signal for another mailbox")
	default:
	}
	cancel()
	cancel()                                        // idempotent
	s.notify.fire(topic{mailbox: "m"}, wakeCause{}) // a signal after the subscription ended goes nowhere
}

// TestReadOnlyPoolIsQueryOnly guards the reader pool's configuration: a write through it fails.
func TestReadOnlyPoolIsQueryOnly(t *testing.T) {
	s := openAt(t, BackendSQLite, filepath.Join(t.TempDir(), "a.db"), Options{}) // SQLite's reader pool only
	_, err := s.rdb.Exec(`DELETE FROM messages`)
	if err == nil {
		t.Fatal("reader pool accepted a write")
	}
	var tx *sql.Tx
	tx, err = s.rdb.Begin()
	if err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback()
}

func TestManualClock(t *testing.T) { forEachBackend(t, testManualClock) }

func testManualClock(t *testing.T, b Backend) {
	var zero ManualClock
	if !zero.Now().IsZero() {
		t.Fatal("zero ManualClock does not read the zero time")
	}
	c := NewManualClock(base)
	c.Advance(1500 * time.Millisecond)
	if got := c.Now(); !got.Equal(base.Add(1500 * time.Millisecond)) {
		t.Fatalf("after Advance: %v", got)
	}
	c.Set(base)
	if !c.Now().Equal(base) {
		t.Fatal("Set")
	}
	// The store sees exactly the clock's time, at millisecond resolution.
	s := openAt(t, b, testTarget(t, b), Options{Clock: c})
	c.Advance(1234 * time.Millisecond)
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "a", Delay: 2 * time.Second})
	m := mustGet(t, s, "a")
	if !m.CreatedAt.Equal(base.Add(1234*time.Millisecond)) || !m.AvailableAt.Equal(base.Add(3234*time.Millisecond)) {
		t.Fatalf("stored times %v %v", m.CreatedAt, m.AvailableAt)
	}
}

// TestOpenUpgradesOutboxToDeadLetters: a SQLite database at schema version 1 (before outbox dead
// letters) opens with its outbox rows intact, claims included, each with the default
// max_delivery_attempts, and the rebuilt table accepts dead-lettered rows.
func TestOpenUpgradesOutboxToDeadLetters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := migrationFS.ReadFile("migrations/sqlite/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		strings.ReplaceAll(qSchemaVersionTable, "{p}", ""),
		strings.ReplaceAll(string(v1), "{p}", ""),
		`INSERT INTO schema_version (version, applied_at) VALUES (1, 0)`,
		`INSERT INTO outbox (id, target, key, priority, max_attempts, payload, state, available_at, delivery_attempts,
			claim_token, claim_until, created_at) VALUES ('old', 't', '', 0, 2, NULL, 'pending', 0, 3, 'tok', 99, 0)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("setting up a version 1 database: %v", err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, BackendSQLite, path, Options{Clock: NewManualClock(base)})
	r := outboxState(t, s, "old")
	if r.MaxDeliveryAttempts != DefaultMaxDeliveryAttempts || r.DeliveryAttempts != 3 || r.ClaimToken != "tok" || r.State != StatePending {
		t.Fatalf("upgraded row %+v", r)
	}
	if err := s.OutboxDeadLetter(ctx, "old", "tok", "gave up"); err != nil {
		t.Fatal(err)
	}
	if r := outboxState(t, s, "old"); r.State != StateDeadLetter || r.DeadReason != "gave up" {
		t.Fatalf("dead-lettered upgraded row %+v", r)
	}
	mustOutbox(t, s, "new")
	if rows, _ := s.ListOutbox(ctx); len(rows) != 2 || rows[1].Seq <= rows[0].Seq {
		t.Fatalf("a row enqueued after the upgrade: %+v", rows)
	}
}

// TestOpenUpgradesToReadyIndexes: a SQLite database at schema version 4 (messages_next and
// messages_key over every row, messages_leases and messages_acked) opens at version 5 with the
// ready-only indexes and messages_timers in their place, and its ready, leased and acked rows keep
// working through them: the expired lease is swept, the acked row purged, the ready rows leased in
// delivery order, keyed ones behind their key's head.
func TestOpenUpgradesToReadyIndexes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v4.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{strings.ReplaceAll(qSchemaVersionTable, "{p}", "")}
	for v, name := range []string{"0001_init.sql", "0002_outbox_dead_letters.sql", "0003_retention.sql", "0004_redrive.sql"} {
		body, err := migrationFS.ReadFile("migrations/sqlite/" + name)
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, strings.ReplaceAll(string(body), "{p}", ""),
			fmt.Sprintf(`INSERT INTO schema_version (version, applied_at) VALUES (%d, 0)`, v+1))
	}
	const cols = `(id, mailbox, key, priority, max_attempts, attempts, available_at, token, lease_until, state, created_at, acked_at)`
	stmts = append(stmts,
		`INSERT INTO messages `+cols+` VALUES ('acked', 'm', '', 0, 3, 1, 0, NULL, NULL, 'acked', 0, 0)`,
		`INSERT INTO messages `+cols+` VALUES ('leased', 'm', 'k', 0, 3, 1, 0, 'tok', 1, 'ready', 0, NULL)`,
		`INSERT INTO messages `+cols+` VALUES ('keyed', 'm', 'k', 0, 3, 0, 0, NULL, NULL, 'ready', 0, NULL)`,
		`INSERT INTO messages `+cols+` VALUES ('ready', 'm', '', 0, 3, 0, 0, NULL, NULL, 'ready', 0, NULL)`)
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("setting up a version 4 database: %v", err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, BackendSQLite, path, Options{Clock: NewManualClock(base)})
	var indexes []string
	err = s.read(ctx, "indexes", func(q querier, _ int64) error {
		rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_master
WHERE type = 'index' AND tbl_name = 'messages' AND sql IS NOT NULL ORDER BY name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return err
			}
			indexes = append(indexes, name)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(indexes, " "), "messages_key messages_next messages_timers"; got != want {
		t.Fatalf("indexes after the upgrade: %s, want %s", got, want)
	}
	if n, err := s.ExpireLeases(ctx); err != nil || n != 1 {
		t.Fatalf("ExpireLeases = %d, %v; want the upgraded lease cleared", n, err)
	}
	if res, err := s.Purge(ctx, 0, 0, 10); err != nil || res.Acked != 1 {
		t.Fatalf("Purge = %+v, %v; want the upgraded acked row removed", res, err)
	}
	if d, err := s.QueueDepth(ctx, "m"); err != nil || d != 3 {
		t.Fatalf("QueueDepth = %d, %v; want 3", d, err)
	}
	for _, want := range []string{"leased", "ready"} { // keyed waits behind leased, its key's head
		if m := mustLease(t, s, "m", time.Minute); m.ID != want {
			t.Fatalf("leased %q, want %q", m.ID, want)
		}
	}
	if m, err := s.Lease(ctx, "m", time.Minute); err != nil || m != nil {
		t.Fatalf("Lease behind a leased key head = %v, %v; want nothing", m, err)
	}
}

// TestExecTxCancelledBeforeCommit: a context cancelled after fn's writes and before the commit
// rolls the transaction back, and ExecTx says so with the context's error, on both backends, on a
// store that records (whose commit first advances the counter) and on one that does not.
func TestExecTxCancelledBeforeCommit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		for _, recording := range []bool{true, false} {
			t.Run(fmt.Sprintf("recording=%v", recording), func(t *testing.T) {
				log := &eventLog{}
				opts := Options{Clock: NewManualClock(base)}
				if recording {
					opts.Recorder = log
				}
				s := openAt(t, b, testTarget(t, b), opts)
				bg := context.Background()
				for i := range 10 {
					ctx, cancel := context.WithCancel(bg)
					err := s.ExecTx(ctx, false, func(ctx context.Context) error {
						if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "a", ID: fmt.Sprintf("m%d", i), MaxAttempts: 1}); err != nil {
							return err
						}
						cancel()
						return nil
					})
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("round %d: ExecTx whose context was cancelled before the commit: %v, want context.Canceled", i, err)
					}
				}
				if evs := log.sorted(); len(evs) != 0 {
					t.Fatalf("recorded %d events of rolled-back transactions: %+v", len(evs), evs)
				}
				if m, err := s.Peek(bg, "a"); err != nil || m != nil {
					t.Fatalf("peek after the cancelled transactions: %+v %v, want nothing", m, err)
				}
			})
		}
	})
}

// TestDBErrClosed: only a closed store, or a closed pool under it, makes a driver error
// ErrClosed. A connection that is done on an open store (a context that ended mid-transaction
// leaves one) must not stop Run or RunWorkers for good.
func TestDBErrClosed(t *testing.T) {
	s, _ := testStore(t, BackendSQLite)
	for _, tc := range []struct {
		name   string
		err    error
		closed bool
	}{
		{"connection done", sql.ErrConnDone, false},
		{"pool closed", errors.New("sql: database is closed"), true},
		{"other", errors.New("disk I/O error"), false},
	} {
		if got := errors.Is(s.dbErr("op", tc.err), ErrClosed); got != tc.closed {
			t.Errorf("%s on an open store: ErrClosed %v, want %v", tc.name, got, tc.closed)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.dbErr("op", sql.ErrConnDone); !errors.Is(err, ErrClosed) {
		t.Errorf("a done connection on a closed store: %v, want ErrClosed", err)
	}
}
