package actordelivery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEligibility runs the eligibility rule and the delivery order of docs/semantics.md case by
// case. Each case builds a mailbox, then checks which message Peek and Lease choose (they must
// agree); order cases check the whole sequence by leasing and acking one message at a time.
func TestEligibility(t *testing.T) { forEachBackend(t, testEligibility) }

func testEligibility(t *testing.T, b Backend) {
	ctx := context.Background()
	type env struct {
		t   *testing.T
		s   *Store
		clk *ManualClock
	}
	enq := func(e env, id, key string, prio, max int, delay time.Duration) {
		mustEnqueue(e.t, e.s, NewMessage{Mailbox: "mb", ID: id, Key: key, Priority: prio, MaxAttempts: max, Delay: delay})
	}
	lease := func(e env, id string, d time.Duration) *Message {
		m := mustLease(e.t, e.s, "mb", d)
		if m.ID != id {
			e.t.Fatalf("setup lease got %q, want %q", m.ID, id)
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		setup func(e env)
		want  []string // successive picks (each acked before the next); empty: none eligible
	}{
		{"empty mailbox", func(e env) {}, nil},
		{"other mailbox only", func(e env) {
			mustEnqueue(e.t, e.s, NewMessage{Mailbox: "other", ID: "o"})
		}, nil},
		{"delay not yet over", func(e env) {
			enq(e, "a", "", 0, 3, 10*time.Second)
			e.clk.Advance(10*time.Second - time.Millisecond)
		}, nil},
		{"delay over exactly", func(e env) {
			enq(e, "a", "", 0, 3, 10*time.Second)
			e.clk.Advance(10 * time.Second)
		}, []string{"a"}},
		{"live lease one second before expiry", func(e env) {
			enq(e, "a", "", 0, 3, 0)
			lease(e, "a", 10*time.Second)
			e.clk.Advance(9 * time.Second) // lease_until == now + 1s: live
		}, nil},
		{"lease expired at lease_until == now", func(e env) {
			enq(e, "a", "", 0, 3, 0)
			lease(e, "a", 10*time.Second)
			e.clk.Advance(10 * time.Second)
		}, []string{"a"}},
		{"zero-length lease is expired at once", func(e env) {
			enq(e, "a", "", 0, 3, 0)
			lease(e, "a", 0)
		}, []string{"a"}},
		{"attempts == max is not eligible", func(e env) {
			enq(e, "a", "", 0, 1, 0)
			m := lease(e, "a", time.Second)
			if err := e.s.Nack(ctx, "a", m.Token, 0); err != nil {
				e.t.Fatal(err)
			}
		}, nil},
		{"attempts == max - 1 is eligible", func(e env) {
			enq(e, "a", "", 0, 2, 0)
			m := lease(e, "a", time.Second)
			if err := e.s.Nack(ctx, "a", m.Token, 0); err != nil {
				e.t.Fatal(err)
			}
		}, []string{"a"}},
		{"acked is not eligible", func(e env) {
			enq(e, "a", "", 0, 3, 0)
			if err := e.s.AckByID(ctx, "a"); err != nil {
				e.t.Fatal(err)
			}
		}, nil},
		{"keyed successor waits for its predecessor", func(e env) {
			enq(e, "a", "k", 0, 3, 0)
			enq(e, "b", "k", 9, 3, 0)
		}, []string{"a", "b"}},
		{"delayed predecessor still blocks", func(e env) {
			enq(e, "a", "k", 0, 3, time.Hour)
			enq(e, "b", "k", 0, 3, 0)
		}, nil},
		{"live-leased predecessor on its last attempt still blocks", func(e env) {
			enq(e, "a", "k", 0, 1, 0)
			enq(e, "b", "k", 0, 3, 0)
			lease(e, "a", 10*time.Second) // attempts 1 == max, but the lease is live
			e.clk.Advance(9 * time.Second)
		}, nil},
		{"exhausted predecessor no longer blocks", func(e env) {
			enq(e, "a", "k", 0, 1, 0)
			enq(e, "b", "k", 0, 3, 0)
			m := lease(e, "a", 10*time.Second)
			if err := e.s.Nack(ctx, "a", m.Token, 0); err != nil {
				e.t.Fatal(err)
			}
		}, []string{"b"}},
		{"exhausted predecessor with an expired lease no longer blocks", func(e env) {
			enq(e, "a", "k", 0, 1, 0)
			enq(e, "b", "k", 0, 3, 0)
			lease(e, "a", 10*time.Second)
			e.clk.Advance(10 * time.Second)
		}, []string{"b"}},
		{"leased predecessor with attempts left blocks after expiry too", func(e env) {
			enq(e, "a", "k", 0, 3, 0)
			enq(e, "b", "k", 0, 3, 0)
			lease(e, "a", 10*time.Second)
			e.clk.Advance(10 * time.Second)
		}, []string{"a", "b"}},
		{"acked predecessor does not block", func(e env) {
			enq(e, "a", "k", 0, 3, 0)
			enq(e, "b", "k", 0, 3, 0)
			if err := e.s.AckByID(ctx, "a"); err != nil {
				e.t.Fatal(err)
			}
		}, []string{"b"}},
		{"dead-lettered predecessor does not block", func(e env) {
			enq(e, "a", "k", 0, 3, 0)
			enq(e, "b", "k", 0, 3, 0)
			if err := e.s.DeadLetter(ctx, "a", "poison"); err != nil {
				e.t.Fatal(err)
			}
		}, []string{"b"}},
		{"same key in another mailbox does not block", func(e env) {
			mustEnqueue(e.t, e.s, NewMessage{Mailbox: "other", ID: "o", Key: "k", Delay: time.Hour})
			enq(e, "b", "k", 0, 3, 0)
		}, []string{"b"}},
		{"other keys and unkeyed messages are not ordered", func(e env) {
			enq(e, "a", "k1", 0, 3, time.Hour)
			enq(e, "b", "k2", 0, 3, 0)
			enq(e, "c", "", 0, 3, time.Hour)
			enq(e, "d", "", 0, 3, 0)
		}, []string{"b", "d"}},
		{"priority first", func(e env) {
			enq(e, "low", "", 1, 3, 0)
			enq(e, "high", "", 5, 3, 0)
			enq(e, "negative", "", -2, 3, 0)
			enq(e, "mid", "", 3, 3, 0)
		}, []string{"high", "mid", "low", "negative"}},
		{"then available_at", func(e env) {
			enq(e, "late", "", 0, 3, 5*time.Second)
			enq(e, "early", "", 0, 3, 2*time.Second)
			enq(e, "now", "", 0, 3, 0)
			e.clk.Advance(5 * time.Second)
		}, []string{"now", "early", "late"}},
		{"then seq", func(e env) {
			for _, id := range []string{"s1", "s2", "s3"} {
				enq(e, id, "", 0, 3, 0)
			}
		}, []string{"s1", "s2", "s3"}},
		{"nack moves a message back in available_at order", func(e env) {
			enq(e, "a", "", 0, 3, 0)
			enq(e, "b", "", 0, 3, 0)
			m := lease(e, "a", time.Second)
			if err := e.s.Nack(ctx, "a", m.Token, time.Second); err != nil {
				e.t.Fatal(err)
			}
			e.clk.Advance(time.Second)
		}, []string{"b", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := testStore(t, b)
			tc.setup(env{t, s, clk})
			var got []string
			for range 10 {
				id := peekID(t, s, "mb")
				if id == "" {
					break
				}
				got = append(got, id)
				if err := s.AckByID(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("delivery order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnqueue(t *testing.T) { forEachBackend(t, testEnqueue) }

func testEnqueue(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "a", Key: "k", Priority: 4, MaxAttempts: 2, Delay: 3 * time.Second, Payload: []byte("p")})
	got := mustGet(t, s, "a")
	want := &Message{Mailbox: "m", ID: "a", Key: "k", Priority: 4, MaxAttempts: 2, Attempts: 0,
		AvailableAt: base.Add(3 * time.Second), State: StateReady, Payload: []byte("p"), Seq: got.Seq, CreatedAt: base}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("stored message (-want +got):\n%s", diff)
	}
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "b"})
	if b := mustGet(t, s, "b"); b.Seq <= got.Seq || b.Payload != nil {
		t.Fatalf("second message seq %d (first %d), payload %v", b.Seq, got.Seq, b.Payload)
	}

	dupCases := []struct {
		name  string
		setup func()
		id    string
	}{
		{"same mailbox", func() {}, "a"},
		{"other mailbox", func() {}, "b"},
		{"after ack", func() {
			m := mustLease(t, s, "m", time.Second)
			if m.ID != "b" {
				t.Fatalf("leased %q", m.ID)
			}
			if err := s.Ack(ctx, "b", m.Token); err != nil {
				t.Fatal(err)
			}
		}, "b"},
		{"after dead letter", func() {
			clk.Advance(3 * time.Second)
			if err := s.DeadLetter(ctx, "a", "poison"); err != nil {
				t.Fatal(err)
			}
		}, "a"},
	}
	for _, tc := range dupCases {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			before, err := s.ListMessages(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			dls, _ := s.ListDeadLetters(ctx)
			dup, err := s.Enqueue(ctx, NewMessage{Mailbox: "elsewhere", ID: tc.id, Priority: 99, MaxAttempts: 7, Payload: []byte("other")})
			if err != nil || !dup {
				t.Fatalf("Enqueue duplicate %q = %v, %v; want true, nil", tc.id, dup, err)
			}
			after, _ := s.ListMessages(ctx, "")
			if diff := cmp.Diff(before, after); diff != "" {
				t.Fatalf("duplicate enqueue changed rows (-before +after):\n%s", diff)
			}
			dls2, _ := s.ListDeadLetters(ctx)
			if diff := cmp.Diff(dls, dls2); diff != "" {
				t.Fatalf("duplicate enqueue changed dead letters:\n%s", diff)
			}
		})
	}
}

func TestLeaseAndFencing(t *testing.T) { forEachBackend(t, testLeaseAndFencing) }

func testLeaseAndFencing(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "a", MaxAttempts: 5})
	l1 := mustLease(t, s, "m", 10*time.Second)
	if l1.Attempts != 1 || l1.Token == "" || !l1.LeaseUntil.Equal(base.Add(10*time.Second)) {
		t.Fatalf("first lease: %+v", l1)
	}
	clk.Advance(10 * time.Second)
	l2 := mustLease(t, s, "m", 10*time.Second)
	if l2.Attempts != 2 || l2.Token == l1.Token {
		t.Fatalf("second lease: attempts %d token %q (first %q)", l2.Attempts, l2.Token, l1.Token)
	}

	// The first token was replaced: every fenced call with it fails and changes nothing.
	snapshot := mustGet(t, s, "a")
	stale := map[string]func() error{
		"Ack":         func() error { return s.Ack(ctx, "a", l1.Token) },
		"Nack":        func() error { return s.Nack(ctx, "a", l1.Token, 0) },
		"ExtendLease": func() error { return s.ExtendLease(ctx, "a", l1.Token, time.Hour) },
		"unknown id":  func() error { return s.Ack(ctx, "nope", l2.Token) },
		"made-up":     func() error { return s.Nack(ctx, "a", "not-a-token", 0) },
	}
	for name, call := range stale {
		t.Run("stale "+name, func(t *testing.T) {
			wantErr(t, call(), ErrLeaseLost)
			if diff := cmp.Diff(snapshot, mustGet(t, s, "a")); diff != "" {
				t.Fatalf("fenced call changed the row:\n%s", diff)
			}
		})
	}

	// Extend with the live token moves lease_until from now.
	clk.Advance(5 * time.Second)
	if err := s.ExtendLease(ctx, "a", l2.Token, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, s, "a"); !m.LeaseUntil.Equal(clk.Now().Add(20*time.Second)) || m.Attempts != 2 {
		t.Fatalf("after extend: %+v", m)
	}
	clk.Advance(19 * time.Second)
	if id := peekID(t, s, "m"); id != "" {
		t.Fatalf("extended lease not live: peek %q", id)
	}

	// Nack clears the token, keeps attempts, delays.
	if err := s.Nack(ctx, "a", l2.Token, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	m := mustGet(t, s, "a")
	if m.Token != "" || !m.LeaseUntil.IsZero() || m.Attempts != 2 || !m.AvailableAt.Equal(clk.Now().Add(3*time.Second)) {
		t.Fatalf("after nack: %+v", m)
	}
	// A cleared token never matches again.
	wantErr(t, s.Ack(ctx, "a", l2.Token), ErrLeaseLost)
	wantErr(t, s.ExtendLease(ctx, "a", l2.Token, time.Second), ErrLeaseLost)

	clk.Advance(3 * time.Second)
	l3 := mustLease(t, s, "m", time.Second)
	// A token whose lease ran out but was not cleared still matches (token matching, not liveness).
	clk.Advance(time.Hour)
	if err := s.Ack(ctx, "a", l3.Token); err != nil {
		t.Fatalf("ack with an expired, uncleared token: %v", err)
	}
	m = mustGet(t, s, "a")
	if m.State != StateAcked || m.Token != "" || m.Attempts != 3 {
		t.Fatalf("after ack: %+v", m)
	}
	wantErr(t, s.Ack(ctx, "a", l3.Token), ErrLeaseLost)
	if l, err := s.Lease(ctx, "m", time.Second); err != nil || l != nil {
		t.Fatalf("lease of an acked mailbox = %v, %v", l, err)
	}
}

func TestByIDOperations(t *testing.T) { forEachBackend(t, testByIDOperations) }

func testByIDOperations(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "a", MaxAttempts: 2})
	mustLease(t, s, "m", time.Minute)
	// NackByID clears a live lease, counts an attempt, delays.
	if err := s.NackByID(ctx, "a", 4*time.Second); err != nil {
		t.Fatal(err)
	}
	m := mustGet(t, s, "a")
	if m.Attempts != 2 || m.Token != "" || !m.AvailableAt.Equal(base.Add(4*time.Second)) {
		t.Fatalf("after NackByID: %+v", m)
	}
	// Capped at max_attempts.
	if err := s.NackByID(ctx, "a", 0); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, s, "a"); m.Attempts != 2 {
		t.Fatalf("NackByID past max: attempts %d", m.Attempts)
	}
	clk.Advance(time.Second)
	if err := s.AckByID(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, s, "a"); m.State != StateAcked {
		t.Fatalf("after AckByID: %+v", m)
	}
	for name, call := range map[string]func() error{
		"AckByID acked":      func() error { return s.AckByID(ctx, "a") },
		"NackByID acked":     func() error { return s.NackByID(ctx, "a", 0) },
		"AckByID unknown":    func() error { return s.AckByID(ctx, "zz") },
		"NackByID unknown":   func() error { return s.NackByID(ctx, "zz", 0) },
		"DeadLetter acked":   func() error { return s.DeadLetter(ctx, "a", "r") },
		"DeadLetter unknown": func() error { return s.DeadLetter(ctx, "zz", "r") },
	} {
		t.Run(name, func(t *testing.T) {
			before := mustGet(t, s, "a")
			wantErr(t, call(), ErrNotFound)
			if diff := cmp.Diff(before, mustGet(t, s, "a")); diff != "" {
				t.Fatalf("changed:\n%s", diff)
			}
		})
	}
	// AckByID clears a lease.
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "b"})
	mustLease(t, s, "m", time.Minute)
	if err := s.AckByID(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, s, "b"); m.Token != "" || !m.LeaseUntil.IsZero() {
		t.Fatalf("AckByID left a lease: %+v", m)
	}
}

