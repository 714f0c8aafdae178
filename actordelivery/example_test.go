package actordelivery_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// These examples use only the package's exported API: each one, copied into a module of its own
// with a main function around it, runs as shown.

// Opening a store creates the database file if needed and brings its schema up to date; opening it
// again finds the schema current and keeps the data.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "actordelivery-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "app.db")

	s, err := actordelivery.Open(path, actordelivery.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "greeter", ID: "m1", MaxAttempts: 3}); err != nil {
		fmt.Println(err)
		return
	}
	_ = s.Close()

	s, err = actordelivery.Open(path, actordelivery.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	n, err := s.QueueDepth(ctx, "greeter")
	fmt.Println(s.Backend(), "queue depth after reopening:", n, err)
	// Output:
	// sqlite queue depth after reopening: 1 <nil>
}

// The transactional outbox: the application's own row (an order) and the outbox row announcing it
// are written in one ExecTx, through Tx's handle, and commit or roll back together.
func ExampleTx() {
	dir, err := os.MkdirTemp("", "actordelivery-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	s, err := actordelivery.Open(filepath.Join(dir, "app.db"), actordelivery.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()

	placeOrder := func(id string, total int) error {
		return s.ExecTx(ctx, false, func(ctx context.Context) error {
			tx, err := actordelivery.Tx(ctx)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL)`); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, total) VALUES (?, ?)`, id, total); err != nil {
				return err
			}
			if _, err := s.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: id, Target: "billing", MaxAttempts: 3}); err != nil {
				return err
			}
			if total <= 0 {
				return fmt.Errorf("order %s: total %d is not positive", id, total) // rolls back both
			}
			return nil
		})
	}
	fmt.Println(placeOrder("o1", 30))
	fmt.Println(placeOrder("o2", -5))

	var orders int
	err = s.ExecTx(ctx, true, func(ctx context.Context) error {
		tx, err := actordelivery.Tx(ctx)
		if err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM orders`).Scan(&orders)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rows, _ := s.ListOutbox(ctx)
	fmt.Println("orders:", orders, "outbox rows:", len(rows), rows[0].ID)

	_, err = actordelivery.Tx(ctx)
	fmt.Println(errors.Is(err, actordelivery.ErrNoTransaction))
	// Output:
	// <nil>
	// order o2: total -5 is not positive
	// orders: 1 outbox rows: 1 o1
	// true
}

// A publisher loop: Run claims outbox rows and delivers each into its target mailbox until its
// context ends.
func ExamplePublisher_Run() {
	dir, err := os.MkdirTemp("", "actordelivery-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	s, err := actordelivery.Open(filepath.Join(dir, "app.db"), actordelivery.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	p, err := actordelivery.NewPublisher(s, actordelivery.PublisherOptions{Mode: actordelivery.ModeFold})
	if err != nil {
		fmt.Println(err)
		return
	}
	arrived, stop := s.Subscribe("billing")
	defer stop()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	if _, err := s.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: "o1", Target: "billing", MaxAttempts: 3}); err != nil {
		fmt.Println(err)
		return
	}
	<-arrived // the publisher's enqueue into billing committed
	cancel()
	fmt.Println("Run:", <-done)
	ms, err := s.ListMessages(context.Background(), "billing")
	fmt.Println(len(ms), ms[0].ID, ms[0].State, err)
	// Output:
	// Run: <nil>
	// 1 o1 ready <nil>
}

// The leased path: any number of workers per mailbox. Fetch leases the message (its attempt is
// counted then); a failed handler's message is retried after the policy's delay, once its time
// comes, and dead-lettered at max attempts.
func ExampleConsumer_Step_leased() {
	dir, err := os.MkdirTemp("", "actordelivery-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	clk := actordelivery.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := actordelivery.Open(filepath.Join(dir, "app.db"), actordelivery.Options{Clock: clk})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()
	_, _ = s.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "greeter", ID: "m1", MaxAttempts: 3, Payload: []byte("hi")})
	_, _ = s.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "greeter", ID: "m2", MaxAttempts: 3, Payload: []byte("oops")})
	c, err := actordelivery.NewConsumer(s, func(ctx context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		if string(m.Payload) == "oops" {
			return nil, errors.New("cannot greet")
		}
		fmt.Printf("hello from %s\n", m.ID)
		return nil, nil
	}, actordelivery.ConsumerOptions{Mailbox: "greeter", Path: actordelivery.PathLeased,
		Retry: actordelivery.Backoff{Base: time.Second}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 4 {
		out, err := c.Step(ctx)
		fmt.Println(out.Action, out.Attempt, err)
		clk.Advance(time.Minute) // past every retry delay
	}
	// Output:
	// hello from m1
	// acked 0 <nil>
	// retried 1 <nil>
	// retried 2 <nil>
	// dead_lettered 3 <nil>
}

// The leaseless path: exactly one worker per mailbox. Fetch only peeks; nothing is written until
// the handler's outcome commits.
func ExampleConsumer_Step_leaseless() {
	dir, err := os.MkdirTemp("", "actordelivery-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	clk := actordelivery.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := actordelivery.Open(filepath.Join(dir, "app.db"), actordelivery.Options{Clock: clk})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()
	_, _ = s.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "greeter", ID: "m1", MaxAttempts: 2, Payload: []byte("hi")})
	c, err := actordelivery.NewConsumer(s, func(ctx context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		return nil, fmt.Errorf("cannot greet %q yet", m.Payload)
	}, actordelivery.ConsumerOptions{Mailbox: "greeter", Path: actordelivery.PathLeaseless,
		Retry: actordelivery.Backoff{Base: time.Second}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		out, _ := c.Step(ctx)
		fmt.Println(out.Action, out.Attempt)
		clk.Advance(time.Second)
	}
	dls, _ := s.ListDeadLetters(ctx)
	fmt.Println(dls[0].ID, dls[0].Attempts, dls[0].Reason)
	// Output:
	// retried 1
	// dead_lettered 2
	// idle 0
	// m1 2 max attempts reached
}

// RunWorkers with a drain on shutdown: when the context ends (a SIGTERM, say, through
// signal.NotifyContext), the message in flight is handled and committed, and nothing new is
// fetched. DrainTimeout bounds that wait.
func ExampleRunWorkers() {
	dir, err := os.MkdirTemp("", "actordelivery-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	s, err := actordelivery.Open(filepath.Join(dir, "app.db"), actordelivery.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	for _, id := range []string{"a1", "a2", "a3"} {
		_, _ = s.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "jobs", ID: id, MaxAttempts: 3})
	}
	inFlight := make(chan struct{})
	h := func(ctx context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		if m.ID == "a2" {
			close(inFlight)
			cancel() // shutdown begins while a2 is being handled
		}
		fmt.Println("handled", m.ID)
		return nil, nil
	}
	err = actordelivery.RunWorkers(ctx, s, []string{"jobs"}, 1, h,
		actordelivery.ConsumerOptions{Path: actordelivery.PathLeased, DrainTimeout: 5 * time.Second})
	<-inFlight
	fmt.Println("RunWorkers:", err)
	for _, id := range []string{"a1", "a2", "a3"} {
		m, _ := s.GetMessage(context.Background(), id)
		fmt.Println(id, m.State)
	}
	// Output:
	// handled a1
	// handled a2
	// RunWorkers: <nil>
	// a1 acked
	// a2 acked
	// a3 ready
}

// Plugging a metrics library of one's choice into the store: a Metrics of three methods that
// forward to the library's client, passed in Options.Metrics. The consumer, the publisher,
// RunWorkers and the store report through it. This one prints the counters.
func ExampleMetrics() {
	dir, err := os.MkdirTemp("", "actordelivery-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	s, err := actordelivery.Open(filepath.Join(dir, "app.db"), actordelivery.Options{Metrics: printMetrics{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()
	_, _ = s.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "greeter", ID: "m1", MaxAttempts: 2})
	c, _ := actordelivery.NewConsumer(s, func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) {
		return nil, nil
	}, actordelivery.ConsumerOptions{Mailbox: "greeter"})
	_, _ = c.Step(ctx)
	// Output:
	// actordelivery.fetched mailbox=greeter 1
	// actordelivery.acked mailbox=greeter 1
}

// printMetrics stands for an adapter to a metrics client (StatsD, Prometheus, OpenTelemetry): it
// prints counters and gauges, and drops commit timings (they vary from run to run).
type printMetrics struct{}

func (printMetrics) Count(c actordelivery.Counter, mailbox string, n int64) {
	fmt.Printf("actordelivery.%s mailbox=%s %d\n", c, mailbox, n)
}
func (printMetrics) ObserveCommit(time.Duration) {}
func (printMetrics) QueueDepth(mailbox string, n int64) {
	fmt.Printf("actordelivery.queue_depth mailbox=%s %d\n", mailbox, n)
}
