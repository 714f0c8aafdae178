package actordelivery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL-only tests: each opens its database with BackendPostgres and skips without a server.

// TestPostgresBadDSN: an unreachable server or a malformed DSN is an error naming host and port,
// never the password. (How long it takes is not asserted: a wall-clock bound fails under load.)
func TestPostgresBadDSN(t *testing.T) {
	const secret = "s3cr3t-pw"
	for _, tc := range []struct {
		name, dsn string
		want      []string
		invalid   bool
	}{
		{"refused", "postgres://app:" + secret + "@127.0.0.1:1/db?sslmode=disable", []string{"127.0.0.1:1", "cannot reach"}, false},
		{"refused key=value", "host=127.0.0.1 port=1 user=app password=" + secret + " dbname=db sslmode=disable", []string{"127.0.0.1:1"}, false},
		{"malformed url", "postgres://app:" + secret + "@127.0.0.1:notaport/db", []string{"host 127.0.0.1", "port notaport", "malformed"}, true},
		{"malformed pairs", "host=db.example port=5432 password=" + secret + " sslmode=bogus", []string{"host db.example", "port 5432", "malformed"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenPostgres(tc.dsn, Options{ConnectTimeout: 2 * time.Second})
			if s != nil {
				_ = s.Close()
				t.Fatal("OpenPostgres succeeded")
			}
			msg := fmt.Sprint(err)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not name %q", msg, w)
				}
			}
			if strings.Contains(msg, secret) {
				t.Errorf("error %q shows the password", msg)
			}
			if errors.Is(err, ErrInvalidArgument) != tc.invalid {
				t.Errorf("errors.Is(err, ErrInvalidArgument) = %v, want %v", !tc.invalid, tc.invalid)
			}
		})
	}
}

// TestPostgresWakeAcrossStores: a commit in one store wakes the subscribers of another store on
// the same database and prefix (LISTEN/NOTIFY), and only of that prefix.
func TestPostgresWakeAcrossStores(t *testing.T) {
	target := testTarget(t, BackendPostgres)
	a := openAt(t, BackendPostgres, target, Options{})
	b := openAt(t, BackendPostgres, target, Options{})
	other := openAt(t, BackendPostgres, target, Options{TablePrefix: "other_"})
	mb, cancel := b.Subscribe("m")
	defer cancel()
	ob, cancel2 := b.SubscribeOutbox()
	defer cancel2()
	om, cancel3 := other.Subscribe("m")
	defer cancel3()
	mustEnqueue(t, a, NewMessage{Mailbox: "m", ID: "x"})
	if _, err := a.OutboxEnqueue(context.Background(), OutboxMessage{ID: "o", Target: "m", MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan struct{}{"mailbox": mb, "outbox": ob} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s wake-up from the other store within 5s", name)
		}
	}
	select {
	case <-om:
		t.Fatal("a store with another prefix was woken")
	case <-time.After(100 * time.Millisecond):
	}
}

// TestPostgresConcurrentLeases: many workers leasing from one mailbox at once (FOR UPDATE SKIP
// LOCKED) each get distinct messages, every message exactly once, and none waits on another's lock
// long enough to fail.
func TestPostgresConcurrentLeases(t *testing.T) {
	s, _ := testStore(t, BackendPostgres)
	ctx := context.Background()
	const n, workers = 200, 8
	for i := range n {
		mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: fmt.Sprintf("m%03d", i)})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := s.Lease(ctx, "m", time.Hour)
				if err != nil {
					errs <- err
					return
				}
				if m == nil {
					return
				}
				mu.Lock()
				seen[m.ID]++
				mu.Unlock()
				if err := s.Ack(ctx, m.ID, m.Token); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A worker may see an empty mailbox while others hold the last rows; finish serially.
	for {
		m, err := s.Lease(ctx, "m", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if m == nil {
			break
		}
		seen[m.ID]++
		if err := s.Ack(ctx, m.ID, m.Token); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct messages leased, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("%s leased %d times", id, c)
		}
	}
}

