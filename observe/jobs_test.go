package observe_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery/record"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/traces"
)

// verdict is what the equivalence tests compare: a finding's event, or an error, or clean.
type verdict struct {
	found      bool
	step, line int
	err        error
	// pos is the finding's event, or the number of events checked before the error.
	pos int64
}

func (v verdict) String() string {
	switch {
	case v.err != nil:
		return "error: " + v.err.Error()
	case v.found:
		return fmt.Sprintf("finding at event %d (line %d)", v.step, v.line)
	}
	return "clean"
}

func checkJobs(log []byte, variant string, jobs int) verdict {
	src := observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "log"), 0)
	sum, f, err := observe.CheckJobs(src, observe.CheckOptions{Variant: variant, Log: bytes.NewReader(log)}, jobs)
	if f != nil {
		return verdict{found: true, step: f.Step, line: f.Line, err: err, pos: int64(f.Step)}
	}
	return verdict{err: err, pos: sum.Events}
}

// checkShards checks log as of shards, joins them, and returns the verdict and, when a shard
// could not decide a step alone, the position of the first such step (else MaxInt64).
func checkShards(t *testing.T, log []byte, variant string, of int) (verdict, int64) {
	t.Helper()
	var results []*observe.ShardResult
	undecided := int64(math.MaxInt64)
	for i := range of {
		src := observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "log"), 0)
		r, err := observe.CheckShard(src, observe.CheckOptions{Variant: variant}, i, of)
		if err != nil {
			t.Fatal(err)
		}
		if errors.Is(r.Err, observe.ErrShardUndecided) {
			undecided = min(undecided, r.Summary.Events)
		}
		results = append(results, r)
	}
	f, err := observe.JoinShards(results)
	if f != nil {
		return verdict{found: true, step: f.Step, line: f.Line}, undecided
	}
	return verdict{err: err}, undecided
}

// sameVerdict compares two verdicts: the same finding event, or both clean, or both an error
// (the same message).
func sameVerdict(a, b verdict) bool {
	if (a.err == nil) != (b.err == nil) {
		return false
	}
	if a.err != nil {
		return a.err.Error() == b.err.Error()
	}
	return a.found == b.found && a.step == b.step && a.line == b.line
}

// requireSameVerdicts checks log whole, in 2 and 3 partitions, and as the union of 2 shards,
// and requires one verdict (a shard may stop, undecided, at a purge at its limit: then the
// whole check must have found nothing before it).
func requireSameVerdicts(t *testing.T, log []byte, variant string) verdict {
	t.Helper()
	want := checkJobs(log, variant, 1)
	if errors.Is(want.err, observe.ErrCrossPartition) {
		t.Fatalf("one job refused the log as a partitioned one: %v", want.err)
	}
	for _, jobs := range []int{2, 3} {
		if got := checkJobs(log, variant, jobs); !sameVerdict(want, got) {
			t.Fatalf("jobs 1: %s; jobs %d: %s", want, jobs, got)
		}
	}
	got, undecided := checkShards(t, log, variant, 2)
	switch {
	case errors.Is(got.err, observe.ErrShardUndecided):
		if (want.found || want.err != nil) && want.pos < undecided {
			t.Fatalf("jobs 1: %s; the shards stopped undecided at event %d: %s", want, undecided, got)
		}
		t.Logf("the shards stop undecided at event %d (%v)", undecided, got.err)
	case !sameVerdict(want, got):
		t.Fatalf("jobs 1: %s; 2 shards joined: %s", want, got)
	}
	return want
}

// TestJobsAgreeOnRecordedLogs: on logs the store wrote (the correct store and broken variants),
// a check in partitions and the union of shards give the verdict of the whole check.
func TestJobsAgreeOnRecordedLogs(t *testing.T) {
	for _, variant := range []string{"", "unfenced-ack", "outbox-unbounded", "purge-forgets-ids", "fifo-overtake"} {
		t.Run("variant="+variant, func(t *testing.T) {
			target := variant
			if target == "" {
				target = "store"
			}
			log := recordLog(t, target, 3, time.Second)
			v := requireSameVerdicts(t, log, variant)
			t.Logf("%d bytes: %s", len(log), v)
		})
	}
}

// cleanLog is a clean recorded log of the correct store: the seed-3 log of the recorded-log
// benchmarks when it is in their cache (10^5 events) and the tests are not -short, else a short
// recording.
func cleanLog(t *testing.T) []byte {
	t.Helper()
	if path, err := recordedLogPath(100_000); err == nil && !testing.Short() {
		if b, err := os.ReadFile(path); err == nil {
			return b
		}
	}
	return recordLog(t, "store", 3, 2*time.Second)
}

