package observe_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/actordelivery/record"
	"github.com/pconform/pconform/observe"
)

// pgDSNEnv names the PostgreSQL server the PostgreSQL runs use (bash scripts/pg.sh go test ...
// starts a throwaway one and sets it); without it they skip, except under CI=true.
const pgDSNEnv = "PCONFORM_PG_DSN"

// forBackends runs body on a fresh SQLite file and on a fresh table prefix of the PostgreSQL
// server, as the subtests sqlite and postgres. open opens the test's database (again after a
// Close: a restart sees the same rows).
func forBackends(t *testing.T, body func(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error))) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "store.db")
		body(t, func(o actordelivery.Options) (*actordelivery.Store, error) { return actordelivery.Open(path, o) })
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv(pgDSNEnv)
		if dsn == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not set and CI=true: the PostgreSQL run must happen in CI", pgDSNEnv)
			}
			t.Skipf("%s is not set (bash scripts/pg.sh go test ./observe/ starts a server)", pgDSNEnv)
		}
		var b [6]byte
		_, _ = rand.Read(b[:])
		prefix := "rc" + hex.EncodeToString(b[:]) + "_"
		body(t, func(o actordelivery.Options) (*actordelivery.Store, error) {
			o.TablePrefix = prefix
			return actordelivery.OpenPostgres(dsn, o)
		})
	})
}

// oddRetry retries every failure after an odd delay that depends on the attempt.
type oddRetry struct{ delays []time.Duration }

func (r oddRetry) Retry(_ error, attempt int) (time.Duration, bool) {
	return r.delays[attempt%len(r.delays)], true
}

// TestRealClockChecksClean records a store on the wall clock (no logical clock, no whole seconds)
// whose leases, retry delays, enqueue delays and purge horizons have odd sub-second and
// multi-second lengths, with handlers that sometimes outlive their lease, and checks the log with
// the streaming model oracle, as `pconform check` does. Every boundary the store decided lies at
// some millisecond; a checker that rounds times to a coarser unit reports false findings here
// (whole seconds did: "the store observed {message:null}, the model gives {...}").
//
// Rerun: bash scripts/pg.sh go test ./observe/ -run TestRealClock -v
func TestRealClockChecksClean(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: records a store for seconds on the wall clock")
	}
	forBackends(t, func(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) {
		log := recordRealClock(t, open)
		sum, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "realclock"), 4096), observe.CheckOptions{})
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		if f != nil {
			t.Fatalf("false finding on a real-clock log of %d events: %s\nthe log: %s", sum.Events, f, keepLog(t, log))
		}
		if sum.Events < 200 {
			t.Fatalf("only %d events recorded: the run did too little to test anything", sum.Events)
		}
		t.Logf("%d events checked clean", sum.Events)

		// A genuine finding at the resolution: move one enqueue's delay to 1 ms past the moment
		// its message was first fetched. The store could not have fetched it then.
		broken, line := delayPastFirstFetch(t, log)
		_, f, err = observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(broken), "broken"), 4096), observe.CheckOptions{})
		if err != nil {
			t.Fatalf("check of the broken log: %v", err)
		}
		if f == nil {
			t.Fatalf("a fetch 1 ms before its message was due (the enqueue at line %d) was not found", line)
		}
		t.Logf("genuine finding: %s", f)

		// A genuine missed wake: the first woken worker ticks again right after its wake, before
		// the fetch that answered it. The recorder's placement must leave that a finding.
		missed, line := tickAfterFirstWake(t, log)
		_, f, err = observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(missed), "missed"), 4096), observe.CheckOptions{})
		if err != nil {
			t.Fatalf("check of the log with a missed wake: %v", err)
		}
		if f == nil || !strings.Contains(f.String(), "wake_not_fetched") {
			t.Fatalf("a poll tick right after the wake at line %d, before any fetch: finding %v, want wake_not_fetched", line, f)
		}
		t.Logf("genuine missed wake: %s", f)
	})
}

