package observe_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/observe/workload"
	"github.com/pconform/pconform/traces"
)

// observed records one run of the correct store and returns its log and trace.
func observed(b *testing.B) ([]byte, *traces.Trace) {
	b.Helper()
	var events bytes.Buffer
	if _, err := workload.Run(context.Background(), workload.Config{Target: filepath.Join(b.TempDir(), "o.db"), Seed: 1,
		Budget: 2 * time.Second, Events: &events}); err != nil {
		b.Fatal(err)
	}
	log := events.Bytes()
	lg, err := observe.ReadLog(bytes.NewReader(log), "events")
	if err != nil {
		b.Fatal(err)
	}
	t, err := observe.Convert(lg, observe.Options{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return log, t
}

// BenchmarkCheckModel measures the model oracle: events of an observed history checked per second.
func BenchmarkCheckModel(b *testing.B) {
	_, t := observed(b)
	b.ResetTimer()
	for b.Loop() {
		f, err := observe.CheckModel(t)
		if err != nil || f != nil {
			b.Fatal(f, err)
		}
	}
	b.ReportMetric(float64(len(t.Steps))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(len(t.Steps)), "events")
}

// BenchmarkReadAndConvert measures reading a recorded log into commit order and converting it.
func BenchmarkReadAndConvert(b *testing.B) {
	log, t := observed(b)
	b.ResetTimer()
	for b.Loop() {
		lg, err := observe.ReadLog(bytes.NewReader(log), "events")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := observe.Convert(lg, observe.Options{Name: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(t.Steps))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
