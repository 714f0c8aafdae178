package actordelivery

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The crash tests run a child copy of the test binary that opens the database, does some work,
// prints what it fetched and kills itself (no Close, no deferred cleanup, no checkpoint of the
// WAL). The parent then reopens the same file and checks what survived.
const (
	crashEnv      = "ACTORDELIVERY_CRASH_CHILD"
	handlerMarker = "handler wrote its effect"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(stressRoleEnv); role != "" {
		os.Exit(stressChild(role, Backend(os.Getenv(crashEnv+"_BACKEND")), os.Getenv(crashEnv+"_DB")))
	}
	if mode := os.Getenv(crashEnv); mode != "" {
		os.Exit(crashChild(mode, Backend(os.Getenv(crashEnv+"_BACKEND")), os.Getenv(crashEnv+"_DB")))
	}
	os.Exit(m.Run())
}

func crashChild(mode string, b Backend, target string) int {
	ctx := context.Background()
	s, err := OpenBackend(b, target, Options{Clock: NewManualClock(base)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if mode == "fold" {
		return crashFold(ctx, s)
	}
	if mode == appTxCrashMode {
		return crashAppTx(ctx, s)
	}
	if path, ok := strings.CutPrefix(mode, workersChildMode); ok {
		return workersChild(s, map[string]Path{"leased": PathLeased, "leaseless": PathLeaseless}[path])
	}
	if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: "m1", MaxAttempts: 3, Payload: []byte("p")}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	die := func() int {
		p, _ := os.FindProcess(os.Getpid())
		_ = p.Kill()
		time.Sleep(time.Hour) // never return normally, whatever the signal's latency
		return 2
	}
	var cpath Path
	switch mode {
	case "leaseless", "leaseless-in-handler":
		cpath = PathLeaseless
	case "leased", "leased-in-handler":
		cpath = PathLeased
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		return 2
	}
	inHandler := mode == "leaseless-in-handler" || mode == "leased-in-handler"
	c, err := NewConsumer(s, func(context.Context, *Message) (Effects, error) {
		return func(ctx context.Context) error {
			if _, err := s.SaveCheckpoint(ctx, "actor", []byte("effect"), 0); err != nil {
				return err
			}
			fmt.Println(handlerMarker) // the effect is written, not committed
			die()
			return nil
		}, nil
	}, ConsumerOptions{Mailbox: "mb", Path: cpath, LeaseFor: 30 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	d, err := c.Fetch(ctx)
	if err != nil || d == nil {
		fmt.Fprintln(os.Stderr, "fetch:", d, err)
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(d.Message); err != nil {
		return 2
	}
	if inHandler {
		_, err := c.Handle(ctx, d)
		fmt.Fprintln(os.Stderr, "handler did not crash:", err)
		return 2
	}
	return die()
}

// dyingComplete is an OutboxStore whose OutboxComplete kills the process after the completion
// ran inside the fold's transaction, before the commit.
type dyingComplete struct{ *Store }

func (d dyingComplete) OutboxComplete(ctx context.Context, id, token string) error {
	if err := d.Store.OutboxComplete(ctx, id, token); err != nil {
		return err
	}
	fmt.Println(handlerMarker) // enqueue and completion written, not committed
	p, _ := os.FindProcess(os.Getpid())
	_ = p.Kill()
	time.Sleep(time.Hour)
	return nil
}

// crashFold records an outbox row, claims it and dies in the middle of its fold delivery.
func crashFold(ctx context.Context, s *Store) int {
	if _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: "m1", Target: "mb", MaxAttempts: 3, Payload: []byte("p")}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p, err := NewPublisher(dyingComplete{s}, PublisherOptions{Mode: ModeFold, ClaimFor: 30 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rows, err := p.Claim(ctx)
	if err != nil || len(rows) != 1 {
		fmt.Fprintln(os.Stderr, "claim:", rows, err)
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(Message{ID: rows[0].ID, Token: rows[0].ClaimToken}); err != nil {
		return 2
	}
	_, err = p.Deliver(ctx, rows[0])
	fmt.Fprintln(os.Stderr, "delivery did not crash:", err)
	return 2
}

// runCrashChild runs the child in mode against target on backend b and returns the message it
// fetched.
func runCrashChild(t *testing.T, b Backend, mode, target string) Message {
	t.Helper()
	childTarget, appName := target, ""
	if b == BackendPostgres {
		appName = "crash-child-" + strings.ToLower(rand.Text()[:12])
		childTarget = withDSNParam(target, "application_name", appName)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+mode, crashEnv+"_DB="+childTarget, crashEnv+"_BACKEND="+string(b))
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Success() {
		t.Fatalf("child %s: err = %v, want death by signal; stderr:\n%s", mode, err, stderr.String())
	}
	var m Message
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("child %s printed %q: %v; stderr:\n%s", mode, out, err, stderr.String())
	}
	rest := out[dec.InputOffset():]
	if (strings.HasSuffix(mode, "-in-handler") || mode == "fold") != strings.Contains(string(rest), handlerMarker) {
		t.Fatalf("child %s: handler marker presence wrong in %q", mode, rest)
	}
	if appName != "" {
		waitForBackendsGone(t, appName)
	}
	return m
}

// waitForBackendsGone waits until the server has ended every session named appName. A killed
// child's open transaction lives on until the server notices the closed connection; until then
// it holds its row locks, and a fetch that skips locked rows would find nothing.
func waitForBackendsGone(t *testing.T, appName string) {
	t.Helper()
	admin := pgAdmin(t, pgDSN(t))
	const patience = 30 * time.Second
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		var n int
		err := admin.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", appName).Scan(&n)
		if err != nil {
			t.Fatalf("count the killed child's sessions: %v", err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed child's %d session(s) %q still run after %s", n, appName, patience)
		}
	}
}

func TestCrashLeaselessPeekedMessageSurvives(t *testing.T) {
	forEachBackend(t, testCrashLeaselessPeekedMessageSurvives)
}

func testCrashLeaselessPeekedMessageSurvives(t *testing.T, b Backend) {
	for _, mode := range []string{"leaseless", "leaseless-in-handler"} {
		t.Run(mode, func(t *testing.T) {
			path := testTarget(t, b)
			fetched := runCrashChild(t, b, mode, path)
			if fetched.ID != "m1" || fetched.Attempts != 0 || fetched.Token != "" {
				t.Fatalf("child fetched %+v", fetched)
			}
			ctx := context.Background()
			s := openAt(t, b, path, Options{Clock: NewManualClock(base)})
			m := mustGet(t, s, "m1")
			if m.State != StateReady || m.Attempts != 0 || m.Token != "" {
				t.Fatalf("after the crash: %+v", m)
			}
			if _, _, err := s.LoadCheckpoint(ctx, "actor"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the crashed handler's effect survived: %v", err)
			}
			c := newConsumer(t, s, okHandler, ConsumerOptions{Path: PathLeaseless})
			d, err := c.Fetch(ctx)
			if err != nil || d == nil || d.Message.ID != "m1" || d.Message.Attempts != 0 {
				t.Fatalf("refetch = %+v, %v", d, err)
			}
			if out, err := c.Handle(ctx, d); err != nil || out.Action != ActionAcked {
				t.Fatalf("Handle = %+v, %v", out, err)
			}
		})
	}
}

func TestCrashLeasedMessageSurvivesItsLease(t *testing.T) {
	forEachBackend(t, testCrashLeasedMessageSurvivesItsLease)
}

func testCrashLeasedMessageSurvivesItsLease(t *testing.T, b Backend) {
	for _, mode := range []string{"leased", "leased-in-handler"} {
		t.Run(mode, func(t *testing.T) {
			path := testTarget(t, b)
			fetched := runCrashChild(t, b, mode, path)
			if fetched.ID != "m1" || fetched.Attempts != 1 || fetched.Token == "" {
				t.Fatalf("child fetched %+v", fetched)
			}
			ctx := context.Background()
			clk := NewManualClock(base)
			s := openAt(t, b, path, Options{Clock: clk})
			m := mustGet(t, s, "m1")
			if m.State != StateReady || m.Attempts != 1 || m.Token != fetched.Token || !m.LeaseUntil.Equal(base.Add(30*time.Second)) {
				t.Fatalf("after the crash: %+v", m)
			}
			if _, _, err := s.LoadCheckpoint(ctx, "actor"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the crashed handler's effect survived: %v", err)
			}
			c := newConsumer(t, s, okHandler, ConsumerOptions{Path: PathLeased, LeaseFor: 30 * time.Second})
			clk.Advance(30*time.Second - time.Millisecond)
			if d, err := c.Fetch(ctx); err != nil || d != nil {
				t.Fatalf("fetch while the dead worker's lease is live = %+v, %v", d, err)
			}
			clk.Advance(time.Millisecond)
			d, err := c.Fetch(ctx)
			if err != nil || d == nil || d.Message.ID != "m1" || d.Message.Attempts != 2 || d.Message.Token == fetched.Token {
				t.Fatalf("fetch after the lease ran out = %+v, %v", d, err)
			}
			if out, err := c.Handle(ctx, d); err != nil || out.Action != ActionAcked {
				t.Fatalf("Handle = %+v, %v", out, err)
			}
		})
	}
}

// TestCrashMidFold: a publisher killed after its fold transaction wrote the enqueue and the
// completion, before the commit, leaves neither: the row is pending under its old claim, the target
// mailbox is empty, and once the claim runs out the row is delivered exactly once.
func TestCrashMidFold(t *testing.T) { forEachBackend(t, testCrashMidFold) }

func testCrashMidFold(t *testing.T, b Backend) {
	target := testTarget(t, b)
	fetched := runCrashChild(t, b, "fold", target)
	ctx := context.Background()
	clk := NewManualClock(base)
	s := openAt(t, b, target, Options{Clock: clk})
	rows, err := s.ListOutbox(ctx)
	if err != nil || len(rows) != 1 || rows[0].State != StatePending || rows[0].ClaimToken != fetched.Token {
		t.Fatalf("outbox after the crash = %+v, %v", rows, err)
	}
	if ms, err := s.ListMessages(ctx, ""); err != nil || len(ms) != 0 {
		t.Fatalf("the uncommitted enqueue survived: %+v, %v", ms, err)
	}
	p, err := NewPublisher(s, PublisherOptions{Mode: ModeFold, ClaimFor: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Step(ctx); err != nil || n != 0 {
		t.Fatalf("step while the dead publisher's claim is live = %d, %v", n, err)
	}
	clk.Advance(30 * time.Second)
	if n, err := p.Step(ctx); err != nil || n != 1 {
		t.Fatalf("step after the claim ran out = %d, %v", n, err)
	}
	if ms, err := s.ListMessages(ctx, "mb"); err != nil || len(ms) != 1 || ms[0].ID != "m1" {
		t.Fatalf("after redelivery: %+v, %v", ms, err)
	}
}
