package actordelivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEnqueueBatchIsEnqueues: EnqueueBatch is that many Enqueue calls in one transaction. For
// each seed, two stores start from the same rows (messages of two mailboxes, a dead letter, an id
// that Purge retired within its horizon, an acknowledged message); one runs a random batch with
// EnqueueBatch, the other the same messages with Enqueue inside one ExecTx. The batches draw ids
// from a small pool, so they repeat ids of the batch itself, of live and acknowledged messages,
// of the dead letter and of the retired id. The duplicates, every row of the two stores and the
// recorded enqueue events must be the same.
//
// Rerun one seed: go test ./actordelivery/ -run 'TestEnqueueBatchIsEnqueues/sqlite/seed=7' -v
func TestEnqueueBatchIsEnqueues(t *testing.T) { forEachBackend(t, testEnqueueBatchIsEnqueues) }

func testEnqueueBatchIsEnqueues(t *testing.T, b Backend) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			var batch []NewMessage
			for range 1 + rng.IntN(10) {
				m := NewMessage{Mailbox: []string{"a", "b"}[rng.IntN(2)], ID: fmt.Sprintf("m%d", rng.IntN(9)),
					MaxAttempts: 1 + rng.IntN(3), Priority: rng.IntN(3), Delay: time.Duration(rng.IntN(3)) * time.Second,
					Payload: []byte(fmt.Sprintf("p%d", rng.IntN(100)))}
				if rng.IntN(2) == 0 {
					m.Key = fmt.Sprintf("k%d", rng.IntN(2))
				}
				if rng.IntN(5) == 0 {
					m.Payload = nil
				}
				batch = append(batch, m)
			}
			one, oneLog := enqueueBatchStore(t, b)
			many, manyLog := enqueueBatchStore(t, b)
			oneLog.Reset()
			manyLog.Reset()
			got, err := one.EnqueueBatch(ctx, batch)
			if err != nil {
				t.Fatalf("EnqueueBatch: %v", err)
			}
			want := make([]bool, len(batch))
			err = many.ExecTx(ctx, false, func(ctx context.Context) error {
				for i, m := range batch {
					var err error
					if want[i], err = many.Enqueue(ctx, m); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Enqueue calls: %v", err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("duplicates of %v (-Enqueue calls +EnqueueBatch):\n%s", ids(batch), d)
			}
			if d := cmp.Diff(storeRows(t, many), storeRows(t, one)); d != "" {
				t.Errorf("rows after %v (-Enqueue calls +EnqueueBatch):\n%s", ids(batch), d)
			}
			if d := cmp.Diff(manyLog.String(), oneLog.String()); d != "" {
				t.Errorf("recorded events (-Enqueue calls +EnqueueBatch):\n%s", d)
			}
		})
	}
}

