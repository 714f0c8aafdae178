package actordelivery

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPostgresLazyBegin: a read-write transaction on PostgreSQL sends BEGIN with its first
// statement (or nothing, when it sends none), and ends as database/sql's Tx over pgx would: a
// statement that failed makes the commit fail (never a dropped error), results the application
// left open do not keep COMMIT from running, and no connection goes back to the pool inside a
// transaction (counted among the test's own connections: the server is shared with other tests).
func TestPostgresLazyBegin(t *testing.T) {
	pgDSN(t)
	s, stmts := benchTracedPostgres(t)
	app := pgAppName(t)
	admin := pgAdmin(t, pgDSN(t))
	ctx := context.Background()
	save := func(ctx context.Context, actor string) error {
		_, err := s.SaveCheckpoint(ctx, actor, []byte("state"), 0)
		return err
	}
	// failing runs a statement that fails on the server, and ignores its error.
	failing := func(ctx context.Context) {
		q, err := Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = q.ExecContext(ctx, "SELECT 1 / $1", 0)
	}
	for _, c := range []struct {
		name string
		fn   func(ctx context.Context, actor string) error
		// stmts and trips the transaction sends; saved: the checkpoint committed; want: the error
		// ExecTx returns (nil for none).
		stmts, trips int64
		saved        bool
		want         error
	}{
		{name: "empty", fn: func(context.Context, string) error { return nil }},
		{name: "one statement", fn: save, stmts: 3, trips: 2, saved: true},
		{name: "rolled back", fn: func(ctx context.Context, actor string) error {
			if err := save(ctx, actor); err != nil {
				return err
			}
			return errBusinessRule
		}, stmts: 3, trips: 2, want: errBusinessRule},
		{name: "first statement failed", fn: func(ctx context.Context, actor string) error {
			failing(ctx)
			return nil
		}, stmts: 3, trips: 2, want: pgx.ErrTxCommitRollback},
		{name: "later statement failed", fn: func(ctx context.Context, actor string) error {
			if err := save(ctx, actor); err != nil {
				return err
			}
			failing(ctx)
			return nil
		}, stmts: 4, trips: 3, want: pgx.ErrTxCommitRollback},
		{name: "rows left open", fn: func(ctx context.Context, actor string) error {
			if err := save(ctx, actor); err != nil {
				return err
			}
			q, _ := Tx(ctx)
			_, err := q.QueryContext(ctx, "SELECT generate_series(1, $1)", 10000)
			return err
		}, stmts: 4, trips: 3, saved: true},
		{name: "row never scanned", fn: func(ctx context.Context, actor string) error {
			if err := save(ctx, actor); err != nil {
				return err
			}
			q, _ := Tx(ctx)
			_ = q.QueryRowContext(ctx, "SELECT generate_series(1, $1)", 10000)
			return nil
		}, stmts: 4, trips: 3, saved: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			actor := "actor " + c.name
			stmts.n.Store(0)
			stmts.trips.Store(0)
			err := s.ExecTx(ctx, false, func(ctx context.Context) error { return c.fn(ctx, actor) })
			gotStmts, gotTrips := stmts.n.Load(), stmts.trips.Load()
			if (c.want == nil) != (err == nil) || !errors.Is(err, c.want) {
				t.Errorf("ExecTx = %v, want %v", err, c.want)
			}
			if gotStmts != c.stmts || gotTrips != c.trips {
				t.Errorf("sent %d statements in %d round trips, want %d in %d", gotStmts, gotTrips, c.stmts, c.trips)
			}
			_, version, err := s.LoadCheckpoint(ctx, actor)
			if errors.Is(err, ErrNotFound) {
				version, err = 0, nil
			}
			if err != nil {
				t.Fatal(err)
			}
			if saved := version > 0; saved != c.saved {
				t.Errorf("checkpoint committed: %v, want %v", saved, c.saved)
			}
			var open, conns int
			if err := admin.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE state LIKE 'idle in transaction%'), count(*)
FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, app).Scan(&open, &conns); err != nil {
				t.Fatal(err)
			}
			if conns == 0 { // the store's connections must be the ones counted
				t.Fatalf("no connection of the server carries application_name %q", app)
			}
			if open != 0 {
				t.Errorf("%d connections idle inside a transaction after ExecTx returned", open)
			}
		})
	}
}

// TestPostgresCommitOutlivesCancel: a context cancelled while COMMIT is on its way to the server
// does not cut the commit off. The application's table has a deferred trigger that keeps COMMIT
// busy for a while, and the context is cancelled meanwhile: ExecTx still reports the commit, the
// rows are there, and the recording store records the enqueue (so a history has no gap). Broken,
// the call failed while the server went on to commit.
func TestPostgresCommitOutlivesCancel(t *testing.T) {
	const (
		slowCommit = `CREATE TABLE slow_commit (id INT);
CREATE FUNCTION slow_commit_sleep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.6); RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER slow_commit_at_commit AFTER INSERT ON slow_commit
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit_sleep()`
		cancelAfter = 150 * time.Millisecond
	)
	log := &eventLog{}
	s := openAt(t, BackendPostgres, testTarget(t, BackendPostgres), Options{Clock: NewManualClock(base), Recorder: log})
	bg := context.Background()
	if err := s.ExecTx(bg, false, func(ctx context.Context) error {
		q, err := Tx(ctx)
		if err != nil {
			return err
		}
		_, err = q.ExecContext(ctx, slowCommit)
		return err
	}); err != nil {
		t.Fatalf("create the slow table: %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	err := s.ExecTx(ctx, false, func(ctx context.Context) error {
		if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "a", ID: "m1", MaxAttempts: 1}); err != nil {
			return err
		}
		q, err := Tx(ctx)
		if err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, "INSERT INTO slow_commit (id) VALUES ($1)", 1); err != nil {
			return err
		}
		time.AfterFunc(cancelAfter, cancel) // while COMMIT waits for the trigger
		return nil
	})
	if err != nil {
		t.Fatalf("ExecTx whose context was cancelled during COMMIT: %v, want the commit reported", err)
	}
	if ctx.Err() == nil {
		t.Fatal("the context was not cancelled during COMMIT: the trigger did not hold COMMIT up")
	}
	if m, err := s.Peek(bg, "a"); err != nil || m == nil || m.ID != "m1" {
		t.Fatalf("peek after the commit: %+v %v, want m1", m, err)
	}
	var enqueues int
	for _, ev := range log.sorted() {
		if ev.Op == "enqueue" && ev.Args.ID == "m1" {
			enqueues++
		}
	}
	if enqueues != 1 {
		t.Fatalf("recorded %d enqueues of m1, want 1: %+v", enqueues, log.sorted())
	}
}
