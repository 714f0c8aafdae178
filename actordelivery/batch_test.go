package actordelivery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var paths = []Path{PathLeased, PathLeaseless}

// batchIDs are the message ids of ds, in order.
func batchIDs(ds []Delivery) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.Message.ID
	}
	return ids
}

func mustFetchBatch(t *testing.T, c *Consumer) []Delivery {
	t.Helper()
	ds, err := c.FetchBatch(context.Background())
	if err != nil {
		t.Fatalf("FetchBatch: %v", err)
	}
	return ds
}

// checkpointed handles a message by writing the checkpoint "cp-<id>", which must not exist yet:
// a second acknowledgement of one message would fail its Effects.
func checkpointed(s *Store) Handler {
	return func(_ context.Context, m *Message) (Effects, error) {
		return func(ctx context.Context) error {
			_, err := s.SaveCheckpoint(ctx, "cp-"+m.ID, []byte("x"), 0)
			return err
		}, nil
	}
}

func hasCheckpoint(t *testing.T, s *Store, id string) bool {
	t.Helper()
	_, v, err := s.LoadCheckpoint(context.Background(), "cp-"+id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	return v > 0
}

func TestBatchFIFOPerKeyAcrossBatches(t *testing.T) {
	forEachBackend(t, testBatchFIFOPerKeyAcrossBatches)
}

// testBatchFIFOPerKeyAcrossBatches: batches take each key's head only, one message per key,
// highest priority first, and successive batches keep every key's order.
func testBatchFIFOPerKeyAcrossBatches(t *testing.T, b Backend) {
	for _, path := range paths {
		t.Run(path.String(), func(t *testing.T) {
			s, _ := testStore(t, b)
			for _, m := range []NewMessage{
				{ID: "a1", Key: "a"}, {ID: "b1", Key: "b"}, {ID: "a2", Key: "a"}, {ID: "u1"},
				{ID: "b2", Key: "b"}, {ID: "p1", Key: "a", Priority: 5}, {ID: "u2"}, {ID: "a3", Key: "a"},
			} {
				m.Mailbox = "mb"
				mustEnqueue(t, s, m)
			}
			c := newConsumer(t, s, checkpointed(s), ConsumerOptions{Path: path, BatchSize: 3})
			// p1 is of key a: its priority orders it among eligible messages, but it is
			// eligible only as its key's head, the first ready message of the key by seq.
			want := [][]string{{"a1", "b1", "u1"}, {"a2", "b2", "u2"}, {"p1"}, {"a3"}, nil}
			for i, w := range want {
				ds := mustFetchBatch(t, c)
				if got := batchIDs(ds); !slices.Equal(got, w) && !(len(got) == 0 && len(w) == 0) {
					t.Fatalf("batch %d = %v, want %v", i, got, w)
				}
				outs, err := c.HandleBatch(context.Background(), ds)
				if err != nil {
					t.Fatal(err)
				}
				for j, o := range outs {
					if o.Action != ActionAcked {
						t.Fatalf("batch %d message %s: %+v", i, ds[j].Message.ID, o)
					}
				}
			}
		})
	}
}

func TestBatchSkipsNoKeyHead(t *testing.T) { forEachBackend(t, testBatchSkipsNoKeyHead) }

// testBatchSkipsNoKeyHead: a key whose head another worker leased gives the batch nothing, and
// neither does one whose head waits for a retry.
func testBatchSkipsNoKeyHead(t *testing.T, b Backend) {
	for _, path := range paths {
		t.Run(path.String(), func(t *testing.T) {
			s, clk := testStore(t, b)
			for _, id := range []string{"a1", "a2", "c1", "c2", "b1", "b2"} {
				mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: id, Key: id[:1]})
			}
			if m := mustLease(t, s, "mb", time.Minute); m.ID != "a1" {
				t.Fatalf("leased %s, want a1", m.ID)
			}
			if err := s.NackByID(context.Background(), "c1", time.Minute); err != nil {
				t.Fatal(err)
			}
			c := newConsumer(t, s, okHandler, ConsumerOptions{Path: path, BatchSize: 8})
			if got := batchIDs(mustFetchBatch(t, c)); !slices.Equal(got, []string{"b1"}) {
				t.Fatalf("batch = %v, want [b1]", got)
			}
			clk.Advance(2 * time.Minute)
			// a1's lease, c1's delay and (leased) the batch's own lease of b1 have run out; c1 is
			// available last.
			if got := batchIDs(mustFetchBatch(t, c)); !slices.Equal(got, []string{"a1", "b1", "c1"}) {
				t.Fatalf("after expiry, batch = %v, want [a1 b1 c1]", got)
			}
		})
	}
}