// TestJobsAgreeOnInjectedFaults: faults injected into a clean recorded log, among them ones the
// partitions can only see together (a claim's order and count across targets, a purge's count,
// a worker's steps in two mailboxes), give the same first finding whole, in partitions and in
// shards.
func TestJobsAgreeOnInjectedFaults(t *testing.T) {
	log := cleanLog(t)
	if v := requireSameVerdicts(t, log, ""); v.found || v.err != nil {
		t.Fatalf("the clean log is not clean: %s", v)
	}
	lines := bytes.Split(bytes.TrimRight(log, "\n"), []byte("\n"))
	requireFaultsFound(t, lines)
	t.Run("worker fetches after its drain", func(t *testing.T) {
		out, at := drainThenFetch(t, lines)
		if at < 0 {
			t.Skip("no drained worker fetches in another mailbox")
		}
		v := requireSameVerdicts(t, out, "")
		if !v.found {
			t.Fatalf("the fetch after the drain at line %d was not found: %s", at+1, v)
		}
		t.Logf("fault at line %d: %s", at+1, v)
	})
}

func claimed(ev map[string]any) []any {
	if ev["op"] != "outbox_claim" {
		return nil
	}
	c, _ := ev["result"].(map[string]any)["claimed"].([]any)
	return c
}

// inject applies edit to the first event from line start on that takes it and returns the log
// and the index of the edited line (-1: none took it).
func inject(t *testing.T, lines [][]byte, start int, edit func(map[string]any) bool) ([]byte, int) {
	t.Helper()
	for i := start; i < len(lines); i++ {
		var ev map[string]any
		if err := json.Unmarshal(lines[i], &ev); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if _, ok := ev["args"].(map[string]any); !ok {
			ev["args"] = map[string]any{}
		}
		if _, ok := ev["result"].(map[string]any); !ok {
			ev["result"] = map[string]any{}
		}
		if !edit(ev) {
			continue
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out := make([][]byte, len(lines))
		copy(out, lines)
		out[i] = b
		return append(bytes.Join(out, []byte("\n")), '\n'), i
	}
	return nil, -1
}

// drainThenFetch gives a fetch after a worker's drain to that worker: the first leased fetch of
// another worker, in another mailbox, after a worker_drain, is made the drained worker's. The
// rule spans mailboxes, so in partitions only the join sees it.
func drainThenFetch(t *testing.T, lines [][]byte) ([]byte, int) {
	t.Helper()
	drained := map[float64]string{} // worker -> a mailbox it fetched from
	last := map[float64]string{}
	for i := range lines {
		var ev map[string]any
		if err := json.Unmarshal(lines[i], &ev); err != nil {
			t.Fatal(err)
		}
		a, _ := ev["args"].(map[string]any)
		if a == nil {
			continue
		}
		w, _ := a["worker"].(float64)
		switch ev["op"] {
		case "worker_drain":
			if mb, ok := last[w]; ok {
				drained[w] = mb
			}
		case "consumer_fetch":
			mb, _ := a["mailbox"].(string)
			last[w] = mb
			for dw, dmb := range drained {
				if dw != w && dmb != mb && strings.HasPrefix(mb, "l") {
					a["worker"] = dw
					b, err := json.Marshal(ev)
					if err != nil {
						t.Fatal(err)
					}
					out := make([][]byte, len(lines))
					copy(out, lines)
					out[i] = b
					return append(bytes.Join(out, []byte("\n")), '\n'), i
				}
			}
		}
	}
	return nil, -1
}

// TestRouterRoutes: the router sends each event to the partition of its key.
func TestRouterRoutes(t *testing.T) {
	r := observe.NewRouter(4)
	ev := func(line int, op string, a record.Args) *observe.Event {
		return &observe.Event{Event: record.Event{Seq: int64(line), Op: op, Args: a}, Line: line}
	}
	m1, m2 := r.PartOf("m1"), r.PartOf("m2")
	mb2 := "m2"
	for i := 0; m2 == m1; i++ { // two mailboxes in two partitions
		mb2 = fmt.Sprintf("m2-%d", i)
		m2 = r.PartOf(mb2)
	}
	for _, tc := range []struct {
		ev    *observe.Event
		part  int
		sweep bool
		err   error
	}{
		{ev(1, "enqueue", record.Args{Mailbox: "m1", ID: "a"}), m1, false, nil},
		{ev(2, "outbox_enqueue", record.Args{Target: mb2, ID: "o"}), m2, false, nil},
		{ev(3, "lease", record.Args{Mailbox: "m1"}), m1, false, nil},
		{ev(4, "ack", record.Args{ID: "a", Token: "t"}), m1, false, nil},
		{ev(5, "publisher_deliver", record.Args{ID: "o", Publisher: 1}), m2, false, nil},
		{ev(6, "consumer_fetch", record.Args{Mailbox: "m1", Worker: 1, Profile: "leased"}), m1, true, nil},
		{ev(7, "consumer_fetch", record.Args{Mailbox: "m1", Worker: 1, Profile: "leaseless"}), m1, false, nil},
		{ev(8, "load_checkpoint", record.Args{Actor: traces.EffectsActorPrefix + "m1"}), m1, false, nil},
		{ev(9, "outbox_claim", record.Args{Limit: 2}), observe.AllParts, false, nil},
		{ev(10, "purge", record.Args{Limit: 2}), observe.AllParts, false, nil},
		{ev(11, "worker_stop", record.Args{Worker: 1}), observe.AllParts, false, nil},
		{ev(12, "enqueue", record.Args{Mailbox: mb2, ID: "a"}), 0, false, observe.ErrCrossPartition},
		{ev(13, "snapshot", record.Args{}), 0, false, observe.ErrCrossPartition},
	} {
		rt, err := r.Route(tc.ev)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), fmt.Sprintf("line %d", tc.ev.Line)) {
				t.Errorf("line %d: error %v, want %v naming the line", tc.ev.Line, err, tc.err)
			}
			continue
		}
		if err != nil || rt.Part != tc.part || rt.Sweep != tc.sweep {
			t.Errorf("line %d (%s): route %+v, %v; want partition %d, sweep %v", tc.ev.Line, tc.ev.Op, rt, err, tc.part, tc.sweep)
		}
	}
}

