package actordelivery

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recordingPolicy records the attempts it is asked about and retries after a fixed delay.
type recordingPolicy struct {
	delay    time.Duration
	declines bool
	seen     []int
}

func (p *recordingPolicy) Retry(_ error, attempt int) (time.Duration, bool) {
	p.seen = append(p.seen, attempt)
	return p.delay, !p.declines
}

var errHandler = errors.New("handler says no")

// okHandler succeeds and writes nothing; failHandler fails with errHandler.
func okHandler(context.Context, *Message) (Effects, error)   { return nil, nil }
func failHandler(context.Context, *Message) (Effects, error) { return nil, errHandler }

func newConsumer(t testing.TB, s *Store, h Handler, opts ConsumerOptions) *Consumer {
	t.Helper()
	if opts.Mailbox == "" {
		opts.Mailbox = "mb"
	}
	c, err := NewConsumer(s, h, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConsumerAcks(t *testing.T) { forEachBackend(t, testConsumerAcks) }

func testConsumerAcks(t *testing.T, b Backend) {
	for _, path := range []Path{PathLeased, PathLeaseless} {
		t.Run(path.String(), func(t *testing.T) {
			ctx := context.Background()
			s, _ := testStore(t, b)
			mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "a", Payload: []byte("hello")})
			var seen []string
			c := newConsumer(t, s, func(_ context.Context, m *Message) (Effects, error) {
				seen = append(seen, m.ID+":"+string(m.Payload))
				return func(ctx context.Context) error {
					_, err := s.SaveCheckpoint(ctx, "actor", m.Payload, 0)
					return err
				}, nil
			}, ConsumerOptions{Path: path, LeaseFor: 10 * time.Second})
			d, err := c.Fetch(ctx)
			if err != nil || d == nil {
				t.Fatalf("Fetch = %v, %v", d, err)
			}
			wantAttempts, wantToken := 0, false
			if path == PathLeased {
				wantAttempts, wantToken = 1, true
			}
			if d.Message.Attempts != wantAttempts || (d.Message.Token != "") != wantToken || d.Path != path {
				t.Fatalf("delivery %+v", d)
			}
			out, err := c.Handle(ctx, d)
			if err != nil || out != (Outcome{Action: ActionAcked}) {
				t.Fatalf("Handle = %+v, %v", out, err)
			}
			m := mustGet(t, s, "a")
			if m.State != StateAcked || m.Attempts != wantAttempts || m.Token != "" {
				t.Fatalf("after ack: %+v", m)
			}
			if st, _, err := s.LoadCheckpoint(ctx, "actor"); err != nil || string(st) != "hello" {
				t.Fatalf("handler effect = %q, %v", st, err)
			}
			out, err = c.Step(ctx)
			if err != nil || out.Action != ActionIdle {
				t.Fatalf("Step on an empty mailbox = %+v, %v", out, err)
			}
			if out, _ := c.Handle(ctx, nil); out.Action != ActionIdle {
				t.Fatalf("Handle(nil) = %+v", out)
			}
			if diff := cmp.Diff([]string{"a:hello"}, seen); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}

// TestConsumerFailuresUntilDeadLetter fails a message max_attempts times on each path. Both paths
// must hand the retry policy the same effective attempts (1, 2), report 1, 2, 3, and end with the
// message dead-lettered with attempts == max_attempts: never stranded.
func TestConsumerFailuresUntilDeadLetter(t *testing.T) {
	forEachBackend(t, testConsumerFailuresUntilDeadLetter)
}

func testConsumerFailuresUntilDeadLetter(t *testing.T, b Backend) {
	const max = 3
	results := map[Path][]int{}
	for _, path := range []Path{PathLeased, PathLeaseless} {
		t.Run(path.String(), func(t *testing.T) {
			ctx := context.Background()
			s, clk := testStore(t, b)
			mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "a", MaxAttempts: max})
			policy := &recordingPolicy{delay: 5 * time.Second}
			// The handler succeeds but its effects fail after writing: the write must roll back
			// with the acknowledgement, and the delivery counts as failed.
			c := newConsumer(t, s, func(_ context.Context, m *Message) (Effects, error) {
				return func(ctx context.Context) error {
					if _, err := s.MarkProcessed(ctx, "c", m.ID, time.Hour); err != nil {
						return err
					}
					return errHandler
				}, nil
			}, ConsumerOptions{Path: path, LeaseFor: 10 * time.Second, Retry: policy})
			var actions []string
			var attempts []int
			for i := range max {
				out, err := c.Step(ctx)
				if err != nil {
					t.Fatal(err)
				}
				actions = append(actions, out.Action)
				attempts = append(attempts, out.Attempt)
				if i < max-1 {
					m := mustGet(t, s, "a")
					if m.Attempts != i+1 || m.Token != "" || !m.AvailableAt.Equal(clk.Now().Add(5*time.Second)) {
						t.Fatalf("after failure %d: %+v", i+1, m)
					}
					if id := peekID(t, s, "mb"); id != "" {
						t.Fatalf("retried message eligible before its delay: %q", id)
					}
				}
				clk.Advance(5 * time.Second)
			}
			if diff := cmp.Diff([]string{ActionRetried, ActionRetried, ActionDeadLettered}, actions); diff != "" {
				t.Fatalf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]int{1, 2, 3}, attempts); diff != "" {
				t.Fatalf("effective attempts (-want +got):\n%s", diff)
			}
			results[path] = policy.seen
			dls, _ := s.ListDeadLetters(ctx)
			if len(dls) != 1 || dls[0].ID != "a" || dls[0].Attempts != max || dls[0].Reason != ReasonMaxAttempts {
				t.Fatalf("dead letters: %+v", dls)
			}
			if _, err := s.GetMessage(ctx, "a"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("message still in the mailbox: %v", err)
			}
			// The failing handler's MarkProcessed rolled back every time.
			if already, _ := s.MarkProcessed(ctx, "c", "a", time.Hour); already {
				t.Fatal("a failed handler's effect was committed")
			}
			if out, _ := c.Step(ctx); out.Action != ActionIdle {
				t.Fatalf("after dead letter: %+v", out)
			}
		})
	}
	if diff := cmp.Diff(results[PathLeased], results[PathLeaseless]); diff != "" || len(results[PathLeased]) != max-1 {
		t.Fatalf("policy saw leased %v, leaseless %v; want the same %d attempts", results[PathLeased], results[PathLeaseless], max-1)
	}
}

