package actordelivery

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var errInjected = errors.New("injected commit failure")

// faultyStore wraps a Store to fail transactions: failTx counts down the ExecTx calls that run fn
// and then fail (so the real transaction rolls back, as a failed commit would leave it).
// crashAfter, when positive, makes the crashAfter-th ExecTx commit normally and every later call
// fail without running, as if the process had died after that commit.
type faultyStore struct {
	*Store
	failTx     int
	crashAfter int
	calls      int
}

func (f *faultyStore) ExecTx(ctx context.Context, readOnly bool, fn func(context.Context) error) error {
	f.calls++
	if f.crashAfter > 0 && f.calls > f.crashAfter {
		return errInjected
	}
	if f.failTx > 0 {
		f.failTx--
		return f.Store.ExecTx(ctx, readOnly, func(ctx context.Context) error {
			if err := fn(ctx); err != nil {
				return err
			}
			return errInjected
		})
	}
	return f.Store.ExecTx(ctx, readOnly, fn)
}

func newPublisher(t testing.TB, st OutboxStore, opts PublisherOptions) *Publisher {
	t.Helper()
	p, err := NewPublisher(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func outboxState(t testing.TB, s *Store, id string) OutboxRow {
	t.Helper()
	rows, err := s.ListOutbox(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("outbox row %q missing", id)
	return OutboxRow{}
}

func TestPublisherDelivers(t *testing.T) { forEachBackend(t, testPublisherDelivers) }

func testPublisherDelivers(t *testing.T, b Backend) {
	for _, tc := range []struct {
		mode    PublishMode
		commits uint64
	}{{ModeFold, 2}, {ModeSplit, 3}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			ctx := context.Background()
			s, _ := testStore(t, b)
			mustOutbox(t, s, "o1")
			var woke []string
			sub, cancel := s.Subscribe("target")
			defer cancel()
			p := newPublisher(t, s, PublisherOptions{Mode: tc.mode, Batch: 1, Wake: func(mb string) { woke = append(woke, mb) }})
			before := s.Stats().Commits
			n, err := p.Step(ctx)
			if err != nil || n != 1 {
				t.Fatalf("Step = %d, %v", n, err)
			}
			if got := s.Stats().Commits - before; got != tc.commits {
				t.Fatalf("commits per delivery = %d, want %d (claim included)", got, tc.commits)
			}
			m := mustGet(t, s, "o1")
			want := &Message{Mailbox: "target", ID: "o1", Key: "k-o1", Priority: 1, MaxAttempts: 3, AvailableAt: base,
				State: StateReady, Payload: []byte("o1"), Seq: m.Seq, CreatedAt: base}
			if diff := cmp.Diff(want, m); diff != "" {
				t.Fatalf("delivered message (-want +got):\n%s", diff)
			}
			if r := outboxState(t, s, "o1"); r.State != StateCompleted || r.ClaimToken != "" || r.DeliveryAttempts != 1 {
				t.Fatalf("outbox row %+v", r)
			}
			if diff := cmp.Diff([]string{"target"}, woke); diff != "" {
				t.Fatalf("wake calls (-want +got):\n%s", diff)
			}
			select {
			case <-sub:
			default:
				t.Fatal("store subscribers not signalled")
			}
			if n, err := p.Step(ctx); err != nil || n != 0 {
				t.Fatalf("Step on an empty outbox = %d, %v", n, err)
			}
		})
	}
}

func TestPublisherClaimLost(t *testing.T) { forEachBackend(t, testPublisherClaimLost) }

func testPublisherClaimLost(t *testing.T, b Backend) {
	for _, mode := range []PublishMode{ModeFold, ModeSplit} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx := context.Background()
			s, clk := testStore(t, b)
			mustOutbox(t, s, "o1")
			woke := 0
			p := newPublisher(t, s, PublisherOptions{Mode: mode, ClaimFor: 10 * time.Second, Wake: func(string) { woke++ }})
			rows, err := p.Claim(ctx)
			if err != nil || len(rows) != 1 {
				t.Fatal(rows, err)
			}
			clk.Advance(10 * time.Second)
			again, _ := s.OutboxClaim(ctx, 1, time.Minute) // another publisher took it over
			res, err := p.Deliver(ctx, rows[0])
			if err != nil || res.Action != ActionClaimLost {
				t.Fatalf("Deliver = %+v, %v; want claim_lost", res, err)
			}
			if r := outboxState(t, s, "o1"); r.State != StatePending || r.ClaimToken != again[0].ClaimToken {
				t.Fatalf("outbox row after a lost claim: %+v", r)
			}
			_, err = s.GetMessage(ctx, "o1")
			switch mode {
			case ModeFold: // the enqueue rolled back with the failed completion
				wantErr(t, err, ErrNotFound)
				if woke != 0 {
					t.Fatal("wake after a rolled-back delivery")
				}
			case ModeSplit: // the enqueue had committed; the new claimant's delivery will be a duplicate
				if err != nil {
					t.Fatal(err)
				}
				res, err := p.Deliver(ctx, again[0])
				if err != nil || res != (DeliveryResult{Action: ActionDelivered, Duplicate: true}) {
					t.Fatalf("redelivery = %+v, %v", res, err)
				}
			}
		})
	}
}

