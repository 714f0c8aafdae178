package actordelivery

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPublisherIDCollision: an outbox row whose id is already a message of another mailbox is never
// reported delivered. The delivery dead-letters the row with a reason naming that mailbox, enqueues
// nothing into the target, and leaves the other mailbox's message exactly as it was (an
// acknowledged one stays acknowledged). The message may come before the outbox row or after it: the
// delivery, not OutboxEnqueue, is where the collision shows.
func TestPublisherIDCollision(t *testing.T) { forEachBackend(t, testPublisherIDCollision) }

func testPublisherIDCollision(t *testing.T, b Backend) {
	cases := []struct {
		name string
		// before: the other message is enqueued before the outbox row (else after it).
		before bool
		// settle brings the other mailbox's message into its state: ready, acked or a dead letter.
		settle string
	}{
		{"ready after the row", false, "ready"},
		{"ready before the row", true, "ready"},
		{"acked", false, "acked"},
		{"dead letter", false, "dead"},
	}
	for _, mode := range []PublishMode{ModeFold, ModeSplit} {
		for _, tc := range cases {
			t.Run(mode.String()+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				s, _ := testStore(t, b)
				other := func() {
					mustEnqueue(t, s, NewMessage{Mailbox: "other", ID: "o1", Key: "theirs", MaxAttempts: 2, Payload: []byte("theirs")})
				}
				if tc.before {
					other()
				}
				mustOutbox(t, s, "o1")
				if !tc.before {
					other()
				}
				switch tc.settle {
				case "acked":
					if err := s.AckByID(ctx, "o1"); err != nil {
						t.Fatal(err)
					}
				case "dead":
					if err := s.DeadLetter(ctx, "o1", "poison"); err != nil {
						t.Fatal(err)
					}
				}
				before, _ := s.ListMessages(ctx, "other")
				deadBefore, _ := s.ListDeadLetters(ctx)

				p := newPublisher(t, s, PublisherOptions{Mode: mode})
				rows, err := p.Claim(ctx)
				if err != nil || len(rows) != 1 {
					t.Fatalf("Claim = %+v, %v", rows, err)
				}
				res, err := p.Deliver(ctx, rows[0])
				if err != nil || res != (DeliveryResult{Action: ActionDeadLettered, Duplicate: true}) {
					t.Fatalf("Deliver = %+v, %v; want dead_lettered, duplicate", res, err)
				}
				row := outboxState(t, s, "o1")
				if want := "id collides with a message in mailbox other"; row.State != StateDeadLetter || row.DeadReason != want || row.ClaimToken != "" {
					t.Fatalf("outbox row = %+v; want dead_letter with reason %q", row, want)
				}
				if got, _ := s.ListMessages(ctx, "target"); len(got) != 0 {
					t.Fatalf("target mailbox got %+v", got)
				}
				after, _ := s.ListMessages(ctx, "other")
				deadAfter, _ := s.ListDeadLetters(ctx)
				if !sameMessages(before, after) || len(deadBefore) != len(deadAfter) {
					t.Fatalf("the other mailbox changed:\nbefore %+v %+v\nafter  %+v %+v", before, deadBefore, after, deadAfter)
				}
				// The row is final: another claim finds nothing to deliver.
				if rows, err := p.Claim(ctx); err != nil || len(rows) != 0 {
					t.Fatalf("second Claim = %+v, %v", rows, err)
				}
			})
		}
	}
}

func sameMessages(a, b []Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Mailbox != b[i].Mailbox || a[i].State != b[i].State ||
			a[i].Attempts != b[i].Attempts || string(a[i].Payload) != string(b[i].Payload) {
			return false
		}
	}
	return true
}

// TestPublisherIDCollisionClaimLost: the dead-lettering of a colliding row is fenced by the claim,
// as the completion is: a publisher whose claim ran out and was taken over changes nothing.
func TestPublisherIDCollisionClaimLost(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		for _, mode := range []PublishMode{ModeFold, ModeSplit} {
			t.Run(mode.String(), func(t *testing.T) {
				ctx := context.Background()
				s, clk := testStore(t, b)
				mustOutbox(t, s, "o1")
				mustEnqueue(t, s, NewMessage{Mailbox: "other", ID: "o1", MaxAttempts: 1})
				p := newPublisher(t, s, PublisherOptions{Mode: mode, ClaimFor: time.Second})
				stale, _ := p.Claim(ctx)
				clk.Advance(time.Second)
				if fresh, _ := p.Claim(ctx); len(fresh) != 1 {
					t.Fatalf("reclaim = %+v", fresh)
				}
				res, err := p.Deliver(ctx, stale[0])
				if err != nil || res != (DeliveryResult{Action: ActionClaimLost, Duplicate: true}) {
					t.Fatalf("stale Deliver = %+v, %v; want claim_lost", res, err)
				}
				if row := outboxState(t, s, "o1"); row.State != StatePending || row.DeadReason != "" {
					t.Fatalf("outbox row = %+v; want pending", row)
				}
			})
		}
	})
}

// TestMessageMailbox: messages in either state and dead letters name their mailbox; an unknown id
// is ErrNotFound; bad input is ErrInvalidArgument naming the field.
func TestMessageMailbox(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		ctx := context.Background()
		s, _ := testStore(t, b)
		mustEnqueue(t, s, NewMessage{Mailbox: "a", ID: "m1", MaxAttempts: 1})
		mustEnqueue(t, s, NewMessage{Mailbox: "b", ID: "m2", MaxAttempts: 1})
		if err := s.DeadLetter(ctx, "m2", "poison"); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]string{"m1": "a", "m2": "b"} {
			if got, err := s.MessageMailbox(ctx, id); err != nil || got != want {
				t.Errorf("MessageMailbox(%q) = %q, %v; want %q", id, got, err, want)
			}
		}
		if _, err := s.MessageMailbox(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("MessageMailbox(unknown) = %v; want ErrNotFound", err)
		}
		for _, id := range []string{"", "a\x00b", "\xff"} {
			if _, err := s.MessageMailbox(ctx, id); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("MessageMailbox(%q) = %v; want ErrInvalidArgument", id, err)
			}
		}
	})
}
