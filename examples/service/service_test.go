package service_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/examples/service"
	"github.com/pconform/pconform/observe"
)

const pgDSNEnv = "PCONFORM_PG_DSN"

// modelsDir is the P project whose spec monitors the P oracle runs.
var modelsDir = filepath.Join("..", "..", "models", "p")

// leaseFor is the workers' lease in these tests: short, so that the slow order's first charge
// (2.5 leases) outlives it and another worker takes the message over; long enough that the other
// handles never do on a loaded machine (each lease counts an attempt, and there are three).
const leaseFor = time.Second

// claimFor is the publisher's claim in these tests: a row the first process claimed and never
// delivered waits this long for the second.
const claimFor = 2 * time.Second

// retry is the workers' retry policy in these tests: quick, so the refused order runs out of
// attempts within a second.
var retry = actordelivery.Backoff{Base: 20 * time.Millisecond, Max: 100 * time.Millisecond}

// lockedBuffer is the recorder's log: JSONRecorder serializes its writes, the test reads it
// while the service runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// opener opens the test's database, again after a Close: a restart sees the same rows.
type opener func(actordelivery.Options) (*actordelivery.Store, error)

// forBackends runs body on a fresh SQLite file and on a fresh schema of the PostgreSQL server in
// PCONFORM_PG_DSN (a schema, not a table prefix: the service's own tables must be the test's too).
func forBackends(t *testing.T, body func(t *testing.T, open opener)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "svc.db")
		body(t, func(o actordelivery.Options) (*actordelivery.Store, error) { return actordelivery.Open(path, o) })
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv(pgDSNEnv)
		if dsn == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not set and CI=true: the PostgreSQL run must happen in CI", pgDSNEnv)
			}
			t.Skipf("%s is not set (bash scripts/pg.sh go test ./examples/service/ starts a server)", pgDSNEnv)
		}
		dsn = pgSchema(t, dsn)
		body(t, func(o actordelivery.Options) (*actordelivery.Store, error) { return actordelivery.OpenPostgres(dsn, o) })
	})
}