// failOn fails the delivery of the ids in fail (the handler), and in failEffects (the Effects, after
// writing their checkpoint, which the failure must roll back).
func failOn(s *Store, fail, failEffects map[string]bool) Handler {
	return func(ctx context.Context, m *Message) (Effects, error) {
		if fail[m.ID] {
			return nil, errHandler
		}
		eff := checkpointed(s)
		e, _ := eff(ctx, m)
		return func(ctx context.Context) error {
			if err := e(ctx); err != nil {
				return err
			}
			if failEffects[m.ID] {
				return errors.New("effects fail")
			}
			return nil
		}, nil
	}
}

func TestBatchFailedHandler(t *testing.T) { forEachBackend(t, testBatchFailedHandler) }

// testBatchFailedHandler: a batch whose handlers fail, or whose Effects fail, commits the others'
// acknowledgements with their effects, and each failure's retry or dead letter at the effective
// attempt (leaseless: stored + 1) in the same transaction, never acknowledged.
func testBatchFailedHandler(t *testing.T, b Backend) {
	for _, path := range paths {
		t.Run(path.String(), func(t *testing.T) {
			s, _ := testStore(t, b)
			msgs := []NewMessage{{ID: "m1"}, {ID: "m2"}, {ID: "m3", MaxAttempts: 1}, {ID: "m4"}, {ID: "m5"}}
			for _, m := range msgs {
				m.Mailbox = "mb"
				mustEnqueue(t, s, m)
			}
			h := failOn(s, map[string]bool{"m2": true, "m3": true}, map[string]bool{"m4": true})
			c := newConsumer(t, s, h, ConsumerOptions{Path: path, BatchSize: 8, Retry: &recordingPolicy{}})
			commits := s.Stats().Commits
			outs, err := c.HandleBatch(context.Background(), mustFetchBatch(t, c))
			if err != nil {
				t.Fatal(err)
			}
			want := []Outcome{{Action: ActionAcked}, {Action: ActionRetried, Attempt: 1},
				{Action: ActionDeadLettered, Attempt: 1}, {Action: ActionRetried, Attempt: 1}, {Action: ActionAcked}}
			if !slices.Equal(outs, want) {
				t.Fatalf("outcomes = %v, want %v", outs, want)
			}
			if n := s.Stats().Commits - commits; path == PathLeaseless && n != 1 || path == PathLeased && n != 2 {
				t.Errorf("%d commits for fetch and handle", n)
			}
			for id, want := range map[string]bool{"m1": true, "m2": false, "m4": false, "m5": true} {
				if hasCheckpoint(t, s, id) != want {
					t.Errorf("checkpoint of %s written = %v, want %v", id, !want, want)
				}
				m := mustGet(t, s, id)
				if (m.State == StateAcked) != want || (!want && (m.Attempts != 1 || m.Token != "")) {
					t.Errorf("%s: state %s attempts %d token %q", id, m.State, m.Attempts, m.Token)
				}
			}
			dl, err := s.ListDeadLetters(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(dl) != 1 || dl[0].ID != "m3" || dl[0].Attempts != 1 || dl[0].Reason != ReasonMaxAttempts {
				t.Fatalf("dead letters = %+v, want m3 at attempt 1", dl)
			}
		})
	}
}

func TestBatchCommitFailure(t *testing.T) { forEachBackend(t, testBatchCommitFailure) }

// testBatchCommitFailure: a batch whose transaction fails to commit (its context ends before the
// commit, from inside the last message's Effects) changes nothing: no acknowledgement, no effect,
// no retry of the failed handler; each message is delivered again by the lease or peek rules and
// then acknowledged once.
func testBatchCommitFailure(t *testing.T, b Backend) {
	for _, path := range paths {
		t.Run(path.String(), func(t *testing.T) {
			s, clk := testStore(t, b)
			for _, id := range []string{"m1", "m2", "m3"} {
				mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: id, Key: id})
			}
			ctx, cancel := context.WithCancel(context.Background())
			failing := true
			inner := failOn(s, map[string]bool{"m2": true}, nil)
			h := func(hctx context.Context, m *Message) (Effects, error) {
				eff, err := inner(hctx, m)
				if err != nil || !failing || m.ID != "m3" {
					return eff, err
				}
				return func(ctx context.Context) error {
					if err := eff(ctx); err != nil {
						return err
					}
					cancel() // the batch's transaction now ends without committing
					return nil
				}, nil
			}
			c := newConsumer(t, s, h, ConsumerOptions{Path: path, BatchSize: 8, LeaseFor: time.Minute, Retry: &recordingPolicy{}})
			ds := mustFetchBatch(t, c)
			if outs, err := c.HandleBatch(ctx, ds); err == nil || len(outs) != 0 {
				t.Fatalf("HandleBatch = %v, %v; want a commit error", outs, err)
			}
			wantAttempts := 0
			if path == PathLeased {
				wantAttempts = 1
			}
			for _, id := range []string{"m1", "m2", "m3"} {
				m := mustGet(t, s, id)
				if m.State != StateReady || m.Attempts != wantAttempts || hasCheckpoint(t, s, id) {
					t.Fatalf("after the failed commit %s: state %s attempts %d, checkpoint %v", id, m.State, m.Attempts, hasCheckpoint(t, s, id))
				}
			}
			if path == PathLeased {
				if got := mustFetchBatch(t, c); len(got) != 0 {
					t.Fatalf("leases still live, but fetched %v", batchIDs(got))
				}
				clk.Advance(time.Minute)
			}
			failing = false
			ds = mustFetchBatch(t, c)
			if got := batchIDs(ds); !slices.Equal(got, []string{"m1", "m2", "m3"}) {
				t.Fatalf("again: batch %v", got)
			}
			outs, err := c.HandleBatch(context.Background(), ds)
			if err != nil {
				t.Fatal(err)
			}
			want := []Outcome{{Action: ActionAcked}, {Action: ActionRetried, Attempt: wantAttempts + 1}, {Action: ActionAcked}}
			if !slices.Equal(outs, want) {
				t.Fatalf("outcomes = %v, want %v", outs, want)
			}
			if !hasCheckpoint(t, s, "m1") || hasCheckpoint(t, s, "m2") || !hasCheckpoint(t, s, "m3") {
				t.Fatal("checkpoints not as the second batch committed them")
			}
		})
	}
}