func TestConsumerLeaseLostRollsBackHandler(t *testing.T) {
	forEachBackend(t, testConsumerLeaseLostRollsBackHandler)
}

func testConsumerLeaseLostRollsBackHandler(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "a", MaxAttempts: 5})
	c := newConsumer(t, s, func(_ context.Context, m *Message) (Effects, error) {
		return func(ctx context.Context) error {
			if _, err := s.SaveCheckpoint(ctx, "actor", []byte("effect"), 0); err != nil {
				return err
			}
			_, err := s.MarkProcessed(ctx, "c", m.ID, time.Hour)
			return err
		}, nil
	}, ConsumerOptions{Path: PathLeased, LeaseFor: 10 * time.Second})
	d, err := c.Fetch(ctx)
	if err != nil || d == nil {
		t.Fatal(d, err)
	}
	clk.Advance(10 * time.Second)
	other := mustLease(t, s, "mb", time.Minute) // another worker takes the expired lease
	out, err := c.Handle(ctx, d)
	if err != nil || out.Action != ActionLeaseLost {
		t.Fatalf("Handle = %+v, %v; want lease_lost", out, err)
	}
	if _, _, err := s.LoadCheckpoint(ctx, "actor"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("handler effect survived a lost lease: %v", err)
	}
	if already, _ := s.MarkProcessed(ctx, "c", "a", time.Hour); already {
		t.Fatal("handler's MarkProcessed survived a lost lease")
	}
	if m := mustGet(t, s, "a"); m.State != StateReady || m.Token != other.Token || m.Attempts != 2 {
		t.Fatalf("lost lease changed the row: %+v", m)
	}

	// The failure path's fenced nack reports lease_lost as well.
	failing := newConsumer(t, s, failHandler,
		ConsumerOptions{Path: PathLeased, LeaseFor: 10 * time.Second, Retry: &recordingPolicy{}})
	clk.Advance(time.Minute)
	d, err = failing.Fetch(ctx)
	if err != nil || d == nil {
		t.Fatal(d, err)
	}
	clk.Advance(10 * time.Second)
	mustLease(t, s, "mb", time.Minute)
	out, err = failing.Handle(ctx, d)
	if err != nil || out.Action != ActionLeaseLost || out.Attempt != 3 {
		t.Fatalf("failed Handle with a lost lease = %+v, %v", out, err)
	}
}