// TestPostgresBusyErrors: serialization failures, deadlocks, lock timeouts and connection
// exhaustion are ErrBusy; other server errors are not.
func TestPostgresBusyErrors(t *testing.T) {
	s := &Store{d: &dialect{backend: BackendPostgres}}
	for code, busy := range map[string]bool{"40001": true, "40P01": true, "55P03": true, "53300": true, "23505": false, "42P01": false} {
		err := s.dbErr("op", fmt.Errorf("driver: %w", &pgconn.PgError{Code: code, Message: "m"}))
		if errors.Is(err, ErrBusy) != busy {
			t.Errorf("code %s: errors.Is(ErrBusy) = %v, want %v (%v)", code, !busy, busy, err)
		}
	}
}

// TestPostgresDeadLetterRace: a DeadLetter and an Enqueue of the same id racing on two
// connections never leave the id both dead and in the mailbox.
func TestPostgresDeadLetterRace(t *testing.T) {
	s, _ := testStore(t, BackendPostgres)
	ctx := context.Background()
	for i := range 30 {
		id := fmt.Sprintf("r%d", i)
		mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: id})
		var wg sync.WaitGroup
		wg.Add(2)
		var dlErr, enqErr error
		go func() { defer wg.Done(); dlErr = s.DeadLetter(ctx, id, "test") }()
		go func() {
			defer wg.Done()
			// Ack then re-enqueue would be a duplicate anyway; enqueue directly races the move.
			_, enqErr = s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: id, MaxAttempts: 1})
		}()
		wg.Wait()
		if dlErr != nil || enqErr != nil {
			t.Fatalf("%s: DeadLetter %v, Enqueue %v", id, dlErr, enqErr)
		}
		if _, err := s.GetMessage(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s is dead-lettered and still (or again) in the mailbox: %v", id, err)
		}
	}
}

