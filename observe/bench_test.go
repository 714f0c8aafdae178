package observe_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/observe/workload"
	"github.com/pconform/pconform/traces"
)

// observed records one run of the correct store and returns its log and trace.
func observed(b *testing.B) ([]byte, *traces.Trace) { return observedRun(b, 1, 2*time.Second) }

// observedRun records a run of the correct store with seed for budget.
func observedRun(b *testing.B, seed int64, budget time.Duration) ([]byte, *traces.Trace) {
	b.Helper()
	var events bytes.Buffer
	if _, err := workload.Run(context.Background(), workload.Config{Target: filepath.Join(b.TempDir(), "o.db"), Seed: seed,
		Budget: budget, Events: &events}); err != nil {
		b.Fatal(err)
	}
	log := events.Bytes()
	lg, err := observe.ReadLog(bytes.NewReader(log), "events")
	if err != nil {
		b.Fatal(err)
	}
	t, err := observe.Convert(lg, observe.Options{Name: fmt.Sprintf("bench-seed%d", seed)})
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

// BenchmarkCheckP measures the P oracle on 20 observed histories of the correct store (1 s of
// workload each, seeds 1..20): one iteration writes their drivers, compiles them into one P project
// with the project's monitors and runs the checker once over every test case. It needs the P
// toolchain and skips without it; one iteration takes a minute or more, so run it with
// -benchtime 1x.
func BenchmarkCheckP(b *testing.B) {
	if _, err := exec.LookPath("p"); err != nil {
		b.Skip("the P tool `p` is not on PATH; skipping the P oracle's benchmark")
	}
	var ts []*traces.Trace
	events := 0
	for s := int64(1); s <= 20; s++ {
		_, t := observedRun(b, s, time.Second)
		ts = append(ts, t)
		events += len(t.Steps)
	}
	b.ResetTimer()
	for b.Loop() {
		msgs, err := bridge.CheckObservedAll(context.Background(), bridge.Config{ProjectDir: filepath.Join("..", "models", "p")}, ts)
		if err != nil {
			b.Fatal(err)
		}
		for i, m := range msgs {
			if m != "" {
				b.Fatalf("correct store seed %d: the P oracle found %s", i+1, m)
			}
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events), "events")
	b.ReportMetric(float64(len(ts)), "traces")
}