func TestPeekChangesNothing(t *testing.T) { forEachBackend(t, testPeekChangesNothing) }

func testPeekChangesNothing(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "a", Payload: []byte("x")})
	before := mustGet(t, s, "a")
	commits := s.Stats().Commits
	for range 3 {
		p, err := s.Peek(ctx, "m")
		if err != nil || p == nil {
			t.Fatalf("Peek = %v, %v", p, err)
		}
		if diff := cmp.Diff(before, p); diff != "" {
			t.Fatalf("Peek result differs from the row:\n%s", diff)
		}
	}
	if diff := cmp.Diff(before, mustGet(t, s, "a")); diff != "" {
		t.Fatalf("Peek changed the row:\n%s", diff)
	}
	if got := s.Stats().Commits; got != commits {
		t.Fatalf("Peek committed %d write transactions", got-commits)
	}
}

func TestExpireLeases(t *testing.T) { forEachBackend(t, testExpireLeases) }

func testExpireLeases(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "last", MaxAttempts: 1, Payload: []byte("p")})
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "more", MaxAttempts: 3})
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "long", MaxAttempts: 1})
	mustLease(t, s, "m", 10*time.Second) // last
	mustLease(t, s, "m", 10*time.Second) // more
	mustLease(t, s, "m", 11*time.Second) // long

	clk.Advance(9 * time.Second)
	if n, err := s.ExpireLeases(ctx); err != nil || n != 0 {
		t.Fatalf("expire before any lease ran out = %d, %v", n, err)
	}
	clk.Advance(time.Second) // now == lease_until of last and more
	n, err := s.ExpireLeases(ctx)
	if err != nil || n != 2 {
		t.Fatalf("ExpireLeases = %d, %v; want 2", n, err)
	}
	if _, err := s.GetMessage(ctx, "last"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("exhausted message still in its mailbox: %v", err)
	}
	dls, err := s.ListDeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []DeadLetter{{Mailbox: "m", ID: "last", Priority: 0, Attempts: 1, MaxAttempts: 1,
		Reason: ReasonLeaseExpired, Payload: []byte("p"), DeadAt: clk.Now()}}
	if diff := cmp.Diff(want, dls); diff != "" {
		t.Fatalf("dead letters (-want +got):\n%s", diff)
	}
	if m := mustGet(t, s, "more"); m.Token != "" || m.Attempts != 1 || m.State != StateReady {
		t.Fatalf("expired message with attempts left: %+v", m)
	}
	if m := mustGet(t, s, "long"); m.Token == "" {
		t.Fatalf("live lease cleared: %+v", m)
	}
	if n, err := s.ExpireLeases(ctx); err != nil || n != 0 {
		t.Fatalf("second expire = %d, %v", n, err)
	}
}

