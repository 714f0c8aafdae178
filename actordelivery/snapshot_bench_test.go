package actordelivery

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// countingWriter counts what a JSONRecorder writes and keeps none of it.
type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// BenchmarkRecordSnapshot measures what a recording store's Open costs on a database that holds
// rows: its snapshot of them (PCONFORM_SNAPSHOT_ROWS ready messages, 100,000 unless set), read in
// one transaction and written through a JSONRecorder. Reported per snapshot: rows/s, the log's
// bytes per row, the bytes allocated per row, and the live heap's growth while the snapshot is
// written (sampled every millisecond), which stays flat in the rows because they are streamed.
//
//	go test -run '^$' -bench RecordSnapshot -benchtime 3x ./actordelivery/
//	bash scripts/pg.sh go test -run '^$' -bench RecordSnapshot -benchtime 3x ./actordelivery/
func BenchmarkRecordSnapshot(b *testing.B) { forBackends(b, benchRecordSnapshot) }

func benchRecordSnapshot(b *testing.B, backend Backend) {
	rows := envCount(b, "PCONFORM_SNAPSHOT_ROWS", 100_000)
	s := benchStoreOn(b, backend)
	fill(b, s, "old", rows)
	w := &countingWriter{}
	if err := s.startRecording(JSONRecorder(w, func(err error) { b.Error(err) }), false); err != nil {
		b.Fatal(err)
	}
	// Each row costs one line; the incarnation and end lines are what is left.
	if got := w.n.Load(); got < int64(rows)*100 {
		b.Fatalf("the opening wrote %d bytes for %d rows", got, rows)
	}
	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > peak.Load() {
					peak.Store(ms.HeapAlloc)
				}
			}
		}
	}()
	w.n.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.recordOpening(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(stop)
	<-sampled
	n := float64(b.N)
	b.ReportMetric(float64(rows)*n/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(w.n.Load())/n/float64(rows), "log-B/row")
	growth := 0.0
	if p := peak.Load(); p > base.HeapAlloc {
		growth = float64(p - base.HeapAlloc)
	}
	b.ReportMetric(growth/(1<<20), "peak-heap-growth-MB")
}