// TestConsumerExhaustedFailureAfterRedriveIsFenced: a leased worker whose attempts are used up
// stalls past its lease; expiry dead-letters the message, a redrive puts it back with attempts 0
// and another worker leases it. The stale worker's failure must not dead-letter the message from
// under the live lease: it ends lease_lost and the row is untouched.
func TestConsumerExhaustedFailureAfterRedriveIsFenced(t *testing.T) {
	forEachBackend(t, testConsumerExhaustedFailureAfterRedriveIsFenced)
}

func testConsumerExhaustedFailureAfterRedriveIsFenced(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "a", MaxAttempts: 1})
	stale := newConsumer(t, s, failHandler,
		ConsumerOptions{Path: PathLeased, LeaseFor: 10 * time.Second, Retry: &recordingPolicy{}})
	d, err := stale.Fetch(ctx)
	if err != nil || d == nil || d.Message.Attempts != 1 {
		t.Fatal(d, err)
	}
	clk.Advance(10 * time.Second)
	if n, err := s.ExpireLeases(ctx); err != nil || n != 1 {
		t.Fatalf("ExpireLeases = %d, %v", n, err)
	}
	if err := s.Redrive(ctx, "a", "fixed"); err != nil {
		t.Fatal(err)
	}
	live := mustLease(t, s, "mb", time.Minute)
	if live.Attempts != 1 {
		t.Fatalf("the redriven lease has attempts %d, want 1", live.Attempts)
	}
	out, err := stale.Handle(ctx, d)
	if err != nil || out != (Outcome{Action: ActionLeaseLost, Attempt: 1}) {
		t.Fatalf("stale exhausted Handle = %+v, %v; want lease_lost at attempt 1", out, err)
	}
	if m := mustGet(t, s, "a"); m.State != StateReady || m.Token != live.Token || m.Attempts != 1 {
		t.Fatalf("the stale failure changed the live lease's row: %+v", m)
	}
	if dls, err := s.ListDeadLetters(ctx); err != nil || len(dls) != 0 {
		t.Fatalf("dead letters %+v, %v; want none", dls, err)
	}

	// The holder's own exhausted failure still dead-letters the message.
	holder := newConsumer(t, s, failHandler,
		ConsumerOptions{Path: PathLeased, LeaseFor: time.Minute, Retry: &recordingPolicy{}})
	out, err = holder.Handle(ctx, &Delivery{Message: *live, Path: PathLeased})
	if err != nil || out != (Outcome{Action: ActionDeadLettered, Attempt: 1}) {
		t.Fatalf("holder's Handle = %+v, %v", out, err)
	}
	dls, err := s.ListDeadLetters(ctx)
	if err != nil || len(dls) != 1 || dls[0].ID != "a" || dls[0].Reason != ReasonMaxAttempts {
		t.Fatalf("dead letters %+v, %v", dls, err)
	}
}

func TestConsumerLeaselessAckNotFound(t *testing.T) {
	forEachBackend(t, testConsumerLeaselessAckNotFound)
}

func testConsumerLeaselessAckNotFound(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "a"})
	c := newConsumer(t, s, func(context.Context, *Message) (Effects, error) {
		return func(ctx context.Context) error {
			_, err := s.SaveCheckpoint(ctx, "actor", []byte("effect"), 0)
			return err
		}, nil
	}, ConsumerOptions{Path: PathLeaseless})
	d, _ := c.Fetch(ctx)
	if err := s.AckByID(ctx, "a"); err != nil { // someone else acknowledged it meanwhile
		t.Fatal(err)
	}
	out, err := c.Handle(ctx, d)
	if err != nil || out.Action != ActionLeaseLost {
		t.Fatalf("Handle = %+v, %v", out, err)
	}
	if _, _, err := s.LoadCheckpoint(ctx, "actor"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("effect survived: %v", err)
	}
}

