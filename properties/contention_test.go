package properties

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pconform/pconform/actordelivery"
)

// The contention check drives what no property sequence meets: every sequence runs one store from
// one goroutine, so no write ever waits for another. Here two writers meet on one row (PostgreSQL)
// or on one database file (SQLite), through the store's public API only, and the outcome is exact:
// the writers are ordered by barriers (a transaction held open until the other side is seen
// waiting or has failed), never by how long anything takes.

// contentionAttempts is how many times a single store call outside ExecTx runs its transaction on
// PostgreSQL before it returns ErrBusy (OpenPostgres: "retried up to three times").
const contentionAttempts = 4

// fixedClock is a Clock that never moves, so lease deadlines are exact values.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var contentionEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestContention checks the store's answer to write contention on both backends:
//
//   - sqlite: a second store on the same file, opened without a BusyTimeout (the default applies),
//     writes while the first holds the writer lock; it must wait for the lock and commit, never
//     fail with ErrBusy at once.
//   - postgres: a single store call that meets a row lock another transaction holds for longer
//     than the connection's lock_timeout runs its transaction exactly contentionAttempts times and
//     returns ErrBusy (a retry bound that is not kept, or a loop that never retries, shows in
//     Stats().Rollbacks); and a call that fails with a serialization failure once the lock holder
//     commits (its connection at REPEATABLE READ) is retried once and commits, so both writers
//     commit once.
//
// Rerun: go test ./properties/ -run 'TestContention' -v (PostgreSQL: PCONFORM_PG_DSN, or
// bash scripts/pg.sh go test ./properties/ -run TestContention -v).
func TestContention(t *testing.T) {
	t.Run("sqlite", testContentionSQLite)
	t.Run("postgres", testContentionPostgres)
}

// sqliteHold is how long the first SQLite store keeps the writer lock after the second store's
// write has started. It only decides how likely a store that does not wait is to be caught (its
// write fails with ErrBusy as soon as it reaches the lock); a correct store's write waits through
// it and commits, since it is well under the default busy timeout (5 s).
const sqliteHold = time.Second

func testContentionSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "contention.db")
	opts := actordelivery.Options{Clock: fixedClock{contentionEpoch}}
	first, err := actordelivery.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := actordelivery.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()

	// The first store holds the writer lock in an open transaction until release is closed.
	_, release, firstDone := holdOpen(t, first, func(ctx context.Context) (bool, error) {
		return first.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "c", ID: "m1", MaxAttempts: 1})
	})
	secondDone := make(chan error, 1)
	go func() {
		_, err := second.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "c", ID: "m2", MaxAttempts: 1})
		secondDone <- err
	}()
	var secondErr error
	returned := false
	select {
	case secondErr = <-secondDone:
		returned = true
	case <-time.After(sqliteHold):
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatalf("the first store's transaction: %v", err)
	}
	if !returned {
		secondErr = <-secondDone
	}
	if returned {
		t.Errorf("the second store's write returned while the first store held the writer lock (%v): it must wait for the lock (Options.BusyTimeout zero means the default busy timeout)", secondErr)
	}
	if secondErr != nil {
		t.Fatalf("the second store's write on a file the first store was writing: %v, want it to wait and commit", secondErr)
	}
	for _, id := range []string{"m1", "m2"} {
		if _, err := second.GetMessage(ctx, id); err != nil {
			t.Errorf("GetMessage(%s) after both writes: %v", id, err)
		}
	}
}

