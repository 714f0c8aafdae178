package actordelivery

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestRecordedWake: on a recording store, a consumer that waits (poll interval an hour) and is
// woken by an enqueue records one wake event placed after the enqueue's commit, then fetches and
// handles the message. Rerun: go test ./actordelivery/ -run TestRecordedWake -v
func TestRecordedWake(t *testing.T) {
	log := &eventLog{}
	st := openAt(t, BackendSQLite, filepath.Join(t.TempDir(), "wake.db"), Options{Recorder: log})
	c, err := NewConsumer(st, func(context.Context, *Message) (Effects, error) { return nil, nil },
		ConsumerOptions{Mailbox: "w", Path: PathLeaseless, PollInterval: time.Hour, MaxPollInterval: time.Hour, Worker: 7})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	count := func(op string) int {
		n := 0
		for _, ev := range log.sorted() {
			if ev.Op == op {
				n++
			}
		}
		return n
	}
	waitFor := func(op string, n int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); count(op) < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %d %s events within a minute: %+v", n, op, log.sorted())
			}
		}
	}
	waitFor("consumer_fetch", 1) // the first, idle fetch: the consumer now waits
	if _, err := st.Enqueue(context.Background(), NewMessage{Mailbox: "w", ID: "m1", MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	waitFor("consumer_handle", 1)
	var enq, wake *Event
	for _, ev := range log.sorted() {
		switch ev.Op {
		case "enqueue":
			enq = &ev
		case "wake":
			wake = &ev
		}
	}
	if enq == nil || wake == nil {
		t.Fatalf("want an enqueue and a wake event, got %+v", log.sorted())
	}
	want := EventArgs{Worker: 7, Mailbox: "w", ID: "m1", Profile: wakeViaLocal}
	if wake.Args != want || !wake.Read || wake.Seq < enq.Seq {
		t.Errorf("wake event %+v, want a read with args %+v placed at or after the enqueue's seq %d", *wake, want, enq.Seq)
	}
}

// TestNotifyPayload: a mailbox NOTIFY's payload names the mailbox and the message however either
// is spelled, a recording store's listener turns it into a wake with that cause at the commit
// counter, its own payloads are skipped, and a payload it cannot parse wakes nobody.
func TestNotifyPayload(t *testing.T) {
	log := &eventLog{}
	st := openAt(t, BackendSQLite, filepath.Join(t.TempDir(), "n.db"), Options{Recorder: log})
	if _, err := st.Enqueue(context.Background(), NewMessage{Mailbox: "other", ID: "x", MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	sender := &Store{id: "sender"}
	for _, tc := range []struct{ mailbox, id string }{{"a b", "m:1"}, {"n3:", "n"}, {"", "m"}} {
		sub, stop := st.notify.subscribe(topic{mailbox: tc.mailbox})
		_, payload, _ := strings.Cut(sender.notifyPayload(topic{mailbox: tc.mailbox}, tc.id), " ")
		st.deliver("sender " + payload)
		c, ok := sub.take()
		want := wakeCause{mailbox: tc.mailbox, id: tc.id, via: wakeViaNotify, seq: 1, at: c.at}
		if !ok || c != want || len(sub.ch) != 1 {
			t.Errorf("payload %q: cause %+v (%v), signals %d; want %+v and one signal", payload, c, ok, len(sub.ch), want)
		}
		st.deliver(st.id + " " + payload) // its own NOTIFY: the local signal already woke
		st.deliver("sender n99:" + tc.mailbox)
		if _, ok := sub.take(); ok {
			t.Errorf("payload %q: its own or a malformed payload gave a cause", payload)
		}
		stop()
	}
}

// TestRecordedPollTick: on a recording store, a worker of RunWorkers serving two mailboxes with a
// short poll interval records a poll_tick for each mailbox whenever its wait ends on the
// interval, and the history keeps the second wake rule: in commit order, every tick of a mailbox
// comes after a fetch from it, and a wake of the worker for the mailbox is followed by a fetch
// from it before the next tick there. It runs in a synctest bubble, so the worker's waits end
// exactly when their (fake) interval does and each enqueue finds it idle: on real time a loaded
// machine can starve the ticks or the wakes. Rerun: go test ./actordelivery/ -run TestRecordedPollTick -v
func TestRecordedPollTick(t *testing.T) {
	synctest.Test(t, testRecordedPollTick)
}

func testRecordedPollTick(t *testing.T) {
	log := &eventLog{}
	st := openAt(t, BackendSQLite, filepath.Join(t.TempDir(), "tick.db"), Options{Recorder: log})
	handled := make(chan struct{}, 16)
	h := func(context.Context, *Message) (Effects, error) { handled <- struct{}{}; return nil, nil }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunWorkers(ctx, st, []string{"a", "b"}, 1, h, ConsumerOptions{Path: PathLeased, LeaseFor: time.Minute,
			PollInterval: 5 * time.Millisecond, MaxPollInterval: 5 * time.Millisecond, Worker: 3})
	}()
	for i := range 6 {
		time.Sleep(12 * time.Millisecond)
		synctest.Wait() // the worker is in its idle wait
		if _, err := st.Enqueue(context.Background(), NewMessage{Mailbox: []string{"a", "b"}[i%2], ID: fmt.Sprintf("m%d", i), MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
		<-handled
	}
	time.Sleep(20 * time.Millisecond) // a few more ticks
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	fetched, owed := map[string]bool{}, map[string]bool{}
	ticks, wakes := map[string]int{}, 0
	for i, ev := range log.sorted() {
		mb := ev.Args.Mailbox
		switch ev.Op {
		case "consumer_fetch":
			fetched[mb], owed[mb] = true, false
		case "wake":
			wakes++
			owed[mb] = true
		case "poll_tick":
			ticks[mb]++
			if want := (EventArgs{Worker: 3, Mailbox: mb}); ev.Args != want || !ev.Read {
				t.Errorf("event %d: poll tick %+v, want a read with args %+v", i, ev, want)
			}
			if !fetched[mb] || owed[mb] {
				t.Errorf("event %d: poll tick of %q (seq %d) before any fetch from it, or after a wake without a fetch since", i, mb, ev.Seq)
			}
		}
	}
	if ticks["a"] == 0 || ticks["b"] == 0 || wakes == 0 {
		t.Errorf("ticks %v and %d wakes; want ticks of both mailboxes and a wake", ticks, wakes)
	}
}