func TestConsumerPolicyDeclines(t *testing.T) { forEachBackend(t, testConsumerPolicyDeclines) }

func testConsumerPolicyDeclines(t *testing.T, b Backend) {
	for _, path := range []Path{PathLeased, PathLeaseless} {
		t.Run(path.String(), func(t *testing.T) {
			ctx := context.Background()
			s, _ := testStore(t, b)
			mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "a", MaxAttempts: 5})
			policy := &recordingPolicy{declines: true}
			c := newConsumer(t, s, failHandler, ConsumerOptions{Path: path, Retry: policy})
			out, err := c.Step(ctx)
			if err != nil || out != (Outcome{Action: ActionDeadLettered, Attempt: 1}) {
				t.Fatalf("Step = %+v, %v", out, err)
			}
			dls, _ := s.ListDeadLetters(ctx)
			if len(dls) != 1 || dls[0].Attempts != 1 || dls[0].Reason != errHandler.Error() {
				t.Fatalf("dead letters %+v", dls)
			}
			if diff := cmp.Diff([]int{1}, policy.seen); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}

func TestConsumerFetchExpiresLeases(t *testing.T) { forEachBackend(t, testConsumerFetchExpiresLeases) }

func testConsumerFetchExpiresLeases(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "a", MaxAttempts: 1})
	mustLease(t, s, "mb", time.Second)
	clk.Advance(time.Second)
	c := newConsumer(t, s, okHandler, ConsumerOptions{Path: PathLeased})
	if d, err := c.Fetch(ctx); err != nil || d != nil {
		t.Fatalf("Fetch = %v, %v", d, err)
	}
	dls, _ := s.ListDeadLetters(ctx)
	if len(dls) != 1 || dls[0].Reason != ReasonLeaseExpired {
		t.Fatalf("Fetch did not expire the exhausted lease: %+v", dls)
	}
}

// TestConsumerIdleFetchCommitsNothing: a leased fetch that would change nothing (no expired lease
// anywhere, nothing eligible in its mailbox) is a read and commits nothing; one that finds an
// expired lease in another mailbox still runs expire() (docs/semantics.md: fetch is expire() then
// lease()) and clears it, in one commit.
func TestConsumerIdleFetchCommitsNothing(t *testing.T) {
	forEachBackend(t, testConsumerIdleFetchCommitsNothing)
}

func testConsumerIdleFetchCommitsNothing(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "other", ID: "a", MaxAttempts: 2})
	leased := mustLease(t, s, "other", 2*time.Second)
	c := newConsumer(t, s, okHandler, ConsumerOptions{Path: PathLeased})
	before := s.Stats()
	for range 5 {
		if d, err := c.Fetch(ctx); err != nil || d != nil {
			t.Fatalf("Fetch on an empty mailbox = %v, %v", d, err)
		}
	}
	if after := s.Stats(); after != before {
		t.Fatalf("idle fetches changed the counters: %+v -> %+v", before, after)
	}
	clk.Advance(2 * time.Second) // a's lease expires (lease_until == now)
	if d, err := c.Fetch(ctx); err != nil || d != nil {
		t.Fatalf("Fetch on an empty mailbox = %v, %v", d, err)
	}
	if after := s.Stats(); after.Commits != before.Commits+1 {
		t.Fatalf("a fetch that finds an expired lease must run expire() in one commit: %+v -> %+v", before, after)
	}
	if m := mustGet(t, s, "a"); m.Token != "" || m.Attempts != leased.Attempts {
		t.Fatalf("the fetch did not clear a's expired lease: %+v", m)
	}
}

