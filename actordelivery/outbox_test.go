package actordelivery

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func mustOutbox(t testing.TB, s *Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		dup, err := s.OutboxEnqueue(context.Background(), OutboxMessage{ID: id, Target: "target", Key: "k-" + id, Priority: 1, MaxAttempts: 3, Payload: []byte(id)})
		if err != nil || dup {
			t.Fatalf("OutboxEnqueue(%q) = %v, %v", id, dup, err)
		}
	}
}

func TestOutboxEnqueue(t *testing.T) { forEachBackend(t, testOutboxEnqueue) }

func testOutboxEnqueue(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	// Inside a transaction the row commits or rolls back with the caller's writes.
	_ = s.ExecTx(ctx, false, func(ctx context.Context) error {
		if _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "gone", Target: "t", MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
		return context.Canceled
	})
	err := s.ExecTx(ctx, false, func(ctx context.Context) error {
		if _, err := s.SaveCheckpoint(ctx, "actor", []byte("v1"), 0); err != nil {
			return err
		}
		_, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "kept", Target: "t", MaxAttempts: 2, Payload: []byte("p")})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.ListOutbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []OutboxRow{{OutboxMessage: OutboxMessage{ID: "kept", Target: "t", MaxAttempts: 2, Payload: []byte("p"),
		MaxDeliveryAttempts: DefaultMaxDeliveryAttempts},
		State: StatePending, AvailableAt: base, Seq: rows[0].Seq}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Fatalf("outbox (-want +got):\n%s", diff)
	}
	dup, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "kept", Target: "other", MaxAttempts: 9})
	if err != nil || !dup {
		t.Fatalf("duplicate OutboxEnqueue = %v, %v", dup, err)
	}
	if after, _ := s.ListOutbox(ctx); !cmp.Equal(rows, after) {
		t.Fatalf("duplicate changed the outbox: %+v", after)
	}
}

func TestOutboxClaim(t *testing.T) { forEachBackend(t, testOutboxClaim) }

