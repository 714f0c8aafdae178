package brokenstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/brokenstore"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/traces"
)

// TestWakeOutsideTxIsFound records a two-store history on PostgreSQL, as two processes on one
// database would: a sender enqueues into mailbox w1 the way an application does (inside ExecTx,
// half of the transactions held open a moment after the enqueue and committed, half rolled
// back), and a receiver runs a wake-driven consumer of w1 (it never polls). The two recorded
// logs, merged, are checked as `pconform check` checks them.
//
// The correct store sends its NOTIFY inside the enqueue's transaction: the receiver is woken only
// by committed rows, after their commit, and the check finds nothing (and the history has the
// NOTIFY wakes the check judged). The wake-outside-tx variant (brokenstore.Enqueuer with
// NotifyFirst) sends it on a pool connection first: the receiver records a wake for a row not yet
// committed, or one that rolled back, and the check refuses it (not_committed).
//
// Needs PCONFORM_PG_DSN: `bash scripts/pg.sh go test ./internal/brokenstore/ -run TestWakeOutsideTx`.
func TestWakeOutsideTxIsFound(t *testing.T) {
	dsn := os.Getenv("PCONFORM_PG_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PCONFORM_PG_DSN is not set and CI=true: the PostgreSQL wake check must run in CI")
		}
		t.Skip("PCONFORM_PG_DSN is not set (bash scripts/pg.sh go test ./internal/brokenstore/ starts a server)")
	}
	for _, tc := range []struct {
		name        string
		notifyFirst bool
	}{{"store", false}, {"wake-outside-tx", true}} {
		t.Run(tc.name, func(t *testing.T) {
			sender, receiver, held, undone := recordWakeHistory(t, dsn, tc.notifyFirst)
			notifyWakes := strings.Count(receiver, `"op":"wake"`) - strings.Count(receiver, `"profile":"local"`)
			// Every finding, so both kinds show: a wake before its row's commit, and one for a row
			// that rolled back.
			var early, rolledBack []string
			_, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(strings.NewReader(sender+receiver), "merged.jsonl"), 0),
				observe.CheckOptions{KeepGoing: true, OnFinding: func(f *observe.Finding) error {
					for _, id := range held {
						if strings.Contains(f.Message, `id="`+id+`"`) {
							early = append(early, id)
						}
					}
					for _, id := range undone {
						if strings.Contains(f.Message, `id="`+id+`"`) {
							rolledBack = append(rolledBack, id)
						}
					}
					return nil
				}})
			if err != nil {
				t.Fatalf("the merged log cannot be checked: %v\nsender:\n%s\nreceiver:\n%s", err, sender, receiver)
			}
			switch {
			case !tc.notifyFirst && f != nil:
				t.Fatalf("the correct store's history has a finding: %s\nsender:\n%s\nreceiver:\n%s", f, sender, receiver)
			case !tc.notifyFirst && notifyWakes < 3:
				t.Fatalf("the receiver recorded %d NOTIFY wakes: too few for the check to have judged any\n%s", notifyWakes, receiver)
			case tc.notifyFirst && f == nil:
				t.Fatalf("a NOTIFY sent outside its transaction went unseen (%d NOTIFY wakes recorded)\nsender:\n%s\nreceiver:\n%s", notifyWakes, sender, receiver)
			case tc.notifyFirst && !strings.Contains(f.Message, traces.ErrKindNotCommitted):
				t.Fatalf("the finding is not the early wake's: %s", f)
			case tc.notifyFirst && (len(rolledBack) == 0 || len(early) == 0):
				t.Fatalf("findings name rolled-back rows %v of %v and rows woken for before their commit %v of %v; want some of each; first finding %s",
					rolledBack, undone, early, held, f)
			}
			t.Logf("%d NOTIFY wakes recorded; first finding: %v; wakes before their row's commit: %v; for rolled-back rows: %v",
				notifyWakes, f, early, rolledBack)
		})
	}
}

// recordWakeHistory records the history TestWakeOutsideTxIsFound describes in a schema of its own
// and returns the sender's and the receiver's logs, and the ids of the held (committed) and the
// rolled-back enqueues.
func recordWakeHistory(t *testing.T, dsn string, notifyFirst bool) (sender, receiver string, held, undone []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	schema := "wake_" + strings.ToLower(rand.Text()[:12])
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE") }()
	dsn = targets.WithSearchPath(dsn, schema)
	const prefix = "w_"
	clock := actordelivery.NewManualClock(traces.Epoch.Add(time.Hour))
	var sendLog, recvLog lockedBuffer
	open := func(log *lockedBuffer) *actordelivery.Store {
		st, err := actordelivery.OpenPostgres(dsn, actordelivery.Options{TablePrefix: prefix, Clock: clock,
			Recorder: actordelivery.JSONRecorder(log, func(err error) { t.Errorf("recorder: %v", err) })})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	send, recv := open(&sendLog), open(&recvLog)
	defer send.Close()
	defer recv.Close()
	pool, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	enq := brokenstore.Enqueuer{Store: send, Pool: pool, TablePrefix: prefix, NotifyFirst: notifyFirst}

	work, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- actordelivery.RunWorkers(work, recv, []string{"w1"}, 1,
			func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) { return nil, nil },
			actordelivery.ConsumerOptions{Path: actordelivery.PathLeaseless, PollInterval: 1000 * time.Hour, MaxPollInterval: 1000 * time.Hour})
	}()
	// handled waits until w1 is empty: every committed message was woken for and handled.
	handled := func(within time.Duration) bool {
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if n, err := recv.QueueDepth(ctx, "w1"); err == nil && n == 0 {
				return true
			}
		}
		return false
	}
	n := 0
	plain := func(hold time.Duration, rollback bool) error {
		n++
		return brokenstore.Enqueuer{Store: send}.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "w1", ID: fmt.Sprintf("m%d", n), MaxAttempts: 1}, hold, rollback)
	}
	// Until the receiver's listener is up, a NOTIFY wakes nobody: enqueue until one is handled.
	for up := false; !up; {
		if err := plain(0, false); err != nil {
			t.Fatal(err)
		}
		if up = handled(time.Second); !up && n > 20 {
			t.Fatal("the receiver's consumer was never woken: no NOTIFY arrived in 20 s")
		}
	}
	for i := range 10 {
		// Let the consumer go back to its wait after the last handle, so a wake ends the wait.
		time.Sleep(100 * time.Millisecond)
		n++
		id := fmt.Sprintf("m%d", n)
		if i%2 == 1 {
			undone = append(undone, id)
		} else {
			held = append(held, id)
		}
		err := enq.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "w1", ID: id, MaxAttempts: 1},
			50*time.Millisecond, i%2 == 1)
		if err != nil && !errors.Is(err, brokenstore.ErrRolledBack) {
			t.Fatal(err)
		}
		if !handled(10 * time.Second) {
			t.Fatalf("message m%d was not handled within 10 s", n)
		}
	}
	// The server delivers notifications in commit order: once a last committed message was woken
	// for and handled, every earlier NOTIFY has arrived.
	if err := plain(0, false); err != nil {
		t.Fatal(err)
	}
	if !handled(10 * time.Second) {
		t.Fatal("the last message was not handled within 10 s")
	}
	stop()
	if err := <-served; err != nil {
		t.Fatalf("RunWorkers: %v", err)
	}
	return sendLog.String(), recvLog.String(), held, undone
}

// lockedBuffer is a recorder's log, read once its store has stopped.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