func TestBatchWorkersLoseNothing(t *testing.T) { forEachBackend(t, testBatchWorkersLoseNothing) }

// testBatchWorkersLoseNothing: batched workers deliver every message, acknowledge each exactly
// once (a second acknowledgement would fail its checkpoint Effects and show as a retry), keep each
// key's order, and retry each failed first delivery.
func testBatchWorkersLoseNothing(t *testing.T, b Backend) {
	for _, path := range paths {
		t.Run(path.String(), func(t *testing.T) {
			s, _ := testStore(t, b)
			mailboxes := []string{"mb0", "mb1", "mb2"}
			const perBox = 30
			for _, mb := range mailboxes {
				for i := range perBox {
					mustEnqueue(t, s, NewMessage{Mailbox: mb, ID: fmt.Sprintf("%s-%02d", mb, i), Key: fmt.Sprintf("k%d", i%4), MaxAttempts: 5})
				}
			}
			var mu sync.Mutex
			order := map[string][]string{} // mailbox/key -> ids in handling order of successes
			failedOnce := map[string]bool{}
			inner := checkpointed(s)
			h := func(ctx context.Context, m *Message) (Effects, error) {
				mu.Lock()
				defer mu.Unlock()
				if strings.HasSuffix(m.ID, "5") && !failedOnce[m.ID] {
					failedOnce[m.ID] = true
					return nil, errHandler
				}
				eff, _ := inner(ctx, m)
				k := m.Mailbox + "/" + m.Key
				order[k] = append(order[k], m.ID)
				return eff, nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- RunWorkers(ctx, s, mailboxes, 3, h, ConsumerOptions{Path: path, BatchSize: 4,
					PollInterval: time.Millisecond, MaxPollInterval: 5 * time.Millisecond, Retry: &recordingPolicy{}})
			}()
			deadline := time.Now().Add(30 * time.Second)
			for {
				all, err := s.ListMessages(context.Background(), "")
				if err != nil {
					t.Fatal(err)
				}
				acked := 0
				for _, m := range all {
					if m.State == StateAcked {
						acked++
					}
				}
				if acked == len(mailboxes)*perBox {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d acked after 30s", acked, len(mailboxes)*perBox)
				}
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			dl, err := s.ListDeadLetters(context.Background())
			if err != nil || len(dl) != 0 {
				t.Fatalf("dead letters %v, %v", dl, err)
			}
			for k, ids := range order {
				// A message handled twice shows as a repeat here even when its second Effects
				// failed; the ids of a key must be handled once each, in order.
				if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
					t.Errorf("key %s handled in order %v", k, ids)
				}
				for _, id := range ids {
					if !hasCheckpoint(t, s, id) {
						t.Errorf("%s acked without its checkpoint", id)
					}
				}
			}
		})
	}
}