// TestConsumerDrainSkipsTheRead: a leased consumer whose last fetch found a message fetches the
// next one straight in the write transaction; the first fetch that then finds the mailbox empty is
// that write transaction (it commits, having changed nothing), and the polls after it are reads
// again, committing nothing.
func TestConsumerDrainSkipsTheRead(t *testing.T) { forEachBackend(t, testConsumerDrainSkipsTheRead) }

func testConsumerDrainSkipsTheRead(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	for _, id := range []string{"a", "b"} {
		mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: id, MaxAttempts: 1})
	}
	c := newConsumer(t, s, okHandler, ConsumerOptions{Path: PathLeased})
	for _, want := range []string{"a", "b"} {
		d, err := c.Fetch(ctx)
		if err != nil || d == nil || d.Message.ID != want {
			t.Fatalf("Fetch = %+v, %v; want %s", d, err, want)
		}
		if out, err := c.Handle(ctx, d); err != nil || out.Action != ActionAcked {
			t.Fatalf("Handle(%s) = %+v, %v", want, out, err)
		}
	}
	for i, wantCommits := range []uint64{1, 0, 0} {
		before := s.Stats()
		if d, err := c.Fetch(ctx); err != nil || d != nil {
			t.Fatalf("empty fetch %d = %+v, %v", i, d, err)
		}
		if got := s.Stats().Commits - before.Commits; got != wantCommits {
			t.Fatalf("empty fetch %d after the drain committed %d transactions, want %d", i, got, wantCommits)
		}
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		b       Backoff
		attempt int
		want    time.Duration
	}{
		{Backoff{Base: time.Second, Max: time.Minute}, 1, time.Second},
		{Backoff{Base: time.Second, Max: time.Minute}, 3, 4 * time.Second},
		{Backoff{Base: time.Second, Max: time.Minute}, 7, time.Minute},
		{Backoff{Base: time.Second, Max: time.Minute}, 1000, time.Minute},
		{Backoff{}, 1, time.Second},
		{Backoff{}, 0, time.Second},
		{Backoff{}, 100, 5 * time.Minute},
	} {
		d, retry := tc.b.Retry(errHandler, tc.attempt)
		if d != tc.want || !retry {
			t.Errorf("%+v.Retry(attempt %d) = %v, %v; want %v, true", tc.b, tc.attempt, d, retry, tc.want)
		}
	}
	if got := []int{EffectiveAttempts(2, PathLeased), EffectiveAttempts(2, PathLeaseless)}; !cmp.Equal(got, []int{2, 3}) {
		t.Fatalf("EffectiveAttempts = %v", got)
	}
}

func TestConsumerBadInput(t *testing.T) { forEachBackend(t, testConsumerBadInput) }

func testConsumerBadInput(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	h := Handler(okHandler)
	for _, tc := range []struct {
		name string
		st   *Store
		h    Handler
		opts ConsumerOptions
		arg  string
	}{
		{"nil store", nil, h, ConsumerOptions{Mailbox: "m"}, "store"},
		{"nil handler", s, nil, ConsumerOptions{Mailbox: "m"}, "handler"},
		{"empty mailbox", s, h, ConsumerOptions{}, "mailbox"},
		{"unknown path", s, h, ConsumerOptions{Mailbox: "m", Path: Path(7)}, "path"},
		{"negative lease", s, h, ConsumerOptions{Mailbox: "m", LeaseFor: -1}, "lease_for"},
		{"negative poll", s, h, ConsumerOptions{Mailbox: "m", PollInterval: -1}, "poll_interval"},
		{"max below poll", s, h, ConsumerOptions{Mailbox: "m", PollInterval: time.Second, MaxPollInterval: time.Millisecond}, "max_poll_interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewConsumer(tc.st, tc.h, tc.opts)
			wantErr(t, err, ErrInvalidArgument)
			if !strings.Contains(err.Error(), tc.arg) {
				t.Fatalf("error %q does not name %q", err, tc.arg)
			}
		})
	}
	leased := newConsumer(t, s, h, ConsumerOptions{Path: PathLeased})
	for name, d := range map[string]*Delivery{
		"wrong path":    {Message: Message{ID: "a", Mailbox: "mb"}, Path: PathLeaseless},
		"wrong mailbox": {Message: Message{ID: "a", Mailbox: "x", Token: "t"}, Path: PathLeased},
		"no token":      {Message: Message{ID: "a", Mailbox: "mb"}, Path: PathLeased},
		"no id":         {Message: Message{Mailbox: "mb", Token: "t"}, Path: PathLeased},
	} {
		t.Run("Handle "+name, func(t *testing.T) {
			_, err := leased.Handle(ctx, d)
			wantErr(t, err, ErrInvalidArgument)
		})
	}
}