// TestPublisherCommitFails: the first transaction of the delivery runs and then fails. Nothing may
// change, the error comes back and is logged with the row's id, target, attempts and claim token,
// and the row is delivered once its claim expires.
func TestPublisherCommitFails(t *testing.T) { forEachBackend(t, testPublisherCommitFails) }

func testPublisherCommitFails(t *testing.T, b Backend) {
	for _, mode := range []PublishMode{ModeFold, ModeSplit} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx := context.Background()
			s, _ := testStore(t, b)
			mustOutbox(t, s, "o1")
			var logs syncBuffer
			faulty := &faultyStore{Store: s, failTx: 1}
			woke := 0
			p := newPublisher(t, faulty, PublisherOptions{Mode: mode, ClaimFor: 10 * time.Second,
				Logger: slog.New(slog.NewTextHandler(&logs, nil)), Wake: func(string) { woke++ }})
			rows, _ := p.Claim(ctx)
			res, err := p.Deliver(ctx, rows[0])
			if !errors.Is(err, errInjected) || res.Action != ActionCommitFailed {
				t.Fatalf("Deliver = %+v, %v; want commit_failed wrapping the injected error", res, err)
			}
			_, gerr := s.GetMessage(ctx, "o1")
			wantErr(t, gerr, ErrNotFound)
			// The publisher released the row: no claim, available after RetryDelay (zero).
			r := outboxState(t, s, "o1")
			if r.State != StatePending || r.ClaimToken != "" || !r.AvailableAt.Equal(base) {
				t.Fatalf("row after a failed commit: %+v", r)
			}
			if woke != 0 {
				t.Fatal("wake after a failed commit")
			}
			for _, want := range []string{"o1", "target", rows[0].ClaimToken, "delivery_attempts=1", errInjected.Error()} {
				if !strings.Contains(logs.String(), want) {
					t.Fatalf("log lacks %q:\n%s", want, logs.String())
				}
			}
			// The next step delivers it, without waiting for the claim to run out.
			n, err := p.Step(ctx)
			if err != nil || n != 1 {
				t.Fatalf("redelivery Step = %d, %v", n, err)
			}
			mustGet(t, s, "o1")
			if r := outboxState(t, s, "o1"); r.State != StateCompleted || r.DeliveryAttempts != 2 {
				t.Fatalf("row after redelivery: %+v", r)
			}
		})
	}
}

// TestPublisherSplitCrashBetween: the split delivery's enqueue commits and the process dies before
// the completion. The row stays pending; after its claim expires, the redelivery's enqueue is a
// duplicate and the row completes — one message, never two.
func TestPublisherSplitCrashBetween(t *testing.T) { forEachBackend(t, testPublisherSplitCrashBetween) }

