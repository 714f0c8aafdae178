package actordelivery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBadInputRefusedAlike is the bad-input table of issue 41, run on both backends: each input is
// refused with ErrInvalidArgument before any SQL, with a message that names the field (and the
// limit, where one applies); no commit happens, and the rows already stored are still there.
func TestBadInputRefusedAlike(t *testing.T) {
	long := strings.Repeat("m", 8*1024)
	cases := []struct {
		name string
		call func(ctx context.Context, s *Store) error
		want []string // substrings of the message
	}{
		{"Enqueue mailbox with NUL", enqueueCall(NewMessage{Mailbox: "in\x00box", ID: "a"}), []string{"Enqueue", "mailbox contains a NUL byte (at byte 2)"}},
		{"Enqueue id with NUL", enqueueCall(NewMessage{Mailbox: "inbox", ID: "a\x00"}), []string{"id contains a NUL byte"}},
		{"Enqueue mailbox invalid UTF-8", enqueueCall(NewMessage{Mailbox: "in\xffbox", ID: "a"}), []string{"mailbox is not valid UTF-8 (at byte 2)"}},
		{"Enqueue id invalid UTF-8", enqueueCall(NewMessage{Mailbox: "inbox", ID: "\xc3("}), []string{"id is not valid UTF-8 (at byte 0)"}},
		{"Enqueue key invalid UTF-8", enqueueCall(NewMessage{Mailbox: "inbox", ID: "a", Key: "k\xff"}), []string{"key is not valid UTF-8"}},
		{"Enqueue 8 KB mailbox", enqueueCall(NewMessage{Mailbox: long, ID: "a"}), []string{"mailbox is 8192 bytes, above the limit of 255"}},
		{"Enqueue oversize payload", enqueueCall(NewMessage{Mailbox: "inbox", ID: "a", Payload: make([]byte, DefaultMaxPayloadBytes+1)}), []string{"payload is 1048577 bytes, above the limit of 1048576 (Options.MaxPayloadBytes)"}},
		{"OutboxEnqueue 8 KB target", outboxCall(OutboxMessage{ID: "o", Target: long}), []string{"OutboxEnqueue", "target is 8192 bytes, above the limit of 255"}},
		{"OutboxEnqueue id with NUL", outboxCall(OutboxMessage{ID: "o\x00", Target: "inbox"}), []string{"id contains a NUL byte"}},
		{"OutboxEnqueue target invalid UTF-8", outboxCall(OutboxMessage{ID: "o", Target: "\xff"}), []string{"target is not valid UTF-8"}},
		{"OutboxEnqueue oversize payload", outboxCall(OutboxMessage{ID: "o", Target: "inbox", Payload: make([]byte, DefaultMaxPayloadBytes+1)}), []string{"payload is 1048577 bytes"}},
		{"Lease mailbox invalid UTF-8", func(ctx context.Context, s *Store) error { _, err := s.Lease(ctx, "\xff", 0); return err }, []string{"Lease", "mailbox is not valid UTF-8"}},
		{"Peek 8 KB mailbox", func(ctx context.Context, s *Store) error { _, err := s.Peek(ctx, long); return err }, []string{"Peek", "mailbox is 8192 bytes"}},
		{"GetMessage id with NUL", func(ctx context.Context, s *Store) error { _, err := s.GetMessage(ctx, "\x00"); return err }, []string{"GetMessage", "id contains a NUL byte"}},
		{"AckByID id invalid UTF-8", func(ctx context.Context, s *Store) error { return s.AckByID(ctx, "\xff") }, []string{"AckByID", "id is not valid UTF-8"}},
		{"Ack token with NUL", func(ctx context.Context, s *Store) error { return s.Ack(ctx, "keep", "t\x00") }, []string{"Ack", "token contains a NUL byte"}},
		{"DeadLetter reason too long", func(ctx context.Context, s *Store) error {
			return s.DeadLetter(ctx, "keep", strings.Repeat("r", MaxReasonBytes+1))
		}, []string{"DeadLetter", "reason is 1025 bytes, above the limit of 1024"}},
		{"DeadLetter reason with NUL", func(ctx context.Context, s *Store) error { return s.DeadLetter(ctx, "keep", "r\x00") }, []string{"reason contains a NUL byte"}},
		{"SaveCheckpoint actor invalid UTF-8", func(ctx context.Context, s *Store) error { _, err := s.SaveCheckpoint(ctx, "\xff", nil, 0); return err }, []string{"SaveCheckpoint", "actor is not valid UTF-8"}},
		{"SaveCheckpoint oversize state", func(ctx context.Context, s *Store) error {
			_, err := s.SaveCheckpoint(ctx, "a", make([]byte, DefaultMaxPayloadBytes+1), 0)
			return err
		}, []string{"state is 1048577 bytes"}},
		{"MarkProcessed message id with NUL", func(ctx context.Context, s *Store) error {
			_, err := s.MarkProcessed(ctx, "c", "\x00", 1e9)
			return err
		}, []string{"MarkProcessed", "message id contains a NUL byte"}},
		{"Redrive id invalid UTF-8", func(ctx context.Context, s *Store) error { return s.Redrive(ctx, "\xff", "fixed") }, []string{"Redrive", "id is not valid UTF-8"}},
	}
	forEachBackend(t, func(t *testing.T, b Backend) {
		s, _ := testStore(t, b)
		ctx := context.Background()
		mustEnqueue(t, s, NewMessage{Mailbox: "inbox", ID: "keep", Payload: []byte("p")})
		if _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "keep-o", Target: "inbox", MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
		before := s.Stats()
		for _, c := range cases {
			err := c.call(ctx, s)
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("%s: error %v, want ErrInvalidArgument", c.name, err)
				continue
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q does not say %q", c.name, err, w)
				}
			}
			if len(err.Error()) > 400 {
				t.Errorf("%s: error is %d bytes long: it should name the field, not repeat the value", c.name, len(err.Error()))
			}
		}
		if after := s.Stats(); after != before {
			t.Errorf("stats went from %+v to %+v: a refused call committed or rolled back a transaction", before, after)
		}
		msgs, err := s.ListMessages(ctx, "inbox")
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 || msgs[0].ID != "keep" || string(msgs[0].Payload) != "p" || msgs[0].Attempts != 0 {
			t.Errorf("inbox holds %+v, want only the untouched message keep", msgs)
		}
		if ids := outboxIDs(t, s); len(ids) != 1 || ids[0] != "keep-o" {
			t.Errorf("outbox holds %q, want only keep-o", ids)
		}
		if dls, err := s.ListDeadLetters(ctx); err != nil || len(dls) != 0 {
			t.Errorf("dead letters %+v (%v), want none", dls, err)
		}
	})
}

