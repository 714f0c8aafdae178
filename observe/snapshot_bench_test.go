package observe_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/actordelivery/record"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/traces"
)

// BenchmarkCheckSnapshot measures what the model oracle pays to start from a store's snapshot:
// a log that opens on 100,000 rows (ready messages in 100 mailboxes, every seventh leased, as the
// recorder writes them) and then leases from each mailbox once. Reported: snapshot rows adopted
// per second, and the live heap after the check per adopted row (the model's row, the token
// bindings, the adopted-row index).
//
//	go test -run '^$' -bench CheckSnapshot -benchtime 3x ./observe/
func BenchmarkCheckSnapshot(b *testing.B) {
	const rows = 100_000
	log := snapshotLog(b, rows)
	b.SetBytes(int64(len(log)))
	var heap uint64
	b.ResetTimer()
	for b.Loop() {
		var base runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&base)
		sum, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "snapshot"), 0), observe.CheckOptions{
			ProgressEvery: 1 << 30,
			Progress: func(s observe.Summary) {
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > base.HeapAlloc {
					heap = ms.HeapAlloc - base.HeapAlloc
				}
			},
		})
		if err != nil || f != nil || sum.LiveRows != rows {
			b.Fatalf("check: %+v, finding %v, error %v; want %d live rows and no finding", sum, f, err, rows)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(heap)/rows, "heap-B/row")
}

// snapshotLog is the log of a store that opened on n rows and leased once from each mailbox.
func snapshotLog(b *testing.B, n int) []byte {
	b.Helper()
	var buf bytes.Buffer
	rec := actordelivery.JSONRecorder(&buf, func(err error) { b.Fatal(err) })
	at := traces.Epoch.Add(time.Hour)
	rec.Record(record.Event{Read: true, At: at, Op: "incarnation", Args: record.Args{Incarnation: "i-1"}})
	row := func(r *record.SnapshotRow) {
		rec.Record(record.Event{Read: true, At: at, Op: record.OpSnapshot, Args: record.Args{Incarnation: "i-1"}, Row: r})
	}
	for i := range n {
		r := &record.SnapshotRow{Table: record.SnapMessage, Mailbox: fmt.Sprintf("mb-%d", i%100), ID: fmt.Sprintf("m-%07d", i),
			Payload: "payload", State: traces.StateReady, MaxAttempts: 3, AvailableAt: at.Add(-time.Minute)}
		if i%7 == 0 {
			r.Attempts, r.Token, r.Until = 1, fmt.Sprintf("T-%d", i), at.Add(time.Minute)
		}
		row(r)
	}
	row(&record.SnapshotRow{Table: record.SnapEnd, Rows: int64(n)})
	for k := range 100 {
		// Mailbox k holds rows k, k+100, ...: the first not leased (a multiple of 7) is next.
		id := k
		for id%7 == 0 {
			id += 100
		}
		rec.Record(record.Event{Seq: int64(k + 1), At: at, Op: "lease", Args: record.Args{Mailbox: fmt.Sprintf("mb-%d", k), LeaseFor: time.Minute},
			Result: record.Result{Message: &record.Message{ID: fmt.Sprintf("m-%07d", id), Attempts: 1, Token: fmt.Sprintf("L-%d", k)}}})
	}
	return buf.Bytes()
}
