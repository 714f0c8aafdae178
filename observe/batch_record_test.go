package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/actordelivery/record"
	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/observe"
)

// batchRetry retries a failure after a delay that grows with the attempt, so the parts of one
// batch ask for different delays (the batch gives them all the first one's), and declines an
// error that says "give up".
type batchRetry struct{}

func (batchRetry) Retry(err error, attempt int) (time.Duration, bool) {
	if strings.Contains(err.Error(), "give up") {
		return 0, false
	}
	return time.Duration(7+13*attempt) * time.Millisecond, true
}

// recordBatched records, on a recording store opened by open, two leased and one leaseless
// batched worker (BatchSize 8) and a batched fold publisher (DeliverBatch 8) for about a second
// of wall-clock time, while messages and outbox rows arrive. Handlers fail now and then (some
// retried, some declined), some Effects fail (the batch then commits in its careful form), some
// handlers outlive their lease, Check refuses some rows, and some outbox rows carry the id of a
// message of the other mailbox (an id collision). It returns the log.
func recordBatched(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) []byte {
	t.Helper()
	var log bytes.Buffer
	st, err := open(actordelivery.Options{Recorder: actordelivery.JSONRecorder(&log, func(err error) { t.Errorf("recorder: %v", err) })})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	var n atomic.Int64
	handler := func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) {
		switch k := n.Add(1); {
		case k%11 == 0:
			return nil, errors.New("give up")
		case k%4 == 0:
			return nil, errors.New("odd failure")
		case k%9 == 0:
			return func(context.Context) error { return errors.New("effects failed") }, nil
		case k%17 == 0:
			time.Sleep(60 * time.Millisecond) // past the lease
		}
		return func(context.Context) error { return nil }, nil
	}
	pub, err := actordelivery.NewPublisher(st, actordelivery.PublisherOptions{DeliverBatch: 8, PollInterval: 5 * time.Millisecond,
		Batch: 8, RetryDelay: 15 * time.Millisecond,
		Check: func(_ context.Context, row actordelivery.OutboxRow) error {
			if strings.HasSuffix(row.ID, "7") {
				return errors.New("refused")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 3)
	go func() {
		done <- actordelivery.RunWorkers(ctx, st, []string{"a"}, 2, handler, actordelivery.ConsumerOptions{
			BatchSize: 8, BatchWait: time.Millisecond, LeaseFor: 40 * time.Millisecond, PollInterval: 3 * time.Millisecond,
			MaxPollInterval: 9 * time.Millisecond, Retry: batchRetry{}})
	}()
	go func() {
		done <- actordelivery.RunWorkers(ctx, st, []string{"b"}, 1, handler, actordelivery.ConsumerOptions{
			Path: actordelivery.PathLeaseless, BatchSize: 8, PollInterval: 3 * time.Millisecond, MaxPollInterval: 9 * time.Millisecond,
			Retry: batchRetry{}})
	}()
	go func() { done <- pub.Run(ctx) }()
	for i := 0; ctx.Err() == nil; i++ {
		mb := []string{"a", "b"}[i%2]
		var err error
		switch {
		case i%10 == 9:
			// The id of the message enqueued into the other mailbox just before: a collision.
			_, err = st.OutboxEnqueue(context.Background(), actordelivery.OutboxMessage{ID: fmt.Sprintf("m%d", i-1), Target: mb, MaxAttempts: 3})
		case i%3 == 0:
			_, err = st.OutboxEnqueue(context.Background(), actordelivery.OutboxMessage{ID: fmt.Sprintf("o%d", i), Target: mb, MaxAttempts: 3})
		default:
			_, err = st.Enqueue(context.Background(), actordelivery.NewMessage{Mailbox: mb, ID: fmt.Sprintf("m%d", i), MaxAttempts: 4,
				Key: []string{"", "k1", "k2"}[i%3], Priority: i % 5 / 4})
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%8 == 0 {
			time.Sleep(4 * time.Millisecond)
		}
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	return log.Bytes()
}

// batchStats counts what a log's batch steps did.
type batchStats struct {
	fetches        map[string]int // per profile, the consumer_fetch_batch events that got 2 or more messages
	handles        int            // consumer_handle_batch events
	retried        int            // consumer_handle_batch events that retried a message
	delivers       int            // publisher_deliver_batch events with 2 or more rows
	single         int            // consumer_fetch or consumer_handle events (a batched worker records none)
	collided, lost int            // batch rows dead-lettered for a collision, batch parts that lost their lease
}

// covered reports whether the log holds every kind of batch the test asks for.
func (s batchStats) covered() bool {
	return s.fetches["leased"] > 0 && s.fetches["leaseless"] > 0 && s.delivers > 0 && s.retried > 0
}

func countBatches(t *testing.T, log []byte) batchStats {
	t.Helper()
	s := batchStats{fetches: map[string]int{}}
	for line := range bytes.Lines(log) {
		var ev record.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch ev.Op {
		case "consumer_fetch_batch":
			if len(ev.Result.Messages) >= 2 {
				s.fetches[ev.Args.Profile]++
			}
		case "consumer_handle_batch":
			s.handles++
			for _, a := range ev.Result.Actions {
				switch a {
				case actordelivery.ActionRetried:
					s.retried++
				case actordelivery.ActionLeaseLost:
					s.lost++
				}
			}
		case "publisher_deliver_batch":
			if len(ev.Args.IDs) >= 2 {
				s.delivers++
			}
			for _, a := range ev.Result.Actions {
				if a == actordelivery.ActionDeadLettered {
					s.collided++
				}
			}
		case "consumer_fetch", "consumer_handle":
			s.single++
		}
	}
	return s
}

// TestBatchedWorkersRecordChecksClean records batched workers (both paths) and a batched
// publisher on a recording store, on both backends, and checks the log as `pconform check` does,
// with one job and with several (--jobs). The log must hold real batches (two or more messages a
// fetch, on each path, and two or more rows a delivery) and check clean.
//
// Rerun: bash scripts/pg.sh go test ./observe/ -run TestBatchedWorkersRecord -v
func TestBatchedWorkersRecordChecksClean(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: records a store for a second on the wall clock")
	}
	forBackends(t, func(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) {
		// The run is a second of the wall clock: on a loaded machine it may end before the
		// publisher delivers a batch of two rows. Another run, up to three, before that fails.
		var log []byte
		var s batchStats
		for run := 1; ; run++ {
			log = recordBatched(t, open)
			s = countBatches(t, log)
			t.Logf("run %d: batches: %+v", run, s)
			if s.covered() || run == 3 {
				break
			}
		}
		switch {
		case s.fetches["leased"] == 0 || s.fetches["leaseless"] == 0:
			t.Fatalf("want batch fetches of 2 or more messages on both paths, got %v", s.fetches)
		case s.delivers == 0:
			t.Fatal("no publisher_deliver_batch of 2 or more rows")
		case s.retried == 0:
			t.Fatal("no batch handle retried a message")
		case s.single != 0:
			t.Fatalf("%d single consumer steps in a log of batched workers", s.single)
		}
		sum, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "batched"), 4096), observe.CheckOptions{})
		if err != nil {
			t.Fatalf("check: %v\nthe log: %s", err, keepLog(t, log))
		}
		if f != nil {
			t.Fatalf("finding on a batched workers' log of %d events: %s\nthe log: %s", sum.Events, f, keepLog(t, log))
		}
		// The counts above already require real batches; this catches a check that read almost
		// none of the log. A loaded machine records as few as 79 events in the run's second.
		if sum.Events < 20 {
			t.Fatalf("only %d events checked", sum.Events)
		}
		jsum, f, err := observe.CheckJobs(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "batched"), 4096), observe.CheckOptions{Log: bytes.NewReader(log)}, 3)
		if err != nil {
			t.Fatalf("check --jobs 3: %v\nthe log: %s", err, keepLog(t, log))
		}
		if f != nil {
			t.Fatalf("check --jobs 3: finding: %s\nthe log: %s", f, keepLog(t, log))
		}
		t.Logf("%d events checked clean (%d with 3 jobs)", sum.Events, jsum.Events)
		if !pOnPath(t) {
			return
		}
		// The streaming P oracle beside the model, as check --p runs it: the spec monitors judge
		// the batches from the events SpecDeriver derives for them.
		pc, err := bridge.NewStreamChecker(context.Background(), bridge.Config{ProjectDir: filepath.Join("..", "models", "p")})
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		psum, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "batched"), 4096),
			observe.CheckOptions{Checkers: []observe.Checker{pc}})
		if err != nil {
			t.Fatalf("check --p: %v\nthe log: %s", err, keepLog(t, log))
		}
		if err := pc.Close(); err != nil {
			t.Fatalf("check --p: P oracle: %v\nthe log: %s", err, keepLog(t, log))
		}
		if f != nil {
			t.Fatalf("check --p: finding: %s\nthe log: %s", f, keepLog(t, log))
		}
		if pc.Spec == 0 {
			t.Fatal("check --p: the P oracle was sent no spec event")
		}
		t.Logf("check --p: %d events, %d spec events, every monitor holds", psum.Events, pc.Spec)
	})
}

// pOnPath reports whether the P tool is on PATH, saying so in the test's log when it is not.
func pOnPath(t *testing.T) bool {
	t.Helper()
	if _, err := exec.LookPath("p"); err != nil {
		t.Log("the P tool `p` is not on PATH (run `. scripts/env.sh`): the P oracle's part is skipped")
		return false
	}
	return true
}
