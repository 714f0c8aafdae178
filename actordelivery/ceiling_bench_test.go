package actordelivery

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkPostgresTripCeiling measures the cheapest trip this PostgreSQL server can make, with
// none of the store's code: the machine's ceiling for BenchmarkConcurrentActors/postgres. Each
// mailbox has one goroutine on a pgx connection of its own (no pool, no database/sql) that sends
// three autocommit statements per trip: the enqueue (an INSERT), the lease (one UPDATE ...
// RETURNING whose subquery takes the mailbox's oldest unleased row FOR UPDATE SKIP LOCKED), and,
// after a handler that sleeps actorHandlerWork, the commit (one UPDATE marking the row done).
// It reports msgs/s, the statements each trip sent (counted by a pgx tracer, each one round
// trip) and the CPU per trip of this process (client) and of the server's processes (server).
// If 16 mailboxes cannot reach 8x one mailbox here, no change to the store can reach it on the
// same machine.
//
// The stmts=5 and stmts=9 cases add two and six round trips of `SELECT 1` per trip, after the
// lease, so the trip takes as many round trips as the store's (ConcurrentActors, roundtrips/trip:
// 5 since the pipelined enqueue and BEGIN, 9 before) while doing no more work in them: the
// cheapest trip with the store's round-trip count. The difference between the cases is what a
// round trip costs, apart from any statement's work. Needs PCONFORM_PG_DSN:
//
//	bash scripts/pg.sh go test -run '^$' -bench PostgresTripCeiling -benchtime 3000x ./actordelivery/
func BenchmarkPostgresTripCeiling(b *testing.B) {
	for _, stmts := range []int{3, 5, 9} {
		for _, boxes := range []int{1, 16} {
			name := fmt.Sprintf("mailboxes=%d", boxes)
			if stmts != 3 {
				name += fmt.Sprintf(",stmts=%d", stmts)
			}
			b.Run(name, func(b *testing.B) { benchTripCeiling(b, boxes, stmts-3) })
		}
	}
}

// benchTripCeiling runs the ceiling trip on boxes mailboxes with pad round trips of `SELECT 1`
// added to each trip.
func benchTripCeiling(b *testing.B, boxes, pad int) {
	ctx := context.Background()
	dsn := pgSchema(b, pgDSN(b))
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	counter := &stmtCounter{}
	cfg.Tracer = counter
	connect := func() *pgx.Conn {
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close(context.Background()) })
		return c
	}
	admin := connect()
	for _, q := range []string{
		`CREATE TABLE trips (
    id      BIGSERIAL PRIMARY KEY,
    mailbox INTEGER NOT NULL,
    leased  BOOLEAN NOT NULL DEFAULT false,
    done    BOOLEAN NOT NULL DEFAULT false,
    payload BYTEA   NOT NULL)`,
		`CREATE INDEX trips_next ON trips (mailbox, id) WHERE NOT done`,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	var pid int
	if err := admin.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		b.Fatal(err)
	}
	conns := make([]*pgx.Conn, boxes)
	for i := range conns {
		conns[i] = connect()
	}
	const (
		qEnqueue = `INSERT INTO trips (mailbox, payload) VALUES ($1, $2)`
		qLease   = `UPDATE trips SET leased = true
WHERE id = (SELECT id FROM trips WHERE mailbox = $1 AND NOT done AND NOT leased
            ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, payload`
		qCommit = `UPDATE trips SET done = true WHERE id = $1 AND leased`
	)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, boxes)
	cpu0 := cpuOf(b, pid, true)
	counter.n.Store(0)
	b.ResetTimer()
	start := time.Now()
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := c.Exec(ctx, qEnqueue, i, []byte("payload")); err != nil {
					errs <- err
					return
				}
				var id int64
				var payload []byte
				if err := c.QueryRow(ctx, qLease, i).Scan(&id, &payload); err != nil {
					errs <- fmt.Errorf("lease on mailbox %d: %w", i, err)
					return
				}
				for range pad {
					if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
						errs <- fmt.Errorf("padding round trip on mailbox %d: %w", i, err)
						return
					}
				}
				time.Sleep(actorHandlerWork)
				tag, err := c.Exec(ctx, qCommit, id)
				if err == nil && tag.RowsAffected() != 1 {
					err = fmt.Errorf("commit of row %d on mailbox %d changed %d rows", id, i, tag.RowsAffected())
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
	cpu1 := cpuOf(b, pid, true)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(counter.n.Load())/float64(b.N), "stmts/trip")
	reportTripCPU(b, cpu0, cpu1)
}
