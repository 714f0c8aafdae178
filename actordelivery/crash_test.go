package actordelivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	if mode := os.Getenv(crashEnv); mode != "" {
		os.Exit(crashChild(mode, os.Getenv(crashEnv+"_DB")))
	}
	os.Exit(m.Run())
}

func crashChild(mode, path string) int {
	ctx := context.Background()
	s, err := Open(path, Options{Clock: NewManualClock(base)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
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

// runCrashChild runs the child in mode against path and returns the message it fetched.
func runCrashChild(t *testing.T, mode, path string) Message {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+mode, crashEnv+"_DB="+path)
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
	if strings.HasSuffix(mode, "-in-handler") != strings.Contains(string(rest), handlerMarker) {
		t.Fatalf("child %s: handler marker presence wrong in %q", mode, rest)
	}
	return m
}

func TestCrashLeaselessPeekedMessageSurvives(t *testing.T) {
	for _, mode := range []string{"leaseless", "leaseless-in-handler"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "crash.db")
			fetched := runCrashChild(t, mode, path)
			if fetched.ID != "m1" || fetched.Attempts != 0 || fetched.Token != "" {
				t.Fatalf("child fetched %+v", fetched)
			}
			ctx := context.Background()
			s := openAt(t, path, Options{Clock: NewManualClock(base)})
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
	for _, mode := range []string{"leased", "leased-in-handler"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "crash.db")
			fetched := runCrashChild(t, mode, path)
			if fetched.ID != "m1" || fetched.Attempts != 1 || fetched.Token == "" {
				t.Fatalf("child fetched %+v", fetched)
			}
			ctx := context.Background()
			clk := NewManualClock(base)
			s := openAt(t, path, Options{Clock: clk})
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
