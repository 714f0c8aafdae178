package actordelivery

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMetricsCounts: the consumer, the publisher and the store report each counter once per
// event, labelled with the mailbox; every committed write transaction is one commit observation.
func TestMetricsCounts(t *testing.T) { forEachBackend(t, testMetricsCounts) }

func testMetricsCounts(t *testing.T, b Backend) {
	ctx := context.Background()
	m := &ExpvarMetrics{}
	s := openAt(t, b, testTarget(t, b), Options{Clock: NewManualClock(base), Metrics: m})
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "ok", MaxAttempts: 3})
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "retry", MaxAttempts: 3})
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "dead", MaxAttempts: 1})
	c := newConsumer(t, s, func(_ context.Context, msg *Message) (Effects, error) {
		if msg.ID == "ok" {
			return nil, nil
		}
		return nil, errHandler
	}, ConsumerOptions{Path: PathLeased, Retry: Backoff{Base: time.Hour}})
	for range 4 { // the fourth step is idle: the retried message waits an hour
		if _, err := c.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mustOutbox(t, s, "o1", "o2")
	faulty := &faultyStore{Store: s, failTx: 1}
	p := newPublisher(t, faulty, PublisherOptions{Mode: ModeFold})
	rows, err := p.Claim(ctx)
	if err != nil || len(rows) != 2 {
		t.Fatalf("Claim = %v, %v", rows, err)
	}
	for _, r := range rows {
		_, _ = p.Deliver(ctx, r) // the first fails (injected), the second is delivered
	}
	for _, tc := range []struct {
		c       Counter
		mailbox string
		want    int64
	}{
		{CounterFetched, "mb", 3}, {CounterAcked, "mb", 1}, {CounterRetried, "mb", 1}, {CounterDeadLettered, "mb", 1},
		{CounterOutboxDelivered, "target", 1}, {CounterOutboxFailed, "target", 1}, {CounterAcked, "target", 0},
	} {
		if got := m.Counter(tc.c, tc.mailbox); got != tc.want {
			t.Errorf("%v{%s} = %d, want %d", tc.c, tc.mailbox, got, tc.want)
		}
	}
	var got struct {
		Counters map[string]map[string]int64
		Commit   struct{ Count int64 }
	}
	if err := json.Unmarshal([]byte(m.String()), &got); err != nil {
		t.Fatalf("String() is not JSON: %v\n%s", err, m.String())
	}
	if got.Counters["dead_lettered"]["mb"] != 1 || got.Counters["outbox_failed"]["target"] != 1 {
		t.Errorf("String() = %s", m.String())
	}
	// Every COMMIT is observed; the injected failure rolls back before COMMIT, so the observations
	// are exactly the store's commits.
	if st := s.Stats(); got.Commit.Count != int64(st.Commits) || st.Commits == 0 {
		t.Errorf("commit observations %d, store commits %d", got.Commit.Count, st.Commits)
	}
}

// TestQueueDepth: ready messages count, acked and dead-lettered ones do not; RunWorkers samples
// the depths into Metrics.
func TestQueueDepth(t *testing.T) { forEachBackend(t, testQueueDepth) }

