package observe_test

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/internal/gcpace"
	"github.com/pconform/pconform/observe"
)

// BenchmarkRecordedCheckJobs measures `pconform check --jobs N` against one job on the recorded
// seed-3 logs of BenchmarkRecordedCheck. Each iteration checks the log with one job and then with
// two, and reports for each its events/s (wall) and CPU per event, and:
//
//   - speedup: one job's wall time over two jobs' (the target is 1.8 on two idle cores);
//   - cpu-ratio: two jobs' CPU over one job's, the cost of splitting (routing, copies, the
//     claims every partition takes its share of);
//   - largest-share: the largest partition's share of the events (1/N when balanced);
//   - loadavg-1m: the machine's load average at the end: wall time is only meaningful when it
//     is below the number of cores.
func BenchmarkRecordedCheckJobs(b *testing.B) {
	for _, n := range recordedSizes() {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			path := recordedLog(b, n)
			var wall, cpu [3]time.Duration
			var events int64
			for b.Loop() {
				for _, jobs := range []int{1, 2} {
					// As `pconform check` paces its collector for one job and for several.
					pace := gcpace.Start
					if jobs > 1 {
						pace = gcpace.StartParallel
					}
					stop := pace()
					c0, t0 := cpuTime(), time.Now()
					events = checkJobsFile(b, path, jobs)
					wall[jobs] += time.Since(t0)
					cpu[jobs] += cpuTime() - c0
					stop()
				}
			}
			for _, jobs := range []int{1, 2} {
				b.ReportMetric(float64(events)*float64(b.N)/wall[jobs].Seconds(), fmt.Sprintf("jobs%d-events/s", jobs))
				b.ReportMetric(float64(cpu[jobs].Nanoseconds())/float64(events)/float64(b.N), fmt.Sprintf("jobs%d-cpu-ns/event", jobs))
			}
			b.ReportMetric(wall[1].Seconds()/wall[2].Seconds(), "speedup")
			b.ReportMetric(cpu[2].Seconds()/cpu[1].Seconds(), "cpu-ratio")
			b.ReportMetric(largestShare(b, path, 2), "largest-share")
			b.ReportMetric(loadAverage(), "loadavg-1m")
		})
	}
}

// checkJobsFile checks the log at path with jobs partitions and returns how many events it
// checked; the correct store wrote it, so a finding or an error fails the benchmark.
func checkJobsFile(b *testing.B, path string, jobs int) int64 {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	// As `pconform check` reads a file: no row's history until a finding.
	opts := observe.CheckOptions{Log: f, Reread: observe.ReadAgain(f, path, 0)}
	dec := observe.NewDecoder(f, path)
	defer dec.Ahead(runtime.GOMAXPROCS(0))() // as the command reads a file
	sum, first, err := observe.CheckJobs(observe.NewOrdered(dec, 0), opts, jobs)
	if err != nil || first != nil {
		b.Fatalf("%s with %d jobs: %v %v", path, jobs, first, err)
	}
	return sum.Events
}

// largestShare is the largest partition's share of the events of the log at path in n
// partitions (events every partition gets count in each).
func largestShare(b *testing.B, path string, n int) float64 {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	src := observe.NewOrdered(observe.NewDecoder(f, path), 0)
	r := observe.NewRouter(n)
	counts := make([]int64, n)
	var total int64
	for {
		ev, err := src.Next()
		if err != nil {
			break
		}
		total++
		rt, err := r.Route(ev)
		if err != nil {
			b.Fatal(err)
		}
		for p := range counts {
			if rt.Part == observe.AllParts || rt.Part == p {
				counts[p]++
			}
		}
	}
	return float64(slices.Max(counts)) / float64(max(total, 1))
}

// loadAverage is the one-minute load average (0 where /proc/loadavg is not there).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v
}
