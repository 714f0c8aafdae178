package actordelivery

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The queue scenarios of issue 16, on SQLite (synchronous=FULL), for both consumer paths. Each
// reports msgs/s, commits/msg (Store.Stats) and cpu-us/msg (this process, which on SQLite is all
// of the work); with one consumer also wait-us/msg, the wall time per message that was not CPU.
// The round trip and the drain also run at synchronous=NORMAL (roundtrip-normal, drain-normal),
// where a commit does not wait for fsync and the rate is the CPU per message.
// The fifth scenario, a drain while 16 consumers poll empty mailboxes every
// millisecond, is BenchmarkConsume. Run each scenario with the sizes:
//
//	go test -run '^$' -bench 'QueueScenarios/(roundtrip|backlog)' -benchtime 1000x ./actordelivery/
//	go test -run '^$' -bench 'QueueScenarios/drain' -benchtime 10000x ./actordelivery/
//	go test -run '^$' -bench 'QueueScenarios/consumers=4' -benchtime 4000x ./actordelivery/
//	go test -run '^$' -bench 'Consume/sqlite' -benchtime 5000x ./actordelivery/

// backlogDepth is the queue depth BenchmarkQueueScenarios/backlog measures one receive+ack at.
const backlogDepth = 100_000

func BenchmarkQueueScenarios(b *testing.B) {
	paths := []Path{PathLeased, PathLeaseless}
	for _, mode := range []string{"FULL", "NORMAL"} {
		suffix := map[string]string{"FULL": "", "NORMAL": "-normal"}[mode]
		for _, path := range paths {
			b.Run("roundtrip"+suffix+"/"+path.String(), func(b *testing.B) { benchScenario(b, mode, path, 0, 1, true) })
		}
		for _, path := range paths {
			b.Run("drain"+suffix+"/"+path.String(), func(b *testing.B) { benchScenario(b, mode, path, -1, 1, false) })
		}
	}
	// The leaseless path serves a mailbox with exactly one worker: no 4-consumer variant.
	b.Run("consumers=4/leased", func(b *testing.B) { benchScenario(b, "FULL", PathLeased, -1, 4, false) })
	for _, path := range paths {
		b.Run("backlog/"+path.String(), func(b *testing.B) { benchScenario(b, "FULL", path, backlogDepth, 1, false) })
	}
}

// benchScenario fills the mailbox with depth messages (-1: b.N) and has workers consumers take
// b.N of them, each step a fetch and an acknowledgement; with enqueue, each step enqueues its
// message first (a round trip). With workers == 1 it also reports the p50 and p99 of one step.
// mode is the store's synchronous mode (Options.Synchronous).
func benchScenario(b *testing.B, mode string, path Path, depth, workers int, enqueue bool) {
	ctx := context.Background()
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{Synchronous: mode})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if depth < 0 {
		depth = b.N
	}
	fill(b, s, "mb", depth)
	nop := func(context.Context, *Message) (Effects, error) { return nil, nil }
	consumers := make([]*Consumer, workers)
	for i := range consumers {
		c, err := NewConsumer(s, nop, ConsumerOptions{Mailbox: "mb", Path: path})
		if err != nil {
			b.Fatal(err)
		}
		consumers[i] = c
	}
	lat := make([]time.Duration, 0, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	commits0, cpu0 := s.Stats().Commits, cpuOf(b, 0, false)
	b.ResetTimer()
	start := time.Now()
	for i, c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				t0 := time.Now()
				if enqueue {
					id := fmt.Sprintf("rt-%d", n)
					if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: id, MaxAttempts: 3, Payload: []byte("payload")}); err != nil {
						errs <- err
						return
					}
				}
				out, err := c.Step(ctx)
				if err == nil && out.Action != ActionAcked {
					err = fmt.Errorf("consumer %d, step %d: %+v", i, n, out)
				}
				if err != nil {
					errs <- err
					return
				}
				if workers == 1 {
					lat = append(lat, time.Since(t0))
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
	cpu1 := cpuOf(b, 0, false)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(s.Stats().Commits-commits0)/float64(b.N), "commits/msg")
	b.ReportMetric(float64((cpu1.client-cpu0.client).Microseconds())/float64(b.N), "cpu-us/msg")
	if len(lat) > 0 {
		// One worker: the wall time of a step that is not this process's CPU is waiting (fsync,
		// a lock, the run queue of a loaded machine). A consumer that slept although a committed
		// message was ready would show here, not in cpu-us/msg.
		wait := elapsed - (cpu1.client - cpu0.client)
		b.ReportMetric(float64(max(wait, 0).Microseconds())/float64(b.N), "wait-us/msg")
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
	}
}

// BenchmarkExpireSweep measures the store-wide sweep (ExpireLeases) a leased fetch runs in its
// write transaction, alone: b.N sweeps inside one transaction, so the figure is the statement's
// own cost (µs/sweep), without a commit. The store holds a backlog of 100,000 messages in another
// mailbox, of which live are leased (for an hour: none expires). The sweep is a range probe of the
// leased part of the partial index messages_timers (TestHotStatementPlans), which holds only leased
// and acked rows, and reads only the expired leases, so its cost must not grow with the backlog or
// the live leases.
//
//	go test -run '^$' -bench ExpireSweep -benchtime 20000x ./actordelivery/
func BenchmarkExpireSweep(b *testing.B) {
	for _, live := range []int{0, 1000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			ctx := context.Background()
			s := benchStore(b)
			fill(b, s, "backlog", backlogDepth)
			err := s.ExecTx(ctx, false, func(ctx context.Context) error {
				for range live {
					if _, err := s.Lease(ctx, "backlog", time.Hour); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			cleared := 0
			cpu0 := cpuOf(b, 0, false)
			b.ResetTimer()
			err = s.ExecTx(ctx, false, func(ctx context.Context) error {
				for range b.N {
					n, err := s.ExpireLeases(ctx)
					if err != nil {
						return err
					}
					cleared += n
				}
				return nil
			})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if cleared != 0 {
				b.Fatalf("the sweep cleared %d live leases", cleared)
			}
			cpu := cpuOf(b, 0, false).client - cpu0.client
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/sweep")
		})
	}
}