// TestConsumerRunWakesOnEnqueue: with a 10s poll interval, a message enqueued while Run sleeps is
// handled at once, because the commit signals the mailbox's subscribers. On SQLite it runs in a
// synctest bubble: settle waits until Run is durably blocked in its idle wait, so the enqueue
// always lands while Run sleeps, and the fake clock proves no poll interval elapsed before the
// message was handled. (PostgreSQL's LISTEN connection blocks on the network, which no bubble
// can see through; there it runs on real time.)
func TestConsumerRunWakesOnEnqueue(t *testing.T) { forEachBackend(t, testConsumerRunWakesOnEnqueue) }

func testConsumerRunWakesOnEnqueue(t *testing.T, b Backend) {
	for _, path := range []Path{PathLeased, PathLeaseless} {
		t.Run(path.String(), func(t *testing.T) {
			inBubble(t, b, func(t *testing.T, settle func()) {
				s, _ := testStore(t, b)
				handled := make(chan string, 4)
				c := newConsumer(t, s, func(_ context.Context, m *Message) (Effects, error) {
					handled <- m.ID
					return nil, nil
				}, ConsumerOptions{Path: path, PollInterval: 10 * time.Second, MaxPollInterval: 10 * time.Second})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error)
				go func() { done <- c.Run(ctx) }()
				for _, id := range []string{"first", "second"} {
					settle() // Run is asleep in its idle wait
					start := time.Now()
					mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: id})
					select {
					case got := <-handled:
						if got != id {
							t.Fatalf("handled %q, want %q", got, id)
						}
					case <-time.After(3 * time.Second):
						t.Fatalf("%q not handled within 3s of its enqueue: Run did not wake", id)
					}
					if waited := time.Since(start); bubbled(b) && waited != 0 {
						t.Fatalf("%q handled after %v of (fake) time: Run waited instead of waking", id, waited)
					}
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("Run = %v", err)
				}
			})
		})
	}
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestConsumerRunBacksOffWhenWedged: while another connection holds the writer lock, every handle
// transaction fails with ErrBusy; Run must wait on its growing poll interval between attempts
// rather than spin, and recover once the lock is released. It runs in a synctest bubble, so the
// waits are exact: in one (fake) second, the attempts fall at 0, 20, 60, 140, 300, 460, 620, 780
// and 940 ms (20, 40, 80, 160, 160, ... ms apart), nine failures; a spinning Run would fail
// without ever letting the fake clock move. (The busy timeout itself is spent inside SQLite in
// real time, which the bubble's clock does not see.)
func TestConsumerRunBacksOffWhenWedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a.db")
		clk := NewManualClock(base)
		s := openAt(t, BackendSQLite, path, Options{Clock: clk, BusyTimeout: 10 * time.Millisecond})
		blocker := openAt(t, BackendSQLite, path, Options{Clock: clk})
		mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "a"})

		var logs syncBuffer
		handled := make(chan struct{}, 1)
		c := newConsumer(t, s, func(context.Context, *Message) (Effects, error) {
			return func(context.Context) error {
				handled <- struct{}{}
				return nil
			}, nil
		}, ConsumerOptions{Path: PathLeaseless, PollInterval: 20 * time.Millisecond, MaxPollInterval: 160 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})

		locked, release := make(chan struct{}), make(chan struct{})
		held := make(chan error)
		go func() {
			held <- blocker.ExecTx(context.Background(), false, func(ctx context.Context) error {
				close(locked)
				<-release
				return nil
			})
		}()
		<-locked
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error)
		go func() { done <- c.Run(ctx) }()
		time.Sleep(time.Second - time.Millisecond)
		synctest.Wait()
		if failures := strings.Count(logs.String(), "consumer step failed"); failures != 9 {
			t.Fatalf("%d failed steps in 1s while wedged; want exactly 9 (backoff 20, 40, 80, 160, 160, ... ms)\n%s", failures, logs.String())
		}
		close(release)
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		select {
		case <-handled:
		case <-time.After(3 * time.Second):
			t.Fatal("Run did not recover after the lock was released")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), ErrBusy.Error()) {
			t.Fatalf("log does not show the busy error:\n%s", logs.String())
		}
	})
}