// TestPostgresSharedPool: stores opened on an application's pool work side by side (each with its
// prefix) and Close leaves the pool open; a pool of another driver is refused.
func TestPostgresSharedPool(t *testing.T) {
	target := testTarget(t, BackendPostgres)
	pool := pgAdmin(t, target)
	a, err := OpenPostgresDB(pool, Options{TablePrefix: "a_"})
	if err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, a, NewMessage{Mailbox: "m", ID: "x"})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(); err != nil {
		t.Fatalf("the pool was closed with the store: %v", err)
	}
	b, err := OpenPostgresDB(pool, Options{TablePrefix: "a_"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if m := mustGet(t, b, "x"); m.Mailbox != "m" {
		t.Fatalf("reopened store sees %+v", m)
	}
	if _, err := OpenPostgresDB(nil, Options{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil pool: %v", err)
	}
	lite, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if _, err := OpenPostgresDB(lite, Options{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("sqlite pool: %v", err)
	}
}

// TestPostgresSharedPoolWakes: a store opened on an application's pool hears another store's
// enqueue through its own listener. The listener's connection settings are copied from a pool
// connection, whose notification handler must not come along: with it, the notifications went to
// the pool connection's buffer and the listener read a nil one.
func TestPostgresSharedPoolWakes(t *testing.T) {
	target := testTarget(t, BackendPostgres)
	pool := pgAdmin(t, target)
	listener, err := OpenPostgresDB(pool, Options{TablePrefix: "w_"})
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	woken, unsubscribe := listener.Subscribe("m")
	defer unsubscribe()
	sender, err := OpenPostgresDB(pool, Options{TablePrefix: "w_"})
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	// The sender's enqueue wakes the listener's subscriber only through NOTIFY: the two stores share
	// no in-process wake-ups. Enqueue until one arrives, since LISTEN may not be in place yet.
	deadline := time.After(30 * time.Second)
	for i := 0; ; i++ {
		mustEnqueue(t, sender, NewMessage{Mailbox: "m", ID: fmt.Sprintf("x%d", i)})
		select {
		case <-woken:
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("no wake-up reached the subscriber of a store opened on a shared pool")
		}
	}
}

// TestPostgresDecisionReadLocksTheRow: the leaseless failure decision's read of the stored attempts
// (readyAttempts, FOR UPDATE) makes a concurrent NackByID of the same message wait until the
// deciding transaction ends, so no attempt can be counted between the read and the decision's
// write. The wait is read from the server, not inferred from timing: the NackByID's backend shows
// wait_event_type 'Lock', blocked (pg_blocking_pids) by the deciding transaction's backend.
//
// The control case runs the same scenario with the read's FOR UPDATE removed (the store's
// statement rewritten in this store's dialect only) and requires the opposite: the NackByID
// completes while the deciding transaction is still open. So the check can fail, and does when
// the lock is missing.
func TestPostgresDecisionReadLocksTheRow(t *testing.T) {
	for _, c := range []struct {
		name      string
		forUpdate bool
	}{{"for update", true}, {"control without for update", false}} {
		t.Run(c.name, func(t *testing.T) {
			target := testTarget(t, BackendPostgres)
			s := openAt(t, BackendPostgres, target, Options{})
			if !c.forUpdate {
				// The template is the dialect's key (the store's statement), not a statement run here.
				key := qReadyAttempts
				plain := strings.TrimSuffix(s.d.overrides[key], " FOR UPDATE")
				if plain == s.d.overrides[key] {
					t.Fatalf("the PostgreSQL decision read does not end in FOR UPDATE: %q", plain)
				}
				s.d.overrides[key] = plain
				s.d.cache.Delete(key)
			}
			admin := pgAdmin(t, target)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "x", MaxAttempts: 1})

			// The deciding transaction: read the stored attempts, report its backend, wait to be
			// released, then record the failure as the consumer does at max attempts (the first
			// failure of a message with max_attempts 1 exhausts it).
			decided := make(chan int, 1) // its backend pid, once the read ran
			release := make(chan struct{})
			decision := make(chan error, 1)
			go func() {
				decision <- s.ExecTx(ctx, false, func(ctx context.Context) error {
					if _, err := s.readyAttempts(ctx, "x"); err != nil {
						return err
					}
					var pid int
					if err := s.txFrom(ctx).tx.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
						return err
					}
					decided <- pid
					<-release
					if err := s.NackByID(ctx, "x", 0); err != nil {
						return err
					}
					return s.DeadLetter(ctx, "x", ReasonMaxAttempts)
				})
			}()
			var decider int
			select {
			case decider = <-decided:
			case err := <-decision:
				t.Fatalf("the deciding transaction ended before its read: %v", err)
			}
			// Another worker's NackByID of the same message, on a connection of its own.
			nacked := make(chan error, 1)
			go func() { nacked <- s.NackByID(ctx, "x", 0) }()

			// Poll the server until the NackByID is seen waiting on the decider's lock, or it
			// has returned. Polling only observes; the verdict is the server's lock state.
			waiting := false
			var nackErr error
			nackDone := false
			for !waiting && !nackDone {
				select {
				case nackErr = <-nacked:
					nackDone = true
					continue
				default:
				}
				var n int
				err := admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND $1 = ANY(pg_blocking_pids(pid))`, decider).Scan(&n)
				if err != nil {
					t.Fatal(err)
				}
				waiting = n > 0
				if ctx.Err() != nil {
					t.Fatal("neither a lock wait nor the NackByID's return within 30s")
				}
			}
			if c.forUpdate {
				if !waiting {
					t.Fatalf("NackByID returned (%v) while the deciding transaction held its read: the read does not lock the row", nackErr)
				}
				close(release)
				if err := <-decision; err != nil {
					t.Fatalf("deciding transaction: %v", err)
				}
				// The NackByID ran after the decision committed: the message is dead-lettered.
				if err := <-nacked; !errors.Is(err, ErrNotFound) {
					t.Fatalf("NackByID after the decision: %v, want ErrNotFound", err)
				}
				dead, err := s.ListDeadLetters(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(dead) != 1 || dead[0].ID != "x" || dead[0].Attempts != 1 {
					t.Fatalf("dead letters %+v, want x at attempts 1", dead)
				}
				return
			}
			if waiting || nackErr != nil {
				t.Fatalf("control: NackByID waited (%v) or failed (%v); without FOR UPDATE it must pass the open read", waiting, nackErr)
			}
			close(release)
			// The decision now counts on a row the NackByID changed: the stale read it allowed.
			if err := <-decision; err != nil {
				t.Fatalf("deciding transaction: %v", err)
			}
		})
	}
}

// TestPostgresPurgePlan: on PostgreSQL too, the acked rows' purge and the expiry sweep probe
// messages_timers (schema version 5), and the purge reads its batch in index order, without
// sorting every acked row up to the cutoff (50,000 acked rows, all of them older than it).
func TestPostgresPurgePlan(t *testing.T) {
	s := openAt(t, BackendPostgres, testTarget(t, BackendPostgres), Options{})
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO messages (id, mailbox, key, priority, max_attempts, attempts, available_at, state, created_at, acked_at)
SELECT 'a' || g, 'mb', '', 0, 3, 1, 0, 'acked', 0, g FROM generate_series(1, 50000) g`,
		`INSERT INTO messages (id, mailbox, key, priority, max_attempts, attempts, available_at, state, created_at, token, lease_until)
SELECT 'l' || g, 'mb', '', 0, 3, 1, 0, 'ready', 0, 't' || g, 100000 FROM generate_series(1, 100) g`,
		`ANALYZE messages`,
	} {
		if _, err := s.wdb.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	overrides := pgOverrides()
	for _, tc := range []struct {
		name, query, want string
	}{
		{"purge acked", qPurgeAcked, "Index Only Scan using messages_timers"},
		{"expire", qExpire, "Index Scan using messages_timers"},
	} {
		q := tc.query
		if o, ok := overrides[q]; ok {
			q = o
		}
		rows, err := boundQuerier{q: s.wdb, d: s.d}.QueryContext(ctx, "EXPLAIN "+q,
			named("now", int64(1000)), named("cutoff", int64(60000)), named("limit", 100),
			named("after_at", noBound.final), named("after_id", noBound.id))
		if err != nil {
			t.Fatal(tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, tc.want) || strings.Contains(text, "Sort") || strings.Contains(text, "Seq Scan") {
			t.Errorf("%s: plan lacks %q, or sorts or scans:\n%s", tc.name, tc.want, text)
		}
	}
}

// TestPostgresPurgeResumes: PostgreSQL keeps a deleted row's index entries until VACUUM, so an
// oldest-first purge batch that starts at the oldest row reads again every index page the
// batches before it emptied, and a whole purge reads O(n²) pages. PurgeAll's resumed batches
// start after the last row removed: with 10,000 of 20,000 acked rows purged in resumed batches,
// the next batch's walk of messages_timers reads a few pages, while the same batch from the oldest
// row reads the emptied pages again (measured with EXPLAIN (ANALYZE, BUFFERS) of the purge
// statement itself, in a transaction rolled back).
func TestPostgresPurgeResumes(t *testing.T) {
	s := openAt(t, BackendPostgres, testTarget(t, BackendPostgres), Options{})
	ctx := context.Background()
	// Every row acked at the same time, an hour before now: the order is by id alone.
	old := s.nowMillis() - time.Hour.Milliseconds()
	if _, err := s.wdb.ExecContext(ctx, fmt.Sprintf(`INSERT INTO messages
    (id, mailbox, key, priority, max_attempts, attempts, available_at, state, created_at, acked_at)
SELECT 'old-' || lpad(g::text, 7, '0'), 'mb', '', 0, 3, 1, 0, 'acked', %[1]d, %[1]d FROM generate_series(1, 20000) g`, old)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.wdb.ExecContext(ctx, `VACUUM ANALYZE messages`); err != nil {
		t.Fatal(err)
	}
	var from purgeCursor
	for range 20 {
		r, next, err := s.purge(ctx, time.Minute, 0, 500, from)
		if err != nil || r.Acked != 500 {
			t.Fatalf("purge from %+v = %+v, %v; want 500 acked", from, r, err)
		}
		from = next
	}
	if want := (purgeKey{final: old, id: "old-0010000"}); from.acked != want {
		t.Fatalf("cursor after 10,000 rows = %+v, want %+v", from.acked, want)
	}
	walk := func(after purgeKey) int {
		t.Helper()
		tx, err := s.wdb.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		rows, err := boundQuerier{q: tx, d: s.d}.QueryContext(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+qPurgeAcked,
			named("cutoff", s.nowMillis()), named("limit", 100), named("after_at", after.final), named("after_id", after.id))
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		for i, line := range plan {
			if !strings.Contains(line, "Index Only Scan using messages_timers") {
				continue
			}
			for _, l := range plan[i+1:] {
				var hit int
				if _, err := fmt.Sscanf(strings.TrimSpace(l), "Buffers: shared hit=%d", &hit); err == nil {
					return hit
				}
			}
		}
		t.Fatalf("no buffer count for the walk of messages_timers in the plan:\n%s", strings.Join(plan, "\n"))
		return 0
	}
	walk(noBound) // the first walk from the oldest row also marks the dead entries it passes
	fromOldest, resumed := walk(noBound), walk(from.acked)
	t.Logf("index walk of a 100-row batch after 10,000 rows purged: %d pages from the oldest row, %d resumed", fromOldest, resumed)
	if resumed > 10 || fromOldest < 4*resumed {
		t.Errorf("index walk of a 100-row batch: %d buffers from the oldest row, %d resumed; want the resumed walk at most 10 and a quarter of the other", fromOldest, resumed)
	}
}

// TestPostgresConnectErrors: a role the server refuses, a database it does not have and a port
// nobody listens on are three named errors, not one "cannot reach". Against the throwaway
// server; the closed port is a loopback port just released by a listener of this test.
func TestPostgresConnectErrors(t *testing.T) {
	dsn := pgDSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	for _, tc := range []struct {
		name, dsn string
		want      error
		says      string
	}{
		{"wrong role", withDSNParam(dsn, "user", "no_such_role_41"), ErrAuthFailed, `refused user "no_such_role_41"`},
		{"missing database", withDSNParam(dsn, "dbname", "no_such_db_41"), ErrNoDatabase, `has no database "no_such_db_41"`},
		{"closed port", fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", cfg.User, closed, cfg.Database), ErrUnreachable, fmt.Sprintf("cannot reach PostgreSQL at 127.0.0.1:%d", closed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenPostgres(tc.dsn, Options{ConnectTimeout: 10 * time.Second})
			if s != nil {
				_ = s.Close()
				t.Fatal("OpenPostgres succeeded")
			}
			checkConnectErr(t, err, tc.want, tc.says)
		})
		// The same server, role and database through an application's pool: the same sentinel,
		// naming the same things.
		t.Run(tc.name+"/pool", func(t *testing.T) {
			pc, err := pgx.ParseConfig(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			pc.ConnectTimeout = 10 * time.Second
			db := stdlib.OpenDB(*pc)
			defer db.Close()
			s, err := OpenPostgresDB(db, Options{ConnectTimeout: 10 * time.Second})
			if s != nil {
				_ = s.Close()
				t.Fatal("OpenPostgresDB succeeded")
			}
			checkConnectErr(t, err, tc.want, tc.says)
			if !strings.Contains(err.Error(), "OpenPostgresDB") {
				t.Errorf("error %q does not name OpenPostgresDB", err)
			}
		})
	}
}

func checkConnectErr(t *testing.T, err, want error, says string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	for _, other := range []error{ErrAuthFailed, ErrNoDatabase, ErrUnreachable} {
		if other != want && errors.Is(err, other) {
			t.Errorf("error %v also wraps %v", err, other)
		}
	}
	if !strings.Contains(err.Error(), says) {
		t.Errorf("error %q does not say %q", err, says)
	}
}
