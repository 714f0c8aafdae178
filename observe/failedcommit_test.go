package observe_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pconform/pconform/actordelivery"
)

// TestFailedHandleCommitChecksClean records a worker whose handle does not commit and that then
// fetches and handles again, as a service's worker loop does after the error, and checks the log
// with the model oracle: the failed handle is recorded as a step that changed nothing (a
// consumer_handle_batch read event with fault commit_fails), so the next fetch is no finding.
// Without that event the worker's next fetch reads as a fetch while it still held one. The
// commit fails both ways a service meets: the context ends while the transaction runs (its
// Effects cancel it), and before it begins (the handler cancels it).
//
// Rerun: bash scripts/pg.sh go test ./observe/ -run TestFailedHandleCommitChecksClean -v
func TestFailedHandleCommitChecksClean(t *testing.T) {
	cases := []struct {
		name  string
		path  actordelivery.Path
		batch int
		// failing is the handler's outcome in the batch that does not commit.
		failing string
		want    string // the op the failed handle is recorded as
	}{
		{"batch/leased/effects", actordelivery.PathLeased, 4, "ok", "consumer_handle_batch"},
		{"batch/leaseless/effects", actordelivery.PathLeaseless, 4, "ok", "consumer_handle_batch"},
		{"batch/leased/handler", actordelivery.PathLeased, 4, "fail", "consumer_handle_batch"},
		{"batch/leaseless/handler", actordelivery.PathLeaseless, 4, "fail", "consumer_handle_batch"},
		{"single/leased/effects", actordelivery.PathLeased, 1, "ok", "consumer_handle"},
		{"single/leaseless/effects", actordelivery.PathLeaseless, 1, "ok", "consumer_handle"},
		{"single/leased/handler", actordelivery.PathLeased, 1, "fail", "consumer_handle"},
		{"single/leaseless/handler", actordelivery.PathLeaseless, 1, "fail", "consumer_handle"},
	}
	forBackends(t, func(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				log := recordFailedCommit(t, open, strings.ReplaceAll(tc.name, "/", "-"), tc.path, tc.batch, tc.failing)
				if !strings.Contains(string(log), `"op":"`+tc.want+`"`) || !strings.Contains(string(log), `"fault":"commit_fails"`) {
					t.Fatalf("the failed handle is not recorded as a %s with fault commit_fails:\n%s", tc.want, log)
				}
				sum, f, err := checkLog(log)
				if err != nil {
					t.Fatalf("check: %v\nthe log:\n%s", err, log)
				}
				if f != nil {
					t.Fatalf("finding on a log whose handle did not commit: %s\nthe log:\n%s", f, log)
				}
				if sum.Events < 6 {
					t.Fatalf("only %d events checked:\n%s", sum.Events, log)
				}
				if testing.Short() {
					return
				}
				// The P oracle (check --p) too: its monitors must see the failed handle release
				// the worker's fetch.
				spec, f, err := checkLogP(t, log)
				if err != nil || f != nil {
					t.Fatalf("the P oracle on a log whose handle did not commit: finding %v, err %v\nthe log:\n%s", f, err, log)
				}
				if spec == 0 {
					t.Fatalf("the P oracle was sent no spec event")
				}
			})
		}
	})
}

// recordFailedCommit records, on a store opened by open, three messages of mailbox fetched by one consumer
// (batch size batch, path path), handled once with a commit that fails (the last message's
// handler outcome failing: "ok" cancels the handle from its Effects, in the transaction; "fail"
// from the handler, before it), then fetched and handled again to the end. It returns the log.
func recordFailedCommit(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error), mailbox string, path actordelivery.Path, batch int, failing string) []byte {
	t.Helper()
	var log bytes.Buffer
	st, err := open(actordelivery.Options{Recorder: actordelivery.JSONRecorder(&log, func(err error) { t.Errorf("recorder: %v", err) })})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for i := range 3 {
		if _, err := st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: mailbox, ID: fmt.Sprintf("%s-m%d", mailbox, i), MaxAttempts: 3}); err != nil {
			t.Fatal(err)
		}
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	failNow := true
	h := func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) {
		if !failNow {
			return func(context.Context) error { return nil }, nil
		}
		if failing == "fail" {
			cancel()
			return nil, errors.New("handler failed")
		}
		return func(context.Context) error { cancel(); return nil }, nil
	}
	c, err := actordelivery.NewConsumer(st, h, actordelivery.ConsumerOptions{Mailbox: mailbox, Path: path, BatchSize: batch})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := c.FetchBatch(ctx)
	if err != nil || len(ds) == 0 {
		t.Fatalf("fetch: %d deliveries, %v", len(ds), err)
	}
	if _, err := c.HandleBatch(hctx, ds); !errors.Is(err, context.Canceled) {
		t.Fatalf("the handle whose context ended: want context.Canceled, got %v", err)
	}
	failNow = false
	for range 4 {
		ds, err := c.FetchBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		if _, err := c.HandleBatch(ctx, ds); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return log.Bytes()
}
