package actordelivery

import (
	"context"
	"testing"
	"time"
)

// TestPurge: Purge removes final rows that are old enough, a batch of each kind per call, oldest
// first, never a ready message or a pending outbox row (completed and dead-lettered outbox rows
// alike are final); the ids of purged messages and dead
// letters stay duplicates until their dedup horizon has passed, outbox ids do not.
func TestPurge(t *testing.T) { forEachBackend(t, testPurge) }

func testPurge(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	for _, id := range []string{"a", "b", "c", "ready"} {
		mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: id})
	}
	mustOutbox(t, s, "o1", "o2")
	p := newPublisher(t, s, PublisherOptions{Mode: ModeFold})
	if n, err := p.Step(ctx); err != nil || n != 2 { // o1 and o2 delivered (and completed) at 0
		t.Fatalf("publisher step = %d, %v", n, err)
	}
	if err := s.AckByID(ctx, "a"); err != nil { // acked at 0
		t.Fatal(err)
	}
	mustOutbox(t, s, "o3")
	claimed, err := s.OutboxClaim(ctx, 1, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim of o3 = %+v, %v", claimed, err)
	}
	clk.Advance(5 * time.Second)
	if err := s.DeadLetter(ctx, "c", "test"); err != nil { // dead at 5s
		t.Fatal(err)
	}
	if err := s.OutboxDeadLetter(ctx, "o3", claimed[0].ClaimToken, "test"); err != nil { // outbox dead at 5s
		t.Fatal(err)
	}
	clk.Advance(5 * time.Second)
	if err := s.AckByID(ctx, "b"); err != nil { // acked at 10s
		t.Fatal(err)
	}
	clk.Set(base.Add(20 * time.Second))

	purge := func(olderThan, horizon time.Duration, batch int, want PurgeResult) {
		t.Helper()
		got, err := s.Purge(ctx, olderThan, horizon, batch)
		if err != nil || got != want {
			t.Fatalf("Purge(%v, %v, %d) = %+v, %v; want %+v", olderThan, horizon, batch, got, err, want)
		}
	}
	// cutoff 5s: a (acked 0), c (dead 5s), o1 and o2 (completed 0) and o3 (dead-lettered 5s)
	// qualify; one of each kind per call.
	purge(15*time.Second, time.Minute, 1, PurgeResult{Acked: 1, DeadLetters: 1, Outbox: 1})
	purge(15*time.Second, time.Minute, 1, PurgeResult{Outbox: 1})
	purge(15*time.Second, time.Minute, 1, PurgeResult{Outbox: 1})
	purge(15*time.Second, time.Minute, 1, PurgeResult{})
	for id, want := range map[string]string{"b": StateAcked, "ready": StateReady, "o1": StateReady, "o2": StateReady} {
		if m := mustGet(t, s, id); m.State != want {
			t.Errorf("%s after the purge: %s, want %s", id, m.State, want)
		}
	}
	if _, err := s.GetMessage(ctx, "a"); err == nil {
		t.Error("acked a survived the purge")
	}
	if dls, err := s.ListDeadLetters(ctx); err != nil || len(dls) != 0 {
		t.Errorf("dead letters after the purge: %+v, %v", dls, err)
	}
	if rows, err := s.ListOutbox(ctx); err != nil || len(rows) != 0 {
		t.Errorf("outbox after the purge: %+v, %v", rows, err)
	}

	// Inside the horizon (a: until 60s, c: until 65s) the ids are duplicates; outbox ids are free.
	for _, id := range []string{"a", "c"} {
		if dup, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: id, MaxAttempts: 1}); err != nil || !dup {
			t.Errorf("Enqueue(%q) inside the horizon = %v, %v; want duplicate", id, dup, err)
		}
	}
	if dup, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "o1", Target: "other", MaxAttempts: 1}); err != nil || dup {
		t.Errorf("OutboxEnqueue(o1) after its purge = %v, %v; want a fresh row", dup, err)
	}
	clk.Set(base.Add(60 * time.Second)) // a's horizon has passed (at 60s it is over), c's has not
	if dup, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: "a", MaxAttempts: 1}); err != nil || dup {
		t.Errorf("Enqueue(a) after the horizon = %v, %v; want a fresh message", dup, err)
	}
	if dup, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: "c", MaxAttempts: 1}); err != nil || !dup {
		t.Errorf("Enqueue(c) inside its horizon = %v, %v; want duplicate", dup, err)
	}

	// A horizon already past when the row is purged keeps nothing: b (acked 10s) with horizon 30s.
	purge(0, 30*time.Second, 10, PurgeResult{Acked: 1})
	if dup, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: "b", MaxAttempts: 1}); err != nil || dup {
		t.Errorf("Enqueue(b) purged after its horizon = %v, %v; want a fresh message", dup, err)
	}
}

