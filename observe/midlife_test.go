package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/actordelivery/record"
	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/observe"
)

// seedRows fills a store that does not record with rows of every kind the snapshot states: ready
// rows of two mailboxes (some with keys), rows leased for long and for a moment, acked and purged
// rows (so purged ids), dead letters, outbox rows pending, claimed, completed and dead-lettered,
// processed marks and a checkpoint.
func seedRows(t *testing.T, st *actordelivery.Store) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 24 {
		mb := []string{"a", "b"}[i%2]
		key := ""
		if i%3 == 0 {
			key = fmt.Sprintf("k%d", i%4)
		}
		_, err := st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: mb, ID: fmt.Sprintf("old-%d", i), Key: key, Priority: i % 2, MaxAttempts: 3, Payload: []byte("p")})
		must(err)
	}
	// Two leases that outlive the test (no worker of the recorded run may take them), two that
	// run out at once (the recorded workers take those rows again), one acked.
	for _, d := range []time.Duration{time.Hour, time.Hour, time.Millisecond, time.Millisecond} {
		m, err := st.Lease(ctx, "a", d)
		must(err)
		if m == nil {
			t.Fatal("seed: nothing to lease")
		}
	}
	m, err := st.Lease(ctx, "b", time.Minute)
	must(err)
	must(st.Ack(ctx, m.ID, m.Token))
	for i := range 3 {
		_, err := st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "c", ID: fmt.Sprintf("gone-%d", i), MaxAttempts: 1})
		must(err)
		m, err := st.Lease(ctx, "c", time.Minute)
		must(err)
		must(st.Ack(ctx, m.ID, m.Token))
	}
	time.Sleep(5 * time.Millisecond)
	// The acked rows leave (three at most), their ids kept as duplicates for an hour.
	_, err = st.Purge(ctx, time.Millisecond, time.Hour, 3)
	must(err)
	must(st.DeadLetter(ctx, "old-23", "poison"))
	must(st.DeadLetter(ctx, "old-21", "poison"))
	for i := range 8 {
		_, err := st.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: fmt.Sprintf("ob-%d", i), Target: "b", MaxAttempts: 2, MaxDeliveryAttempts: 3})
		must(err)
	}
	rows, err := st.OutboxClaim(ctx, 3, time.Millisecond)
	must(err)
	if len(rows) != 3 {
		t.Fatalf("seed: claimed %d outbox rows, want 3", len(rows))
	}
	rows, err = st.OutboxClaim(ctx, 2, time.Minute)
	must(err)
	must(st.OutboxComplete(ctx, rows[0].ID, rows[0].ClaimToken))
	must(st.OutboxDeadLetter(ctx, rows[1].ID, rows[1].ClaimToken, "refused"))
	_, err = st.MarkProcessed(ctx, "svc", "old-0", time.Hour)
	must(err)
	_, err = st.MarkProcessed(ctx, "svc", "old-1", time.Hour)
	must(err)
	_, err = st.SaveCheckpoint(ctx, "actor-1", []byte("s1"), 0)
	must(err)
}

