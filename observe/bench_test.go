package observe_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/internal/gcpace"
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

// BenchmarkStreamCheck measures the streaming model oracle (Check: decode, order, step, compare)
// on synthetic logs of 10^5 and 10^6 events, and of 10^7 with PCONFORM_BENCH_1E7=1 (about half a
// minute per iteration on an idle core; run it alone, -benchtime 1x, for its peak RSS). It reports
// events/s, ns/event, the heap after a GC at the end per live row, and the process's peak RSS.
// The leased mailbox keeps 100 ready messages, and 1,000 in one run at 10^5: the model's lease
// and expire look at every ready row, so their cost follows the backlog.
// The log is made as it is read (synthLog); BenchmarkSynthLog measures that part alone.
//
// It is a lower bound only: the synthetic log's live rows stay at about a hundred, where a
// store's recorded log keeps its finished rows for a retention window and its live rows grow.
// BenchmarkRecordedCheck measures logs the store recorded; its figures are the ones to quote.
func BenchmarkStreamCheck(b *testing.B) {
	sizes := []int{100_000, 1_000_000}
	if os.Getenv("PCONFORM_BENCH_1E7") != "" {
		sizes = append(sizes, 10_000_000)
	}
	type size struct{ n, backlog int }
	var runs []size
	for _, n := range sizes {
		runs = append(runs, size{n, 100})
	}
	runs = append(runs, size{100_000, 1000}) // the model's fetch costs time in the ready backlog
	for _, sz := range runs {
		n := sz.n
		b.Run(fmt.Sprintf("events=%d/backlog=%d", n, sz.backlog), func(b *testing.B) {
			var events int64
			var heap uint64
			var live int
			defer gcpace.Start()() // as `pconform check` paces its collector
			cpu0 := cpuTime()
			for b.Loop() {
				src := observe.NewOrdered(observe.NewDecoder(newSynthLog(n, sz.backlog), "synth"), 0)
				sum, f, err := observe.Check(src, observe.CheckOptions{Progress: func(s observe.Summary) {
					if s.Events >= int64(n) { // the final call: the oracle's state is still live
						runtime.GC()
						var ms runtime.MemStats
						runtime.ReadMemStats(&ms)
						heap, live = ms.HeapAlloc, s.LiveRows
					}
				}, ProgressEvery: 1 << 30})
				if err != nil || f != nil {
					b.Fatal(f, err)
				}
				events = sum.Events
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events)/float64(b.N), "ns/event")
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(events)/float64(b.N), "cpu-ns/event")
			b.ReportMetric(float64(heap)/float64(max(live, 1)), "heap-B/live-row")
			b.ReportMetric(float64(live), "live-rows")
			b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
		})
	}
}

// BenchmarkStreamDecode measures the part of BenchmarkStreamCheck before the model: reading
// the same synthetic log of 10^6 events, decoding each line and putting it in commit order. It
// is the floor under the oracle's cost per event.
func BenchmarkStreamDecode(b *testing.B) {
	const n = 1_000_000
	var events int64
	cpu0 := cpuTime()
	for b.Loop() {
		src := observe.NewOrdered(observe.NewDecoder(newSynthLog(n, 100), "synth"), 0)
		events = 0
		for {
			if _, err := src.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
			events++
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events)/float64(b.N), "ns/event")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(events)/float64(b.N), "cpu-ns/event")
}

// BenchmarkSynthLog measures making the synthetic log alone, the part of BenchmarkStreamCheck
// that is not the oracle. With PCONFORM_SYNTH_LOG=FILE it also writes the log there
// (PCONFORM_SYNTH_EVENTS events, 10^6 unless set), for measuring `pconform check` on a file:
//
//	PCONFORM_SYNTH_LOG=synth.jsonl PCONFORM_SYNTH_EVENTS=10000000 go test ./observe/ -run XXX -bench SynthLog -benchtime 1x
//
// PCONFORM_SYNTH_BREAK=K breaks the first leased fetch at or after event K (its attempts are
// wrong), for a finding late in a long log; the benchmark logs the broken line.
func BenchmarkSynthLog(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("PCONFORM_SYNTH_EVENTS"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 {
			b.Fatalf("PCONFORM_SYNTH_EVENTS=%q: want a number of events", v)
		}
		n = k
	}
	buf := make([]byte, 64<<10)
	for b.Loop() {
		var out io.Writer = io.Discard
		if path := os.Getenv("PCONFORM_SYNTH_LOG"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			out = f
		}
		r := newSynthLog(n, 100)
		if v := os.Getenv("PCONFORM_SYNTH_BREAK"); v != "" {
			k, err := strconv.Atoi(v)
			if err != nil || k < 1 {
				b.Fatalf("PCONFORM_SYNTH_BREAK=%q: want an event number", v)
			}
			r.breakAt = k
		}
		for {
			k, err := r.Read(buf)
			if _, werr := out.Write(buf[:k]); werr != nil {
				b.Fatal(werr)
			}
			if err != nil {
				break
			}
		}
		if r.breakAt > 0 {
			b.Logf("broke line %d (the fetch of %s)", r.broken, r.brokenID)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// cpuTime is the CPU time the process has used (user and system): on a shared machine the
// figure to compare, since the wall time also counts the other processes' turns.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSMB is the process's peak resident set (VmHWM), 0 where /proc does not say.
func peakRSSMB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err == nil {
				return float64(kb) / 1024
			}
		}
	}
	return 0
}
