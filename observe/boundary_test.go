package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/actordelivery/record"
	"github.com/pconform/pconform/observe"
)

// fixedDelay retries every failure after delay.
type fixedDelay time.Duration

func (d fixedDelay) Retry(error, int) (time.Duration, bool) { return time.Duration(d), true }

// TestBoundaryTiesCheckClean records the store on a manual clock, with a step one millisecond
// before each boundary the store decides and one exactly at it: a delayed message due, a lease
// run out, a retry due, an acknowledged row old enough to purge, a purged id's horizon passed.
// The store reads its clock and keeps its times in whole milliseconds, and the recorder writes
// them so: no step is closer to a boundary than that, and the model meets each boundary where
// the store met it. The log checks clean. With any one boundary moved by 1 ms it is a finding.
// Rerun: bash scripts/pg.sh go test ./observe/ -run TestBoundaryTiesCheckClean -v
func TestBoundaryTiesCheckClean(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) {
		checkBoundaryTies(t, recordBoundaryTies(t, open))
	})
}

// checkBoundaryTies checks log clean, and each copy with one boundary moved by 1 ms a finding.
func checkBoundaryTies(t *testing.T, log []byte) {
	sum, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "ties"), 0), observe.CheckOptions{})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if f != nil {
		t.Fatalf("finding on a log with every step at or 1 ms before its boundary: %s\n%s", f, log)
	}
	t.Logf("%d events checked clean", sum.Events)

	for _, tc := range []struct {
		name string
		op   string // the first event of this op that edit changes
		edit func(*record.Event) bool
	}{
		{"delay 1 ms longer", "enqueue", func(e *record.Event) bool { e.Args.Delay += time.Millisecond; return true }},
		{"lease 1 ms longer", "consumer_fetch", func(e *record.Event) bool {
			if e.Result.Message == nil {
				return false
			}
			e.Args.LeaseFor += time.Millisecond
			return true
		}},
		{"retry delay 1 ms shorter", "consumer_handle", func(e *record.Event) bool {
			if e.Result.Action != actordelivery.ActionRetried {
				return false
			}
			e.Args.RetryDelay -= time.Millisecond
			return true
		}},
		{"purge age 1 ms longer", "purge", func(e *record.Event) bool {
			if e.Result.Affected == 0 {
				return false
			}
			e.Args.OlderThan += time.Millisecond
			return true
		}},
		{"horizon 1 ms longer", "purge", func(e *record.Event) bool {
			if e.Result.Affected == 0 {
				return false
			}
			e.Args.Horizon += time.Millisecond
			return true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := editFirst(t, log, tc.op, tc.edit)
			_, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(broken), "moved"), 0), observe.CheckOptions{})
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			if f == nil {
				t.Fatalf("a boundary moved by 1 ms was not found:\n%s", broken)
			}
			t.Logf("found: %s", f)
		})
	}
}

// recordBoundaryTies records the steps TestBoundaryTiesCheckClean describes, checking the
// store's answer to each, and returns the log.
func recordBoundaryTies(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) []byte {
	ctx := context.Background()
	var log bytes.Buffer
	clk := actordelivery.NewManualClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	st, err := open(actordelivery.Options{Clock: clk,
		Recorder: actordelivery.JSONRecorder(&log, func(err error) { t.Errorf("recorder: %v", err) })})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fail := false
	h := func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) {
		if fail {
			return nil, errors.New("fails once")
		}
		return nil, nil
	}
	consumer := func(worker int) *actordelivery.Consumer {
		c, err := actordelivery.NewConsumer(st, h, actordelivery.ConsumerOptions{Mailbox: "a", Worker: worker,
			LeaseFor: 10 * time.Millisecond, Retry: fixedDelay(7 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c1, c2 := consumer(1), consumer(2)
	ms := func(n int) { clk.Advance(time.Duration(n) * time.Millisecond) }
	fetch := func(c *actordelivery.Consumer, want bool) *actordelivery.Delivery {
		t.Helper()
		d, err := c.Fetch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if (d != nil) != want {
			t.Fatalf("at %s: fetch got %v, want a message: %v", clk.Now().Format("15:04:05.000"), d, want)
		}
		return d
	}
	handle := func(c *actordelivery.Consumer, d *actordelivery.Delivery, want string) {
		t.Helper()
		out, err := c.Handle(ctx, d)
		if err != nil && !errors.Is(err, actordelivery.ErrLeaseLost) {
			t.Fatal(err)
		}
		if out.Action != want {
			t.Fatalf("handle: %s, want %s", out.Action, want)
		}
	}
	enqueue := func(delay time.Duration, wantDup bool) {
		t.Helper()
		dup, err := st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "a", ID: "m1", MaxAttempts: 5, Delay: delay})
		if err != nil {
			t.Fatal(err)
		}
		if dup != wantDup {
			t.Fatalf("enqueue at %s: duplicate %v, want %v", clk.Now().Format("15:04:05.000"), dup, wantDup)
		}
	}
	purge := func(want int) {
		t.Helper()
		r, err := st.Purge(ctx, 10*time.Millisecond, 20*time.Millisecond, 10)
		if err != nil {
			t.Fatal(err)
		}
		if r.Total() != want {
			t.Fatalf("purge at %s: %d rows, want %d", clk.Now().Format("15:04:05.000"), r.Total(), want)
		}
	}

	enqueue(5*time.Millisecond, false) // due at +5
	ms(4)
	fetch(c1, false)
	ms(1)
	d1 := fetch(c1, true) // leased until +15
	ms(9)
	fetch(c2, false)
	ms(1)
	d2 := fetch(c2, true) // the lease ran out at +15: taken again, until +25
	handle(c1, d1, actordelivery.ActionLeaseLost)
	fail = true
	handle(c2, d2, actordelivery.ActionRetried) // due again at +22
	fail = false
	ms(6)
	fetch(c2, false)
	ms(1)
	handle(c2, fetch(c2, true), actordelivery.ActionAcked) // acked at +22
	ms(9)
	purge(0)
	ms(1)
	purge(1) // +32: acked 10 ms ago; m1 retired until +42
	ms(9)
	enqueue(0, true)
	ms(1)
	enqueue(0, false)
	return log.Bytes()
}

// editFirst returns log with the first event of op that edit changes (edit reports whether it
// did) re-encoded.
func editFirst(t *testing.T, log []byte, op string, edit func(*record.Event) bool) []byte {
	lines := bytes.Split(bytes.TrimSpace(log), []byte("\n"))
	for i, l := range lines {
		var e record.Event
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		if e.Op != op || !edit(&e) {
			continue
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = b
		return append(bytes.Join(lines, []byte("\n")), '\n')
	}
	t.Fatalf("no %s event to edit in:\n%s", op, strings.Join(strings.Split(string(log), "\n"), "\n"))
	return nil
}
