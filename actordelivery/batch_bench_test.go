package actordelivery

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// batchMailboxes is the mailbox count of BenchmarkConcurrentActors' batch=N cases.
const batchMailboxes = 16

// benchActorBatches is BenchmarkConcurrentActors/<backend>/batch=N: the mailboxes=16 trip with
// batches. Each mailbox's goroutine enqueues n messages with one EnqueueBatch (a producer that
// sends in batches), then runs one leaseless batch step of size n: one peek, n handlers of
// actorHandlerWork each, and one transaction with the n acknowledgements and checkpoint writes.
// batch=1 is the mailboxes=16 trip exactly (the same Fetch and Handle, an enqueue of its own).
// Every figure is per message: msgs/s, client and server CPU µs, statements, round trips and
// commits.
func benchActorBatches(b *testing.B, backend Backend, boxes, n int) {
	ctx := context.Background()
	var s *Store
	var stmts *stmtCounter
	if backend == BackendPostgres {
		s, stmts = benchTracedPostgres(b)
	} else {
		s = benchStoreOn(b, backend)
	}
	h := func(_ context.Context, m *Message) (Effects, error) {
		time.Sleep(actorHandlerWork)
		return func(ctx context.Context) error {
			_, err := s.SaveCheckpoint(ctx, "actor-"+m.Mailbox+"-"+m.ID, m.Payload, 0)
			return err
		}, nil
	}
	consumers := make([]*Consumer, boxes)
	for i := range consumers {
		c, err := NewConsumer(s, h, ConsumerOptions{Mailbox: fmt.Sprintf("actor-%d", i), Path: PathLeaseless, BatchSize: n})
		if err != nil {
			b.Fatal(err)
		}
		consumers[i] = c
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, boxes)
	commits0, cpu0 := s.Stats().Commits, benchCPU(b, s)
	if stmts != nil {
		stmts.n.Store(0)
		stmts.trips.Store(0)
	}
	b.ResetTimer()
	start := time.Now()
	for i, c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mailbox := fmt.Sprintf("actor-%d", i)
			for {
				last := next.Add(int64(n))
				first := last - int64(n) + 1
				if first > int64(b.N) {
					return
				}
				last = min(last, int64(b.N))
				err := benchEnqueueBatch(ctx, s, mailbox, first, last)
				if err == nil {
					err = benchStepAll(ctx, c, int(last-first+1))
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", mailbox, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	cpu1 := benchCPU(b, s)
	perMsg := func(v float64) float64 { return v / float64(b.N) }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(perMsg(float64((cpu1.client - cpu0.client).Microseconds())), "client-cpu-us/msg")
	if cpu0.serverOK && cpu1.serverOK {
		b.ReportMetric(perMsg(float64((cpu1.server - cpu0.server).Microseconds())), "server-cpu-us/msg")
	}
	b.ReportMetric(perMsg(float64(s.Stats().Commits-commits0)), "commits/msg")
	if stmts != nil {
		b.ReportMetric(perMsg(float64(stmts.n.Load())), "stmts/msg")
		b.ReportMetric(perMsg(float64(stmts.trips.Load())), "roundtrips/msg")
	}
	if d := cpu1.machine.total - cpu0.machine.total; cpu0.machine.ok && cpu1.machine.ok && d > 0 {
		b.ReportMetric(100*float64(cpu1.machine.steal-cpu0.machine.steal)/float64(d), "steal-%")
	}
}

// benchEnqueueBatch enqueues messages m<first>..m<last> into mailbox: alone when it is one (the
// mailboxes=N trip's enqueue), with one EnqueueBatch otherwise (a producer that sends in batches).
func benchEnqueueBatch(ctx context.Context, s *Store, mailbox string, first, last int64) error {
	msg := func(k int64) NewMessage {
		return NewMessage{Mailbox: mailbox, ID: fmt.Sprintf("m%d", k), MaxAttempts: 3, Payload: []byte("payload")}
	}
	if first == last {
		_, err := s.Enqueue(ctx, msg(first))
		return err
	}
	ms := make([]NewMessage, 0, last-first+1)
	for k := first; k <= last; k++ {
		ms = append(ms, msg(k))
	}
	_, err := s.EnqueueBatch(ctx, ms)
	return err
}

// benchStepAll steps c until want messages were acknowledged; any other outcome is an error.
func benchStepAll(ctx context.Context, c *Consumer, want int) error {
	for acked := 0; acked < want; {
		outs, err := c.StepBatch(ctx)
		if err != nil {
			return err
		}
		for _, o := range outs {
			if o.Action != ActionAcked {
				return fmt.Errorf("outcome %+v", o)
			}
			acked++
		}
	}
	return nil
}

// BenchmarkBatchScenarios is two of QueueScenarios' SQLite (synchronous=FULL) scenarios with
// batches of size N: a drain of b.N messages by one consumer (both paths), and b.N messages taken
// by 4 contended consumers (leased). The handler writes nothing; a batch commits its
// acknowledgements in one transaction. batch=1 is QueueScenarios' step. Compare with goqite's
// rates for the same scenarios (docs/performance.md).
//
// The 4 consumers also run at synchronous=NORMAL (sync=NORMAL), where a commit in WAL mode waits
// for no fsync. That rate bounds what a group commit (several consumers' transactions sharing one
// fsync) could reach: it can save at most the fsyncs, and NORMAL saves them all. At batch=1 and 8
// they run with group commit too (group=16: Options.GroupCommit 16, synchronous=FULL), whose
// commits/msg counts the COMMITs.
//
//	go test -run '^$' -bench 'BatchScenarios' -benchtime 10000x ./actordelivery/
func BenchmarkBatchScenarios(b *testing.B) {
	for _, n := range []int{1, 8, 32} {
		for _, path := range []Path{PathLeased, PathLeaseless} {
			b.Run(fmt.Sprintf("drain/batch=%d/%v", n, path), func(b *testing.B) { benchBatchScenario(b, "FULL", 0, path, 1, n) })
		}
		b.Run(fmt.Sprintf("consumers=4/batch=%d/leased", n), func(b *testing.B) { benchBatchScenario(b, "FULL", 0, PathLeased, 4, n) })
		if n <= 8 {
			b.Run(fmt.Sprintf("consumers=4/batch=%d/leased/group=16", n), func(b *testing.B) { benchBatchScenario(b, "FULL", 16, PathLeased, 4, n) })
		}
		b.Run(fmt.Sprintf("consumers=4/batch=%d/leased/sync=NORMAL", n), func(b *testing.B) { benchBatchScenario(b, "NORMAL", 0, PathLeased, 4, n) })
	}
}

// benchBatchScenario runs workers consumers of batches of n on a store at synchronous with
// Options.GroupCommit group.
func benchBatchScenario(b *testing.B, synchronous string, group int, path Path, workers, n int) {
	ctx := context.Background()
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{Synchronous: synchronous, GroupCommit: group})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	fill(b, s, "mb", b.N)
	nop := func(context.Context, *Message) (Effects, error) { return nil, nil }
	var acked atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	commits0, cpu0 := s.Stats().Commits, cpuOf(b, 0, false)
	b.ResetTimer()
	start := time.Now()
	for range workers {
		c, err := NewConsumer(s, nop, ConsumerOptions{Mailbox: "mb", Path: path, BatchSize: n})
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for acked.Load() < int64(b.N) {
				outs, err := c.StepBatch(ctx)
				if err != nil {
					errs <- err
					return
				}
				for _, o := range outs {
					if o.Action != ActionAcked {
						errs <- fmt.Errorf("outcome %+v", o)
						return
					}
				}
				acked.Add(int64(len(outs)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	cpu1 := cpuOf(b, 0, false)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(s.Stats().Commits-commits0)/float64(b.N), "commits/msg")
	b.ReportMetric(float64((cpu1.client-cpu0.client).Microseconds())/float64(b.N), "cpu-us/msg")
}
