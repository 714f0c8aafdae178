package actordelivery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// eventLog is a Recorder that keeps the events it is given, all but the store's incarnation:
// the tests compare events with what their steps did, and TestRecordedIncarnation checks the
// incarnation apart.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) Record(ev Event) {
	if ev.Op == "incarnation" {
		return
	}
	ev.Args.Incarnation = ""
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

// sorted returns the events in commit order as a checker reads it (observe.Ordered): by sequence
// number, the write numbered s before the reads that saw it, reads of one place by time, then in
// the order recorded.
func (l *eventLog) sorted() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.events)
	slices.SortStableFunc(out, func(a, b Event) int {
		if a.Seq != b.Seq {
			return cmp.Compare(a.Seq, b.Seq)
		}
		if a.Read != b.Read {
			if a.Read {
				return 1
			}
			return -1
		}
		return a.At.Compare(b.At)
	})
	return out
}

type fixedRetry struct {
	delay time.Duration
	retry bool
}

func (f fixedRetry) Retry(error, int) (time.Duration, bool) { return f.delay, f.retry }

// TestRecorderEvents runs store calls, both consumer paths and both publisher modes on a recording
// store and checks the recorded history: one event per operation and protocol step (a step's own
// store calls are not recorded apart), write events numbered 1, 2, 3, ... in commit order without
// gaps, reads placed after the commit they saw, and the results as the callers got them.
func TestRecorderEvents(t *testing.T) { forEachBackend(t, testRecorderEvents) }