func TestDeadLetter(t *testing.T) { forEachBackend(t, testDeadLetter) }

func testDeadLetter(t *testing.T, b Backend) {
	ctx := context.Background()
	s, clk := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "a", Key: "k", Priority: 2, MaxAttempts: 4, Payload: []byte("p")})
	mustLease(t, s, "m", time.Minute)
	clk.Advance(time.Second)
	if err := s.DeadLetter(ctx, "a", "poison"); err != nil {
		t.Fatal(err)
	}
	dls, _ := s.ListDeadLetters(ctx)
	want := []DeadLetter{{Mailbox: "m", ID: "a", Key: "k", Priority: 2, Attempts: 1, MaxAttempts: 4,
		Reason: "poison", Payload: []byte("p"), DeadAt: base.Add(time.Second)}}
	if diff := cmp.Diff(want, dls); diff != "" {
		t.Fatalf("dead letters (-want +got):\n%s", diff)
	}
	msgs, _ := s.ListMessages(ctx, "m")
	if len(msgs) != 0 {
		t.Fatalf("dead-lettered row still listed: %+v", msgs)
	}
	wantErr(t, s.DeadLetter(ctx, "a", "again"), ErrNotFound)
}

func TestListMessages(t *testing.T) { forEachBackend(t, testListMessages) }

