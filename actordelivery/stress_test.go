package actordelivery

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// The multi-process stress test: worker processes (leased consumers) and fold publishers share one
// database while the parent SIGKILLs a random one of them every few hundred milliseconds and starts
// it again. Every message starts as an outbox row; a publisher folds it into one of the mailboxes;
// a worker's handler applies its effect in the commit that acknowledges it. The effect is a
// counter (the checkpoint "fx/<id>", whose version counts the committed applications), so an
// effect applied twice shows as version 2.
//
// Result required: every outbox row completed, every message acked or dead-lettered, 0 lost (a
// message neither acked nor dead-lettered, or acked without its effect), 0 doubled (an effect
// applied more than once, or applied to a dead-lettered message).
//
// PCONFORM_STRESS_MESSAGES sets the message count (default 1000, to keep the gate's time; the
// issue's figure is 10,000: PCONFORM_STRESS_MESSAGES=10000 go test ./actordelivery/ -run Stress -v).
// PCONFORM_STRESS_SEED picks the kill schedule (default 1; printed).

const (
	stressRoleEnv    = "ACTORDELIVERY_STRESS_ROLE"
	stressMailboxes  = 8
	stressLeaseFor   = 1500 * time.Millisecond
	stressMaxAttempt = 50
)

func stressCount(t *testing.T) int {
	n := 1000
	if v := os.Getenv("PCONFORM_STRESS_MESSAGES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("PCONFORM_STRESS_MESSAGES=%q is not a positive count", v)
		}
	}
	return n
}