func TestBatchOptions(t *testing.T) {
	s, _ := testStore(t, BackendSQLite)
	for _, o := range []ConsumerOptions{{BatchSize: -1}, {BatchSize: MaxBatchSize + 1}, {BatchSize: 2, BatchWait: -time.Second}} {
		o.Mailbox = "mb"
		if _, err := NewConsumer(s, okHandler, o); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewConsumer(%+v) = %v, want ErrInvalidArgument", o, err)
		}
	}
	c := newConsumer(t, s, okHandler, ConsumerOptions{BatchSize: 2})
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "k1", Key: "k"})
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "k2", Key: "k"})
	ds := mustFetchBatch(t, c)
	ds = append(ds, ds[0])
	ds[1].Message.ID = "k2"
	if _, err := c.HandleBatch(context.Background(), ds); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), `key "k"`) {
		t.Fatalf("two messages of one key: %v", err)
	}
}

func TestBatchPublish(t *testing.T) { forEachBackend(t, testBatchPublish) }

// testBatchPublish: a folded batch delivers its rows in one transaction; a row whose claim is
// lost contributes nothing while the others commit; a failed commit writes nothing and releases
// every row of the batch but one found under a lost claim, which stays claim_lost.
func testBatchPublish(t *testing.T, b Backend) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		failTx   int
		loseRow  int // index of the row whose token is wrong; -1 for none
		want     []string
		enqueued []string
	}{
		{"delivered", 0, -1, []string{ActionDelivered, ActionDelivered, ActionDelivered}, []string{"o1", "o2", "o3"}},
		{"claim lost", 0, 1, []string{ActionDelivered, ActionClaimLost, ActionDelivered}, []string{"o1", "o3"}},
		{"commit failed", 1, -1, []string{ActionCommitFailed, ActionCommitFailed, ActionCommitFailed}, nil},
		{"commit failed, claim lost", 1, 1, []string{ActionCommitFailed, ActionClaimLost, ActionCommitFailed}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := testStore(t, b)
			mustOutbox(t, s, "o1", "o2", "o3")
			faulty := &faultyStore{Store: s}
			p := newPublisher(t, faulty, PublisherOptions{Mode: ModeFold, DeliverBatch: 8, RetryDelay: time.Second})
			rows, err := p.Claim(ctx)
			if err != nil || len(rows) != 3 {
				t.Fatalf("claim: %v, %v", rows, err)
			}
			if tc.loseRow >= 0 {
				rows[tc.loseRow].ClaimToken = "stale"
			}
			faulty.failTx = tc.failTx
			commits := s.Stats().Commits
			res, err := p.DeliverBatch(ctx, rows)
			if (err != nil) != (tc.failTx > 0) {
				t.Fatalf("DeliverBatch error %v", err)
			}
			got := make([]string, len(res))
			for i, r := range res {
				got[i] = r.Action
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("actions %v, want %v", got, tc.want)
			}
			if tc.failTx == 0 && s.Stats().Commits-commits != 1 {
				t.Errorf("%d commits, want 1", s.Stats().Commits-commits)
			}
			msgs, err := s.ListMessages(ctx, "target")
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range msgs {
				ids = append(ids, m.ID)
			}
			if !slices.Equal(ids, tc.enqueued) {
				t.Fatalf("enqueued %v, want %v", ids, tc.enqueued)
			}
			for i, id := range []string{"o1", "o2", "o3"} {
				r := outboxState(t, s, id)
				switch tc.want[i] {
				case ActionDelivered:
					if r.State != StateCompleted {
						t.Errorf("%s: %s, want completed", id, r.State)
					}
				case ActionClaimLost:
					if r.State != StatePending || r.ClaimToken == "" {
						t.Errorf("%s: %s claim %q, want pending under its claim", id, r.State, r.ClaimToken)
					}
				case ActionCommitFailed:
					if r.State != StatePending || r.ClaimToken != "" {
						t.Errorf("%s: %s claim %q, want pending and released", id, r.State, r.ClaimToken)
					}
				}
			}
		})
	}
}