// tickAfterFirstWake returns log with a poll tick of the first recorded wake's worker and
// mailbox inserted just after the wake, at its place and time, and the wake's line.
func tickAfterFirstWake(t *testing.T, log []byte) ([]byte, int) {
	lines := bytes.Split(bytes.TrimSpace(log), []byte("\n"))
	for i, l := range lines {
		var e record.Event
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		if e.Op != "wake" {
			continue
		}
		tick := record.Event{Seq: e.Seq, Read: true, At: e.At, Op: "poll_tick",
			Args: record.Args{Worker: e.Args.Worker, Incarnation: e.Args.Incarnation, Mailbox: e.Args.Mailbox}}
		b, err := json.Marshal(tick)
		if err != nil {
			t.Fatal(err)
		}
		out := append(slices.Clone(lines[:i+1]), b)
		out = append(out, lines[i+1:]...)
		return append(bytes.Join(out, []byte("\n")), '\n'), i + 1
	}
	t.Fatal("no wake was recorded in the log")
	return nil, 0
}

// keepLog writes log to a file that outlives the test, for a failure to name: t.TempDir is
// removed when the test ends.
func keepLog(t *testing.T, log []byte) string {
	dir, err := os.MkdirTemp("", "realclock-")
	if err != nil {
		return fmt.Sprintf("(not kept: %v)", err)
	}
	path := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "-")+".jsonl")
	if err := os.WriteFile(path, log, 0o644); err != nil {
		return fmt.Sprintf("(not kept: %v)", err)
	}
	return path
}

// recordRealClock runs enqueuers, four leased workers and two leaseless ones and a purger on the
// wall clock for a few seconds, and returns the recorded log.
func recordRealClock(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) []byte {
	var log bytes.Buffer
	st, err := open(actordelivery.Options{Recorder: actordelivery.JSONRecorder(&log, func(err error) { t.Errorf("recorder: %v", err) })})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	delays := []time.Duration{0, 7 * time.Millisecond, 233 * time.Millisecond, 1013 * time.Millisecond, 0, 1*time.Second + 1*time.Millisecond}
	var n atomic.Int64
	handler := func(ctx context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		k := n.Add(1)
		switch k % 5 {
		case 0:
			return nil, errors.New("odd failure")
		case 1:
			time.Sleep(time.Duration(137+k%200) * time.Millisecond) // sometimes past the lease
		}
		return nil, nil
	}
	done := make(chan error, 3)
	go func() {
		done <- actordelivery.RunWorkers(ctx, st, []string{"a", "b"}, 4, handler, actordelivery.ConsumerOptions{
			LeaseFor: 251 * time.Millisecond, PollInterval: 3 * time.Millisecond, MaxPollInterval: 17 * time.Millisecond,
			Retry: oddRetry{delays: []time.Duration{97 * time.Millisecond, 1009 * time.Millisecond, 333 * time.Millisecond}}})
	}()
	go func() {
		done <- actordelivery.RunWorkers(ctx, st, []string{"c"}, 2, handler, actordelivery.ConsumerOptions{
			Path: actordelivery.PathLeaseless, PollInterval: 5 * time.Millisecond, MaxPollInterval: 19 * time.Millisecond,
			Retry: actordelivery.Backoff{Base: 1 * time.Second}})
	}()
	go func() {
		for ctx.Err() == nil {
			_, _ = st.Purge(context.Background(), 431*time.Millisecond, 1201*time.Millisecond, 100)
			time.Sleep(211 * time.Millisecond)
		}
		done <- nil
	}()
	for i := 0; ctx.Err() == nil; i++ {
		mb := []string{"a", "b", "c"}[i%3]
		_, err := st.Enqueue(context.Background(), actordelivery.NewMessage{Mailbox: mb, ID: fmt.Sprintf("m%d", i), MaxAttempts: 4,
			Key: []string{"", "", "k1", "k2"}[i%4], Delay: delays[i%len(delays)]})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(3+i%11) * time.Millisecond)
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	return log.Bytes()
}