func testRecorderEvents(t *testing.T, b Backend) {
	ctx := context.Background()
	clk := NewManualClock(base)
	log := &eventLog{}
	s := openAt(t, b, testTarget(t, b), Options{Clock: clk, Recorder: log})

	mustEnqueue(t, s, NewMessage{Mailbox: "a", ID: "m1", MaxAttempts: 2})
	mustEnqueue(t, s, NewMessage{Mailbox: "b", ID: "m2", MaxAttempts: 2})
	ok := func(context.Context, *Message) (Effects, error) { return nil, nil }
	leased, err := NewConsumer(s, ok, ConsumerOptions{Mailbox: "a", LeaseFor: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d, err := leased.Fetch(ctx)
	if err != nil || d == nil {
		t.Fatalf("leased fetch: %v %v", d, err)
	}
	if err := s.Ack(ctx, "m1", "not-the-token"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("stale ack: %v", err)
	}
	clk.Advance(time.Second)
	if out, err := leased.Handle(ctx, d); err != nil || out.Action != ActionAcked {
		t.Fatalf("leased handle: %+v %v", out, err)
	}
	fail := func(context.Context, *Message) (Effects, error) { return nil, errors.New("handler failed") }
	leaseless, err := NewConsumer(s, fail, ConsumerOptions{Mailbox: "b", Path: PathLeaseless, Retry: fixedRetry{delay: 3 * time.Second, retry: true}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := leaseless.Step(ctx); err != nil || out.Action != ActionRetried || out.Attempt != 1 {
		t.Fatalf("leaseless step: %+v %v", out, err)
	}
	if _, err := s.Peek(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeadLetter(ctx, "nope", "r"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("dead letter of a missing id: %v", err)
	}
	for _, id := range []string{"o1", "o2"} {
		if _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: id, Target: "c", MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []PublishMode{ModeFold, ModeSplit} {
		p, err := NewPublisher(s, PublisherOptions{Mode: mode, Batch: 1})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := p.Step(ctx); n != 1 || err != nil {
			t.Fatalf("%v publisher step: %d %v", mode, n, err)
		}
	}

	var got []string
	var writes int64
	for _, ev := range log.sorted() {
		line := ev.Op
		if ev.Read {
			line += " read"
		} else {
			writes++
			if ev.Seq != writes {
				t.Errorf("%s: seq %d, want %d (write events are numbered without gaps)", ev.Op, ev.Seq, writes)
			}
		}
		if ev.Result.Action != "" {
			line += " " + ev.Result.Action
		}
		if ev.Result.Err != "" {
			line += " " + ev.Result.Err
		}
		got = append(got, line)
	}
	want := []string{
		"enqueue", "enqueue",
		"consumer_fetch", // expire + lease, one step
		"ack lease_lost",
		"consumer_handle acked",
		"consumer_fetch read", // the leaseless peek
		"consumer_handle retried",
		"peek read",
		"dead_letter read not_found",
		"outbox_enqueue", "outbox_enqueue",
		"outbox_claim", "publisher_deliver delivered", // fold: one step
		"outbox_claim", "enqueue", "outbox_complete", // split: its two commits
	}
	if !slices.Equal(got, want) {
		t.Errorf("recorded history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, ev := range log.sorted() {
		if ev.Op == "consumer_handle" && ev.Result.Action == ActionRetried {
			if ev.Args.Outcome != "fail" || ev.Args.RetryDelay != 3*time.Second || ev.Result.Attempt != 1 || !ev.At.Equal(base.Add(time.Second)) {
				t.Errorf("retried handle event: %+v", ev)
			}
		}
		if ev.Op == "consumer_fetch" && !ev.Read && (ev.Result.Message == nil || ev.Result.Message.Token == "" || ev.Args.LeaseFor != 10*time.Second) {
			t.Errorf("leased fetch event: %+v", ev)
		}
	}
}

// TestRecorderLeaseLostStep: a handle that finds its lease taken over changes nothing and is
// recorded as a read placed after the commit it saw.
func TestRecorderLeaseLostStep(t *testing.T) { forEachBackend(t, testRecorderLeaseLostStep) }

func testRecorderLeaseLostStep(t *testing.T, b Backend) {
	ctx := context.Background()
	clk := NewManualClock(base)
	log := &eventLog{}
	s := openAt(t, b, testTarget(t, b), Options{Clock: clk, Recorder: log})
	mustEnqueue(t, s, NewMessage{Mailbox: "a", ID: "m1", MaxAttempts: 3})
	ok := func(context.Context, *Message) (Effects, error) { return nil, nil }
	w1, _ := NewConsumer(s, ok, ConsumerOptions{Mailbox: "a", LeaseFor: time.Second})
	w2, _ := NewConsumer(s, ok, ConsumerOptions{Mailbox: "a", LeaseFor: time.Second})
	d1, err := w1.Fetch(ctx)
	if err != nil || d1 == nil {
		t.Fatal(d1, err)
	}
	clk.Advance(2 * time.Second)
	if d2, err := w2.Fetch(ctx); err != nil || d2 == nil {
		t.Fatal(d2, err)
	}
	if out, err := w1.Handle(ctx, d1); err != nil || out.Action != ActionLeaseLost {
		t.Fatalf("stale handle: %+v %v", out, err)
	}
	evs := log.sorted()
	last := evs[len(evs)-1]
	if last.Op != "consumer_handle" || !last.Read || last.Seq != 3 || last.Args.Worker != w1.worker || last.Result.Action != ActionLeaseLost {
		t.Errorf("lost handle recorded as %+v, want a read after commit 3 by worker %d", last, w1.worker)
	}
}

// TestRecorderDedupAndCheckpoints: processed marks and checkpoint saves are write events with
// their observed results (a duplicate, a new version or a version conflict); a checkpoint load is
// a read placed after the commit it saw, not_found included.
func TestRecorderDedupAndCheckpoints(t *testing.T) {
	forEachBackend(t, testRecorderDedupAndCheckpoints)
}

func testRecorderDedupAndCheckpoints(t *testing.T, b Backend) {
	ctx := context.Background()
	clk := NewManualClock(base)
	log := &eventLog{}
	s := openAt(t, b, testTarget(t, b), Options{Clock: clk, Recorder: log})
	for _, want := range []bool{false, true} {
		if already, err := s.MarkProcessed(ctx, "g", "m1", 2*time.Second); err != nil || already != want {
			t.Fatalf("mark: %v %v, want already %v", already, err, want)
		}
	}
	if _, _, err := s.LoadCheckpoint(ctx, "a1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("load of no checkpoint: %v", err)
	}
	if v, err := s.SaveCheckpoint(ctx, "a1", []byte("s"), 0); err != nil || v != 1 {
		t.Fatalf("first save: %d %v", v, err)
	}
	if _, err := s.SaveCheckpoint(ctx, "a1", []byte("s"), 0); !errors.Is(err, ErrVersionConflict) {
		t.Fatalf("stale save: %v", err)
	}
	if _, v, err := s.LoadCheckpoint(ctx, "a1"); err != nil || v != 1 {
		t.Fatalf("load: %d %v", v, err)
	}
	var got []string
	for _, ev := range log.sorted() {
		got = append(got, fmt.Sprintf("%d %v %s %s/%s ttl=%v expect=%d: dup=%v version=%d err=%q", ev.Seq, ev.Read, ev.Op,
			ev.Args.Consumer+ev.Args.Actor, ev.Args.ID, ev.Args.TTL, ev.Args.ExpectVersion, ev.Result.Duplicate, ev.Result.Version, ev.Result.Err))
	}
	want := []string{
		`1 false mark_processed g/m1 ttl=2s expect=0: dup=false version=0 err=""`,
		`2 false mark_processed g/m1 ttl=2s expect=0: dup=true version=0 err=""`,
		`2 true load_checkpoint a1/ ttl=0s expect=0: dup=false version=0 err="not_found"`,
		`3 false save_checkpoint a1/ ttl=0s expect=0: dup=false version=1 err=""`,
		`4 false save_checkpoint a1/ ttl=0s expect=0: dup=false version=0 err="version_conflict"`,
		`4 true load_checkpoint a1/ ttl=0s expect=0: dup=false version=1 err=""`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("recorded history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRecorderOffTouchesNothing: a store without a recorder never creates the commit counter.
func TestRecorderOffTouchesNothing(t *testing.T) { forEachBackend(t, testRecorderOffTouchesNothing) }

func testRecorderOffTouchesNothing(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "a", ID: "m1"})
	var n int
	err := s.ExecTx(context.Background(), true, func(ctx context.Context) error {
		return s.txFrom(ctx).tx.QueryRowContext(ctx, qSeqRead).Scan(&n)
	})
	if err == nil {
		t.Fatalf("the commit counter exists on a store that does not record (n = %d)", n)
	}
}

// TestRecorderForms: the JSON and slog forms carry the same fields.
func TestRecorderForms(t *testing.T) {
	ev := Event{Seq: 7, At: base, Op: "lease", Args: EventArgs{Mailbox: "a", LeaseFor: time.Second},
		Result: EventResult{Message: &EventMessage{ID: "m", Attempts: 1, Token: "T"}}}
	var jb, sb bytes.Buffer
	JSONRecorder(&jb, nil).Record(ev)
	SlogRecorder(slog.New(slog.NewJSONHandler(&sb, nil))).Record(ev)
	for name, b := range map[string][]byte{"json": jb.Bytes(), "slog": sb.Bytes()} {
		var got Event
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Seq != 7 || got.Op != "lease" || got.Args.LeaseFor != time.Second || got.Result.Message == nil || got.Result.Message.Token != "T" || !got.At.Equal(base) {
			t.Errorf("%s form reads back as %+v from %s", name, got, b)
		}
	}
}

// TestCommitLog: a store with CommitLog writes every recorded write event, and no read event,
// into the commit log of its database in the transaction that commits it; a second store on the
// same database (another process) continues the same numbering into the same log; a rolled-back
// transaction leaves nothing there. A database no CommitLog store opened has no log to read.
func TestCommitLog(t *testing.T) { forEachBackend(t, testCommitLog) }

func testCommitLog(t *testing.T, b Backend) {
	ctx := context.Background()
	clk := NewManualClock(base)
	target := testTarget(t, b)
	log1, log2 := &eventLog{}, &eventLog{}
	s1 := openAt(t, b, target, Options{Clock: clk, Recorder: log1, CommitLog: true})
	s2 := openAt(t, b, target, Options{Clock: clk, Recorder: log2, CommitLog: true})

	mustEnqueue(t, s1, NewMessage{Mailbox: "a", ID: "m1", MaxAttempts: 2})
	mustEnqueue(t, s2, NewMessage{Mailbox: "a", ID: "m2", MaxAttempts: 2})
	if _, err := s1.Peek(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	errRollback := errors.New("roll back")
	if err := s2.ExecTx(ctx, false, func(ctx context.Context) error {
		if _, err := s2.Enqueue(ctx, NewMessage{Mailbox: "a", ID: "gone", MaxAttempts: 1}); err != nil {
			return err
		}
		return errRollback
	}); !errors.Is(err, errRollback) {
		t.Fatalf("rolled-back transaction: %v", err)
	}
	m, err := s2.Lease(ctx, "a", 5*time.Second)
	if err != nil || m == nil {
		t.Fatalf("lease: %v %v", m, err)
	}
	if err := s1.Ack(ctx, m.ID, m.Token); err != nil {
		t.Fatal(err)
	}

	var writes []Event
	for _, ev := range append(log1.sorted(), log2.sorted()...) {
		if !ev.Read {
			writes = append(writes, ev)
		}
	}
	slices.SortFunc(writes, func(a, b Event) int { return int(a.Seq - b.Seq) })
	got, err := s2.CommitLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || len(writes) != 4 {
		t.Fatalf("commit log %d events, recorders %d write events; want 4 each (2 enqueues, a lease, an ack): %+v", len(got), len(writes), got)
	}
	for i := range got {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(writes[i])
		if got[i].Seq != int64(i+1) || !bytes.Equal(g, w) {
			t.Errorf("commit log event %d: %s, the recorder heard %s", i+1, g, w)
		}
	}

	plain := openAt(t, b, testTarget(t, b), Options{Clock: clk})
	if _, err := plain.CommitLog(ctx); err == nil {
		t.Error("a database without a commit log: CommitLog returned no error")
	}
}

// rawLog is a Recorder that keeps every event as it is given, incarnations included.
type rawLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *rawLog) Record(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

// TestRecordedIncarnation: each Open of a recording store has an incarnation id of its own (a
// UUIDv7), records it once, as the "incarnation" read event before any other, and names it in
// the events of its workers; a store reopened on the same database gets a new one.
func TestRecordedIncarnation(t *testing.T) { forEachBackend(t, testRecordedIncarnation) }

func testRecordedIncarnation(t *testing.T, b Backend) {
	target := testTarget(t, b)
	ctx := context.Background()
	var ids []string
	for run := range 2 {
		rec := &rawLog{}
		st := openAt(t, b, target, Options{Recorder: rec})
		id := st.Incarnation()
		if len(id) != 36 || id[14] != '7' || !strings.ContainsRune("89ab", rune(id[19])) {
			t.Fatalf("run %d: incarnation %q is not a UUIDv7", run, id)
		}
		ids = append(ids, id)
		if _, err := st.Enqueue(ctx, NewMessage{Mailbox: "a", ID: fmt.Sprintf("m%d", run), MaxAttempts: 2}); err != nil {
			t.Fatal(err)
		}
		c, err := NewConsumer(st, func(context.Context, *Message) (Effects, error) { return nil, nil }, ConsumerOptions{Mailbox: "a"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.Fetch(ctx)
		if err != nil || d == nil {
			t.Fatalf("fetch: %v, %v", d, err)
		}
		if len(rec.events) == 0 || rec.events[0].Op != "incarnation" || !rec.events[0].Read || rec.events[0].Args.Incarnation != id {
			t.Fatalf("run %d: first event %+v, want the read event incarnation %s", run, rec.events[0], id)
		}
		for _, ev := range rec.events[1:] {
			if ev.Op == "incarnation" {
				t.Errorf("run %d: a second incarnation event %+v", run, ev)
			}
			named := ev.Args.Worker != 0 || ev.Args.Publisher != 0 || ev.Op == OpSnapshot
			if named != (ev.Args.Incarnation == id) || !named && ev.Args.Incarnation != "" {
				t.Errorf("run %d: event %s (worker %d) names incarnation %q, want %q on exactly the events of a worker or publisher", run, ev.Op, ev.Args.Worker, ev.Args.Incarnation, id)
			}
		}
		if !slices.ContainsFunc(rec.events, func(ev Event) bool { return ev.Op == "consumer_fetch" }) {
			t.Fatalf("run %d: no consumer_fetch recorded: %+v", run, rec.events)
		}
		// The second Open finds m0, which the first run's fetch leased, and states it.
		snap := slices.DeleteFunc(slices.Clone(rec.events), func(ev Event) bool { return ev.Op != OpSnapshot })
		if run == 0 && len(snap) != 0 {
			t.Errorf("run 0: an empty database's Open wrote a snapshot: %+v", snap)
		}
		if run == 1 && (len(snap) != 2 || snap[0].Row.Table != SnapMessage || snap[0].Row.ID != "m0" || snap[0].Row.Token == "" ||
			snap[1].Row.Table != SnapEnd || snap[1].Row.Rows != 1) {
			t.Errorf("run 1: snapshot %+v, want the leased row m0 and an end stating 1 row", snap)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if ids[0] == ids[1] {
		t.Fatalf("two Opens share the incarnation %s", ids[0])
	}
}
