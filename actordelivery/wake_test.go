package actordelivery

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
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
	if !reflect.DeepEqual(wake.Args, want) || !wake.Read || wake.Seq < enq.Seq {
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
			if want := (EventArgs{Worker: 3, Mailbox: mb}); !reflect.DeepEqual(ev.Args, want) || !ev.Read {
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

// TestWakeAfterTickSortsAfterIt: a wake's place in the commit order is taken when the store sends
// it, a moment before its consumer receives it. A consumer whose wait ends on its poll interval
// in that moment records its tick first, and the tick's place can be later than the wake's: at
// the same commit with a later time, or at a later commit. In commit order the wake must still
// come after the tick, or the tick reads as that of a worker woken and not fetching since
// (wake_not_fetched), a false finding. A worker that is woken and ticks again without fetching
// must still read so. The test sends the wake itself, on a manual clock, so the moment is
// exact. Rerun: go test ./actordelivery/ -run TestWakeAfterTickSortsAfterIt -v
func TestWakeAfterTickSortsAfterIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		// meanwhile is what happens between the store sending the wake and the consumer
		// receiving it, besides the consumer's tick.
		meanwhile func(t *testing.T, st *Store, clk *ManualClock)
		// fetch: the woken consumer fetches before its next tick.
		fetch bool
	}{
		{"same commit, later time", func(_ *testing.T, _ *Store, clk *ManualClock) { clk.Advance(time.Millisecond) }, true},
		{"a commit between", func(t *testing.T, st *Store, _ *ManualClock) {
			mustEnqueue(t, st, NewMessage{Mailbox: "other", ID: "x1"})
		}, true},
		{"woken, ticks without fetching", func(_ *testing.T, _ *Store, clk *ManualClock) { clk.Advance(time.Millisecond) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
			log := &eventLog{}
			st := openAt(t, BackendSQLite, filepath.Join(t.TempDir(), "w.db"), Options{Recorder: log, Clock: clk})
			c, err := NewConsumer(st, func(context.Context, *Message) (Effects, error) { return nil, nil },
				ConsumerOptions{Mailbox: "w", LeaseFor: time.Minute, Worker: 7})
			if err != nil {
				t.Fatal(err)
			}
			cs := []*Consumer{c}
			sub, stop := st.subscribeMailboxes([]string{"w"})
			defer stop()
			tick := func() {
				t.Helper()
				if !waitIdle(ctx, time.Nanosecond, st, sub, cs, cs) {
					t.Fatal("wait ended without a tick")
				}
			}
			fetch := func() {
				t.Helper()
				if _, err := c.Fetch(ctx); err != nil {
					t.Fatal(err)
				}
			}
			fetch() // idle: the consumer now waits
			clk.Advance(time.Millisecond)
			mustEnqueue(t, st, NewMessage{Mailbox: "w", ID: "m1"})
			// The store has sent the wake; hold it back from the consumer for a moment.
			cause, ok := sub.take()
			<-sub.ch
			if !ok {
				t.Fatal("the enqueue sent no wake with a cause")
			}
			tc.meanwhile(t, st, clk)
			tick()
			sub.signal(cause)
			if !waitIdle(ctx, time.Hour, st, sub, cs, cs) {
				t.Fatal("wait ended without the wake")
			}
			if tc.fetch {
				fetch()
			}
			clk.Advance(time.Millisecond)
			tick()

			// The consumer's events, in the commit order a checker reads them in, and the second
			// wake rule over them.
			var ops []string
			owed, missed := false, -1
			for _, ev := range log.sorted() {
				if ev.Args.Worker != 7 {
					continue
				}
				ops = append(ops, ev.Op)
				switch ev.Op {
				case "wake":
					owed = true
				case "consumer_fetch":
					owed = false
				case "poll_tick":
					if owed && missed < 0 {
						missed = len(ops) - 1
					}
				}
			}
			want := []string{"consumer_fetch", "poll_tick", "wake", "consumer_fetch", "poll_tick"}
			wantMissed := -1
			if !tc.fetch {
				want = []string{"consumer_fetch", "poll_tick", "wake", "poll_tick"}
				wantMissed = 3
			}
			if !slices.Equal(ops, want) || missed != wantMissed {
				var all []string
				for _, ev := range log.sorted() {
					all = append(all, fmt.Sprintf("%s(worker %d) seq %d read %v at %s", ev.Op, ev.Args.Worker, ev.Seq, ev.Read, ev.At.Format("15:04:05.000")))
				}
				t.Errorf("the consumer's events in commit order %v, the tick of a woken worker that did not fetch at %d; want %v and %d\n%s",
					ops, missed, want, wantMissed, strings.Join(all, "\n"))
			}
		})
	}
}
