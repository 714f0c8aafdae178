package observe_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/internal/gcpace"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/observe/workload"
)

// The recorded-log benchmarks check logs the store itself wrote: what
// `pconform observe --events-only --steps N --seed 3 --tick 2ms` records (the concurrent workload
// on SQLite: leased and leaseless workers, both publishers, checkpoints, purges that keep a
// retention window, redrives). Unlike the synthetic log of BenchmarkStreamCheck, their live rows
// grow with the log, as a service's do while it keeps its finished rows for a while.
// docs/observed.md ("Speed and memory") gives the figures and how long a recording takes.
//
// The workload's clock runs one logical second per 2ms (recordedTick), not the default 20ms. At
// 20ms the store idles between steps; at 2ms it runs as fast as its CPU allows, as a busy
// service's store does: when the publishers fall behind, thousands of outbox rows stay pending,
// and the checker must not walk them at each claim. It also records faster than the default.
//
// The logs are not in the repository. A benchmark records the one it needs the first time and
// keeps it in a cache directory: $PCONFORM_BENCH_LOGS, or pconform/recorded-logs in the user's
// cache directory (os.UserCacheDir). Recording runs the store at its own pace, so a log of 10^6
// events takes minutes, once. To record one ahead with the CLI:
//
//	pconform observe --events-only --steps 1000000 --seed 3 --tick 2ms --events "$PCONFORM_BENCH_LOGS/seed3-tick2ms-events1000000.jsonl"
//
// Sizes: 10^5 always; 10^6 with PCONFORM_BENCH_1E6=1; 10^7 with PCONFORM_BENCH_1E7=1 (recording
// it takes hours).

// recordedSizes are the log sizes the recorded-log benchmarks run.
func recordedSizes() []int {
	sizes := []int{100_000}
	if os.Getenv("PCONFORM_BENCH_1E6") != "" {
		sizes = append(sizes, 1_000_000)
	}
	if os.Getenv("PCONFORM_BENCH_1E7") != "" {
		sizes = append(sizes, 10_000_000)
	}
	return sizes
}

// recordedSeed and recordedTick are the workload's seed and tick for every recorded benchmark
// log.
const (
	recordedSeed = 3
	recordedTick = 2 * time.Millisecond
)

// recordedLogPath is where the recorded log of n events is kept: in $PCONFORM_BENCH_LOGS, or
// else under the user's cache directory.
func recordedLogPath(n int) (string, error) {
	dir := os.Getenv("PCONFORM_BENCH_LOGS")
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory for the recorded logs (%w): set PCONFORM_BENCH_LOGS", err)
		}
		dir = filepath.Join(c, "pconform", "recorded-logs")
	}
	return filepath.Join(dir, fmt.Sprintf("seed%d-tick%s-events%d.jsonl", recordedSeed, recordedTick, n)), nil
}

