package actordelivery

import (
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"
)

// TestPostgresNoWakeForUndoneEnqueue: an enqueue that does not stand wakes no store, neither the
// enqueuing one (its local signal) nor another on the same database (NOTIFY). Two cases: the
// enqueue's transaction rolls back, and the insert is undone because a concurrent DeadLetter of
// the id committed while it waited (Enqueue's re-check), both for an enqueue alone and for one
// inside ExecTx, which take different statements.
//
// Absence is observed without a timeout: after each case the test commits an enqueue into a
// marker mailbox that the listening store also subscribes to. The server delivers notifications in
// commit order over the one listening connection, so once the marker's signal arrived, a signal
// for the undone enqueue would already be there.
func TestPostgresNoWakeForUndoneEnqueue(t *testing.T) {
	target := testTarget(t, BackendPostgres)
	a := openAt(t, BackendPostgres, target, Options{})
	b := openAt(t, BackendPostgres, target, Options{})
	admin := pgAdmin(t, target)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	localWake, stopLocal := a.Subscribe("m")
	defer stopLocal()
	remoteWake, stopRemote := b.Subscribe("m")
	defer stopRemote()
	markerWake, stopMarker := b.Subscribe("marker")
	defer stopMarker()
	marker := 0
	// settle waits until every notification committed so far reached b, then empties the
	// channels of mailbox m.
	settle := func() {
		t.Helper()
		marker++
		mustEnqueue(t, a, NewMessage{Mailbox: "marker", ID: "marker-" + string(rune('a'+marker))})
		select {
		case <-markerWake:
		case <-ctx.Done():
			t.Fatal("the marker's notification did not arrive within 30s")
		}
	}
	drained := func(what string) {
		t.Helper()
		select {
		case <-localWake:
			t.Fatalf("%s: the enqueuing store's subscriber was woken", what)
		default:
		}
		select {
		case <-remoteWake:
			t.Fatalf("%s: another store was woken (NOTIFY)", what)
		default:
		}
	}
	// The control: a standing enqueue wakes both, so the checks below can fail.
	mustEnqueue(t, a, NewMessage{Mailbox: "m", ID: "x"})
	settle()
	for name, ch := range map[string]<-chan struct{}{"local": localWake, "remote": remoteWake} {
		select {
		case <-ch:
		default:
			t.Fatalf("control: a committed enqueue did not wake the %s subscriber", name)
		}
	}

	// Case 1: the transaction rolls back.
	err := a.ExecTx(ctx, false, func(ctx context.Context) error {
		if _, err := a.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "rolled-back", MaxAttempts: 1}); err != nil {
			return err
		}
		return errBusinessRule
	})
	if err == nil {
		t.Fatal("the rolled-back ExecTx returned nil")
	}
	settle()
	drained("rolled-back enqueue")

	// Case 2: Enqueue(id) waits on the id's row while a DeadLetter(id) holds it; once the dead
	// letter commits, the insert goes through and the re-check undoes it. Alone, the enqueue is
	// one pipelined implicit transaction (enqueueAlone); inside ExecTx, statements of its own.
	for _, c := range []struct {
		id   string
		inTx bool
	}{{"x", false}, {"y", true}} {
		if c.id != "x" { // x is the control's message
			mustEnqueue(t, a, NewMessage{Mailbox: "m", ID: c.id})
			settle()
			<-localWake
			<-remoteWake
		}
		deadLetterWhileEnqueuing(t, ctx, a, admin, c.id, c.inTx)
		settle()
		drained("enqueue undone by the dead-letter re-check (in ExecTx: " + strconv.FormatBool(c.inTx) + ")")
	}
}

// deadLetterWhileEnqueuing has Enqueue(id) wait on the row of id while DeadLetter(id) holds it,
// and checks that the insert was undone (duplicate, no message left).
func deadLetterWhileEnqueuing(t *testing.T, ctx context.Context, a *Store, admin *sql.DB, id string, inTx bool) {
	t.Helper()
	locked := make(chan int, 1)
	release := make(chan struct{})
	moved := make(chan error, 1)
	go func() {
		moved <- a.ExecTx(ctx, false, func(ctx context.Context) error {
			if err := a.DeadLetter(ctx, id, "test"); err != nil {
				return err
			}
			var pid int
			if err := a.txFrom(ctx).tx.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				return err
			}
			locked <- pid
			<-release
			return nil
		})
	}()
	var mover int
	select {
	case mover = <-locked:
	case err := <-moved:
		t.Fatalf("the dead-letter transaction ended early: %v", err)
	}
	type enq struct {
		dup bool
		err error
	}
	enqueued := make(chan enq, 1)
	go func() {
		var dup bool
		enqueue := func(ctx context.Context) (err error) {
			dup, err = a.Enqueue(ctx, NewMessage{Mailbox: "m", ID: id, MaxAttempts: 1})
			return err
		}
		var err error
		if inTx {
			err = a.ExecTx(ctx, false, enqueue)
		} else {
			err = enqueue(ctx)
		}
		enqueued <- enq{dup, err}
	}()
	for {
		var n int
		if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND $1 = ANY(pg_blocking_pids(pid))`, mover).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the enqueue never waited on the dead letter's lock within 30s")
		}
	}
	close(release)
	if err := <-moved; err != nil {
		t.Fatalf("dead-letter transaction: %v", err)
	}
	got := <-enqueued
	if got.err != nil || !got.dup {
		t.Fatalf("Enqueue of the id dead-lettered meanwhile (in ExecTx: %v) = duplicate %v, %v; want an undone insert (duplicate)", inTx, got.dup, got.err)
	}
	if _, err := a.GetMessage(ctx, id); err == nil {
		t.Fatalf("the undone insert of %q (in ExecTx: %v) left the message in the mailbox", id, inTx)
	}
}