// attemptDelay retries every failure after attempt seconds.
type attemptDelay struct{}

func (attemptDelay) Retry(_ error, attempt int) (time.Duration, bool) {
	return time.Duration(attempt) * time.Second, true
}

func TestBatchRetriesShareOneDelay(t *testing.T) { forEachBackend(t, testBatchRetriesShareOneDelay) }

// testBatchRetriesShareOneDelay: the failed messages of one batch are each retried or not as the
// policy says, and the retried ones all wait the delay it gave the first of them (the policy asks
// 2s for m1, on its second attempt, and 1s for m2), on both paths.
func testBatchRetriesShareOneDelay(t *testing.T, b Backend) {
	ctx := context.Background()
	for _, path := range paths {
		t.Run(path.String(), func(t *testing.T) {
			s, clock := testStore(t, b)
			for _, id := range []string{"m1", "m2"} {
				mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: id, MaxAttempts: 5})
			}
			// m1's first attempt is spent: its next delivery is its second.
			m := mustLease(t, s, "mb", time.Second)
			if err := s.Nack(ctx, m.ID, m.Token, 0); err != nil || m.ID != "m1" {
				t.Fatalf("nack %s: %v", m.ID, err)
			}
			c := newConsumer(t, s, failOn(s, map[string]bool{"m1": true, "m2": true}, nil),
				ConsumerOptions{Path: path, BatchSize: 4, Retry: attemptDelay{}})
			outs, err := c.HandleBatch(ctx, mustFetchBatch(t, c))
			if err != nil {
				t.Fatal(err)
			}
			want := []Outcome{{Action: ActionRetried, Attempt: 2}, {Action: ActionRetried, Attempt: 1}}
			if !slices.Equal(outs, want) {
				t.Fatalf("outcomes %v, want %v", outs, want)
			}
			due := clock.Now().Add(2 * time.Second)
			for _, id := range []string{"m1", "m2"} {
				if got := mustGet(t, s, id).AvailableAt; !got.Equal(due) {
					t.Errorf("%s available at %v, want %v (the first retried message's delay, 2s)", id, got, due)
				}
			}
		})
	}
}

func TestBatchPublishIDCollision(t *testing.T) { forEachBackend(t, testBatchPublishIDCollision) }

// testBatchPublishIDCollision: in a folded batch, a row whose id is a message of another mailbox
// is dead-lettered for the collision (as a single fold delivery dead-letters it), and the other
// rows are delivered.
func testBatchPublishIDCollision(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	mustOutbox(t, s, "o1", "o2", "o3")
	mustEnqueue(t, s, NewMessage{Mailbox: "other", ID: "o2", MaxAttempts: 3})
	p := newPublisher(t, s, PublisherOptions{Mode: ModeFold, DeliverBatch: 8})
	rows, err := p.Claim(ctx)
	if err != nil || len(rows) != 3 {
		t.Fatalf("claim: %v, %v", rows, err)
	}
	res, err := p.DeliverBatch(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	want := []DeliveryResult{{Action: ActionDelivered}, {Action: ActionDeadLettered, Duplicate: true}, {Action: ActionDelivered}}
	if !slices.Equal(res, want) {
		t.Fatalf("results %v, want %v", res, want)
	}
	if r := outboxState(t, s, "o2"); r.State != StateDeadLetter || r.DeadReason != ReasonIDCollision("other") {
		t.Fatalf("o2: %s %q, want dead-lettered for the collision with mailbox other", r.State, r.DeadReason)
	}
	if m := mustGet(t, s, "o2"); m.Mailbox != "other" {
		t.Fatalf("message o2 is in mailbox %q, want other's left as it was", m.Mailbox)
	}
	for _, id := range []string{"o1", "o3"} {
		if r := outboxState(t, s, id); r.State != StateCompleted {
			t.Errorf("%s: %s, want completed", id, r.State)
		}
	}
}