// recordedLog returns the path of the recorded log of n events (seed 3, tick 2ms), recording it
// into the cache directory first when it is not there.
func recordedLog(b *testing.B, n int) string {
	b.Helper()
	path, err := recordedLogPath(n)
	if err != nil {
		b.Skip(err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(path); err == nil {
		return path
	}
	b.Logf("recording %d events of the workload (seed %d, tick %s) into %s: this takes a while, once", n, recordedSeed, recordedTick, path)
	tmp, err := os.CreateTemp(dir, ".recording-*.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	_, err = workload.Run(context.Background(), workload.Config{Target: filepath.Join(b.TempDir(), "record.db"),
		Seed: recordedSeed, Tick: recordedTick, MaxEvents: int64(n), Events: w})
	if err = errors.Join(err, w.Flush(), tmp.Close()); err != nil {
		b.Fatalf("recording %s: %v", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkRecordedCheck measures `pconform check` (the streaming model oracle) on recorded logs
// of 10^5, 10^6 and 10^7 events (see recordedSizes): the log read from its file, decoded, put in
// commit order and checked. It reports events/s (wall), cpu-ns/event (the process's CPU: on a
// shared machine the figure to compare), the live rows at the end, the heap after a GC at the end
// per live row (heap-B/live-row), and the process's peak RSS with its excess over 200 B per live
// row (the target is at most 256 MB of it). Run it alone for a meaningful peak RSS:
//
//	PCONFORM_BENCH_1E6=1 go test ./observe/ -run XXX -bench 'RecordedCheck$' -benchtime 1x
//
// PCONFORM_BENCH_HEAP_PROFILE=FILE also writes the heap in use at the end of each log (the
// oracle's live state) to FILE, for go tool pprof -sample_index=inuse_space.
func BenchmarkRecordedCheck(b *testing.B) {
	for _, n := range recordedSizes() {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			path := recordedLog(b, n)
			var events int64
			var sum observe.Summary
			var heap uint64
			var live int
			defer gcpace.Start()() // as `pconform check` paces its collector
			cpu0 := cpuTime()
			for b.Loop() {
				sum = checkRecorded(b, path, nil, func(s observe.Summary) {
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					heap, live = ms.HeapAlloc, s.LiveRows
					if p := os.Getenv("PCONFORM_BENCH_HEAP_PROFILE"); p != "" {
						writeHeapProfile(b, p)
					}
				})
				events = sum.Events
			}
			reportRecorded(b, events, (cpuTime() - cpu0).Nanoseconds(), live)
			reportFindings(b, sum)
			b.ReportMetric(float64(heap)/float64(max(live, 1)), "heap-B/live-row")
		})
	}
}

// BenchmarkRecordedCheckP measures `pconform check --p` on the same recorded logs: the model
// oracle with the streaming P oracle beside it (bridge.StreamChecker, compiled before the timer
// starts or taken from the cache). It needs the P toolchain and skips without it. Besides
// BenchmarkRecordedCheck's metrics it reports the checker's own CPU per event and its peak RSS,
// and that RSS per live row.
func BenchmarkRecordedCheckP(b *testing.B) {
	if _, err := exec.LookPath("p"); err != nil {
		b.Skip("the P tool `p` is not on PATH; skipping the streaming P oracle's benchmark")
	}
	cfg := bridge.Config{ProjectDir: filepath.Join("..", "models", "p")}
	if _, _, err := bridge.CompileStream(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	for _, n := range recordedSizes() {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			path := recordedLog(b, n)
			var events int64
			var sum observe.Summary
			var live int
			var rss, childCPU int64
			defer gcpace.Start()() // as `pconform check` paces its collector
			cpu0 := cpuTime()
			for b.Loop() {
				pc, err := bridge.NewStreamChecker(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				sum = checkRecorded(b, path, pc, func(s observe.Summary) { live = s.LiveRows })
				if err := pc.Close(); err != nil {
					b.Fatal(err)
				}
				events = sum.Events
				rss = max(rss, pc.Verdict.PeakRSS)
				childCPU += pc.Verdict.CPU.Nanoseconds()
			}
			reportRecorded(b, events, (cpuTime()-cpu0).Nanoseconds()+childCPU, live)
			reportFindings(b, sum)
			b.ReportMetric(float64(childCPU)/float64(max(events, 1))/float64(b.N), "checker-cpu-ns/event")
			b.ReportMetric(float64(rss)/(1<<20), "checker-RSS-MB")
			b.ReportMetric(float64(rss)/float64(max(live, 1)), "checker-RSS-B/live-row")
		})
	}
}

// checkRecorded checks the log at path once, to its end, with pc beside the model when it is not
// nil, and calls last with the summary at the end while the oracle's state is still live. The
// correct store wrote the log, so a finding is logged (it may be a false finding of the checker,
// a bug of its own) and counted in the summary; the check goes on past it, so that its cost is
// still measured on the whole log.
func checkRecorded(b *testing.B, path string, pc *bridge.StreamChecker, last func(observe.Summary)) observe.Summary {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	// As `pconform check` reads a file: no row's history until a finding, which checks the file
	// again.
	opts := observe.CheckOptions{Log: f, Reread: observe.ReadAgain(f, path, 0), KeepGoing: true, ProgressEvery: 1 << 30, Progress: func(s observe.Summary) {
		if s.Events > 0 && !s.Stopped {
			last(s)
		}
	}}
	if pc != nil {
		opts.Checkers = []observe.Checker{pc}
	}
	dec := observe.NewDecoder(f, path)
	defer dec.Ahead(runtime.GOMAXPROCS(0))() // as the command reads a file
	sum, first, err := observe.Check(observe.NewOrdered(dec, 0), opts)
	if err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	if first != nil {
		b.Logf("%s: %d finding(s), the first: %v", path, sum.Findings, first)
	}
	return sum
}

// reportRecorded reports the metrics both recorded-log benchmarks share.
func reportRecorded(b *testing.B, events, cpuNs int64, live int) {
	per := float64(max(events, 1)) * float64(b.N)
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(cpuNs)/per, "cpu-ns/event")
	b.ReportMetric(float64(live), "live-rows")
	rss := peakRSSMB()
	b.ReportMetric(rss, "peak-RSS-MB")
	b.ReportMetric(rss-float64(live)*200/(1<<20), "peak-RSS-MB-over-200B/row")
	b.ReportMetric(float64(events), "events")
}

// reportFindings reports how many findings the last check of a correct store's log made.
func reportFindings(b *testing.B, sum observe.Summary) {
	b.ReportMetric(float64(sum.Findings), "findings")
}

// writeHeapProfile writes the heap profile (what is in use now) to path.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}
