package actordelivery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Benchmarks use a fresh database file in a temp dir, the wall clock and synchronous=FULL (every
// commit reaches the disk before it returns). Run them with a fixed iteration count, e.g.
//
//	go test -run '^$' -bench . -benchtime 2000x ./actordelivery/

//
// The benchmarks that compare backends run on both, as .../sqlite/... and .../postgres/...; the
// PostgreSQL ones need PCONFORM_PG_DSN (bash scripts/pg.sh go test ... starts a throwaway server)
// and skip without it.

func benchStore(b *testing.B) *Store { return benchStoreOn(b, BackendSQLite) }

// benchStoreOn opens a fresh store on backend: a file with synchronous=FULL on SQLite, a schema
// of its own on PostgreSQL.
func benchStoreOn(b *testing.B, backend Backend) *Store {
	b.Helper()
	var s *Store
	var err error
	if backend == BackendPostgres {
		s, err = OpenPostgres(pgSchema(b, pgDSN(b)), Options{MaxConns: 32})
	} else {
		s, err = Open(filepath.Join(b.TempDir(), "bench.db"), Options{Synchronous: "FULL"})
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// forBackends runs f as a sub-benchmark per backend.
func forBackends(b *testing.B, f func(b *testing.B, backend Backend)) {
	for _, backend := range Backends() {
		b.Run(string(backend), func(b *testing.B) { f(b, backend) })
	}
}

// fill enqueues n messages into mailbox, a thousand per transaction.
func fill(b *testing.B, s *Store, mailbox string, n int) {
	b.Helper()
	ctx := context.Background()
	for i := 0; i < n; i += 1000 {
		err := s.ExecTx(ctx, false, func(ctx context.Context) error {
			for j := i; j < min(i+1000, n); j++ {
				if _, err := s.Enqueue(ctx, NewMessage{Mailbox: mailbox, ID: fmt.Sprintf("%s-%d", mailbox, j), MaxAttempts: 3, Payload: []byte("payload")}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// idlePollInterval is how often each idle consumer polls its empty mailbox in BenchmarkConsume:
// an aggressive low-latency setting, so the cost of idle polling is visible.
const idlePollInterval = time.Millisecond

// BenchmarkConsume measures one busy single-worker consumer draining b.N messages while 16 idle
// consumers of the same path poll 16 other, empty mailboxes every idlePollInterval. An idle poll
// is a read on either path (the leased one reads first, see Consumer.Fetch), so it never competes
// for the writer lock. commits/msg counts every commit in the store, the pollers' too.
func BenchmarkConsume(b *testing.B) { forBackends(b, benchConsume) }

func benchConsume(b *testing.B, backend Backend) {
	for _, path := range []Path{PathLeaseless, PathLeased} {
		b.Run(path.String(), func(b *testing.B) {
			ctx := context.Background()
			s := benchStoreOn(b, backend)
			fill(b, s, "busy", b.N)
			nop := func(context.Context, *Message) (Effects, error) { return nil, nil }

			stop := make(chan struct{})
			var wg sync.WaitGroup
			var idlePolls atomic.Int64
			for i := range 16 {
				c, err := NewConsumer(s, nop, ConsumerOptions{Mailbox: fmt.Sprintf("idle-%d", i), Path: path})
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					t := time.NewTicker(idlePollInterval)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
						}
						if _, err := c.Step(ctx); err != nil {
							b.Error(err)
							return
						}
						idlePolls.Add(1)
					}
				}()
			}
			busy, err := NewConsumer(s, nop, ConsumerOptions{Mailbox: "busy", Path: path})
			if err != nil {
				b.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond) // let the pollers start
			idlePolls.Store(0)
			commits0, cpu0 := s.Stats().Commits, benchCPU(b, s)
			b.ResetTimer()
			start := time.Now()
			for done := 0; done < b.N; {
				out, err := busy.Step(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if out.Action != ActionAcked {
					b.Fatalf("busy consumer: %+v", out)
				}
				done++
			}
			elapsed := time.Since(start)
			b.StopTimer()
			close(stop)
			wg.Wait()
			cpu1 := benchCPU(b, s)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(idlePolls.Load())/elapsed.Seconds(), "idle-polls/s")
			// Every commit in the store, the idle pollers' included, per message drained.
			b.ReportMetric(float64(s.Stats().Commits-commits0)/float64(b.N), "commits/msg")
			b.ReportMetric(float64((cpu1.client-cpu0.client).Microseconds())/float64(b.N), "client-cpu-us/msg")
		})
	}
}

// BenchmarkIdlePoll measures b.N polls (Consumer.Step) of an empty mailbox while another mailbox
// holds a backlog of 1,000 messages, 100 of them under live leases, and reports commits/poll from
// the store's Stats: an empty poll commits nothing on either path (expected 0), since the leased
// fetch reads first and takes the writer only when a lease has expired or a message is eligible.
// It also reports the test process's CPU per poll.
//
//	bash scripts/pg.sh go test -run '^$' -bench IdlePoll -benchtime 2000x ./actordelivery/
func BenchmarkIdlePoll(b *testing.B) {
	forBackends(b, func(b *testing.B, backend Backend) {
		for _, path := range []Path{PathLeaseless, PathLeased} {
			b.Run(path.String(), func(b *testing.B) {
				ctx := context.Background()
				s := benchStoreOn(b, backend)
				fill(b, s, "busy", 1000)
				for range 100 {
					if _, err := s.Lease(ctx, "busy", time.Hour); err != nil {
						b.Fatal(err)
					}
				}
				nop := func(context.Context, *Message) (Effects, error) { return nil, nil }
				c, err := NewConsumer(s, nop, ConsumerOptions{Mailbox: "idle", Path: path})
				if err != nil {
					b.Fatal(err)
				}
				before, cpu0 := s.Stats(), cpuOf(b, 0, false)
				b.ResetTimer()
				for range b.N {
					out, err := c.Step(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if out.Action != ActionIdle {
						b.Fatalf("poll of an empty mailbox: %+v", out)
					}
				}
				b.StopTimer()
				after := s.Stats()
				b.ReportMetric(float64(after.Commits-before.Commits)/float64(b.N), "commits/poll")
				b.ReportMetric(float64(after.Rollbacks-before.Rollbacks)/float64(b.N), "rollbacks/poll")
				// This process's CPU per poll (on PostgreSQL the server's share is not included).
				cpu := cpuOf(b, 0, false).client - cpu0.client
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "client-cpu-us/poll")
			})
		}
	})
}

// countingStore counts committed ExecTx calls the publisher makes, and claims (each claim commits
// its own transaction), so commits/msg is counted, not assumed.
type countingStore struct {
	*Store
	commits atomic.Int64
}

func (c *countingStore) ExecTx(ctx context.Context, readOnly bool, fn func(context.Context) error) error {
	err := c.Store.ExecTx(ctx, readOnly, fn)
	if err == nil && !readOnly {
		c.commits.Add(1)
	}
	return err
}

func (c *countingStore) OutboxClaim(ctx context.Context, limit int, claimFor time.Duration) ([]OutboxRow, error) {
	rows, err := c.Store.OutboxClaim(ctx, limit, claimFor)
	if err == nil {
		c.commits.Add(1)
	}
	return rows, err
}

// BenchmarkOutboxDeliver measures delivering b.N outbox rows one claim per row (Batch 1), so
// commits/msg shows the cost of each mode: fold = claim + one delivery transaction, split = claim +
// enqueue + completion. commits/msg is counted twice, by a wrapping OutboxStore and by the store's
// own commit counter (store-commits/msg); the two must agree.
func BenchmarkOutboxDeliver(b *testing.B) { forBackends(b, benchOutboxDeliver) }

func benchOutboxDeliver(b *testing.B, backend Backend) {
	for _, mode := range []PublishMode{ModeFold, ModeSplit} {
		b.Run(mode.String(), func(b *testing.B) {
			ctx := context.Background()
			s := benchStoreOn(b, backend)
			for i := 0; i < b.N; i += 1000 {
				err := s.ExecTx(ctx, false, func(ctx context.Context) error {
					for j := i; j < min(i+1000, b.N); j++ {
						if _, err := s.OutboxEnqueue(ctx, OutboxMessage{ID: fmt.Sprintf("o-%d", j), Target: "target", MaxAttempts: 3, Payload: []byte("payload")}); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			cs := &countingStore{Store: s}
			p, err := NewPublisher(cs, PublisherOptions{Mode: mode, Batch: 1})
			if err != nil {
				b.Fatal(err)
			}
			storeBefore := s.Stats().Commits
			b.ResetTimer()
			start := time.Now()
			for done := 0; done < b.N; {
				n, err := p.Step(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if n != 1 {
					b.Fatalf("step delivered %d", n)
				}
				done += n
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(cs.commits.Load())/float64(b.N), "commits/msg")
			b.ReportMetric(float64(s.Stats().Commits-storeBefore)/float64(b.N), "store-commits/msg")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkCheckpointWrite measures optimistic checkpoint writes of one actor by state size.
func BenchmarkCheckpointWrite(b *testing.B) {
	for _, size := range []int{256, 4 << 10, 64 << 10} {
		name := fmt.Sprintf("%dB", size)
		if size >= 1<<10 {
			name = fmt.Sprintf("%dKiB", size>>10)
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s := benchStore(b)
			state := make([]byte, size)
			for i := range state {
				state[i] = byte(i * 7)
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			start := time.Now()
			var v int64
			for i := 0; i < b.N; i++ {
				state[0] = byte(i)
				nv, err := s.SaveCheckpoint(ctx, "actor", state, v)
				if err != nil {
					b.Fatal(err)
				}
				v = nv
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
		})
	}
}

// BenchmarkMailboxRoundTrip measures enqueue, lease and ack of one message: three commits.
func BenchmarkMailboxRoundTrip(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("m-%d", i)
		if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "mb", ID: id, MaxAttempts: 3, Payload: []byte("payload")}); err != nil {
			b.Fatal(err)
		}
		m, err := s.Lease(ctx, "mb", 30*time.Second)
		if err != nil || m == nil || m.ID != id {
			b.Fatalf("lease = %+v, %v", m, err)
		}
		if err := s.Ack(ctx, id, m.Token); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// actorHandlerWork is what BenchmarkConcurrentActors's handler spends outside the database per
// message (standing for the actor's own computation or a call to another service).
const actorHandlerWork = time.Millisecond

// BenchmarkConcurrentActors measures whole trips, enqueue -> fetch -> handle -> commit, with one
// actor per mailbox: each of the mailboxes has its own goroutine that enqueues a message and runs
// one leaseless consumer step on it, whose handler spends actorHandlerWork outside any transaction
// and whose effect (a checkpoint write) commits with the acknowledgement. b.N trips are shared
// among the mailboxes; msgs/s is the aggregate throughput. Handlers no longer hold the write lock,
// so throughput grows with the mailbox count; on PostgreSQL commits on different mailboxes also run
// in parallel.
func BenchmarkConcurrentActors(b *testing.B) {
	forBackends(b, func(b *testing.B, backend Backend) {
		for _, boxes := range []int{1, 4, 16, 64} {
			b.Run(fmt.Sprintf("mailboxes=%d", boxes), func(b *testing.B) { benchActors(b, backend, boxes) })
		}
		for _, n := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) { benchActorBatches(b, backend, batchMailboxes, n) })
		}
	})
}

func benchActors(b *testing.B, backend Backend, boxes int) {
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
		c, err := NewConsumer(s, h, ConsumerOptions{Mailbox: fmt.Sprintf("actor-%d", i), Path: PathLeaseless})
		if err != nil {
			b.Fatal(err)
		}
		consumers[i] = c
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, boxes)
	cpu0 := benchCPU(b, s)
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
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				id := fmt.Sprintf("m%d", n)
				if _, err := s.Enqueue(ctx, NewMessage{Mailbox: mailbox, ID: id, MaxAttempts: 3, Payload: []byte("payload")}); err != nil {
					errs <- err
					return
				}
				out, err := c.Step(ctx)
				if err == nil && out.Action != ActionAcked {
					err = fmt.Errorf("step on %s: %+v", mailbox, out)
				}
				if err != nil {
					errs <- err
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
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	reportTripCPU(b, cpu0, benchCPU(b, s))
	if stmts != nil {
		b.ReportMetric(float64(stmts.n.Load())/float64(b.N), "stmts/trip")
		b.ReportMetric(float64(stmts.trips.Load())/float64(b.N), "roundtrips/trip")
	}
}

// stmtCounter counts the statements pgx sends (every Query, QueryRow and Exec, BEGIN and COMMIT
// included, and each statement of a batch) and the round trips they take (a statement on its own
// is one; a batch is one, however many statements it holds).
type stmtCounter struct{ n, trips atomic.Int64 }

func (c *stmtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	c.trips.Add(1)
	return ctx
}

func (c *stmtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *stmtCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.trips.Add(1)
	return ctx
}

func (c *stmtCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.n.Add(1)
}

func (c *stmtCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// benchTracedPostgres opens a PostgreSQL store, as benchStoreOn does, on a pool of the benchmark's
// (or test's) own (OpenPostgresDB) whose connections count the statements they send.
func benchTracedPostgres(b testing.TB) (*Store, *stmtCounter) {
	b.Helper()
	cfg, err := pgx.ParseConfig(pgSchema(b, pgDSN(b)))
	if err != nil {
		b.Fatal(err)
	}
	counter := &stmtCounter{}
	cfg.Tracer = counter
	// The test's name marks its connections in pg_stat_activity: other tests, of this package
	// and of others, share the server.
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = pgAppName(b)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	b.Cleanup(func() { _ = db.Close() })
	s, err := OpenPostgresDB(db, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s, counter
}

// pgAppName is the application_name benchTracedPostgres's connections carry: the test's name, cut
// to the 63 bytes PostgreSQL keeps.
func pgAppName(tb testing.TB) string {
	name := tb.Name()
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// cpuTimes is the CPU time used so far by this process (client) and, on PostgreSQL when the
// server runs on this machine, by all of the server's processes (server). It also holds the whole
// machine's CPU ticks and those the hypervisor gave to other guests (steal): the load average
// does not show a host that other guests keep busy, and on such a host a trip costs more CPU.
type cpuTimes struct {
	client, server time.Duration
	serverOK       bool
	machine        machineTicks
}

// machineTicks are the first line of /proc/stat: every tick of every CPU, and the stolen ones.
type machineTicks struct {
	total, steal int64
	ok           bool
}

// reportTripCPU reports the CPU one trip cost between before and after, client and server, and
// the share of the machine's time stolen meanwhile (steal-%), so that a figure carries the state
// of the host it was measured on.
func reportTripCPU(b *testing.B, before, after cpuTimes) {
	b.Helper()
	b.ReportMetric(float64((after.client-before.client).Microseconds())/float64(b.N), "client-cpu-us/trip")
	if before.serverOK && after.serverOK {
		b.ReportMetric(float64((after.server-before.server).Microseconds())/float64(b.N), "server-cpu-us/trip")
	}
	if d := after.machine.total - before.machine.total; before.machine.ok && after.machine.ok && d > 0 {
		b.ReportMetric(100*float64(after.machine.steal-before.machine.steal)/float64(d), "steal-%")
	}
}

// readMachineTicks reads /proc/stat; without it, ok is false.
func readMachineTicks() machineTicks {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTicks{}
	}
	return parseMachineTicks(string(data))
}

// parseMachineTicks parses the aggregate "cpu" line that starts /proc/stat: user nice system idle
// iowait irq softirq steal (guest time is already inside user). ok is false for anything else.
func parseMachineTicks(stat string) machineTicks {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineTicks{}
	}
	var m machineTicks
	for i, v := range f[1:9] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return machineTicks{}
		}
		m.total += n
		if i == 7 {
			m.steal = n
		}
	}
	m.ok = true
	return m
}

// benchCPU reads cpuTimes. The server's share is summed over the children of the postmaster
// (found as the parent of one of s's backends) from /proc; on SQLite, or when /proc does not
// show the server, serverOK is false.
func benchCPU(b *testing.B, s *Store) cpuTimes {
	b.Helper()
	var pid int
	onServer := s.Backend() == BackendPostgres && s.rdb.QueryRow("SELECT pg_backend_pid()").Scan(&pid) == nil
	return cpuOf(b, pid, onServer)
}

// cpuOf reads cpuTimes; when onServer, the server's share is found from pid, one of its backends.
func cpuOf(b *testing.B, pid int, onServer bool) cpuTimes {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	t := cpuTimes{client: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), machine: readMachineTicks()}
	if !onServer {
		return t
	}
	_, ppid, ok := procStat(pid)
	if !ok {
		return t
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return t
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cpu, parent, ok := procStat(p); ok && (parent == ppid || p == ppid) {
			t.server += time.Duration(cpu) * tick
		}
	}
	t.serverOK = true
	return t
}

// procStat reads /proc/pid/stat: user+system ticks and the parent pid.
func procStat(pid int) (ticks int64, ppid int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) is parenthesized and may hold spaces: split after it.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	utime, err2 := strconv.ParseInt(f[11], 10, 64)
	stime, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return utime + stime, ppid, true
}
