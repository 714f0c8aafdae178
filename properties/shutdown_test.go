package properties

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/traces"
)

// shutdownWorkers is how many workers the drain check runs per path.
const shutdownWorkers = 3

// TestShutdownDrain checks RunWorkers' stop from a recording store's history, on both backends and
// both paths (docs/semantics.md, Worker groups): once its context is cancelled, a worker starts no
// new fetch, and every message already fetched is handled and its outcome committed.
//
// Every handler blocks until the test has cancelled the group, so each worker has fetched exactly
// one message before the stop and none may fetch after it (the mailboxes hold many more). The
// history must then hold exactly one fetch that found a message per worker, a handle of that
// message by the same worker after it, and the Go model must agree with every step; no lease may
// be left to run out. The order comes from barriers, not timing.
//
// Rerun: bash scripts/pg.sh go test ./properties/ -run 'TestShutdownDrain' -v
func TestShutdownDrain(t *testing.T) {
	for _, path := range []actordelivery.Path{actordelivery.PathLeased, actordelivery.PathLeaseless} {
		t.Run("sqlite-"+path.String(), func(t *testing.T) {
			testShutdownDrain(t, path, func(opts actordelivery.Options) *actordelivery.Store {
				st, err := actordelivery.Open(filepath.Join(t.TempDir(), "drain.db"), opts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = st.Close() })
				return st
			})
		})
		t.Run("postgres-"+path.String(), func(t *testing.T) {
			dsn := pgDSN(t)
			if dsn == "" {
				t.Skip("PCONFORM_PG_DSN is not set: skipping the PostgreSQL drain check (scripts/check.sh starts a server)")
			}
			_, schema, _ := pgSchema(t, dsn, "drain")
			testShutdownDrain(t, path, func(opts actordelivery.Options) *actordelivery.Store { return openPGListening(t, dsn, schema, opts) })
		})
	}
}

func testShutdownDrain(t *testing.T, path actordelivery.Path, open func(actordelivery.Options) *actordelivery.Store) {
	// The recorder serializes its writes; the buffer is read once RunWorkers has returned.
	var events bytes.Buffer
	rec := actordelivery.JSONRecorder(&events, func(err error) { t.Errorf("recorder: %v", err) })
	st := open(actordelivery.Options{Clock: fixedClock{contentionEpoch}, Recorder: rec})
	ctx := context.Background()
	mailboxes := make([]string, shutdownWorkers)
	for i := range mailboxes {
		mailboxes[i] = fmt.Sprintf("s%d", i+1)
		for j := range 5 {
			if _, err := st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: mailboxes[i], ID: fmt.Sprintf("%s-%d", mailboxes[i], j), MaxAttempts: 3}); err != nil {
				t.Fatal(err)
			}
		}
	}
	tr := stopWhileHandling(t, st, &events, mailboxes, shutdownWorkers,
		actordelivery.ConsumerOptions{Path: path, LeaseFor: time.Minute, DrainTimeout: time.Minute}, "drain")
	if f, err := observe.CheckModel(tr); err != nil || f != nil {
		t.Fatalf("the model on the drained group's history: %v, %v", f, err)
	}
	fetched := map[int]string{} // worker -> the message of its last fetch still to be handled
	fetches := 0
	for i, s := range tr.Steps {
		switch {
		case s.Op == traces.OpConsumerFetch && s.Result.Message != nil:
			fetches++
			if fetches > shutdownWorkers {
				t.Errorf("step %d: worker %d fetched %s after the stop: %d workers each had fetched a message whose handler held until the stop, so no fetch may come after theirs",
					i, s.Args.Worker, s.Result.Message.ID, shutdownWorkers)
			}
			fetched[s.Args.Worker] = s.Result.Message.ID
		case s.Op == traces.OpConsumerHandle && s.Result.Action != traces.ActionIdle:
			delete(fetched, s.Args.Worker)
		}
	}
	if fetches < shutdownWorkers {
		t.Errorf("the history holds %d fetches that found a message, want one per worker (%d)", fetches, shutdownWorkers)
	}
	for w, id := range fetched {
		t.Errorf("worker %d fetched %s and stopped without handling it: a stop must drain what was fetched", w, id)
	}
	for _, mb := range mailboxes {
		for j := range 5 {
			m, err := st.GetMessage(ctx, fmt.Sprintf("%s-%d", mb, j))
			if err != nil {
				t.Fatal(err)
			}
			if m.Token != "" {
				t.Errorf("%s still holds a lease after the drained stop: a stop leaves no lease to run out", m.ID)
			}
		}
	}
}

// stopWhileHandling runs a RunWorkers group of workers on st's mailboxes with opts, whose handler
// blocks until released; once every worker has fetched a message it stops the group, releases the
// handlers and waits for RunWorkers to return. It returns the history events holds, converted
// into a trace named name.
func stopWhileHandling(t *testing.T, st *actordelivery.Store, events *bytes.Buffer, mailboxes []string, workers int, opts actordelivery.ConsumerOptions, name string) *traces.Trace {
	t.Helper()
	entered, release := make(chan string, 100), make(chan struct{})
	h := func(_ context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		entered <- m.ID
		<-release
		return nil, nil
	}
	group, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- actordelivery.RunWorkers(group, st, mailboxes, workers, h, opts) }()
	for range workers {
		select {
		case <-entered:
		case err := <-done:
			t.Fatalf("RunWorkers returned (%v) before each of its %d workers had fetched a message", err, workers)
		case <-time.After(time.Minute):
			t.Fatalf("within a minute not all %d workers had fetched a message", workers)
		}
	}
	cancel()
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunWorkers after its stop: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("RunWorkers did not return within a minute of its stop")
	}
	lg, err := observe.ReadLog(events, "events")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := observe.Convert(lg, observe.Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