func TestConsumerRunStopsOnClose(t *testing.T) { forEachBackend(t, testConsumerRunStopsOnClose) }

func testConsumerRunStopsOnClose(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	c := newConsumer(t, s, okHandler, ConsumerOptions{Path: PathLeased, PollInterval: time.Millisecond})
	done := make(chan error)
	go func() { done <- c.Run(context.Background()) }()
	time.Sleep(20 * time.Millisecond)
	_ = s.Close()
	select {
	case err := <-done:
		wantErr(t, err, ErrClosed)
	case <-time.After(3 * time.Second):
		t.Fatal("Run kept going on a closed store")
	}
}

// TestLeaselessDecidesFromTheStoredRow: a nack_by_id that lands between the leaseless fetch and a
// failing handle has already counted attempts. The retry decision must use the row as stored at
// handle time: with max_attempts 3, a fetch at 0 and two nack_by_ids before the handle, the
// failure is attempt 3 and dead-letters the message. Deciding from the fetched count (attempt 1,
// retried) would leave the row at ready 3/3, never eligible and never dead-lettered.
func TestLeaselessDecidesFromTheStoredRow(t *testing.T) {
	forEachBackend(t, testLeaselessDecidesFromTheStoredRow)
}

func testLeaselessDecidesFromTheStoredRow(t *testing.T, b Backend) {
	for _, tc := range []struct {
		name       string
		nacks      int
		want       Outcome
		wantRow    int // attempts of the row after the handle; -1: dead-lettered
		wantPolicy []int
	}{
		{"one nack", 1, Outcome{Action: ActionRetried, Attempt: 2}, 2, []int{2}},
		{"two nacks exhaust", 2, Outcome{Action: ActionDeadLettered, Attempt: 3}, -1, nil},
		{"three nacks, already exhausted", 3, Outcome{Action: ActionDeadLettered, Attempt: 3}, -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := testStore(t, b)
			mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "a", MaxAttempts: 3})
			policy := &recordingPolicy{}
			c := newConsumer(t, s, failHandler, ConsumerOptions{Path: PathLeaseless, Retry: policy})
			d, err := c.Fetch(ctx)
			if err != nil || d == nil || d.Message.Attempts != 0 {
				t.Fatalf("Fetch = %+v, %v", d, err)
			}
			for range tc.nacks {
				if err := s.NackByID(ctx, "a", 0); err != nil {
					t.Fatal(err)
				}
			}
			out, err := c.Handle(ctx, d)
			if err != nil || out != tc.want {
				t.Fatalf("Handle = %+v, %v; want %+v", out, err, tc.want)
			}
			if diff := cmp.Diff(tc.wantPolicy, policy.seen); diff != "" {
				t.Fatalf("policy saw (-want +got):\n%s", diff)
			}
			dls, _ := s.ListDeadLetters(ctx)
			if tc.wantRow < 0 {
				if len(dls) != 1 || dls[0].Attempts != 3 || dls[0].Reason != ReasonMaxAttempts {
					t.Fatalf("dead letters %+v; want a at 3 attempts", dls)
				}
				return
			}
			if m := mustGet(t, s, "a"); m.State != StateReady || m.Attempts != tc.wantRow || len(dls) != 0 {
				t.Fatalf("row %+v, dead letters %+v", m, dls)
			}
		})
	}
}