// fault is an edit of one event of a clean log.
type fault struct {
	name string
	// edit changes one event (decoded as a map) and reports whether it applied.
	edit func(ev map[string]any) bool
}

// requireFaultsFound injects each fault from two places in lines and requires the same verdict,
// a finding or an error, whole, in partitions and in shards.
func requireFaultsFound(t *testing.T, lines [][]byte) {
	t.Helper()
	faults := faultCases()
	for _, fault := range faults {
		for _, start := range []int{len(lines) / 5, len(lines) / 2} {
			t.Run(fmt.Sprintf("%s/from line %d", fault.name, start+1), func(t *testing.T) {
				out, at := inject(t, lines, start, fault.edit)
				if at < 0 {
					t.Skipf("no event from line %d takes the fault", start+1)
				}
				v := requireSameVerdicts(t, out, "")
				if !v.found && v.err == nil {
					t.Fatalf("the fault at line %d was not found: %s", at+1, v)
				}
				t.Logf("fault at line %d: %s", at+1, v)
			})
		}
	}
}

func faultCases() []fault {
	return []fault{
		{"purge removes one row more", func(ev map[string]any) bool {
			if ev["op"] != "purge" {
				return false
			}
			r := ev["result"].(map[string]any)
			a, _ := r["affected"].(float64)
			r["affected"] = a + 1
			return true
		}},
		{"purge removes one row less", func(ev map[string]any) bool {
			if ev["op"] != "purge" {
				return false
			}
			r := ev["result"].(map[string]any)
			a, _ := r["affected"].(float64)
			if a == 0 {
				return false
			}
			r["affected"] = a - 1
			return true
		}},
		{"claim in the wrong order", func(ev map[string]any) bool {
			c := claimed(ev)
			if len(c) < 2 {
				return false
			}
			c[0], c[1] = c[1], c[0]
			return true
		}},
		{"claim leaves out its last row", func(ev map[string]any) bool {
			c := claimed(ev)
			if len(c) < 2 {
				return false
			}
			ev["result"].(map[string]any)["claimed"] = c[:len(c)-1]
			return true
		}},
		{"claim beyond its limit", func(ev map[string]any) bool {
			c := claimed(ev)
			if len(c) < 2 {
				return false
			}
			ev["args"].(map[string]any)["limit"] = float64(len(c) - 1)
			return true
		}},
		{"claim under two tokens", func(ev map[string]any) bool {
			c := claimed(ev)
			if len(c) < 2 {
				return false
			}
			c[1].(map[string]any)["token"] = "forged-token"
			return true
		}},
		{"fetch returns no message", func(ev map[string]any) bool {
			r, _ := ev["result"].(map[string]any)
			if ev["op"] != "consumer_fetch" || r == nil || r["message"] == nil {
				return false
			}
			r["message"] = nil
			return true
		}},
		{"ack reports a lost lease", func(ev map[string]any) bool {
			if ev["op"] != "consumer_handle" {
				return false
			}
			r := ev["result"].(map[string]any)
			if r["action"] != "acked" {
				return false
			}
			r["action"] = "lease_lost"
			return true
		}},
		{"handle in another mailbox", func(ev map[string]any) bool {
			a := ev["args"].(map[string]any)
			if ev["op"] != "consumer_handle" || a["mailbox"] != "l1" {
				return false
			}
			a["mailbox"] = "l2"
			return true
		}},
	}
}

// TestShardsAgreeOnSynthLog: on a log whose purges stay under their limit, the union of shards
// decides every step, clean and with faults injected.
func TestShardsAgreeOnSynthLog(t *testing.T) {
	log, err := io.ReadAll(newSynthLog(20_000, 100))
	if err != nil {
		t.Fatal(err)
	}
	if v := requireSameVerdicts(t, log, ""); v.found || v.err != nil {
		t.Fatalf("the synthetic log is not clean: %s", v)
	}
	if _, undecided := checkShards(t, log, "", 2); undecided != math.MaxInt64 {
		t.Fatalf("the shards stopped undecided at event %d", undecided)
	}
	requireFaultsFound(t, bytes.Split(bytes.TrimRight(log, "\n"), []byte("\n")))
}