func testOutboxClaim(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustOutbox(t, s, "o1", "o2", "o3")
	batch, err := s.OutboxClaim(ctx, 2, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(batch) != 2 || batch[0].ID != "o1" || batch[1].ID != "o2" {
		t.Fatalf("claimed %+v, want o1, o2", batch)
	}
	tok := batch[0].ClaimToken
	for _, r := range batch {
		if r.ClaimToken == "" || r.ClaimToken != tok || r.DeliveryAttempts != 1 || !r.ClaimUntil.Equal(base.Add(10*time.Second)) {
			t.Fatalf("claimed row %+v", r)
		}
	}
	// Live claims are skipped.
	next, _ := s.OutboxClaim(ctx, 5, 10*time.Second)
	if len(next) != 1 || next[0].ID != "o3" || next[0].ClaimToken == tok {
		t.Fatalf("second claim %+v", next)
	}
	if none, _ := s.OutboxClaim(ctx, 5, 10*time.Second); len(none) != 0 {
		t.Fatalf("claim with every row claimed: %+v", none)
	}

	// Stale tokens change nothing.
	clk.Advance(10 * time.Second) // claim_until == now: expired
	again, _ := s.OutboxClaim(ctx, 1, 10*time.Second)
	if len(again) != 1 || again[0].ID != "o1" || again[0].DeliveryAttempts != 2 {
		t.Fatalf("reclaim %+v", again)
	}
	before, _ := s.ListOutbox(ctx)
	wantErr(t, s.OutboxComplete(ctx, "o1", tok), ErrClaimLost)
	wantErr(t, s.OutboxFail(ctx, "o1", tok, 0), ErrClaimLost)
	wantErr(t, s.OutboxComplete(ctx, "nope", tok), ErrClaimLost)
	if after, _ := s.ListOutbox(ctx); !cmp.Equal(before, after) {
		t.Fatalf("stale token changed the outbox:\n%s", cmp.Diff(before, after))
	}

	// Fail clears the claim and delays the row.
	if err := s.OutboxFail(ctx, "o1", again[0].ClaimToken, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	rows, _ := s.ListOutbox(ctx)
	if r := rows[0]; r.ClaimToken != "" || !r.ClaimUntil.IsZero() || !r.AvailableAt.Equal(clk.Now().Add(5*time.Second)) || r.State != StatePending {
		t.Fatalf("after fail: %+v", r)
	}
	// o1 is not available yet: o2 (its claim expired) comes first.
	got, _ := s.OutboxClaim(ctx, 1, time.Minute)
	if len(got) != 1 || got[0].ID != "o2" {
		t.Fatalf("claim during o1's delay: %+v", got)
	}
	if err := s.OutboxComplete(ctx, "o2", got[0].ClaimToken); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.OutboxComplete(ctx, "o2", got[0].ClaimToken), ErrClaimLost)
	rows, _ = s.ListOutbox(ctx)
	if r := rows[1]; r.State != StateCompleted || r.ClaimToken != "" {
		t.Fatalf("after complete: %+v", r)
	}
	clk.Advance(5 * time.Second)
	got, _ = s.OutboxClaim(ctx, 10, time.Minute)
	if len(got) != 2 || got[0].ID != "o1" || got[1].ID != "o3" {
		t.Fatalf("final claim %+v: completed rows must not be claimed", got)
	}
}

func TestOutboxBadInput(t *testing.T) { forEachBackend(t, testOutboxBadInput) }

func testOutboxBadInput(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	mustOutbox(t, s, "o")
	for _, tc := range []struct {
		name string
		call func() error
		arg  string
	}{
		{"enqueue empty id", func() error { _, err := s.OutboxEnqueue(ctx, OutboxMessage{Target: "t", MaxAttempts: 1}); return err }, "id"},
		{"enqueue empty target", func() error { _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "x", MaxAttempts: 1}); return err }, "target"},
		{"enqueue max_attempts 0", func() error { _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "x", Target: "t"}); return err }, "max_attempts"},
		{"enqueue negative max_delivery_attempts", func() error {
			_, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "x", Target: "t", MaxAttempts: 1, MaxDeliveryAttempts: -1})
			return err
		}, "max_delivery_attempts"},
		{"dead-letter empty token", func() error { return s.OutboxDeadLetter(ctx, "o", "", "r") }, "token"},
		{"dead-letter empty reason", func() error { return s.OutboxDeadLetter(ctx, "o", "t", "") }, "reason"},
		{"claim limit 0", func() error { _, err := s.OutboxClaim(ctx, 0, time.Second); return err }, "limit"},
		{"claim negative claim_for", func() error { _, err := s.OutboxClaim(ctx, 1, -time.Second); return err }, "claim_for"},
		{"complete empty id", func() error { return s.OutboxComplete(ctx, "", "t") }, "id"},
		{"complete empty token", func() error { return s.OutboxComplete(ctx, "o", "") }, "token"},
		{"fail empty token", func() error { return s.OutboxFail(ctx, "o", "", 0) }, "token"},
		{"fail negative delay", func() error { return s.OutboxFail(ctx, "o", "t", -time.Second) }, "delay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := s.ListOutbox(ctx)
			err := tc.call()
			wantErr(t, err, ErrInvalidArgument)
			if !strings.Contains(err.Error(), tc.arg) {
				t.Fatalf("error %q does not name %q", err, tc.arg)
			}
			if after, _ := s.ListOutbox(ctx); !cmp.Equal(before, after) {
				t.Fatal("bad call wrote")
			}
		})
	}
}

func TestCheckpoints(t *testing.T) { forEachBackend(t, testCheckpoints) }

