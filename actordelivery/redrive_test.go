package actordelivery

import (
	"context"
	"testing"
	"time"
)

// TestRedrive: a mailbox dead letter and a dead-lettered outbox row go back to ready with their
// attempts reset and are delivered again; each redrive is recorded with when and why; a second
// redrive, and a redrive of an id that is not dead-lettered, report ErrNotFound and record
// nothing.
func TestRedrive(t *testing.T) { forEachBackend(t, testRedrive) }

func testRedrive(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "m1", Key: "k", Priority: 2, MaxAttempts: 2, Payload: []byte("p1")})
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "acked", MaxAttempts: 1})
	if m := mustLease(t, s, "mb", time.Minute); m.ID != "m1" {
		t.Fatalf("leased %s, want m1", m.ID)
	}
	if err := s.DeadLetter(ctx, "m1", "poison"); err != nil {
		t.Fatal(err)
	}
	if err := s.AckByID(ctx, "acked"); err != nil {
		t.Fatal(err)
	}
	if dup, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "o1", Target: "mb", MaxAttempts: 1, MaxDeliveryAttempts: 1}); err != nil || dup {
		t.Fatalf("OutboxEnqueue(o1) = %v, %v", dup, err)
	}
	claimed, err := s.OutboxClaim(ctx, 1, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim of o1 = %+v, %v", claimed, err)
	}
	if err := s.OutboxDeadLetter(ctx, "o1", claimed[0].ClaimToken, "bad target"); err != nil {
		t.Fatal(err)
	}

	clk.Advance(10 * time.Second)
	for _, id := range []string{"m1", "o1"} {
		if err := s.Redrive(ctx, id, "fixed"); err != nil {
			t.Fatalf("Redrive(%s): %v", id, err)
		}
	}
	m := mustGet(t, s, "m1")
	if m.State != StateReady || m.Attempts != 0 || m.MaxAttempts != 2 || m.Key != "k" || m.Priority != 2 ||
		string(m.Payload) != "p1" || !m.AvailableAt.Equal(clk.Now()) {
		t.Errorf("m1 after the redrive: %+v, want ready, attempts 0 of 2, key k, priority 2, payload p1, available now", m)
	}
	if dls, err := s.ListDeadLetters(ctx); err != nil || len(dls) != 0 {
		t.Errorf("dead letters after the redrive: %+v, %v", dls, err)
	}
	if dup, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: "m1", MaxAttempts: 1}); err != nil || !dup {
		t.Errorf("Enqueue(m1) after its redrive = %v, %v; want duplicate", dup, err)
	}
	if got := mustLease(t, s, "mb", time.Minute); got == nil || got.ID != "m1" || got.Attempts != 1 {
		t.Errorf("lease after the redrive = %+v, want m1 at attempt 1", got)
	}
	rows, err := s.ListOutbox(ctx)
	if err != nil || len(rows) != 1 {
		t.Fatalf("ListOutbox = %+v, %v", rows, err)
	}
	if o := rows[0]; o.State != StatePending || o.DeliveryAttempts != 0 || o.DeadReason != "" || !o.AvailableAt.Equal(clk.Now()) {
		t.Errorf("o1 after the redrive: %+v, want pending, 0 delivery attempts, no reason, available now", o)
	}
	if again, err := s.OutboxClaim(ctx, 1, time.Minute); err != nil || len(again) != 1 || again[0].DeliveryAttempts != 1 {
		t.Errorf("claim after the redrive = %+v, %v; want o1 at delivery attempt 1", again, err)
	}

	for _, id := range []string{"m1", "o1", "acked", "nope"} {
		wantErr(t, s.Redrive(ctx, id, "again"), ErrNotFound)
	}
	recs, err := s.ListRedrives(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	at := clk.Now()
	want := []Redrive{
		{ID: "m1", Kind: RedriveMessage, Mailbox: "mb", Attempts: 1, DeadReason: "poison", Reason: "fixed", At: at},
		{ID: "o1", Kind: RedriveOutbox, Mailbox: "mb", Attempts: 1, DeadReason: "bad target", Reason: "fixed", At: at},
	}
	if len(recs) != len(want) {
		t.Fatalf("ListRedrives = %+v, want %+v", recs, want)
	}
	for i := range want {
		if r := recs[i]; r.ID != want[i].ID || r.Kind != want[i].Kind || r.Mailbox != want[i].Mailbox ||
			r.Attempts != want[i].Attempts || r.DeadReason != want[i].DeadReason || r.Reason != want[i].Reason || !r.At.Equal(want[i].At) {
			t.Errorf("redrive record %d = %+v, want %+v", i, r, want[i])
		}
	}
	if only, err := s.ListRedrives(ctx, "o1"); err != nil || len(only) != 1 || only[0].ID != "o1" {
		t.Errorf("ListRedrives(o1) = %+v, %v", only, err)
	}
}

func TestRedriveBadInput(t *testing.T) { forEachBackend(t, testRedriveBadInput) }

func testRedriveBadInput(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	ctx := context.Background()
	wantErr(t, s.Redrive(ctx, "", "why"), ErrInvalidArgument)
	wantErr(t, s.Redrive(ctx, "id", ""), ErrInvalidArgument)
}