// runRecorded opens a recording store on the database and runs a service on it for a moment:
// workers on both mailboxes, a publisher, an enqueue of an id the seed purged and of one it left,
// a processed mark and a checkpoint save.
func runRecorded(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error), rec actordelivery.Recorder, run int) {
	t.Helper()
	st, err := open(actordelivery.Options{Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for _, id := range []string{"gone-0", "old-2", fmt.Sprintf("new-%d", run)} {
		if _, err := st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "a", ID: id, MaxAttempts: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.MarkProcessed(ctx, "svc", "old-0", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SaveCheckpoint(ctx, "actor-1", []byte("s"), int64(run+1)); err != nil {
		t.Fatal(err)
	}
	pub, err := actordelivery.NewPublisher(st, actordelivery.PublisherOptions{ClaimFor: time.Minute, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pub.Run(rctx) }()
	err = actordelivery.RunWorkers(rctx, st, []string{"a", "b"}, 3, func(_ context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		if strings.HasSuffix(m.ID, "7") && m.Attempts == 1 {
			return nil, errors.New("fails once")
		}
		return nil, nil
	}, actordelivery.ConsumerOptions{PollInterval: 5 * time.Millisecond, Worker: 10*run + 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// midLifeLog records two runs of a service on a database that held rows before the recorder was
// turned on.
func midLifeLog(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) []byte {
	st, err := open(actordelivery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seedRows(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	rec := actordelivery.JSONRecorder(&log, func(err error) { t.Errorf("recorder: %v", err) })
	for run := range 2 {
		runRecorded(t, open, rec, run)
	}
	return log.Bytes()
}

func checkLog(b []byte) (observe.Summary, *observe.Finding, error) {
	return observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(b), "midlife"), 0), observe.CheckOptions{})
}

// TestMidLifeChecksClean turns the recorder on for a database that already holds rows of every
// kind (ready, leased, acked, purged, dead-lettered, outbox rows in each state, processed marks,
// a checkpoint), records a service working on them, restarts it appending to the same log, and
// checks the log with the model oracle: the first Open's snapshot is the state the check starts
// from, the second's must be the state the history reached. Without the snapshot the first touch
// of an old row is a finding, which shows the snapshot is what makes the log check clean.
//
// Rerun: bash scripts/pg.sh go test ./observe/ -run TestMidLife -v
func TestMidLifeChecksClean(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a store twice on the wall clock")
	}
	forBackends(t, func(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) {
		log := midLifeLog(t, open)
		sum, f, err := checkLog(log)
		if err != nil || f != nil {
			t.Fatalf("the mid-life log: finding %v, error %v; want it clean", f, err)
		}
		snaps := bytes.Count(log, []byte(`"op":"snapshot"`))
		// Run 1 states 24+3 messages less the 2 dead-lettered and the 3 purged, 2 dead letters,
		// 8 outbox rows, 2 marks, 1 checkpoint, 3 purged ids, and its end.
		if first := 21 + 2 + 8 + 2 + 1 + 3 + 1; snaps <= first {
			t.Fatalf("the log holds %d snapshot events, want more than run 1's %d (run 2 states its rows too)", snaps, first)
		}
		if sum.Events < int64(snaps)+50 {
			t.Fatalf("checked %d events, want the snapshots' %d and a service's work", sum.Events, snaps)
		}
		if _, err := observe.Convert(mustRead(t, log), observe.Options{Name: "midlife"}); err == nil || !strings.Contains(err.Error(), "starts from a snapshot") {
			t.Errorf("converting the mid-life log to a trace: %v, want the error that a trace starts empty", err)
		}

		// The second run alone is the log of a recorder turned on again, into a new file, for a
		// database recorded before: it starts from its snapshot at the commit counter's place.
		second := bytes.Index(log, []byte(`"op":"incarnation"`))
		second = bytes.Index(log[second+1:], []byte(`"op":"incarnation"`)) + second + 1
		second = bytes.LastIndexByte(log[:second], '\n') + 1
		if _, f, err := checkLog(log[second:]); err != nil || f != nil {
			t.Fatalf("the second run's log alone: finding %v, error %v; want it clean", f, err)
		}

		// A finding in it gets the same window whether the check holds the rows' events or
		// reads the log again for them, as pconform check does with a file: the second reading
		// starts from the snapshot too.
		broken := breakLastFetch(t, log)
		var found [2]*observe.Finding
		for i, reread := range []bool{false, true} {
			opts := observe.CheckOptions{}
			if reread {
				opts.Log, opts.Reread = bytes.NewReader(broken), rereadOf(broken, nil)
			}
			_, found[i], err = streamCheck(broken, opts)
			if err != nil || found[i] == nil || found[i].Window == nil {
				t.Fatalf("the mid-life log with a fetch broken, reread %v: finding %v, error %v", reread, found[i], err)
			}
		}
		if !reflect.DeepEqual(found[0], found[1]) {
			t.Fatalf("the mid-life log with a fetch broken: held %v, read again %v", found[0], found[1])
		}

		_, f, err = checkLog(dropOps(t, log, "snapshot"))
		if err == nil && f == nil {
			t.Fatal("the log without its snapshots checks clean: the old rows' first touches went unnoticed")
		}
		t.Logf("without the snapshots: finding %v, error %v", f, err)

		// The P oracle adopts the first snapshot too: neither log is a finding of a monitor.
		if !pOnPath(t) {
			return
		}
		for _, c := range []struct {
			name string
			log  []byte
		}{{"the mid-life log", log}, {"the second run's log alone", log[second:]}} {
			spec, f, err := checkLogP(t, c.log)
			if err != nil || f != nil {
				t.Fatalf("%s with --p: finding %v, error %v; want it clean", c.name, f, err)
			}
			t.Logf("%s with --p: %d spec events, every monitor holds", c.name, spec)
		}
	})
}

// checkLogP checks log as check --p does, the streaming P oracle beside the model, and returns
// the spec events the oracle sent.
func checkLogP(t *testing.T, log []byte) (int64, *observe.Finding, error) {
	t.Helper()
	pc, err := bridge.NewStreamChecker(context.Background(), bridge.Config{ProjectDir: filepath.Join("..", "models", "p")})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	_, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "midlife"), 4096),
		observe.CheckOptions{Checkers: []observe.Checker{pc}})
	if err == nil {
		err = pc.Close()
	}
	return pc.Spec, f, err
}

func mustRead(t *testing.T, b []byte) *observe.Log {
	t.Helper()
	lg, err := observe.ReadLog(bytes.NewReader(b), "midlife")
	if err != nil {
		t.Fatal(err)
	}
	return lg
}

// events splits a log into its events.
func events(t *testing.T, log []byte) []record.Event {
	t.Helper()
	var evs []record.Event
	for _, l := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
		var ev record.Event
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// join writes events as a log.
func join(t *testing.T, evs []record.Event) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, ev := range evs {
		l, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(l, '\n'))
	}
	return b.Bytes()
}

// breakLastFetch makes the log's last fetch of a message on its first attempt report a second.
func breakLastFetch(t *testing.T, log []byte) []byte {
	t.Helper()
	lines := bytes.SplitAfter(log, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if bytes.Contains(l, []byte(`"op":"consumer_fetch"`)) && bytes.Contains(l, []byte(`"attempts":1,`)) {
			lines[i] = bytes.Replace(l, []byte(`"attempts":1,`), []byte(`"attempts":2,`), 1)
			return bytes.Join(lines, nil)
		}
	}
	t.Fatal("the log has no fetch of a first attempt to break")
	return nil
}

func dropOps(t *testing.T, log []byte, op string) []byte {
	evs := events(t, log)
	out := evs[:0]
	for _, ev := range evs {
		if ev.Op != op {
			out = append(out, ev)
		}
	}
	return join(t, out)
}

// TestMidLifeTamperedSnapshot: a snapshot that does not state the store's rows is an error that
// names its line, whichever way it is wrong: a row of the starting snapshot that the first event
// on it contradicts, a row missing from it, a restart's snapshot that differs from the state the
// history reached, a snapshot cut short.
func TestMidLifeTamperedSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a store twice on the wall clock")
	}
	forBackends(t, func(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) {
		log := midLifeLog(t, open)
		evs := events(t, log)
		incs := []string{}
		for _, ev := range evs {
			if ev.Op == "incarnation" {
				incs = append(incs, ev.Args.Incarnation)
			}
		}
		// A row of the first snapshot some recorded fetch took: its attempts stated one higher.
		fetched := map[string]bool{}
		for _, ev := range evs {
			if ev.Op == "consumer_fetch" && ev.Result.Message != nil {
				fetched[ev.Result.Message.ID] = true
			}
		}
		tamper := func(name string, edit func(evs []record.Event) ([]record.Event, int), want string) {
			t.Run(name, func(t *testing.T) {
				out, line := edit(slicesClone(evs))
				if line == 0 {
					t.Fatal("nothing to tamper with")
				}
				_, f, err := checkLog(join(t, out))
				if err == nil || !errors.Is(err, observe.ErrBadLog) || !strings.Contains(err.Error(), fmt.Sprintf("line %d", line)) || !strings.Contains(err.Error(), want) {
					t.Fatalf("finding %v, error %v; want an error naming line %d: %q", f, err, line, want)
				}
				t.Log(err)
			})
		}
		tamper("attempts of a row the first fetch contradicts", func(evs []record.Event) ([]record.Event, int) {
			for i := range evs {
				r := evs[i].Row
				if r != nil && evs[i].Args.Incarnation == incs[0] && r.Table == "message" && r.State == "ready" && r.Token == "" && r.Attempts == 0 && fetched[r.ID] {
					r.Attempts = 1
					return evs, i + 1
				}
			}
			return evs, 0
		}, "the starting snapshot contradicts this event")
		tamper("a row missing", func(evs []record.Event) ([]record.Event, int) {
			for i := range evs {
				if r := evs[i].Row; r != nil && r.Table == "outbox" {
					out := append(evs[:i:i], evs[i+1:]...)
					for j := i; j < len(out); j++ {
						if out[j].Row != nil && out[j].Row.Table == "end" {
							return out, j + 1
						}
					}
				}
			}
			return evs, 0
		}, "rows lost or added")
		tamper("a restart's row differs", func(evs []record.Event) ([]record.Event, int) {
			for i := range evs {
				if r := evs[i].Row; r != nil && evs[i].Args.Incarnation == incs[1] && r.Table == "dead_letter" {
					r.Reason = "edited"
					return evs, i + 1
				}
			}
			return evs, 0
		}, "rows changed outside it")
		tamper("a snapshot cut short", func(evs []record.Event) ([]record.Event, int) {
			for i := range evs {
				if r := evs[i].Row; r != nil && r.Table == "end" {
					out := append(evs[:i:i], evs[i+1:]...)
					for j := i; j < len(out); j++ {
						if out[j].Seq > evs[i].Seq {
							return out, j + 1
						}
					}
				}
			}
			return evs, 0
		}, "has no end before this event")
	})
}

func slicesClone(evs []record.Event) []record.Event {
	out := make([]record.Event, len(evs))
	for i, ev := range evs {
		out[i] = ev
		if ev.Row != nil {
			r := *ev.Row
			out[i].Row = &r
		}
	}
	return out
}
