package actordelivery

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkPurgeWhileConsuming: a store holding a backlog of acked messages (1,000,000 unless
// PCONFORM_PURGE_ROWS says otherwise) and a consumer that enqueues one message and consumes it
// (fetch, handle, ack) in a loop. Phase one measures the consumer's step latency with nothing
// else running; phase two runs PurgeAll (batches of 100 rows unless PCONFORM_PURGE_BATCH says
// otherwise) until the whole backlog is
// gone while the consumer goes on. Reported: p50 and p99 step latency of each phase, their p99 ratio (the
// retention target is purge-p99/base-p99 <= 2), and how long the purge took. Run it once per
// figure on an idle machine:
//
//	go test -run '^$' -bench PurgeWhileConsuming -benchtime 1x ./actordelivery/
//	bash scripts/pg.sh go test -run '^$' -bench PurgeWhileConsuming -benchtime 1x ./actordelivery/
func BenchmarkPurgeWhileConsuming(b *testing.B) { forBackends(b, benchPurgeWhileConsuming) }

func purgeRows(b *testing.B) int { return envCount(b, "PCONFORM_PURGE_ROWS", 1_000_000) }

// purgeBatch is the batch PurgeAll removes per transaction.
func purgeBatch(b *testing.B) int { return envCount(b, "PCONFORM_PURGE_BATCH", 100) }

// envCount is the positive count the environment variable name holds, def when it is unset.
func envCount(b *testing.B, name string, def int) int {
	n := def
	if v := os.Getenv(name); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("%s=%q is not a positive count", name, v)
		}
	}
	return n
}

// seedAcked writes n acked messages, acked an hour before now, in transactions of 10,000 rows
// (the backlog is set up through SQL, not n round trips through the API).
func seedAcked(b *testing.B, s *Store, n int) {
	b.Helper()
	ctx := context.Background()
	old := s.nowMillis() - time.Hour.Milliseconds()
	const tmpl = `INSERT INTO {p}messages
    (id, mailbox, key, priority, max_attempts, attempts, available_at, state, payload, created_at, acked_at)
VALUES (:id, 'old', '', 0, 3, 1, :t, 'acked', :payload, :t, :t)`
	bind := func(j int) (string, []any) {
		return s.d.bind(tmpl, []any{named("id", fmt.Sprintf("old-%07d", j)), named("t", old), payloadArg([]byte("payload"))})
	}
	q, _ := bind(0)
	for i := 0; i < n; i += 10_000 {
		err := s.ExecTx(ctx, false, func(ctx context.Context) error {
			tx := s.txFrom(ctx).sqltx
			for j := i; j < min(i+10_000, n); j++ {
				_, args := bind(j)
				if _, err := tx.ExecContext(ctx, q, args...); err != nil {
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

func benchPurgeWhileConsuming(b *testing.B, backend Backend) {
	rows, batch := purgeRows(b), purgeBatch(b)
	for range b.N {
		s := benchStoreOn(b, backend)
		seedAcked(b, s, rows)
		if backend == BackendPostgres {
			// The backlog arrived through SQL in one burst, so autovacuum would process the
			// table in the first seconds of the measurement (it did, in the baseline phase:
			// docs/notes/2026-12-01-performance-rounds.md, "Retention"); a table that grew over time has been vacuumed
			// and analyzed as it grew.
			if _, err := s.wdb.Exec(`VACUUM ANALYZE messages`); err != nil {
				b.Fatal(err)
			}
		}
		ctx := context.Background()
		c, err := NewConsumer(s, func(context.Context, *Message) (Effects, error) { return nil, nil },
			ConsumerOptions{Mailbox: "live", Path: PathLeased})
		if err != nil {
			b.Fatal(err)
		}
		seq := 0
		step := func() time.Duration {
			seq++
			if _, err := s.Enqueue(ctx, NewMessage{Mailbox: "live", ID: fmt.Sprint("live-", seq), MaxAttempts: 3}); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			out, err := c.Step(ctx)
			d := time.Since(start)
			if err != nil || out.Action != ActionAcked {
				b.Fatalf("consumer step = %+v, %v", out, err)
			}
			return d
		}
		const baseSteps = 2000
		b.ResetTimer()
		base := make([]time.Duration, 0, baseSteps)
		for range baseSteps {
			base = append(base, step())
		}
		done := make(chan error, 1)
		purgeStart := time.Now()
		go func() {
			// A purge longer than a minute also takes the consumer's own acked messages once
			// they are a minute old, so at least the backlog goes (the check after the loop
			// makes sure every backlog row went).
			r, err := s.PurgeAll(ctx, time.Minute, 0, batch)
			if err == nil && r.Acked < rows {
				err = fmt.Errorf("PurgeAll removed %+v, want at least %d acked", r, rows)
			}
			done <- err
		}()
		var during []time.Duration
		var purgeTook time.Duration
	consume:
		for {
			select {
			case err := <-done:
				purgeTook = time.Since(purgeStart)
				if err != nil {
					b.Fatal(err)
				}
				break consume
			default:
				during = append(during, step())
			}
		}
		b.StopTimer()
		if left, err := s.QueueDepth(ctx, "old"); err != nil || left != 0 {
			b.Fatalf("ready rows in the purged mailbox: %d, %v", left, err)
		}
		var stillAcked int
		if err := s.rdb.QueryRow(s.d.render(`SELECT COUNT(*) FROM {p}messages WHERE mailbox = 'old'`).text).Scan(&stillAcked); err != nil || stillAcked != 0 {
			b.Fatalf("%d acked rows left after the purge, %v", stillAcked, err)
		}
		p50b, p99b := percentile(base, 50), percentile(base, 99)
		p50p, p99p := percentile(during, 50), percentile(during, 99)
		b.ReportMetric(float64(p50b.Microseconds()), "base-p50-us")
		b.ReportMetric(float64(p99b.Microseconds()), "base-p99-us")
		b.ReportMetric(float64(p50p.Microseconds()), "purge-p50-us")
		b.ReportMetric(float64(p99p.Microseconds()), "purge-p99-us")
		b.ReportMetric(float64(p99p)/float64(p99b), "p99-ratio")
		b.ReportMetric(purgeTook.Seconds(), "purge-s")
		b.ReportMetric(float64(len(during)), "steps-during-purge")
		b.ReportMetric(float64(rows), "rows-purged")
	}
}

// percentile returns the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}