// enqueueBatchStore opens a recording store on a manual clock holding the rows
// TestEnqueueBatchIsEnqueues starts from, and returns it with its log.
func enqueueBatchStore(t *testing.T, b Backend) (*Store, *bytes.Buffer) {
	t.Helper()
	ctx := context.Background()
	var log bytes.Buffer
	clk := NewManualClock(base)
	s := openAt(t, b, testTarget(t, b), Options{Clock: clk, Recorder: JSONRecorder(&log, func(err error) { t.Errorf("recorder: %v", err) })})
	mustEnqueue(t, s, NewMessage{Mailbox: "a", ID: "m1"})
	mustEnqueue(t, s, NewMessage{Mailbox: "b", ID: "m2", Key: "k1"})
	mustEnqueue(t, s, NewMessage{Mailbox: "a", ID: "m3"})
	mustEnqueue(t, s, NewMessage{Mailbox: "a", ID: "m4"})
	mustEnqueue(t, s, NewMessage{Mailbox: "b", ID: "m5"})
	if err := s.AckByID(ctx, "m5"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if err := s.AckByID(ctx, "m4"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeadLetter(ctx, "m3", "test"); err != nil {
		t.Fatal(err)
	}
	// m5, acknowledged a minute ago, is purged and its id retired for an hour; m4 and the dead
	// letter m3 stay.
	if res, err := s.PurgeAll(ctx, 30*time.Second, time.Hour, 10); err != nil || res.Total() != 1 || res.Acked != 1 {
		t.Fatalf("purge: %+v, %v", res, err)
	}
	return s, &log
}

// storeRows is every durable row of s, as the recorder's snapshot states them.
func storeRows(t *testing.T, s *Store) []string {
	t.Helper()
	var rows []string
	err := s.ExecTx(context.Background(), true, func(ctx context.Context) error {
		return s.snapshotRows(ctx, s.txFrom(ctx).tx, func(r *SnapshotRow) { rows = append(rows, fmt.Sprintf("%+v", *r)) })
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func ids(ms []NewMessage) string {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s/%s", m.Mailbox, m.ID)
	}
	return b.String()
}

// TestEnqueueBatchRefusesBadMessage: a batch with a message Enqueue would refuse is refused whole,
// naming the message, and enqueues nothing.
func TestEnqueueBatchRefusesBadMessage(t *testing.T) {
	forEachBackend(t, testEnqueueBatchRefusesBadMessage)
}

func testEnqueueBatchRefusesBadMessage(t *testing.T, b Backend) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		bad  NewMessage
		want string
	}{
		{"empty id", NewMessage{Mailbox: "a", MaxAttempts: 1}, "message 1 of 3: actordelivery: EnqueueBatch: invalid argument: id is empty"},
		{"no attempts", NewMessage{Mailbox: "a", ID: "x", MaxAttempts: 0}, "message 1 of 3: actordelivery: EnqueueBatch: invalid argument: max_attempts 0"},
		{"negative delay", NewMessage{Mailbox: "a", ID: "x", MaxAttempts: 1, Delay: -time.Second}, "message 1 of 3: actordelivery: EnqueueBatch: invalid argument: delay -1s is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := testStore(t, b)
			batch := []NewMessage{{Mailbox: "a", ID: "ok1", MaxAttempts: 1}, tc.bad, {Mailbox: "a", ID: "ok2", MaxAttempts: 1}}
			dups, err := s.EnqueueBatch(ctx, batch)
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("EnqueueBatch: got %v, %v; want ErrInvalidArgument with %q", dups, err, tc.want)
			}
			if m, err := s.Peek(ctx, "a"); err != nil || m != nil {
				t.Fatalf("a refused batch enqueued %+v (%v)", m, err)
			}
		})
	}
	s, _ := testStore(t, b)
	if dups, err := s.EnqueueBatch(ctx, nil); err != nil || dups != nil {
		t.Fatalf("empty batch: %v, %v", dups, err)
	}
}

// TestEnqueueBatchWakes: the subscribers of every mailbox a batch inserts into are woken after its
// commit, and on PostgreSQL so are another store's (its NOTIFY); a mailbox whose every message
// was a duplicate is not.
func TestEnqueueBatchWakes(t *testing.T) { forEachBackend(t, testEnqueueBatchWakes) }

func testEnqueueBatchWakes(t *testing.T, b Backend) {
	ctx := context.Background()
	target := testTarget(t, b)
	s := openAt(t, b, target, Options{})
	mustEnqueue(t, s, NewMessage{Mailbox: "c", ID: "c1"})
	watch := []*Store{s}
	if b == BackendPostgres {
		watch = append(watch, openAt(t, b, target, Options{}))
	}
	type sub struct {
		name string
		ch   <-chan struct{}
	}
	var woken, quiet []sub
	for k, w := range watch {
		for _, mb := range []string{"a", "b", "c"} {
			ch, cancel := w.Subscribe(mb)
			defer cancel()
			x := sub{fmt.Sprintf("store %d, mailbox %s", k, mb), ch}
			if mb == "c" {
				quiet = append(quiet, x)
			} else {
				woken = append(woken, x)
			}
		}
	}
	dups, err := s.EnqueueBatch(ctx, []NewMessage{{Mailbox: "a", ID: "a1", MaxAttempts: 1}, {Mailbox: "c", ID: "c1", MaxAttempts: 1},
		{Mailbox: "b", ID: "b1", MaxAttempts: 1}, {Mailbox: "a", ID: "a2", MaxAttempts: 1}})
	if err != nil || !slices.Equal(dups, []bool{false, true, false, false}) {
		t.Fatalf("EnqueueBatch: %v, %v", dups, err)
	}
	for _, x := range woken {
		select {
		case <-x.ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no wake-up within 5s", x.name)
		}
	}
	for _, x := range quiet {
		select {
		case <-x.ch:
			t.Fatalf("%s: woken, but the batch inserted nothing there", x.name)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