func testPublisherSplitCrashBetween(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustOutbox(t, s, "o1")
	crashing := &faultyStore{Store: s, crashAfter: 1}
	p := newPublisher(t, crashing, PublisherOptions{Mode: ModeSplit, ClaimFor: 10 * time.Second})
	rows, _ := p.Claim(ctx)
	res, err := p.Deliver(ctx, rows[0])
	if !errors.Is(err, errInjected) || res.Action != ActionCommitFailed || res.Duplicate {
		t.Fatalf("Deliver = %+v, %v", res, err)
	}
	mustGet(t, s, "o1")
	if r := outboxState(t, s, "o1"); r.State != StatePending {
		t.Fatalf("row %+v", r)
	}
	clk.Advance(10 * time.Second)
	p2 := newPublisher(t, s, PublisherOptions{Mode: ModeSplit})
	rows, _ = p2.Claim(ctx)
	res, err = p2.Deliver(ctx, rows[0])
	if err != nil || res != (DeliveryResult{Action: ActionDelivered, Duplicate: true}) {
		t.Fatalf("redelivery = %+v, %v", res, err)
	}
	msgs, _ := s.ListMessages(ctx, "target")
	if len(msgs) != 1 || outboxState(t, s, "o1").State != StateCompleted {
		t.Fatalf("messages %+v", msgs)
	}
}

func TestPublisherFoldDuplicate(t *testing.T) { forEachBackend(t, testPublisherFoldDuplicate) }

func testPublisherFoldDuplicate(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "target", ID: "o1", MaxAttempts: 9})
	mustOutbox(t, s, "o1")
	p := newPublisher(t, s, PublisherOptions{Mode: ModeFold})
	rows, _ := p.Claim(ctx)
	res, err := p.Deliver(ctx, rows[0])
	if err != nil || res != (DeliveryResult{Action: ActionDelivered, Duplicate: true}) {
		t.Fatalf("Deliver = %+v, %v", res, err)
	}
	if m := mustGet(t, s, "o1"); m.MaxAttempts != 9 {
		t.Fatalf("duplicate delivery overwrote the message: %+v", m)
	}
}

func TestPublisherBadInput(t *testing.T) { forEachBackend(t, testPublisherBadInput) }

func testPublisherBadInput(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	for _, tc := range []struct {
		name string
		st   OutboxStore
		opts PublisherOptions
		arg  string
	}{
		{"nil store", nil, PublisherOptions{}, "store"},
		{"unknown mode", s, PublisherOptions{Mode: 9}, "mode"},
		{"negative batch", s, PublisherOptions{Batch: -1}, "batch"},
		{"negative claim", s, PublisherOptions{ClaimFor: -1}, "claim_for"},
		{"negative poll", s, PublisherOptions{PollInterval: -1}, "poll_interval"},
		{"negative retry delay", s, PublisherOptions{RetryDelay: -time.Second}, "retry_delay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPublisher(tc.st, tc.opts)
			wantErr(t, err, ErrInvalidArgument)
			if !strings.Contains(err.Error(), tc.arg) {
				t.Fatalf("error %q does not name %q", err, tc.arg)
			}
		})
	}
	p := newPublisher(t, s, PublisherOptions{})
	_, err := p.Deliver(ctx, OutboxRow{OutboxMessage: OutboxMessage{ID: "x", Target: "t", MaxAttempts: 1}})
	wantErr(t, err, ErrInvalidArgument)
	_, err = p.Deliver(ctx, OutboxRow{ClaimToken: "t"})
	wantErr(t, err, ErrInvalidArgument)
}

// TestPublisherRun: with a 10s poll interval, an outbox row enqueued while Run sleeps is delivered
// at once, because the commit signals the outbox's subscribers. On SQLite it runs in a synctest
// bubble (see inBubble): the enqueue always lands while Run sleeps, and the fake clock proves no
// poll interval elapsed before the delivery.
func TestPublisherRun(t *testing.T) { forEachBackend(t, testPublisherRun) }