// TestInputAtTheLimits: the largest accepted values go through on both backends, the NOTIFY for
// a longest mailbox name and id included (PostgreSQL), and a configured payload limit applies.
func TestInputAtTheLimits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		s, _ := testStore(t, b)
		ctx := context.Background()
		mailbox := strings.Repeat("é", MaxNameBytes/2) + "x" // 255 bytes, multi-byte characters
		id := strings.Repeat("i", MaxNameBytes)
		if len(mailbox) != MaxNameBytes || !utf8.ValidString(mailbox) {
			t.Fatalf("bad fixture: %d bytes", len(mailbox))
		}
		sub, stop := s.Subscribe(mailbox)
		defer stop()
		mustEnqueue(t, s, NewMessage{Mailbox: mailbox, ID: id, Key: strings.Repeat("k", MaxNameBytes), Payload: make([]byte, DefaultMaxPayloadBytes)})
		<-sub
		m := mustLease(t, s, mailbox, 0)
		if m.ID != id || len(m.Payload) != DefaultMaxPayloadBytes {
			t.Fatalf("leased %q with %d payload bytes", m.ID, len(m.Payload))
		}
		if err := s.DeadLetter(ctx, id, strings.Repeat("r", MaxReasonBytes)); err != nil {
			t.Fatal(err)
		}

		small := openAt(t, b, testTarget(t, b), Options{MaxPayloadBytes: 16})
		if _, err := small.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "fits", MaxAttempts: 1, Payload: make([]byte, 16)}); err != nil {
			t.Fatal(err)
		}
		_, err := small.Enqueue(ctx, NewMessage{Mailbox: "m", ID: "big", MaxAttempts: 1, Payload: make([]byte, 17)})
		wantErr(t, err, ErrInvalidArgument)
		if !strings.Contains(err.Error(), "payload is 17 bytes, above the limit of 16 (Options.MaxPayloadBytes)") {
			t.Errorf("error %q does not name the payload and its limit", err)
		}
		for _, bad := range []int{-1, MaxPayloadLimit + 1} {
			_, err := OpenBackend(b, testTarget(t, b), Options{MaxPayloadBytes: bad})
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "MaxPayloadBytes") {
				t.Errorf("MaxPayloadBytes %d: %v, want ErrInvalidArgument naming it", bad, err)
			}
		}
	})
}

// TestReasonText: a handler's error becomes a reason the store accepts, whatever its bytes.
func TestReasonText(t *testing.T) {
	for _, in := range []string{"plain", "nul\x00byte", "bad\xffutf8", strings.Repeat("é", MaxReasonBytes)} {
		r := reasonText(in)
		if err := checkText("t", "reason", r, MaxReasonBytes); err != nil || r == "" {
			t.Errorf("reasonText(%.20q) = %.20q: %v", in, r, err)
		}
	}
	if reasonText("plain") != "plain" {
		t.Error("a valid reason was changed")
	}
}

func enqueueCall(m NewMessage) func(ctx context.Context, s *Store) error {
	m.MaxAttempts = 3
	return func(ctx context.Context, s *Store) error { _, err := s.Enqueue(ctx, m); return err }
}

func outboxCall(m OutboxMessage) func(ctx context.Context, s *Store) error {
	m.MaxAttempts = 3
	return func(ctx context.Context, s *Store) error { _, err := s.OutboxEnqueue(ctx, m); return err }
}