// stressChild runs one worker or publisher until it is killed.
func stressChild(role string, b Backend, target string) int {
	ctx := context.Background()
	s, err := OpenBackend(b, target, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	switch role {
	case "publisher":
		p, err := NewPublisher(s, PublisherOptions{Mode: ModeFold, ClaimFor: stressLeaseFor, Batch: 32, PollInterval: 20 * time.Millisecond})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		_ = p.Run(ctx)
	case "worker":
		h := func(_ context.Context, m *Message) (Effects, error) {
			id := m.ID
			return func(ctx context.Context) error {
				actor := "fx/" + id
				_, v, err := s.LoadCheckpoint(ctx, actor)
				if err != nil && !errors.Is(err, ErrNotFound) {
					return err
				}
				_, err = s.SaveCheckpoint(ctx, actor, nil, v)
				return err
			}, nil
		}
		done := make(chan struct{})
		for i := range stressMailboxes {
			c, err := NewConsumer(s, h, ConsumerOptions{Mailbox: fmt.Sprintf("mb%d", i), Path: PathLeased,
				LeaseFor: stressLeaseFor, Retry: Backoff{Base: 10 * time.Millisecond, Max: 100 * time.Millisecond},
				PollInterval: 20 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			go func() { _ = c.Run(ctx); done <- struct{}{} }()
		}
		<-done
	default:
		fmt.Fprintln(os.Stderr, "unknown stress role", role)
		return 2
	}
	return 3
}

type stressProc struct {
	role string
	cmd  *exec.Cmd
}

func TestStressProcesses(t *testing.T) { forEachBackend(t, testStressProcesses) }

func testStressProcesses(t *testing.T, b Backend) {
	if testing.Short() {
		t.Skip("-short")
	}
	workers, publishers := 2, 1
	if b == BackendPostgres {
		workers, publishers = 4, 2
	}
	n := stressCount(t)
	seed := uint64(1)
	if v := os.Getenv("PCONFORM_STRESS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("PCONFORM_STRESS_SEED=%q: %v", v, err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x57e55))
	target := testTarget(t, b)
	s := openAt(t, b, target, Options{})
	ctx := context.Background()
	for lo := 0; lo < n; lo += 500 {
		err := s.ExecTx(ctx, false, func(ctx context.Context) error {
			for i := lo; i < min(lo+500, n); i++ {
				if _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: fmt.Sprintf("s%06d", i), Target: fmt.Sprintf("mb%d", i%stressMailboxes),
					MaxAttempts: stressMaxAttempt, Payload: []byte("x")}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	start := func(role string) *stressProc {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), stressRoleEnv+"="+role, crashEnv+"_DB="+target, crashEnv+"_BACKEND="+string(b))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return &stressProc{role: role, cmd: cmd}
	}
	var procs []*stressProc
	for range workers {
		procs = append(procs, start("worker"))
	}
	for range publishers {
		procs = append(procs, start("publisher"))
	}
	defer func() {
		for _, p := range procs {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	}()

	began := time.Now()
	deadline := began.Add(10 * time.Minute)
	kills := 0
	nextKill := time.Now().Add(time.Duration(200+rng.IntN(300)) * time.Millisecond)
	for {
		if time.Now().After(nextKill) {
			i := rng.IntN(len(procs))
			_ = procs[i].cmd.Process.Kill()
			_ = procs[i].cmd.Wait()
			procs[i] = start(procs[i].role)
			kills++
			nextKill = time.Now().Add(time.Duration(200+rng.IntN(300)) * time.Millisecond)
		}
		pending, ready, err := stressOpen(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if pending == 0 && ready == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("seed %d: not done after %v: %d outbox rows pending, %d messages ready", seed, time.Since(began), pending, ready)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(began)

	acked, dead, lost, doubled, effects, err := stressVerdict(ctx, s, n)
	if err != nil {
		t.Fatal(err)
	}
	summary := fmt.Sprintf("stress on %s: %d messages, %d workers + %d fold publishers, %d kills (seed %d), %v: %d acked, %d dead-lettered, %d effects, %d lost, %d doubled",
		b, n, workers, publishers, kills, seed, took.Round(time.Millisecond), acked, dead, effects, lost, doubled)
	t.Log(summary)
	fmt.Println(summary)
	if lost != 0 || doubled != 0 || acked+dead != n {
		t.Fatalf("seed %d: %s (rerun with PCONFORM_STRESS_SEED=%d)", seed, summary, seed)
	}
}

// stressOpen counts the outbox rows still pending and the messages still ready.
func stressOpen(ctx context.Context, s *Store) (pending, ready int, err error) {
	q := boundQuerier{q: s.rdb, d: s.d}
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM {p}outbox WHERE state = 'pending'`).Scan(&pending); err != nil {
		return 0, 0, err
	}
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM {p}messages WHERE state = 'ready'`).Scan(&ready); err != nil {
		return 0, 0, err
	}
	return pending, ready, nil
}

// stressVerdict reads the final state: acked and dead-lettered messages, effects; lost counts
// messages neither acked nor dead-lettered and acked messages without their effect; doubled
// counts effects applied more than once and effects of dead-lettered messages.
func stressVerdict(ctx context.Context, s *Store, n int) (acked, dead, lost, doubled, effects int, err error) {
	ms, err := s.ListMessages(ctx, "")
	if err != nil {
		return
	}
	dls, err := s.ListDeadLetters(ctx)
	if err != nil {
		return
	}
	state := map[string]string{}
	for _, m := range ms {
		state[m.ID] = m.State
	}
	for _, d := range dls {
		state[d.ID] = "dead"
	}
	fx := map[string]int64{}
	rows, err := boundQuerier{q: s.rdb, d: s.d}.QueryContext(ctx, `SELECT actor, version FROM {p}checkpoints`)
	if err != nil {
		return
	}
	for rows.Next() {
		var actor string
		var v int64
		if err = rows.Scan(&actor, &v); err != nil {
			_ = rows.Close()
			return
		}
		fx[actor[len("fx/"):]] = v
		effects += int(v)
	}
	if err = errors.Join(rows.Err(), rows.Close()); err != nil {
		return
	}
	for i := range n {
		id := fmt.Sprintf("s%06d", i)
		switch state[id] {
		case StateAcked:
			acked++
			if fx[id] == 0 {
				lost++
			}
		case "dead":
			dead++
			if fx[id] != 0 {
				doubled++
			}
		default:
			lost++
		}
		if fx[id] > 1 {
			doubled++
		}
	}
	return
}

// TestStressVerdictCounts shows the stress test's verdict can fail: from a hand-made final state
// it counts an effect applied twice, an effect on a dead letter, a message never acked and an ack
// without its effect.
func TestStressVerdictCounts(t *testing.T) { forEachBackend(t, testStressVerdictCounts) }

func testStressVerdictCounts(t *testing.T, b Backend) {
	s, _ := testStore(t, b)
	ctx := context.Background()
	for i := range 5 {
		mustEnqueue(t, s, NewMessage{Mailbox: "mb0", ID: fmt.Sprintf("s%06d", i)})
	}
	effect := func(id string, times int) {
		for v := range times {
			if _, err := s.SaveCheckpoint(ctx, "fx/"+id, nil, int64(v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range []string{"s000000", "s000001", "s000004"} {
		if err := s.AckByID(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	effect("s000000", 1) // fine
	effect("s000001", 2) // doubled
	// s000002 stays ready: lost
	if err := s.DeadLetter(ctx, "s000003", "test"); err != nil {
		t.Fatal(err)
	}
	effect("s000003", 1) // an effect of a dead letter: doubled
	// s000004 acked without its effect: lost
	acked, dead, lost, doubled, effects, err := stressVerdict(ctx, s, 5)
	if err != nil {
		t.Fatal(err)
	}
	if acked != 3 || dead != 1 || lost != 2 || doubled != 2 || effects != 4 {
		t.Fatalf("acked %d dead %d lost %d doubled %d effects %d; want 3 1 2 2 4", acked, dead, lost, doubled, effects)
	}
}