func testCheckpoints(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	_, _, err := s.LoadCheckpoint(ctx, "a")
	wantErr(t, err, ErrNotFound)
	v, err := s.SaveCheckpoint(ctx, "a", []byte("one"), 0)
	if err != nil || v != 1 {
		t.Fatalf("first save = %d, %v", v, err)
	}
	_, err = s.SaveCheckpoint(ctx, "a", []byte("again"), 0)
	wantErr(t, err, ErrVersionConflict)
	_, err = s.SaveCheckpoint(ctx, "a", []byte("ahead"), 2)
	wantErr(t, err, ErrVersionConflict)
	v, err = s.SaveCheckpoint(ctx, "a", []byte("two"), 1)
	if err != nil || v != 2 {
		t.Fatalf("second save = %d, %v", v, err)
	}
	_, err = s.SaveCheckpoint(ctx, "a", []byte("stale"), 1)
	wantErr(t, err, ErrVersionConflict)
	state, ver, err := s.LoadCheckpoint(ctx, "a")
	if err != nil || string(state) != "two" || ver != 2 {
		t.Fatalf("load = %q, %d, %v", state, ver, err)
	}
	if _, err := s.SaveCheckpoint(ctx, "empty", nil, 0); err != nil {
		t.Fatal(err)
	}
	if st, ver, err := s.LoadCheckpoint(ctx, "empty"); err != nil || st != nil || ver != 1 {
		t.Fatalf("empty checkpoint = %v, %d, %v", st, ver, err)
	}
	_, err = s.SaveCheckpoint(ctx, "", nil, 0)
	wantErr(t, err, ErrInvalidArgument)
	_, err = s.SaveCheckpoint(ctx, "a", nil, -1)
	wantErr(t, err, ErrInvalidArgument)
	_, _, err = s.LoadCheckpoint(ctx, "")
	wantErr(t, err, ErrInvalidArgument)
}

func TestProcessed(t *testing.T) { forEachBackend(t, testProcessed) }