func testContentionPostgres(t *testing.T) {
	dsn := pgDSN(t)
	if dsn == "" {
		t.Skip("PCONFORM_PG_DSN is not set: skipping the PostgreSQL contention check (scripts/check.sh starts a server)")
	}
	ctx := context.Background()
	admin, schema, open := pgSchema(t, dsn, "contention")
	holder := open("holder", nil)
	// bounded gives up on a row lock after 100 ms, a PostgreSQL "lock not available" (ErrBusy).
	bounded := open("bounded", map[string]string{"lock_timeout": "100ms"})
	// serial runs its transactions at REPEATABLE READ: a row another transaction changed and
	// committed while this one waited for it is a serialization failure (ErrBusy).
	serial := open("serial", map[string]string{"default_transaction_isolation": "repeatable read"})

	if _, err := holder.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "c", ID: "m1", MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	m, err := holder.Lease(ctx, "c", time.Minute)
	if err != nil || m == nil {
		t.Fatalf("Lease: %v, %v", m, err)
	}
	token := m.Token

	// hold starts a transaction of the holder that extends m1's lease (taking the row's lock) and
	// keeps it open until release is closed; the returned channel carries its result.
	hold := func(leaseFor time.Duration) (release chan struct{}, done chan error) {
		t.Helper()
		held := make(chan struct{})
		release, done = make(chan struct{}), make(chan error, 1)
		go func() {
			done <- holder.ExecTx(ctx, false, func(ctx context.Context) error {
				if err := holder.ExtendLease(ctx, "m1", token, leaseFor); err != nil {
					return err
				}
				close(held)
				<-release
				return nil
			})
		}()
		select {
		case <-held:
		case err := <-done:
			t.Fatalf("the holder's transaction ended before it held the row: %v", err)
		}
		return release, done
	}

	// 1. The lock is held for the whole call: every attempt times out, the call gives up after
	// contentionAttempts. A watchdog cancels the call once it has rolled back more often than
	// that, so a loop that does not stop still ends (and is reported).
	release, done := hold(2 * time.Minute)
	before := bounded.Stats()
	callCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	var stop atomic.Bool
	watchdog := make(chan struct{})
	go func() {
		defer close(watchdog)
		for !stop.Load() {
			if bounded.Stats().Rollbacks-before.Rollbacks > contentionAttempts {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	err = bounded.ExtendLease(callCtx, "m1", token, 3*time.Minute)
	stop.Store(true)
	<-watchdog
	cancel()
	after := bounded.Stats()
	close(release)
	if herr := <-done; herr != nil {
		t.Fatalf("the holder's transaction: %v", herr)
	}
	if rb := after.Rollbacks - before.Rollbacks; rb != contentionAttempts || after.Commits != before.Commits {
		t.Errorf("a call that met a held row lock on every attempt ran %d transactions that rolled back and %d that committed, want %d and 0 (the retry bound)",
			rb, after.Commits-before.Commits, contentionAttempts)
	}
	if !errors.Is(err, actordelivery.ErrBusy) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call that met a held row lock on every attempt returned %v, want ErrBusy after %d attempts", err, contentionAttempts)
	}
	if got := leaseUntil(t, holder); !got.Equal(contentionEpoch.Add(2 * time.Minute)) {
		t.Errorf("after the holder's commit and the refused call, m1's lease runs until %v, want the holder's %v", got, contentionEpoch.Add(2*time.Minute))
	}

	// 2. The call waits on the lock (seen in pg_stat_activity), then the holder commits: the
	// waiting UPDATE fails with a serialization failure, and the retry commits. Both commit once.
	release, done = hold(4 * time.Minute)
	before = serial.Stats()
	callDone := make(chan error, 1)
	callCtx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	go func() { callDone <- serial.ExtendLease(callCtx, "m1", token, 5*time.Minute) }()
	waiting := false
	for deadline := time.Now().Add(time.Minute); !waiting && time.Now().Before(deadline); {
		var n int
		if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
			schema+"_serial").Scan(&n); err != nil {
			t.Fatalf("reading pg_stat_activity: %v", err)
		}
		select {
		case err := <-callDone:
			close(release)
			<-done
			t.Fatalf("the call returned (%v) while the holder held the row: it must wait for the lock", err)
		default:
		}
		if waiting = n > 0; !waiting {
			time.Sleep(5 * time.Millisecond)
		}
	}
	close(release)
	if herr := <-done; herr != nil {
		t.Fatalf("the holder's second transaction: %v", herr)
	}
	if !waiting {
		t.Fatal("the call never waited for the holder's row lock within a minute")
	}
	err = <-callDone
	after = serial.Stats()
	if err != nil {
		t.Errorf("a call whose first attempt failed with a serialization failure returned %v, want it retried and committed", err)
	}
	if rb, c := after.Rollbacks-before.Rollbacks, after.Commits-before.Commits; rb != 1 || c != 1 {
		t.Errorf("a call whose first attempt failed with a serialization failure rolled back %d and committed %d transactions, want 1 and 1", rb, c)
	}
	if got := leaseUntil(t, holder); !got.Equal(contentionEpoch.Add(5 * time.Minute)) {
		t.Errorf("after both commits m1's lease runs until %v, want the retried call's %v", got, contentionEpoch.Add(5*time.Minute))
	}
}

// leaseUntil reads m1's lease deadline.
func leaseUntil(t *testing.T, st *actordelivery.Store) time.Time {
	t.Helper()
	m, err := st.GetMessage(context.Background(), "m1")
	if err != nil {
		t.Fatalf("GetMessage(m1): %v", err)
	}
	return m.LeaseUntil
}

// pgSchema creates a schema of its own on the server dsn names (so that parallel test binaries on
// one server never meet), dropped when the test ends, and returns an administrative connection,
// the schema's name, and open: a store in the schema on a pool of its own whose connections carry
// the application name schema_name and the server settings params, opened with the options opts
// (none: a clock fixed at contentionEpoch).
func pgSchema(t *testing.T, dsn, prefix string) (admin *sql.DB, schema string, open func(name string, params map[string]string, opts ...actordelivery.Options) *actordelivery.Store) {
	t.Helper()
	ctx := context.Background()
	base, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("PCONFORM_PG_DSN: %v", err)
	}
	schema = prefix + "_" + strings.ToLower(rand.Text()[:16])
	admin = stdlib.OpenDB(*base)
	t.Cleanup(func() { _ = admin.Close() })
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	// Registered before the stores' cleanups, so it runs after they closed.
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	open = func(name string, params map[string]string, opts ...actordelivery.Options) *actordelivery.Store {
		t.Helper()
		cfg := base.Copy()
		cfg.RuntimeParams = map[string]string{}
		for k, v := range base.RuntimeParams {
			cfg.RuntimeParams[k] = v
		}
		cfg.RuntimeParams["search_path"] = schema
		cfg.RuntimeParams["application_name"] = schema + "_" + name
		for k, v := range params {
			cfg.RuntimeParams[k] = v
		}
		db := stdlib.OpenDB(*cfg)
		t.Cleanup(func() { _ = db.Close() })
		o := actordelivery.Options{Clock: fixedClock{contentionEpoch}}
		if len(opts) > 0 {
			o = opts[0]
		}
		st, err := actordelivery.OpenPostgresDB(db, o)
		if err != nil {
			t.Fatalf("open the %s store: %v", name, err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	return admin, schema, open
}
