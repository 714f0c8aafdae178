package actordelivery

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// countEffect is a handler effect that counts its committed applications: the checkpoint
// "fx/<id>" has version k after k commits, so an effect applied twice shows as version 2.
func countEffect(s *Store, id string) Effects {
	return func(ctx context.Context) error {
		actor := "fx/" + id
		_, v, err := s.LoadCheckpoint(ctx, actor)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		_, err = s.SaveCheckpoint(ctx, actor, nil, v)
		return err
	}
}

// effectCount returns how many times id's countEffect committed.
func effectCount(t testing.TB, s *Store, id string) int64 {
	t.Helper()
	_, v, err := s.LoadCheckpoint(context.Background(), "fx/"+id)
	if errors.Is(err, ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// enqueueSpread puts perMailbox messages into each mailbox, ids "<mailbox>-<i>", and returns them.
func enqueueSpread(t testing.TB, s *Store, mailboxes []string, perMailbox int) []string {
	t.Helper()
	var ids []string
	for _, mb := range mailboxes {
		for i := range perMailbox {
			id := fmt.Sprintf("%s-%d", mb, i)
			mustEnqueue(t, s, NewMessage{Mailbox: mb, ID: id, MaxAttempts: 3})
			ids = append(ids, id)
		}
	}
	return ids
}

func TestWorkersBadInput(t *testing.T) { forEachBackend(t, testWorkersBadInput) }

func testWorkersBadInput(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	ctx := context.Background()
	mbs := []string{"a", "b"}
	for _, tc := range []struct {
		name      string
		st        *Store
		mailboxes []string
		n         int
		h         Handler
		opts      ConsumerOptions
		want      string
	}{
		{"zero workers", s, mbs, 0, okHandler, ConsumerOptions{}, "worker count 0"},
		{"negative workers", s, mbs, -2, okHandler, ConsumerOptions{}, "worker count -2"},
		{"nil store", nil, mbs, 1, okHandler, ConsumerOptions{}, "store is nil"},
		{"nil handler", s, mbs, 1, nil, ConsumerOptions{}, "handler is nil"},
		{"no mailboxes", s, nil, 1, okHandler, ConsumerOptions{}, "no mailboxes"},
		{"empty mailbox", s, []string{"a", ""}, 1, okHandler, ConsumerOptions{}, "mailbox is empty"},
		{"repeated mailbox", s, []string{"a", "b", "a"}, 1, okHandler, ConsumerOptions{}, `mailbox "a" is listed twice`},
		{"mailbox in options", s, mbs, 1, okHandler, ConsumerOptions{Mailbox: "c"}, `ConsumerOptions.Mailbox is "c"`},
		{"negative lease", s, mbs, 1, okHandler, ConsumerOptions{LeaseFor: -time.Second}, "lease_for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := RunWorkers(ctx, tc.st, tc.mailboxes, tc.n, tc.h, tc.opts)
			wantErr(t, err, ErrInvalidArgument)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestWorkersServeEveryMailbox: n workers over a set of mailboxes handle every message exactly
// once; on the leaseless path no mailbox ever has two handlers running at once (each mailbox has
// one worker), while on the leased path the workers share the mailboxes.
func TestWorkersServeEveryMailbox(t *testing.T) { forEachBackend(t, testWorkersServeEveryMailbox) }

func testWorkersServeEveryMailbox(t *testing.T, b Backend) {
	for _, path := range []Path{PathLeased, PathLeaseless} {
		t.Run(path.String(), func(t *testing.T) {
			inBubble(t, b, func(t *testing.T, settle func()) {
				s, _ := testStore(t, b)
				mbs := []string{"a", "b"}
				ids := enqueueSpread(t, s, mbs, 5)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var mu sync.Mutex
				inFlight := map[string]int{}
				handled := 0
				h := func(_ context.Context, m *Message) (Effects, error) {
					mu.Lock()
					inFlight[m.Mailbox]++
					if path == PathLeaseless && inFlight[m.Mailbox] > 1 {
						t.Errorf("two handlers at once on leaseless mailbox %q", m.Mailbox)
					}
					mu.Unlock()
					time.Sleep(time.Millisecond) // let the other workers run meanwhile
					mu.Lock()
					inFlight[m.Mailbox]--
					handled++
					if handled == len(ids) {
						cancel() // the drain still commits this last one
					}
					mu.Unlock()
					return countEffect(s, m.ID), nil
				}
				if err := RunWorkers(ctx, s, mbs, 3, h, ConsumerOptions{Path: path}); err != nil {
					t.Fatalf("RunWorkers = %v", err)
				}
				for _, id := range ids {
					if m := mustGet(t, s, id); m.State != StateAcked {
						t.Errorf("%s: state %s after the run, want acked", id, m.State)
					}
					if n := effectCount(t, s, id); n != 1 {
						t.Errorf("%s: effect applied %d times, want 1", id, n)
					}
				}
			})
		})
	}
}

// TestWorkersDrain: cancelling the context while handlers run lets them finish and commit, starts
// no new fetch, and returns only after every worker stopped.
func TestWorkersDrain(t *testing.T) { forEachBackend(t, testWorkersDrain) }

func testWorkersDrain(t *testing.T, b Backend) {
	for _, path := range []Path{PathLeased, PathLeaseless} {
		t.Run(path.String(), func(t *testing.T) {
			inBubble(t, b, func(t *testing.T, settle func()) {
				s, _ := testStore(t, b)
				mbs := []string{"a", "b"}
				ids := enqueueSpread(t, s, mbs, 3)
				started := make(chan string, len(ids))
				release := make(chan struct{})
				h := func(_ context.Context, m *Message) (Effects, error) {
					started <- m.ID
					<-release
					return countEffect(s, m.ID), nil
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- RunWorkers(ctx, s, mbs, 2, h, ConsumerOptions{Path: path}) }()
				inFlight := []string{<-started, <-started}
				slices.Sort(inFlight)
				// Worker 0 starts at mailbox a, worker 1 at b (leased); a belongs to worker 0, b
				// to worker 1 (leaseless): either way the first of each mailbox is in flight.
				if want := []string{"a-0", "b-0"}; !slices.Equal(inFlight, want) {
					t.Fatalf("in flight: %q, want %q", inFlight, want)
				}
				cancel()
				settle()
				select {
				case err := <-done:
					t.Fatalf("RunWorkers returned %v while two handlers were still running", err)
				default:
				}
				close(release)
				if err := <-done; err != nil {
					t.Fatalf("RunWorkers = %v after the drain, want nil", err)
				}
				if len(started) != 0 {
					t.Fatalf("a handler started after the cancel: %q", <-started)
				}
				for _, id := range ids {
					m := mustGet(t, s, id)
					inflight := slices.Contains(inFlight, id)
					switch {
					case inflight && (m.State != StateAcked || effectCount(t, s, id) != 1):
						t.Errorf("in-flight %s: %s with %d effects, want acked with 1", id, m.State, effectCount(t, s, id))
					case !inflight && (m.State != StateReady || m.Attempts != 0 || m.Token != ""):
						t.Errorf("%s was fetched after the cancel: %+v", id, m)
					}
				}
			})
		})
	}
}

// The SIGTERM test's child: two workers over mailboxes mb0 and mb1 whose handlers announce
// "started <id>" and then wait for a line on stdin. SIGTERM cancels the workers' context (the
// child prints "draining"); the parent then releases the handlers, and the child prints
// "stopped" once RunWorkers has returned.
const workersChildMode = "workers-"

var workersMailboxes = []string{"mb0", "mb1"}

func workersChild(s *Store, path Path) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	release := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		close(release)
	}()
	go func() {
		<-ctx.Done()
		say("draining")
	}()
	say("ready")
	h := func(_ context.Context, m *Message) (Effects, error) {
		say("started %s", m.ID)
		<-release
		return countEffect(s, m.ID), nil
	}
	if err := RunWorkers(ctx, s, workersMailboxes, 2, h, ConsumerOptions{Path: path}); err != nil {
		fmt.Fprintln(os.Stderr, "RunWorkers:", err)
		return 2
	}
	say("stopped")
	return 0
}

// TestWorkersSIGTERM: a worker process that receives SIGTERM in the middle of a run finishes and
// commits the deliveries in flight, fetches nothing more and exits 0; a restart then handles the
// rest. Nothing is lost (every message acked with its effect) and nothing in flight is handled
// twice (every effect applied exactly once).
func TestWorkersSIGTERM(t *testing.T) { forEachBackend(t, testWorkersSIGTERM) }

func testWorkersSIGTERM(t *testing.T, b Backend) {
	for _, path := range []Path{PathLeased, PathLeaseless} {
		t.Run(path.String(), func(t *testing.T) {
			target := testTarget(t, b)
			s := openAt(t, b, target, Options{Clock: NewManualClock(base)})
			ids := enqueueSpread(t, s, workersMailboxes, 4)

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashEnv+"="+workersChildMode+path.String(), crashEnv+"_DB="+target, crashEnv+"_BACKEND="+string(b))
			var stderr syncBuffer
			cmd.Stderr = &stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			lines := bufio.NewScanner(stdout)
			next := func(want string) string {
				t.Helper()
				if !lines.Scan() {
					t.Fatalf("child ended before printing %q; stderr:\n%s", want, stderr.String())
				}
				got := lines.Text()
				if !strings.HasPrefix(got, want) {
					t.Fatalf("child printed %q, want %q...; stderr:\n%s", got, want, stderr.String())
				}
				return got
			}
			next("ready")
			var inFlight []string
			for range 2 {
				inFlight = append(inFlight, strings.TrimPrefix(next("started "), "started "))
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			next("draining")
			if _, err := io.WriteString(stdin, "go\n"); err != nil {
				t.Fatal(err)
			}
			next("stopped")
			if lines.Scan() {
				t.Fatalf("child printed %q after it stopped", lines.Text())
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child exit: %v, want 0 after the drain; stderr:\n%s", err, stderr.String())
			}

			for _, id := range ids {
				m := mustGet(t, s, id)
				if slices.Contains(inFlight, id) {
					if m.State != StateAcked || effectCount(t, s, id) != 1 {
						t.Errorf("in-flight %s after SIGTERM: %s with %d effects, want acked with 1", id, m.State, effectCount(t, s, id))
					}
				} else if m.State != StateReady || m.Attempts != 0 || m.Token != "" {
					t.Errorf("%s was fetched after SIGTERM: %+v", id, m)
				}
			}

			// The restart: handle everything left, then stop.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var left atomic.Int64
			left.Store(int64(len(ids) - len(inFlight)))
			h := func(_ context.Context, m *Message) (Effects, error) {
				if left.Add(-1) == 0 {
					cancel()
				}
				return countEffect(s, m.ID), nil
			}
			if err := RunWorkers(ctx, s, workersMailboxes, 2, h, ConsumerOptions{Path: path}); err != nil {
				t.Fatalf("RunWorkers after the restart = %v", err)
			}
			for _, id := range ids {
				if m := mustGet(t, s, id); m.State != StateAcked {
					t.Errorf("%s lost: %s after the restart", id, m.State)
				}
				if n := effectCount(t, s, id); n != 1 {
					t.Errorf("%s: effect applied %d times, want exactly 1", id, n)
				}
			}
		})
	}
}