func testPublisherRun(t *testing.T, b Backend) {
	inBubble(t, b, func(t *testing.T, settle func()) {
		s, _ := testStore(t, b)
		delivered := make(chan string, 4)
		p := newPublisher(t, s, PublisherOptions{Mode: ModeFold, PollInterval: 10 * time.Second,
			Wake: func(mb string) { delivered <- mb }})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()
		settle() // Run is asleep in its idle wait
		start := time.Now()
		mustOutbox(t, s, "o1") // wakes Run through the store's outbox signal
		select {
		case <-delivered:
		case <-time.After(3 * time.Second):
			t.Fatal("Run did not wake on an outbox enqueue")
		}
		if waited := time.Since(start); bubbled(b) && waited != 0 {
			t.Fatalf("delivered after %v of (fake) time: Run waited instead of waking", waited)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestPublisherDeadLetters: a delivery that fails on the row's last attempt dead-letters the row;
// an earlier failure releases it after RetryDelay; a row Check refuses is dead-lettered at once
// with Check's message and never enqueued.
func TestPublisherDeadLetters(t *testing.T) { forEachBackend(t, testPublisherDeadLetters) }

func testPublisherDeadLetters(t *testing.T, b Backend) {
	for _, mode := range []PublishMode{ModeFold, ModeSplit} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx := context.Background()
			s, clk := testStore(t, b)
			for _, m := range []OutboxMessage{
				{ID: "flaky", Target: "t", MaxAttempts: 1, MaxDeliveryAttempts: 2},
				{ID: "poison", Target: "t", MaxAttempts: 1, Payload: []byte("{")},
			} {
				if _, err := s.OutboxEnqueue(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			faulty := &faultyStore{Store: s, failTx: 2}
			p := newPublisher(t, faulty, PublisherOptions{Mode: mode, Batch: 1, RetryDelay: 5 * time.Second,
				Check: func(_ context.Context, r OutboxRow) error {
					if string(r.Payload) == "{" {
						return errors.New("payload does not decode")
					}
					return nil
				}})
			rows, _ := p.Claim(ctx)
			if res, err := p.Deliver(ctx, rows[0]); res.Action != ActionCommitFailed || !errors.Is(err, errInjected) {
				t.Fatalf("first delivery = %+v, %v", res, err)
			}
			if r := outboxState(t, s, "flaky"); r.State != StatePending || r.ClaimToken != "" || !r.AvailableAt.Equal(base.Add(5*time.Second)) {
				t.Fatalf("flaky after its first failure: %+v", r)
			}
			// The poison row is next (flaky waits out its retry delay): refused, dead-lettered.
			rows, _ = p.Claim(ctx)
			if len(rows) != 1 || rows[0].ID != "poison" {
				t.Fatalf("second claim %+v", rows)
			}
			if res, err := p.Deliver(ctx, rows[0]); res.Action != ActionDeadLettered || err != nil {
				t.Fatalf("poison delivery = %+v, %v", res, err)
			}
			_, gerr := s.GetMessage(ctx, "poison")
			wantErr(t, gerr, ErrNotFound)
			clk.Advance(5 * time.Second)
			rows, _ = p.Claim(ctx)
			if len(rows) != 1 || rows[0].ID != "flaky" || rows[0].DeliveryAttempts != 2 {
				t.Fatalf("third claim %+v", rows)
			}
			if res, _ := p.Deliver(ctx, rows[0]); res.Action != ActionCommitFailed {
				t.Fatalf("last delivery = %+v", res)
			}
			for id, reason := range map[string]string{"flaky": ReasonMaxDeliveryAttempts, "poison": "payload does not decode"} {
				if r := outboxState(t, s, id); r.State != StateDeadLetter || r.DeadReason != reason || r.ClaimToken != "" {
					t.Errorf("%s = %+v, want dead_letter with reason %q", id, r, reason)
				}
			}
			clk.Advance(time.Hour)
			if n, err := p.Step(ctx); n != 0 || err != nil {
				t.Fatalf("Step after both rows died = %d, %v", n, err)
			}
		})
	}
}