// TestLeaselessDrainTakesNoWriteLock: a draining leaseless consumer peeks on the writer connection
// (Store.peek), which must still be a read: while a second store on the same file holds SQLite's
// write lock, the consumer's next fetch finds the message, and only the acknowledgement waits for
// the lock (ErrBusy after the busy timeout), leaving the message as it was.
func TestLeaselessDrainTakesNoWriteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	clk := NewManualClock(base)
	a := openAt(t, BackendSQLite, path, Options{Clock: clk, BusyTimeout: 30 * time.Millisecond})
	b := openAt(t, BackendSQLite, path, Options{Clock: clk})
	for _, id := range []string{"x", "y"} {
		mustEnqueue(t, a, NewMessage{Mailbox: "m", ID: id})
	}
	ctx := context.Background()
	nop := func(context.Context, *Message) (Effects, error) { return nil, nil }
	c, err := NewConsumer(a, nop, ConsumerOptions{Mailbox: "m", Path: PathLeaseless})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.Step(ctx); err != nil || out.Action != ActionAcked {
		t.Fatalf("first step = %+v, %v", out, err)
	}

	hold, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- b.ExecTx(ctx, false, func(ctx context.Context) error {
			close(hold)
			<-release
			return nil
		})
	}()
	<-hold
	d, err := c.Fetch(ctx)
	if err != nil || d == nil || d.Message.ID != "y" {
		close(release)
		t.Fatalf("draining fetch while another store holds the write lock = %+v, %v", d, err)
	}
	_, err = c.Handle(ctx, d)
	wantErr(t, err, ErrBusy)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, a, "y"); got.State != StateReady || got.Attempts != 0 {
		t.Fatalf("a failed acknowledgement changed the message: %+v", got)
	}
	if out, err := c.Handle(ctx, d); err != nil || out.Action != ActionAcked {
		t.Fatalf("acknowledgement after the lock was released = %+v, %v", out, err)
	}
}

// TestSingleWriteOutsideTransactionCountsOneCommit: a single-row write outside ExecTx (on SQLite
// a statement in autocommit, Store.execOne) counts one commit in Stats whether or not it changed
// a row, exactly as the transaction of its own it stands for; inside ExecTx it joins the
// transaction and counts nothing by itself.
func TestSingleWriteOutsideTransactionCountsOneCommit(t *testing.T) {
	forEachBackend(t, testSingleWriteOutsideTransactionCountsOneCommit)
}

func testSingleWriteOutsideTransactionCountsOneCommit(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: id})
	}
	leased := mustLease(t, s, "m", time.Minute)
	steps := []struct {
		name string
		call func(ctx context.Context) error
		want error
	}{
		{"ack", func(ctx context.Context) error { return s.Ack(ctx, leased.ID, leased.Token) }, nil},
		{"ack again", func(ctx context.Context) error { return s.Ack(ctx, leased.ID, leased.Token) }, ErrLeaseLost},
		{"ack_by_id", func(ctx context.Context) error { return s.AckByID(ctx, "b") }, nil},
		{"ack_by_id again", func(ctx context.Context) error { return s.AckByID(ctx, "b") }, ErrNotFound},
		{"nack_by_id", func(ctx context.Context) error { return s.NackByID(ctx, "c", time.Second) }, nil},
	}
	for _, st := range steps {
		before := s.Stats()
		err := st.call(ctx)
		if !errors.Is(err, st.want) || (st.want == nil && err != nil) {
			t.Fatalf("%s: error = %v, want %v", st.name, err, st.want)
		}
		after := s.Stats()
		if after.Commits-before.Commits != 1 || after.Rollbacks != before.Rollbacks {
			t.Fatalf("%s: commits +%d, rollbacks +%d; want +1, +0", st.name, after.Commits-before.Commits, after.Rollbacks-before.Rollbacks)
		}
	}
	if got := mustGet(t, s, "c"); got.Attempts != 1 || got.State != StateReady {
		t.Fatalf("nack_by_id outside a transaction: %+v", got)
	}
	before := s.Stats()
	err := s.ExecTx(ctx, false, func(ctx context.Context) error {
		if err := s.NackByID(ctx, "c", 0); err != nil {
			return err
		}
		return s.AckByID(ctx, "c")
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Commits - before.Commits; got != 1 {
		t.Fatalf("two writes in one ExecTx counted %d commits, want 1", got)
	}
}