// pgSchema creates a schema of its own for t (dropped when t ends) and returns dsn pointed at it.
func pgSchema(t *testing.T, dsn string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "svc_" + hex.EncodeToString(b[:])
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
		_ = db.Close()
	})
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(dsn); err == nil && strings.Contains(dsn, "://") {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

var _ = stdlib.GetDefaultDriver // registers the "pgx" driver for pgSchema

// order is one order the test places.
type order struct {
	id    string
	total int
}

// The orders: o2 is declined when placed (nothing of it is written); "refused" is refused by the
// payment provider every time (retried, then dead-lettered); "slow" outlives its first lease.
var (
	firstOrders  = []order{{"o1", 30}, {"o2", -5}, {"slow", 40}, {"refused", 99}, {"o3", 12}}
	secondOrders = []order{{"o4", 7}, {"o5", 21}}
)

// gateway is a fake payment provider: it refuses "refused", and its first charge of "slow"
// takes two and a half leases.
type gateway struct {
	mu   sync.Mutex
	slow bool
}

func (g *gateway) Charge(ctx context.Context, id string, _ int) error {
	switch id {
	case "refused":
		return errors.New("card refused")
	case "slow":
		g.mu.Lock()
		first := !g.slow
		g.slow = true
		g.mu.Unlock()
		if first {
			time.Sleep(5 * leaseFor / 2)
		}
	}
	return nil
}

// incarnation is one process's life: open the store (recording into log, appending; not
// recording when log is nil), serve with cfg(store), place orders, wait until settled says so,
// stop on SIGTERM, close.
func incarnation(t *testing.T, open opener, log *lockedBuffer, cfg func(*actordelivery.Store) service.Config, orders []order, settled func(*actordelivery.Store) bool) {
	t.Helper()
	var opts actordelivery.Options
	if log != nil {
		opts.Recorder = actordelivery.JSONRecorder(log, func(err error) { t.Errorf("recorder: %v", err) })
	}
	st, err := open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := service.CreateTables(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- service.Serve(ctx, st, cfg(st)) }()
	for _, o := range orders {
		err := service.PlaceOrder(context.Background(), st, o.id, o.total)
		if declined := o.total <= 0; declined != errors.Is(err, service.ErrDeclined) || !declined && err != nil {
			t.Fatalf("PlaceOrder(%s, %d): %v", o.id, o.total, err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); settled != nil && !settled(st); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			dls, _ := st.ListDeadLetters(context.Background())
			msgs, _ := st.ListMessages(context.Background(), service.Billing)
			out, _ := st.ListOutbox(context.Background())
			var recorded []byte
			if log != nil {
				recorded = log.Bytes()
			}
			t.Fatalf("not settled after 30s: invoices %v, dead letters %+v, messages %+v, outbox %+v\n%s", invoices(t, st), dls, msgs, out, recorded)
		}
	}
	// SIGTERM, as a service manager stops the service: Serve drains and returns.
	if p, err := os.FindProcess(os.Getpid()); err != nil || p.Signal(syscall.SIGTERM) != nil {
		stop()
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return 20s after SIGTERM")
	}
}

// invoices counts the invoices of each order.
func invoices(t *testing.T, st *actordelivery.Store) map[string]int {
	t.Helper()
	n := map[string]int{}
	err := st.ExecTx(context.Background(), true, func(ctx context.Context) error {
		tx, err := actordelivery.Tx(ctx)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT order_id FROM invoices`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			n[id]++
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// refusedAt reports where the refused order's message is: "dead" (dead-lettered), "stranded"
// (ready with its attempts used up) or "" (still being retried, or not yet published).
func refusedAt(t *testing.T, st *actordelivery.Store) string {
	t.Helper()
	dls, err := st.ListDeadLetters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dls {
		if d.ID == "refused" {
			return "dead"
		}
	}
	m, err := st.GetMessage(context.Background(), "refused")
	switch {
	case errors.Is(err, actordelivery.ErrNotFound):
		return ""
	case err != nil:
		t.Fatal(err)
	}
	if m.State == actordelivery.StateReady && m.Attempts >= m.MaxAttempts {
		return "stranded"
	}
	return ""
}

// settledWith waits for the invoices of ids and for the refused order to end as refused says.
func settledWith(t *testing.T, ids []string, refused string) func(*actordelivery.Store) bool {
	return func(st *actordelivery.Store) bool {
		inv := invoices(t, st)
		for _, id := range ids {
			if inv[id] == 0 {
				return false
			}
		}
		return refusedAt(t, st) == refused
	}
}

// check checks log with the model oracle alone, and with the streaming P oracle beside it when
// withP; it returns every finding (going on past the first).
func check(t *testing.T, log []byte, withP bool) (observe.Summary, []*observe.Finding) {
	t.Helper()
	var found []*observe.Finding
	opts := observe.CheckOptions{KeepGoing: true, OnFinding: func(f *observe.Finding) error {
		found = append(found, f)
		return nil
	}}
	var pc *bridge.StreamChecker
	if withP {
		var err error
		if pc, err = bridge.NewStreamChecker(context.Background(), bridge.Config{ProjectDir: modelsDir}); err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		opts.Checkers = []observe.Checker{pc}
	}
	sum, _, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "service.jsonl"), 4096), opts)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if pc != nil {
		if err := pc.Close(); err != nil {
			t.Fatalf("P oracle: %v", err)
		}
	}
	return sum, found
}

// requireP skips the P oracle's part of a test when the P tool is missing, or with -short (the
// first run compiles the spec monitors, about a minute; later runs take them from the cache).
func requireP(t *testing.T) bool {
	t.Helper()
	if testing.Short() {
		t.Log("-short: the P oracle is skipped")
		return false
	}
	if _, err := exec.LookPath("p"); err != nil {
		t.Log("the P tool `p` is not on PATH (run `. scripts/env.sh`): the P oracle is skipped")
		return false
	}
	if _, _, err := bridge.CompileStream(context.Background(), bridge.Config{ProjectDir: modelsDir}); err != nil {
		t.Fatal(err)
	}
	return true
}

// TestServiceChecksClean runs the service of docs/service.md as two processes one after the
// other (the second reopens the store and appends to the same log) on each backend: orders placed
// while it serves, one declined, one whose card is refused, one whose first charge outlives its
// lease; each stopped by SIGTERM. Every accepted order with a good card has exactly one invoice,
// the refused one is dead-lettered, the declined one left no row, and the recorded log checks
// clean with the model oracle and with the P oracle, as `pconform check --p` would say.
//
// Rerun: bash scripts/pg.sh go test ./examples/service/ -run TestServiceChecksClean -v
func TestServiceChecksClean(t *testing.T) {
	withP := requireP(t)
	forBackends(t, func(t *testing.T, open opener) {
		var log lockedBuffer
		g := &gateway{}
		cfg := func(*actordelivery.Store) service.Config {
			return service.Config{LeaseFor: leaseFor, ClaimFor: claimFor, Retry: retry, Charge: g.Charge}
		}
		// The first process is stopped while orders are still on their way.
		incarnation(t, open, &log, cfg, firstOrders, nil)
		incarnation(t, open, &log, cfg, secondOrders, settledWith(t, []string{"o1", "slow", "o3", "o4", "o5"}, "dead"))

		st, err := open(actordelivery.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		inv := invoices(t, st)
		want := map[string]int{"o1": 1, "slow": 1, "o3": 1, "o4": 1, "o5": 1}
		if fmt.Sprint(inv) != fmt.Sprint(want) {
			t.Fatalf("invoices %v, want %v", inv, want)
		}
		out, err := st.ListOutbox(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out {
			if r.ID == "o2" {
				t.Fatalf("the declined order's outbox row was written: %+v", r)
			}
		}

		lg := log.Bytes()
		if n := bytes.Count(lg, []byte(`"op":"incarnation"`)); n != 2 {
			t.Fatalf("the log names %d incarnations of the store, want 2", n)
		}
		sum, found := check(t, lg, withP)
		for _, f := range found {
			t.Errorf("false finding: %s", f)
		}
		if sum.Writes < 5*4 { // per billed order at least: outbox_enqueue, claim, delivery, fetch, handle
			t.Fatalf("the recorded log has %d writes, too few for 5 orders: %+v", sum.Writes, sum)
		}
		t.Logf("%d handles found their lease taken over", bytes.Count(lg, []byte(`"action":"lease_lost"`)))
		t.Logf("%d events (%d writes) checked clean by the model oracle%s", sum.Events, sum.Writes, map[bool]string{true: " and the P oracle", false: ""}[withP])
	})
}

// TestServiceRecordsOverExistingRows turns the recorder on for a database that already holds
// the service's rows: the first process runs without it and is stopped while orders are on their
// way, the second opens the same database with the recorder on and serves them to the end. The
// store writes a snapshot of the rows it holds when it opens, so the log starts from that state,
// and it checks clean with the model oracle and the P oracle, which adopts the snapshot's rows
// (docs/observed.md, "A log that starts mid-life").
//
// Rerun: bash scripts/pg.sh go test ./examples/service/ -run TestServiceRecordsOverExistingRows -v
func TestServiceRecordsOverExistingRows(t *testing.T) {
	forBackends(t, func(t *testing.T, open opener) {
		g := &gateway{}
		cfg := func(*actordelivery.Store) service.Config {
			return service.Config{LeaseFor: leaseFor, ClaimFor: claimFor, Retry: retry, Charge: g.Charge}
		}
		incarnation(t, open, nil, cfg, firstOrders, nil)
		var log lockedBuffer
		incarnation(t, open, &log, cfg, secondOrders, settledWith(t, []string{"o1", "slow", "o3", "o4", "o5"}, "dead"))

		lg := log.Bytes()
		snapshot := bytes.Count(lg, []byte(`"op":"snapshot"`))
		if snapshot == 0 {
			t.Fatalf("the second process recorded no snapshot of the rows the first one left:\n%s", lg)
		}
		withP := requireP(t)
		sum, found := check(t, lg, withP)
		for _, f := range found {
			t.Errorf("false finding: %s", f)
		}
		if sum.Writes == 0 {
			t.Fatalf("the recorded log has no write: %+v", sum)
		}
		// The snapshot is what makes the old rows known: without it the same log cannot check clean.
		var kept [][]byte
		for _, line := range bytes.SplitAfter(lg, []byte("\n")) {
			if !bytes.Contains(line, []byte(`"op":"snapshot"`)) {
				kept = append(kept, line)
			}
		}
		blind := 0
		_, _, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(bytes.Join(kept, nil)), "no-snapshot.jsonl"), 4096),
			observe.CheckOptions{KeepGoing: true, OnFinding: func(*observe.Finding) error { blind++; return nil }})
		if err == nil && blind == 0 {
			t.Fatalf("the log without its %d snapshot rows checks clean too: the old rows were never touched", snapshot)
		}
		t.Logf("%d snapshot rows, %d events (%d writes) checked clean by the model oracle (P oracle too: %v); without the snapshot: %d findings, err %v",
			snapshot, sum.Events, sum.Writes, withP, blind, err)
	})
}

// errCommitFailed is the failure failingEnqueue injects.
var errCommitFailed = errors.New("injected: the commit failed")

// failingEnqueue stands between the publisher and the store, as actordelivery.OutboxStore allows:
// the first transaction that enqueues message id fails to commit (it rolls back, as a failed
// commit does); every other call goes to the store.
type failingEnqueue struct {
	*actordelivery.Store
	id               string
	mu               sync.Mutex
	enqueued, failed bool
}

func (f *failingEnqueue) Enqueue(ctx context.Context, m actordelivery.NewMessage) (bool, error) {
	dup, err := f.Store.Enqueue(ctx, m)
	if err == nil && m.ID == f.id {
		f.mu.Lock()
		f.enqueued = true
		f.mu.Unlock()
	}
	return dup, err
}

func (f *failingEnqueue) ExecTx(ctx context.Context, readOnly bool, fn func(context.Context) error) error {
	return f.Store.ExecTx(ctx, readOnly, func(ctx context.Context) error {
		if err := fn(ctx); err != nil {
			return err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.enqueued && !f.failed {
			f.failed = true
			return errCommitFailed
		}
		f.enqueued = false
		return nil
	})
}

// expected is a finding a test expects: from oracle ("model" or "p"), at an event of op about
// message or row id (a consumer_handle is about the message its worker fetched), with text in its
// message.
type expected struct{ oracle, op, id, text string }

// subject returns the op of the event at line of log, and the id it is about: its args' id, or
// for a consumer_handle the id of the message its worker fetched last.
func subject(t *testing.T, log []byte, line int) (op, id string) {
	t.Helper()
	fetched := map[string]string{}
	for i, l := range bytes.Split(log, []byte("\n")) {
		var ev actordelivery.Event
		if err := json.Unmarshal(l, &ev); err != nil {
			continue
		}
		w := ev.Args.Incarnation + "/" + strconv.Itoa(ev.Args.Worker)
		if ev.Op == "consumer_fetch" && ev.Result.Message != nil {
			fetched[w] = ev.Result.Message.ID
		}
		if i+1 == line {
			if ev.Op == "consumer_handle" {
				return ev.Op, fetched[w]
			}
			return ev.Op, ev.Args.ID
		}
	}
	t.Fatalf("the log has no event at line %d", line)
	return "", ""
}

// TestServiceBugsAreFound injects each bug of faults.go into the service, runs it on each backend
// with one enqueue commit failing (o3's), and checks the recorded log: the bug does its harm in
// the service's own tables (an order never billed, a message stranded, an order billed twice),
// and the checker finds it, with the oracle, the event and the words that name it. The correct
// service under the same failed commit checks clean. Without the P tool only the model oracle's
// findings are asserted; the lost message of the first bug is the P oracle's alone.
//
// Rerun: bash scripts/pg.sh go test ./examples/service/ -run TestServiceBugsAreFound -v
func TestServiceBugsAreFound(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the service four times per backend, for seconds each on the wall clock")
	}
	withP := requireP(t)
	all := append(append([]order{}, firstOrders...), secondOrders...)
	billed := []string{"o1", "slow", "o3", "o4", "o5"}
	for _, tc := range []struct {
		name     string
		bug      service.Bug
		settle   []string // the orders whose invoices the run waits for
		refused  string   // where the refused order's message ends: refusedAt
		invoices map[string]int
		want     []expected
	}{
		{"correct", service.NoBug, billed, "dead", map[string]int{"o1": 1, "slow": 1, "o3": 1, "o4": 1, "o5": 1}, nil},
		{"complete-after-failed-enqueue", service.CompleteAfterFailedEnqueue, []string{"o1", "slow", "o4", "o5"}, "dead",
			map[string]int{"o1": 1, "slow": 1, "o4": 1, "o5": 1},
			[]expected{{"p", "outbox_complete", "o3", "but no message o3 was ever enqueued in mailbox billing"}}},
		{"raw-attempts", service.RawAttempts, billed, "stranded", map[string]int{"o1": 1, "slow": 1, "o3": 1, "o4": 1, "o5": 1},
			[]expected{{"model", "consumer_handle", "refused",
				`observed {"message":null,"action":"retried","attempt":2}, the model gives {"message":null,"action":"dead_lettered","attempt":3}`}}},
		{"unfenced-ack", service.UnfencedAck, billed, "dead", map[string]int{"o1": 1, "slow": 2, "o3": 1, "o4": 1, "o5": 1},
			[]expected{
				{"model", "consumer_handle", "slow", `observed {"message":null,"action":"acked"}, the model gives {"message":null,"action":"lease_lost"}`},
				{"p", "consumer_handle", "slow", "handler effect of message slow in mailbox billing committed a second time"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forBackends(t, func(t *testing.T, open opener) {
				var log lockedBuffer
				g := &gateway{}
				cfg := func(st *actordelivery.Store) service.Config {
					return service.WithBug(service.Config{LeaseFor: leaseFor, ClaimFor: claimFor, Retry: retry, Charge: g.Charge},
						tc.bug, &failingEnqueue{Store: st, id: "o3"})
				}
				settled := settledWith(t, tc.settle, tc.refused)
				if tc.bug == service.UnfencedAck {
					settled = func(st *actordelivery.Store) bool {
						return invoices(t, st)["slow"] == 2 && settledWith(t, tc.settle, tc.refused)(st)
					}
				}
				incarnation(t, open, &log, cfg, all, settled)
				st, err := open(actordelivery.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				if inv := invoices(t, st); fmt.Sprint(inv) != fmt.Sprint(tc.invoices) {
					t.Fatalf("invoices %v, want %v", inv, tc.invoices)
				}

				lg := log.Bytes()
				_, found := check(t, lg, false)
				if withP {
					_, withPFound := check(t, lg, true)
					for _, f := range withPFound {
						if f.Oracle == "p" {
							found = append(found, f)
						}
					}
				}
				if tc.want == nil {
					for _, f := range found {
						t.Errorf("false finding: %s", f)
					}
				}
				for _, w := range tc.want {
					if w.oracle == "p" && !withP {
						continue
					}
					ok := false
					for _, f := range found {
						if f.Oracle != w.oracle || !strings.Contains(f.Message, w.text) {
							continue
						}
						op, id := subject(t, lg, f.Line)
						if op != w.op || id != w.id {
							t.Errorf("the finding %s is about %s of %q, want %s of %q", f, op, id, w.op, w.id)
						}
						ok = true
						t.Logf("found: %s", f)
						break
					}
					if !ok {
						t.Errorf("no %s oracle finding says %q; the findings: %v", w.oracle, w.text, found)
					}
				}
				if len(found) > 0 && tc.want != nil {
					t.Logf("first finding: %s", found[0])
				}
			})
		})
	}
}
