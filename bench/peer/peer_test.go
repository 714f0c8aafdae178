// Package peer measures the store beside goqite, a SQLite queue for Go, in the scenarios of the
// store's own BenchmarkBatchScenarios: a drain by one consumer and a backlog taken by four
// contended consumers, on SQLite with synchronous=FULL. It is a module of its own, outside the
// store's, because goqite is not one of the project's dependencies: scripts/peer-bench.sh puts
// goqite's source beside it and runs it. It uses only the store's public API, as a service would.
package peer

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
	"github.com/pconform/pconform/actordelivery"
	"maragu.dev/goqite"
)

// BenchmarkPeer runs each scenario on goqite and on the store, one after the other on the same
// backlog size, and reports both rates and their ratio (x-goqite, the store's rate over goqite's).
// goqite receives and deletes one message per statement; the store takes batches of N
// (ConsumerOptions.BatchSize), so batch=1 is its step of one message.
//
//	bash scripts/peer-bench.sh GOQITE_SOURCE_DIR
func BenchmarkPeer(b *testing.B) {
	for _, n := range []int{1, 8, 32} {
		for _, sc := range []struct {
			name    string
			path    actordelivery.Path
			workers int
		}{
			{"drain", actordelivery.PathLeased, 1},
			{"drain", actordelivery.PathLeaseless, 1},
			{"consumers=4", actordelivery.PathLeased, 4},
		} {
			b.Run(fmt.Sprintf("%s/batch=%d/%v", sc.name, n, sc.path), func(b *testing.B) {
				peer := drainGoqite(b, sc.workers)
				ours := drainStore(b, sc.path, sc.workers, n)
				b.ReportMetric(ours.rate(b.N), "msgs/s")
				b.ReportMetric(ours.cpuPerMessage(b.N), "cpu-us/msg")
				b.ReportMetric(float64(ours.commits)/float64(b.N), "commits/msg")
				b.ReportMetric(peer.rate(b.N), "goqite-msgs/s")
				b.ReportMetric(peer.cpuPerMessage(b.N), "goqite-cpu-us/msg")
				b.ReportMetric(ours.rate(b.N)/peer.rate(b.N), "x-goqite")
			})
		}
	}
}

// run is what one side's drain took.
type run struct {
	wall, cpu time.Duration
	commits   uint64
}

func (r run) rate(n int) float64          { return float64(n) / r.wall.Seconds() }
func (r run) cpuPerMessage(n int) float64 { return float64(r.cpu.Microseconds()) / float64(n) }

// processCPU is the CPU time (user and system) the process has spent.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timed runs each of workers goroutines' loop until it returns, and measures the whole.
func timed(b *testing.B, workers int, loop func() error) run {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	cpu0, start := processCPU(b), time.Now()
	for range workers {
		wg.Go(func() {
			if err := loop(); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	r := run{wall: time.Since(start), cpu: processCPU(b) - cpu0}
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return r
}

// drainStore enqueues b.N messages in one transaction, then has workers consumers on path take
// them all in batches of n, with a handler that writes nothing.
func drainStore(b *testing.B, path actordelivery.Path, workers, n int) run {
	ctx := context.Background()
	s, err := actordelivery.Open(filepath.Join(b.TempDir(), "store.db"), actordelivery.Options{Synchronous: "FULL"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	err = s.ExecTx(ctx, false, func(ctx context.Context) error {
		for k := range b.N {
			m := actordelivery.NewMessage{Mailbox: "mb", ID: fmt.Sprintf("m%d", k), MaxAttempts: 3, Payload: []byte("payload")}
			if _, err := s.Enqueue(ctx, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	nothing := func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) { return nil, nil }
	var acked atomic.Int64
	commits := s.Stats().Commits
	r := timed(b, workers, func() error {
		c, err := actordelivery.NewConsumer(s, nothing, actordelivery.ConsumerOptions{Mailbox: "mb", Path: path, BatchSize: n})
		if err != nil {
			return err
		}
		for acked.Load() < int64(b.N) {
			outs, err := c.StepBatch(ctx)
			if err != nil {
				return err
			}
			for _, o := range outs {
				if o.Action != actordelivery.ActionAcked {
					return fmt.Errorf("a message ended %s, want acked", o.Action)
				}
			}
			acked.Add(int64(len(outs)))
		}
		return nil
	})
	r.commits = s.Stats().Commits - commits
	return r
}

// drainGoqite sends b.N messages in one transaction, then has workers goroutines receive and
// delete them all, one message per call. The database is set up as goqite's README sets it up (one
// connection, WAL), with the store's synchronous=FULL and immediate transactions.
func drainGoqite(b *testing.B, workers int) run {
	ctx := context.Background()
	schema, err := os.ReadFile(filepath.Join("goqite", "schema_sqlite.sql"))
	if err != nil {
		b.Fatalf("goqite's schema (scripts/peer-bench.sh puts it there): %v", err)
	}
	dsn := "file:" + filepath.Join(b.TempDir(), "goqite.db") + "?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=5000&_txlock=immediate"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(string(schema)); err != nil {
		b.Fatal(err)
	}
	q := goqite.New(goqite.NewOpts{DB: db, Name: "mb", MaxReceive: 3, Timeout: 30 * time.Second})
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if err := q.SendTx(ctx, tx, goqite.Message{Body: []byte("payload")}); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	var deleted atomic.Int64
	return timed(b, workers, func() error {
		for deleted.Load() < int64(b.N) {
			m, err := q.Receive(ctx)
			if err != nil {
				return err
			}
			if m == nil {
				continue // another worker holds the rest
			}
			if err := q.Delete(ctx, m.ID); err != nil {
				return err
			}
			deleted.Add(1)
		}
		return nil
	})
}