func testProcessed(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mark := func(c, id string) bool {
		t.Helper()
		already, err := s.MarkProcessed(ctx, c, id, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return already
	}
	if mark("c", "m1") {
		t.Fatal("first mark reported already")
	}
	if !mark("c", "m1") {
		t.Fatal("second mark not already")
	}
	if mark("other", "m1") {
		t.Fatal("marks are per consumer")
	}
	clk.Advance(9 * time.Second)
	if !mark("c", "m1") {
		t.Fatal("mark within ttl not already")
	}
	if n, err := s.PurgeProcessed(ctx); err != nil || n != 0 {
		t.Fatalf("purge before expiry = %d, %v", n, err)
	}
	clk.Advance(time.Second) // expires_at == now: expired
	if mark("c", "m1") {
		t.Fatal("expired record still counted")
	}
	clk.Advance(10 * time.Second)
	if n, err := s.PurgeProcessed(ctx); err != nil || n != 2 {
		t.Fatalf("purge = %d, %v; want 2", n, err)
	}
	// Rolled back with its transaction.
	_ = s.ExecTx(ctx, false, func(ctx context.Context) error {
		_, _ = s.MarkProcessed(ctx, "c", "m2", time.Hour)
		return context.Canceled
	})
	if mark("c", "m2") {
		t.Fatal("rolled-back mark persisted")
	}
	for _, tc := range []struct {
		c, id string
		ttl   time.Duration
		arg   string
	}{{"", "x", time.Second, "consumer"}, {"c", "", time.Second, "message id"}, {"c", "x", 0, "ttl"}, {"c", "x", -1, "ttl"}} {
		_, err := s.MarkProcessed(ctx, tc.c, tc.id, tc.ttl)
		wantErr(t, err, ErrInvalidArgument)
		if !strings.Contains(err.Error(), tc.arg) {
			t.Fatalf("error %q does not name %q", err, tc.arg)
		}
	}
}

// TestOutboxDeadLetters: a claim never takes a row past its max_delivery_attempts; it dead-letters
// a row out of attempts once no live claim holds it. OutboxDeadLetter is fenced by the claim, and
// completed and dead-lettered rows are final.
func TestOutboxDeadLetters(t *testing.T) { forEachBackend(t, testOutboxDeadLetters) }

func testOutboxDeadLetters(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	for _, m := range []OutboxMessage{
		{ID: "once", Target: "t", MaxAttempts: 1, MaxDeliveryAttempts: 1},
		{ID: "twice", Target: "t", MaxAttempts: 1, MaxDeliveryAttempts: 2},
		{ID: "manual", Target: "t", MaxAttempts: 1},
	} {
		if _, err := s.OutboxEnqueue(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.OutboxClaim(ctx, 5, 10*time.Second)
	if err != nil || len(first) != 3 {
		t.Fatalf("first claim = %+v, %v", first, err)
	}
	tok := first[0].ClaimToken
	if first[2].MaxDeliveryAttempts != DefaultMaxDeliveryAttempts {
		t.Fatalf("default max_delivery_attempts = %d", first[2].MaxDeliveryAttempts)
	}
	// A stale token dead-letters nothing; the claimant's does.
	wantErr(t, s.OutboxDeadLetter(ctx, "manual", "stale", "r"), ErrClaimLost)
	if err := s.OutboxDeadLetter(ctx, "manual", tok, "payload does not decode"); err != nil {
		t.Fatal(err)
	}
	// A dead-lettered row cannot be completed, failed or dead-lettered again.
	wantErr(t, s.OutboxComplete(ctx, "manual", tok), ErrClaimLost)
	wantErr(t, s.OutboxFail(ctx, "manual", tok, 0), ErrClaimLost)
	wantErr(t, s.OutboxDeadLetter(ctx, "manual", tok, "again"), ErrClaimLost)
	// While the claims are live, nothing is dead-lettered.
	if rows, _ := s.OutboxClaim(ctx, 5, 10*time.Second); len(rows) != 0 {
		t.Fatalf("claimed during live claims: %+v", rows)
	}
	if r := outboxState(t, s, "once"); r.State != StatePending {
		t.Fatalf("once dead-lettered under a live claim: %+v", r)
	}
	clk.Advance(10 * time.Second)
	// "once" has used its attempt: dead-lettered; "twice" is claimed a second time.
	second, err := s.OutboxClaim(ctx, 5, 10*time.Second)
	if err != nil || len(second) != 1 || second[0].ID != "twice" || second[0].DeliveryAttempts != 2 {
		t.Fatalf("second claim = %+v, %v", second, err)
	}
	clk.Advance(10 * time.Second)
	if rows, _ := s.OutboxClaim(ctx, 5, 10*time.Second); len(rows) != 0 {
		t.Fatalf("claimed past the maximum: %+v", rows)
	}
	for id, want := range map[string]OutboxRow{
		"once":   {State: StateDeadLetter, DeadReason: ReasonMaxDeliveryAttempts, DeliveryAttempts: 1},
		"twice":  {State: StateDeadLetter, DeadReason: ReasonMaxDeliveryAttempts, DeliveryAttempts: 2},
		"manual": {State: StateDeadLetter, DeadReason: "payload does not decode", DeliveryAttempts: 1},
	} {
		r := outboxState(t, s, id)
		if r.State != want.State || r.DeadReason != want.DeadReason || r.DeliveryAttempts != want.DeliveryAttempts || r.ClaimToken != "" {
			t.Errorf("row %s = %+v, want state %s reason %q attempts %d and no claim", id, r, want.State, want.DeadReason, want.DeliveryAttempts)
		}
	}
	// A completed row is final too.
	if _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "done", Target: "t", MaxAttempts: 1, MaxDeliveryAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	done, _ := s.OutboxClaim(ctx, 1, time.Second)
	if err := s.OutboxComplete(ctx, "done", done[0].ClaimToken); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.OutboxDeadLetter(ctx, "done", done[0].ClaimToken, "late"), ErrClaimLost)
	clk.Advance(time.Minute)
	if _, err := s.OutboxClaim(ctx, 1, time.Second); err != nil {
		t.Fatal(err)
	}
	if r := outboxState(t, s, "done"); r.State != StateCompleted || r.DeadReason != "" {
		t.Fatalf("completed row changed: %+v", r)
	}
	// ListOutboxDeadLetters gives the dead-lettered rows, in seq order, and only them: not the
	// completed row, nor a pending one, nor one redriven back to pending.
	if _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "waiting", Target: "t", MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Redrive(ctx, "twice", "retry by hand"); err != nil {
		t.Fatal(err)
	}
	dead, err := s.ListOutboxDeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range dead {
		if r.State != StateDeadLetter {
			t.Errorf("ListOutboxDeadLetters gave row %s in state %s", r.ID, r.State)
		}
		ids = append(ids, r.ID)
	}
	if want := []string{"once", "manual"}; !slices.Equal(ids, want) {
		t.Fatalf("ListOutboxDeadLetters = %v, want %v", ids, want)
	}
}
