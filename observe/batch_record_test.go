package observe_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/observe"
)

// TestBatchedWorkersRecordChecksClean records workers and a publisher configured for batches
// (ConsumerOptions.BatchSize, PublisherOptions.DeliverBatch) on a recording store, on both
// backends, and checks the log as `pconform check` does. The trace format has no batch step yet,
// and the model refuses a worker's second fetch before its handle, so a recording store runs
// batches of one: the log must check clean, and hold only single fetches and handles.
//
// Rerun: bash scripts/pg.sh go test ./observe/ -run TestBatchedWorkersRecord -v
func TestBatchedWorkersRecordChecksClean(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: records a store for a second on the wall clock")
	}
	forBackends(t, func(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) {
		var log bytes.Buffer
		st, err := open(actordelivery.Options{Recorder: actordelivery.JSONRecorder(&log, func(err error) { t.Errorf("recorder: %v", err) })})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		var n atomic.Int64
		handler := func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) {
			if n.Add(1)%4 == 0 {
				return nil, errors.New("odd failure")
			}
			return nil, nil
		}
		pub, err := actordelivery.NewPublisher(st, actordelivery.PublisherOptions{DeliverBatch: 8, PollInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 3)
		go func() {
			done <- actordelivery.RunWorkers(ctx, st, []string{"a"}, 2, handler, actordelivery.ConsumerOptions{
				BatchSize: 8, BatchWait: time.Millisecond, PollInterval: 3 * time.Millisecond, MaxPollInterval: 9 * time.Millisecond,
				Retry: actordelivery.Backoff{Base: 10 * time.Millisecond}})
		}()
		go func() {
			done <- actordelivery.RunWorkers(ctx, st, []string{"b"}, 1, handler, actordelivery.ConsumerOptions{
				Path: actordelivery.PathLeaseless, BatchSize: 8, PollInterval: 3 * time.Millisecond, MaxPollInterval: 9 * time.Millisecond,
				Retry: actordelivery.Backoff{Base: 10 * time.Millisecond}})
		}()
		go func() { done <- pub.Run(ctx) }()
		for i := 0; ctx.Err() == nil; i++ {
			mb := []string{"a", "b"}[i%2]
			var err error
			if i%3 == 0 {
				_, err = st.OutboxEnqueue(context.Background(), actordelivery.OutboxMessage{ID: fmt.Sprintf("o%d", i), Target: mb, MaxAttempts: 3})
			} else {
				_, err = st.Enqueue(context.Background(), actordelivery.NewMessage{Mailbox: mb, ID: fmt.Sprintf("m%d", i), MaxAttempts: 3,
					Key: []string{"", "k1", "k2"}[i%3]})
			}
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond)
		}
		for range 3 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		sum, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log.Bytes()), "batched"), 4096), observe.CheckOptions{})
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		if f != nil {
			t.Fatalf("finding on a batched workers' log of %d events: %s", sum.Events, f)
		}
		if sum.Events < 100 {
			t.Fatalf("only %d events recorded", sum.Events)
		}
		t.Logf("%d events checked clean", sum.Events)
	})
}