func TestPurgeBadInput(t *testing.T) { forEachBackend(t, testPurgeBadInput) }

func testPurgeBadInput(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	ctx := context.Background()
	for _, tc := range []struct {
		name               string
		olderThan, horizon time.Duration
		batch              int
	}{
		{"negative older_than", -time.Second, 0, 1},
		{"negative horizon", 0, -time.Second, 1},
		{"older_than above max", MaxDuration + time.Millisecond, 0, 1},
		{"zero batch", 0, 0, 0},
		{"negative batch", 0, 0, -5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Purge(ctx, tc.olderThan, tc.horizon, tc.batch)
			wantErr(t, err, ErrInvalidArgument)
		})
	}
}

// TestPurgeAllResumes: a purge call resumed after a kind's last removed row removes only rows
// after it, and PurgeAll still removes the rows behind where it resumes (rows that became final
// behind its cursor meanwhile): once its resumed calls find nothing it calls from the oldest row,
// and stops only when such a call removes nothing. Their ids are retired as any purge's are.
func TestPurgeAllResumes(t *testing.T) { forEachBackend(t, testPurgeAllResumes) }

func testPurgeAllResumes(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	key := func(id string) purgeKey { return purgeKey{final: clk.Now().UnixMilli(), id: id} }
	keys := map[string]purgeKey{}
	for _, id := range []string{"a1", "a2", "a3", "a4", "d1", "d2"} {
		mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: id})
	}
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		clk.Advance(time.Second)
		if err := s.AckByID(ctx, id); err != nil {
			t.Fatal(err)
		}
		keys[id] = key(id)
	}
	for _, id := range []string{"d1", "d2"} {
		clk.Advance(time.Second)
		if err := s.DeadLetter(ctx, id, "test"); err != nil {
			t.Fatal(err)
		}
		keys[id] = key(id)
	}
	clk.Advance(time.Minute)

	from := purgeCursor{acked: keys["a2"], dead: keys["d1"]}
	got, next, err := s.purge(ctx, 0, time.Hour, 10, from)
	if want := (PurgeResult{Acked: 2, DeadLetters: 1}); err != nil || got != want {
		t.Fatalf("purge resumed after a2 and d1 = %+v, %v; want %+v", got, err, want)
	}
	if want := (purgeCursor{acked: keys["a4"], dead: keys["d2"]}); next != want {
		t.Errorf("cursor after the resumed purge = %+v, want %+v", next, want)
	}
	for id, want := range map[string]string{"a1": StateAcked, "a2": StateAcked, "a3": "", "a4": ""} {
		if m, err := s.GetMessage(ctx, id); want == "" && err == nil || want != "" && (err != nil || m.State != want) {
			t.Errorf("%s after the resumed purge: %+v, %v; want state %q", id, m, err, want)
		}
	}

	// a1, a2 and d1 are behind the cursor: PurgeAll from it still takes them.
	sum, err := s.purgeAllFrom(ctx, 0, time.Hour, 1, next)
	if want := (PurgeResult{Acked: 2, DeadLetters: 1}); err != nil || sum != want {
		t.Fatalf("purgeAllFrom(%+v) = %+v, %v; want %+v", next, sum, err, want)
	}
	if msgs, err := s.ListMessages(ctx, ""); err != nil || len(msgs) != 0 {
		t.Errorf("messages after PurgeAll: %+v, %v; want none", msgs, err)
	}
	if dls, err := s.ListDeadLetters(ctx); err != nil || len(dls) != 0 {
		t.Errorf("dead letters after PurgeAll: %+v, %v; want none", dls, err)
	}
	for _, id := range []string{"a1", "a3", "d1"} {
		if dup, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: id, MaxAttempts: 3}); err != nil || !dup {
			t.Errorf("Enqueue(%s) inside its horizon = %v, %v; want a duplicate", id, dup, err)
		}
	}
}