// delayPastFirstFetch returns log with the delay of one delayed enqueue moved to 1 ms past the
// first fetch of its message, and that enqueue's line.
func delayPastFirstFetch(t *testing.T, log []byte) ([]byte, int) {
	lines := bytes.Split(bytes.TrimSpace(log), []byte("\n"))
	evs := make([]record.Event, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal(l, &evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i, e := range evs {
		if e.Op != "enqueue" || e.Args.Delay == 0 || e.Result.Duplicate {
			continue
		}
		first := -1
		for j, f := range evs {
			if f.Op == "consumer_fetch" && f.Result.Message != nil && f.Result.Message.ID == e.Args.ID && (first < 0 || f.Seq < evs[first].Seq) {
				first = j
			}
		}
		if first < 0 {
			continue
		}
		e.Args.Delay = evs[first].At.Sub(e.At) + time.Millisecond
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = b
		return append(bytes.Join(lines, []byte("\n")), '\n'), i + 1
	}
	t.Fatalf("no delayed message was fetched in the log:\n%s", strings.Join(strings.Split(string(log), "\n")[:10], "\n"))
	return nil, 0
}

// TestRestartChecksClean runs a service twice on one database, appending both runs to one log:
// each process numbers its workers from 1, and only the incarnation each store records tells
// worker 2 of the first run from worker 2 of the second. The log must check clean; with the
// incarnations stripped, the same log must not (the checker would read one worker stepping
// after its drain), so the test shows the ids are what keeps the workers apart.
//
// Rerun: bash scripts/pg.sh go test ./observe/ -run TestRestart -v
func TestRestartChecksClean(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a store twice on the wall clock")
	}
	forBackends(t, func(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) {
		var log bytes.Buffer
		rec := actordelivery.JSONRecorder(&log, func(err error) { t.Errorf("recorder: %v", err) })
		ids := map[string]bool{}
		for run := range 2 {
			st, err := open(actordelivery.Options{Recorder: rec})
			if err != nil {
				t.Fatal(err)
			}
			ids[st.Incarnation()] = true
			for i := range 20 {
				if _, err := st.Enqueue(context.Background(), actordelivery.NewMessage{Mailbox: "a", ID: fmt.Sprintf("r%d-m%d", run, i), MaxAttempts: 3}); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			err = actordelivery.RunWorkers(ctx, st, []string{"a"}, 3, func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) {
				time.Sleep(5 * time.Millisecond)
				return nil, nil
			}, actordelivery.ConsumerOptions{PollInterval: 5 * time.Millisecond})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if len(ids) != 2 {
			t.Fatalf("two Opens gave incarnations %v, want two different ids", ids)
		}
		check := func(b []byte) (*observe.Finding, error) {
			_, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(b), "restart"), 0), observe.CheckOptions{})
			return f, err
		}
		if f, err := check(log.Bytes()); err != nil || f != nil {
			t.Fatalf("the log of two runs: finding %v, error %v; want it clean", f, err)
		}
		var stripped bytes.Buffer
		for _, l := range bytes.Split(bytes.TrimSpace(log.Bytes()), []byte("\n")) {
			var ev record.Event
			if err := json.Unmarshal(l, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Op == "incarnation" || ev.Op == "snapshot" {
				continue // as an older recorder wrote it
			}
			ev.Args.Incarnation = ""
			b, _ := json.Marshal(ev)
			stripped.Write(append(b, '\n'))
		}
		f, err := check(stripped.Bytes())
		if err != nil || f == nil {
			t.Fatalf("the log without incarnations: finding %v, error %v; want a finding (the runs' workers collide)", f, err)
		}
		t.Logf("without incarnations: %s", f)
	})
}