func testQueueDepth(t *testing.T, b Backend) {
	inBubble(t, b, func(t *testing.T, settle func()) {
		ctx := context.Background()
		m := &ExpvarMetrics{}
		s := openAt(t, b, testTarget(t, b), Options{Clock: NewManualClock(base), Metrics: m})
		for i := range 4 {
			mustEnqueue(t, s, NewMessage{Mailbox: "a", ID: fmt.Sprint("a", i), MaxAttempts: 1})
		}
		mustEnqueue(t, s, NewMessage{Mailbox: "b", ID: "b0", MaxAttempts: 1})
		if err := s.AckByID(ctx, "a0"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeadLetter(ctx, "a1", "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.QueueDepth(ctx, ""); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("QueueDepth(\"\") = %v, want ErrInvalidArgument", err)
		}
		for mb, want := range map[string]int64{"a": 2, "b": 1, "none": 0} {
			if n, err := s.QueueDepth(ctx, mb); err != nil || n != want {
				t.Errorf("QueueDepth(%q) = %d, %v; want %d", mb, n, err, want)
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		release := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- RunWorkers(wctx, s, []string{"a", "b"}, 1, func(context.Context, *Message) (Effects, error) {
				<-release
				return nil, nil
			}, ConsumerOptions{Path: PathLeased})
		}()
		settle() // the first sample is taken; the single worker waits in its first handler
		want := map[string]int64{"a": 2, "b": 1}
		sampled := func() map[string]int64 {
			var got struct {
				QueueDepth map[string]int64 `json:"queue_depth"`
			}
			if err := json.Unmarshal([]byte(m.String()), &got); err != nil {
				t.Fatal(err)
			}
			return got.QueueDepth
		}
		got := sampled()
		// Outside a bubble (PostgreSQL) settle is only a pause, and on a loaded machine the first
		// sample may still be under way: wait for it, within a generous bound.
		for deadline := time.Now().Add(30 * time.Second); !bubbled(b) && len(got) < len(want) && time.Now().Before(deadline); got = sampled() {
			time.Sleep(10 * time.Millisecond)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("sampled depths %v, want %v", got, want)
		}
		cancel()
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// blockingMetrics, once armed, blocks its first ObserveCommit until release is closed, and says
// when it started blocking.
type blockingMetrics struct {
	NopMetrics
	armed            atomic.Bool // set once the store is open; the first call after it blocks
	blocked, release chan struct{}
}

func (b *blockingMetrics) ObserveCommit(time.Duration) {
	if b.armed.CompareAndSwap(true, false) {
		close(b.blocked)
		<-b.release
	}
}

// TestMetricsNeverBlockACommit: a Metrics that blocks holds up only the goroutine that reports,
// never the store: while one enqueue's goroutine is stuck in ObserveCommit, its row is already
// committed and another goroutine's commit goes through. (Were the metrics called inside the
// transaction, on SQLite the second enqueue would wait for the single writer connection and the
// synctest bubble would report the deadlock; on PostgreSQL the first row would not be visible.)
func TestMetricsNeverBlockACommit(t *testing.T) { forEachBackend(t, testMetricsNeverBlockACommit) }

func testMetricsNeverBlockACommit(t *testing.T, b Backend) {
	inBubble(t, b, func(t *testing.T, settle func()) {
		ctx := context.Background()
		bm := &blockingMetrics{blocked: make(chan struct{}), release: make(chan struct{})}
		s := openAt(t, b, testTarget(t, b), Options{Clock: NewManualClock(base), Metrics: bm})
		bm.armed.Store(true)
		first := make(chan error, 1)
		go func() {
			_, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: "first", MaxAttempts: 1})
			first <- err
		}()
		<-bm.blocked
		if m := mustGet(t, s, "first"); m.State != StateReady {
			t.Fatalf("first row while its reporter is blocked: %+v", m)
		}
		mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "second", MaxAttempts: 1})
		close(bm.release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
	})
}

// TestExpvarMetricsNeverBlock: ExpvarMetrics records without any lock a reader of /debug/vars
// can hold. Here a reader is parked inside expvar.Do (which holds expvar's registry lock while
// it calls back) and in the middle of rendering the adapter; consumer steps on new mailboxes,
// which add new keys, still complete and are counted. (With an expvar.Map, whose new keys take
// a lock that a reader holds while it writes out, this would wait for the reader.)
func TestExpvarMetricsNeverBlock(t *testing.T) { forEachBackend(t, testExpvarMetricsNeverBlock) }

func testExpvarMetricsNeverBlock(t *testing.T, b Backend) {
	ctx := context.Background()
	m := &ExpvarMetrics{}
	name := "actordelivery_test_" + rand.Text()
	expvar.Publish(name, m)
	s := openAt(t, b, testTarget(t, b), Options{Clock: NewManualClock(base), Metrics: m})
	parked, release, readerDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(readerDone)
		expvar.Do(func(kv expvar.KeyValue) {
			if kv.Key == name {
				_ = kv.Value.String()
				close(parked)
				<-release
			}
		})
	}()
	<-parked
	for i := range 3 {
		mb := fmt.Sprint("fresh", i)
		mustEnqueue(t, s, NewMessage{Mailbox: mb, ID: mb})
		c := newConsumer(t, s, okHandler, ConsumerOptions{Mailbox: mb})
		if out, err := c.Step(ctx); err != nil || out.Action != ActionAcked {
			t.Fatalf("Step = %+v, %v", out, err)
		}
		if got := m.Counter(CounterAcked, mb); got != 1 {
			t.Fatalf("acked{%s} = %d while a reader is parked, want 1", mb, got)
		}
	}
	close(release)
	<-readerDone
	if v := expvar.Get(name); v == nil || !strings.Contains(v.String(), `"fresh2":1`) {
		t.Fatalf("published var = %v", v)
	}
}

// TestLogRecordsUseAttrs: every log call in the package passes typed attributes with the
// caller's context (LogAttrs), never alternating key-value arguments, so the keys stay the
// ones logattrs.go declares.
func TestLogRecordsUseAttrs(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			recv, ok := sel.X.(*ast.SelectorExpr)
			if !ok || recv.Sel.Name != "log" {
				return true
			}
			checked++
			if sel.Sel.Name != "LogAttrs" {
				t.Errorf("%s: log.%s: use LogAttrs with typed slog.Attr values", fset.Position(call.Pos()), sel.Sel.Name)
			} else if len(call.Args) > 2 {
				if _, ok := call.Args[2].(*ast.BasicLit); !ok {
					if b, ok := call.Args[2].(*ast.BinaryExpr); !ok || b.Op != token.ADD {
						t.Errorf("%s: the log message is not a constant", fset.Position(call.Pos()))
					}
				}
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("found only %d log calls; the check looks at the wrong thing", checked)
	}
}

// TestLogRecordKeys: a failed delivery's record carries the documented keys with typed values.
func TestLogRecordKeys(t *testing.T) { forEachBackend(t, testLogRecordKeys) }

func testLogRecordKeys(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := testStore(t, b)
	mustEnqueue(t, s, NewMessage{Mailbox: "mb", ID: "m1", MaxAttempts: 3})
	var logs syncBuffer
	c := newConsumer(t, s, failHandler, ConsumerOptions{Path: PathLeased, Retry: Backoff{Base: 2 * time.Second},
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if out, err := c.Step(ctx); err != nil || out.Action != ActionRetried {
		t.Fatalf("Step = %+v, %v", out, err)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(logs.String()), &rec); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	want := map[string]any{"mailbox": "mb", "message_id": "m1", "attempt": 1.0, "max_attempts": 3.0,
		"action": "retried", "delay": float64(2 * time.Second), "error": errHandler.Error()}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("record[%q] = %v (%T), want %v", k, rec[k], rec[k], v)
		}
	}
	for k := range rec {
		if k != strings.ToLower(k) || strings.ContainsAny(k, " -.") {
			t.Errorf("key %q is not snake_case", k)
		}
	}
}