func testListMessages(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	for _, m := range []NewMessage{{Mailbox: "x", ID: "1"}, {Mailbox: "y", ID: "2"}, {Mailbox: "x", ID: "3"}} {
		mustEnqueue(t, s, m)
	}
	ids := func(ms []Message) (out []string) {
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	all, err := s.ListMessages(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	x, _ := s.ListMessages(ctx, "x")
	none, _ := s.ListMessages(ctx, "nobody")
	if diff := cmp.Diff([]string{"1", "2", "3"}, ids(all)); diff != "" {
		t.Fatal(diff)
	}
	if diff := cmp.Diff([]string{"1", "3"}, ids(x)); diff != "" {
		t.Fatal(diff)
	}
	if len(none) != 0 {
		t.Fatalf("unknown mailbox listed %v", none)
	}
}

// TestMailboxBadInput: every malformed call fails with ErrInvalidArgument naming the argument, and
// writes nothing.
func TestMailboxBadInput(t *testing.T) { forEachBackend(t, testMailboxBadInput) }

func testMailboxBadInput(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "m", ID: "a"})
	l := mustLease(t, s, "m", time.Minute)
	for _, tc := range []struct {
		name string
		call func() error
		arg  string
	}{
		{"Enqueue empty mailbox", func() error { _, err := s.Enqueue(ctx, NewMessage{ID: "x", MaxAttempts: 1}); return err }, "mailbox"},
		{"Enqueue empty id", func() error { _, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", MaxAttempts: 1}); return err }, "id"},
		{"Enqueue max_attempts 0", func() error { _, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "x"}); return err }, "max_attempts"},
		{"Enqueue max_attempts negative", func() error {
			_, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "x", MaxAttempts: -1})
			return err
		}, "max_attempts"},
		{"Enqueue negative delay", func() error {
			_, err := s.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "x", MaxAttempts: 1, Delay: -time.Second})
			return err
		}, "delay"},
		{"Lease empty mailbox", func() error { _, err := s.Lease(ctx, "", time.Second); return err }, "mailbox"},
		{"Lease negative lease_for", func() error { _, err := s.Lease(ctx, "m", -1); return err }, "lease_for"},
		{"Peek empty mailbox", func() error { _, err := s.Peek(ctx, ""); return err }, "mailbox"},
		{"Ack empty id", func() error { return s.Ack(ctx, "", l.Token) }, "id"},
		{"Ack empty token", func() error { return s.Ack(ctx, "a", "") }, "token"},
		{"Nack empty token", func() error { return s.Nack(ctx, "a", "", 0) }, "token"},
		{"Nack negative delay", func() error { return s.Nack(ctx, "a", l.Token, -time.Second) }, "delay"},
		{"AckByID empty id", func() error { return s.AckByID(ctx, "") }, "id"},
		{"NackByID empty id", func() error { return s.NackByID(ctx, "", 0) }, "id"},
		{"NackByID negative delay", func() error { return s.NackByID(ctx, "a", -time.Second) }, "delay"},
		{"ExtendLease empty token", func() error { return s.ExtendLease(ctx, "a", "", time.Second) }, "token"},
		{"ExtendLease negative", func() error { return s.ExtendLease(ctx, "a", l.Token, -time.Second) }, "lease_for"},
		{"DeadLetter empty id", func() error { return s.DeadLetter(ctx, "", "r") }, "id"},
		{"DeadLetter empty reason", func() error { return s.DeadLetter(ctx, "a", "") }, "reason"},
		{"GetMessage empty id", func() error { _, err := s.GetMessage(ctx, ""); return err }, "id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := s.ListMessages(ctx, "")
			err := tc.call()
			wantErr(t, err, ErrInvalidArgument)
			if !strings.Contains(err.Error(), tc.arg) {
				t.Fatalf("error %q does not name %q", err, tc.arg)
			}
			after, _ := s.ListMessages(ctx, "")
			if diff := cmp.Diff(before, after); diff != "" {
				t.Fatalf("bad call wrote:\n%s", diff)
			}
		})
	}
}

// TestDurationsAboveMaxRefused: a duration above MaxDuration is refused with ErrInvalidArgument
// naming the argument, never clamped or wrapped; MaxDuration itself is accepted.
func TestDurationsAboveMaxRefused(t *testing.T) { forEachBackend(t, testDurationsAboveMaxRefused) }

func testDurationsAboveMaxRefused(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	over := MaxDuration + time.Nanosecond
	_, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: "a", MaxAttempts: 1, Delay: over})
	wantErr(t, err, ErrInvalidArgument)
	if !strings.Contains(err.Error(), "delay") {
		t.Fatalf("error %q does not name the delay", err)
	}
	_, err = s.Lease(ctx, "mb", over)
	wantErr(t, err, ErrInvalidArgument)
	_, err = s.OutboxClaim(ctx, 1, over)
	wantErr(t, err, ErrInvalidArgument)
	wantErr(t, s.NackByID(ctx, "a", over), ErrInvalidArgument)
	if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: "b", MaxAttempts: 1, Delay: MaxDuration}); err != nil {
		t.Fatalf("Enqueue with Delay == MaxDuration: %v", err)
	}
}
