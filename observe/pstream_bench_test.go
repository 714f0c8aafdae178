package observe_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/internal/gcpace"
	"github.com/pconform/pconform/observe"
)

// BenchmarkStreamCheckP measures `pconform check --p` on a log: the streaming model oracle
// (Check) with the streaming P oracle beside it (bridge.StreamChecker), on synthetic logs of the
// correct store (synthLog, backlog 100) of 10^5 events, and of 10^6 with PCONFORM_BENCH_P_1E6=1.
// events=0 is the checker's start alone (a .NET process loading the compiled monitors). The
// monitors are compiled before the timer starts, or taken from the cache. It needs the P
// toolchain and skips without it.
//
// It reports events/s and ns/event (wall, the start included), cpu-ns/event (this process's CPU
// and the checker's: on a shared machine the figure to compare) and checker-cpu-ns/event (the
// checker's alone: it runs beside this process, so on two idle cores it bounds the wall time),
// the spec events the monitors saw per log event, and the checker's peak RSS.
func BenchmarkStreamCheckP(b *testing.B) {
	if _, err := exec.LookPath("p"); err != nil {
		b.Skip("the P tool `p` is not on PATH; skipping the streaming P oracle's benchmark")
	}
	cfg := bridge.Config{ProjectDir: filepath.Join("..", "models", "p")}
	if _, _, err := bridge.CompileStream(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	sizes := []int{0, 100_000}
	if os.Getenv("PCONFORM_BENCH_P_1E6") != "" {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			var events, spec int64
			var rss int64
			var childCPU int64
			defer gcpace.Start()() // as `pconform check` paces its collector
			cpu0 := cpuTime()
			for b.Loop() {
				pc, err := bridge.NewStreamChecker(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				src := observe.NewOrdered(observe.NewDecoder(newSynthLog(n, 100), "synth"), 0)
				sum, f, err := observe.Check(src, observe.CheckOptions{Checkers: []observe.Checker{pc}})
				if cerr := pc.Close(); err == nil {
					err = cerr
				}
				if err != nil || f != nil {
					b.Fatal(f, err)
				}
				events, spec = sum.Events, pc.Spec
				rss = max(rss, pc.Verdict.PeakRSS)
				childCPU += pc.Verdict.CPU.Nanoseconds()
			}
			per := float64(max(events, 1)) * float64(b.N)
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/event")
			self := float64((cpuTime() - cpu0).Nanoseconds())
			b.ReportMetric((self+float64(childCPU))/per, "cpu-ns/event")
			b.ReportMetric(float64(childCPU)/per, "checker-cpu-ns/event")
			b.ReportMetric(float64(spec)/float64(max(events, 1)), "spec-events/event")
			b.ReportMetric(float64(rss)/(1<<20), "checker-RSS-MB")
		})
	}
}
