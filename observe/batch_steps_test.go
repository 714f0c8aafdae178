package observe_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/observe"
)

// batchLog is a short log of every recorded batch step: a leased batch of two (one acked, one
// retried after the batch's delay), a leaseless batch fetch that finds nothing while that delay
// runs and one that then takes the retried message, and a publisher's batch of two rows of one
// claim. Line k is the k-th line (from 1).
func batchLog() []string {
	return []string{
		ev(1, false, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":3}`, `{}`),
		ev(2, false, 0, "enqueue", `{"mailbox":"a","id":"m2","key":"k","max_attempts":3}`, `{}`),
		ev(3, false, 1, "consumer_fetch_batch", `{"worker":1,"mailbox":"a","profile":"leased","size":4,"lease_for":5000000000}`,
			`{"messages":[{"id":"m1","attempts":1,"token":"T1"},{"id":"m2","attempts":1,"token":"T2"}]}`),
		ev(4, false, 2, "consumer_handle_batch", `{"worker":1,"mailbox":"a","profile":"leased","outcomes":["ok","fail"],"fault":"none","retry_delay":2000000000}`,
			`{"actions":["acked","retried"]}`),
		ev(4, true, 3, "consumer_fetch_batch", `{"worker":2,"mailbox":"a","profile":"leaseless","size":4}`, `{}`),
		ev(4, true, 4, "consumer_fetch_batch", `{"worker":2,"mailbox":"a","profile":"leaseless","size":4}`,
			`{"messages":[{"id":"m2","attempts":1}]}`),
		ev(5, false, 4, "consumer_handle_batch", `{"worker":2,"mailbox":"a","profile":"leaseless","outcomes":["ok"],"fault":"none"}`,
			`{"actions":["acked"]}`),
		ev(6, false, 5, "outbox_enqueue", `{"id":"o1","target":"b","max_attempts":3,"max_delivery_attempts":10}`, `{}`),
		ev(7, false, 5, "outbox_enqueue", `{"id":"o2","target":"b","max_attempts":3,"max_delivery_attempts":10}`, `{}`),
		ev(8, false, 6, "outbox_claim", `{"limit":8,"claim_for":30000000000}`,
			`{"claimed":[{"id":"o1","delivery_attempts":1,"token":"C1"},{"id":"o2","delivery_attempts":1,"token":"C1"}]}`),
		ev(9, false, 6, "publisher_deliver_batch", `{"publisher":1,"ids":["o1","o2"],"token":"C1","fault":"none"}`,
			`{"actions":["delivered","delivered"],"duplicates":[false,false]}`),
	}
}

// TestBatchLogChecksClean: the batch steps as the recorder writes them check clean with the
// streaming oracle, with several jobs, and with the whole-trace one; and each wrong result of a
// batch step is a finding at its line. The wrong results are what a broken batch consumer or
// publisher would record.
func TestBatchLogChecksClean(t *testing.T) {
	lines := batchLog()
	log := []byte(strings.Join(lines, ""))
	if _, f, err := streamCheck(log, observe.CheckOptions{}); err != nil || f != nil {
		t.Fatalf("streaming oracle: finding %v, error %v", f, err)
	}
	if f, _ := batchCheck(t, log, ""); f != nil {
		t.Fatalf("whole-trace oracle: finding %v", f)
	}
	if v := checkJobs(log, "", 2); v.err != nil || v.found {
		t.Fatalf("2 jobs: %v", v)
	}
	for _, tc := range []struct {
		name     string
		line     int
		from, to string
	}{
		// The fetch passes over the key's head, or delivers out of order.
		{"fetch skips a message", 3, `{"id":"m1","attempts":1,"token":"T1"},`, ``},
		{"fetch out of order", 3, `[{"id":"m1","attempts":1,"token":"T1"},{"id":"m2","attempts":1,"token":"T2"}]`,
			`[{"id":"m2","attempts":1,"token":"T2"},{"id":"m1","attempts":1,"token":"T1"}]`},
		{"fetch counts two attempts", 3, `"attempts":1,"token":"T2"`, `"attempts":2,"token":"T2"`},
		// The handle dead-letters a message the policy retries.
		{"handle dead-letters", 4, `"acked","retried"`, `"acked","dead_lettered"`},
		// The retried message comes back before the batch's delay ran out.
		{"retry comes back early", 5, `"result":{}`, `"result":{"messages":[{"id":"m2","attempts":1}]}`},
		// The leaseless fetch takes nothing though the message is due.
		{"leaseless fetch misses", 6, `{"messages":[{"id":"m2","attempts":1}]}`, `{}`},
		// The publisher reports a duplicate it cannot have met, or loses a claim it holds.
		{"deliver duplicate", 11, `[false,false]`, `[false,true]`},
		{"deliver claim lost", 11, `"delivered","delivered"`, `"delivered","claim_lost"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := append([]string(nil), lines...)
			k := tc.line - 1
			if !strings.Contains(broken[k], tc.from) {
				t.Fatalf("line %d %q holds no %q", tc.line, broken[k], tc.from)
			}
			broken[k] = strings.Replace(broken[k], tc.from, tc.to, 1)
			log := []byte(strings.Join(broken, ""))
			_, f, err := streamCheck(log, observe.CheckOptions{})
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			if f == nil || f.Line != tc.line {
				t.Fatalf("got finding %v, want one at line %d", f, tc.line)
			}
			if f.Window == nil || !f.WindowReproduces {
				t.Errorf("the finding's window %v does not reproduce it on its own (%v)", f.Window, f.WindowErr)
			}
			if v := checkJobs(log, "", 2); !v.found || v.line != tc.line {
				t.Fatalf("2 jobs: %v, want a finding at line %d", v, tc.line)
			}
		})
	}
}

// TestBrokenRecordedBatchIsFound breaks one batch step of a log recorded from batched workers
// and a batched publisher (SQLite), as a broken store would have recorded it, and wants the
// check to find it at that line: the recorded batches are checked, not waved through.
//
// Rerun: go test ./observe/ -run TestBrokenRecordedBatch -v
func TestBrokenRecordedBatchIsFound(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: records a store for a second on the wall clock")
	}
	path := filepath.Join(t.TempDir(), "store.db")
	log := recordBatched(t, func(o actordelivery.Options) (*actordelivery.Store, error) { return actordelivery.Open(path, o) })
	lines := strings.SplitAfter(string(log), "\n")
	for _, tc := range []struct {
		name string
		// breakLine changes the event of one line (decoded) and reports whether it applies.
		breakLine func(ev map[string]any) bool
		// later: the break shows at a later line (a fetch that meets what the broken step did).
		later bool
	}{
		{name: "leased batch fetched out of order", breakLine: func(ev map[string]any) bool {
			ms := batchList(ev, "result", "messages")
			if ev["op"] != "consumer_fetch_batch" || len(ms) < 2 || batchArg(ev, "profile") != "leased" {
				return false
			}
			ms[0], ms[1] = ms[1], ms[0]
			return true
		}},
		{name: "leaseless batch skips its first message", breakLine: func(ev map[string]any) bool {
			ms := batchList(ev, "result", "messages")
			if ev["op"] != "consumer_fetch_batch" || len(ms) < 2 || batchArg(ev, "profile") != "leaseless" {
				return false
			}
			ev["result"].(map[string]any)["messages"] = ms[1:]
			return true
		}},
		{name: "retried part dead-lettered", breakLine: func(ev map[string]any) bool {
			as := batchList(ev, "result", "actions")
			for i, a := range as {
				if ev["op"] == "consumer_handle_batch" && a == "retried" {
					as[i] = "dead_lettered"
					return true
				}
			}
			return false
		}},
		{name: "batch retry delay doubled", later: true, breakLine: func(ev map[string]any) bool {
			d, ok := ev["args"].(map[string]any)["retry_delay"].(float64)
			if ev["op"] != "consumer_handle_batch" || !ok {
				return false
			}
			ev["args"].(map[string]any)["retry_delay"] = 2 * d
			return true
		}},
		{name: "delivered row reported duplicate", breakLine: func(ev map[string]any) bool {
			ds := batchList(ev, "result", "duplicates")
			as := batchList(ev, "result", "actions")
			for i, d := range ds {
				if ev["op"] == "publisher_deliver_batch" && d == false && as[i] == "delivered" {
					ds[i] = true
					return true
				}
			}
			return false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The first line it applies to whose break the check finds (there, or after it when
			// later); a break the log hides (a message no fetch looked for while the wrong delay
			// ran) moves to the next line, but the test fails unless one break is found.
			tried := 0
			for k, l := range lines {
				var ev map[string]any
				if l == "" || json.Unmarshal([]byte(l), &ev) != nil || !tc.breakLine(ev) {
					continue
				}
				b, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				broken := append([]string(nil), lines...)
				broken[k] = string(b) + "\n"
				_, f, err := streamCheck([]byte(strings.Join(broken, "")), observe.CheckOptions{})
				if err != nil {
					t.Fatalf("line %d broken: check: %v", k+1, err)
				}
				if f != nil && (f.Line == k+1 || tc.later && f.Line > k+1) {
					t.Logf("line %d broken, found at line %d: %s", k+1, f.Line, f.Message)
					if f.Window == nil || !f.WindowReproduces {
						t.Errorf("the finding's window does not reproduce it on its own (%v); the broken log: %s",
							f.WindowErr, keepLog(t, []byte(strings.Join(broken, ""))))
					}
					return
				}
				if tried++; tried == 20 {
					break
				}
			}
			t.Fatalf("no break of %d tried was found; the log: %s", tried, keepLog(t, log))
		})
	}
}

// batchList is the list at ev[obj][name], nil when there is none.
func batchList(ev map[string]any, obj, name string) []any {
	o, _ := ev[obj].(map[string]any)
	l, _ := o[name].([]any)
	return l
}

// batchArg is the string argument name of ev.
func batchArg(ev map[string]any, name string) string {
	o, _ := ev["args"].(map[string]any)
	s, _ := o[name].(string)
	return s
}

// TestPDriverTakesBatchSteps: the P driver writes a trace's batch steps as the spec events the P
// model announces for them (SpecDeriver): the batch's leases, each handled part and its row, the
// effects its handles committed (raised at the end: no later step of their workers), the batch
// delivery's inserts and completions.
func TestPDriverTakesBatchSteps(t *testing.T) {
	lg, err := observe.ReadLog(bytes.NewReader([]byte(strings.Join(batchLog(), ""))), "batch.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := observe.Convert(lg, observe.Options{Name: "batch"})
	if err != nil {
		t.Fatal(err)
	}
	src, err := bridge.PDriver(tr, 0, nil)
	if err != nil {
		t.Fatalf("P driver: %v", err)
	}
	for _, want := range []string{
		`announce eSpecLeased, (at = 1000, mailbox = "a", id = "m1");`,
		`announce eSpecLeased, (at = 1000, mailbox = "a", id = "m2");`,
		`announce eSpecHandled, (at = 2000, worker = 1, id = "m1", token = 1, action = "acked");`,
		`announce eSpecHandled, (at = 2000, worker = 1, id = "m2", token = 2, action = "retried");`,
		`announce eSpecEffect, (at = 2000, mailbox = "a", id = "m1");`,
		`announce eSpecHandled, (at = 4000, worker = 2, id = "m2", token = 0, action = "acked");`,
		`announce eSpecEffect, (at = 4000, mailbox = "a", id = "m2");`,
		`announce eSpecMsgInserted, (at = 6000, mailbox = "b", id = "o1");`,
		`announce eSpecOutboxCompleted, (at = 6000, id = "o2", target = "b");`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("the driver has no %s", want)
		}
	}
	if t.Failed() {
		t.Logf("the driver:\n%s", src)
	}
}

// TestBatchDeliveryAcrossPartitions: a publisher_deliver_batch whose rows go to mailboxes of
// different partitions is checked with --jobs, each partition delivering its own rows: clean as
// with one job, and a wrong result of either partition's row is a finding at the batch's line.
func TestBatchDeliveryAcrossPartitions(t *testing.T) {
	const jobs = 2
	r := observe.NewRouter(jobs)
	var mbs []string // a mailbox of each partition
	for i := 0; len(mbs) < jobs; i++ {
		if mb := fmt.Sprintf("mb%d", i); r.PartOf(mb) == len(mbs) {
			mbs = append(mbs, mb)
		}
	}
	lines := []string{
		ev(1, false, 0, "outbox_enqueue", `{"id":"o1","target":"`+mbs[0]+`","max_attempts":3,"max_delivery_attempts":10}`, `{}`),
		ev(2, false, 0, "outbox_enqueue", `{"id":"o2","target":"`+mbs[1]+`","max_attempts":3,"max_delivery_attempts":10}`, `{}`),
		ev(3, false, 0, "outbox_enqueue", `{"id":"o3","target":"`+mbs[0]+`","max_attempts":3,"max_delivery_attempts":10}`, `{}`),
		ev(4, false, 1, "outbox_claim", `{"limit":8,"claim_for":30000000000}`,
			`{"claimed":[{"id":"o1","delivery_attempts":1,"token":"C1"},{"id":"o2","delivery_attempts":1,"token":"C1"},{"id":"o3","delivery_attempts":1,"token":"C1"}]}`),
		ev(5, false, 1, "publisher_deliver_batch", `{"publisher":1,"ids":["o1","o2","o3"],"token":"C1","fault":"none"}`,
			`{"actions":["delivered","delivered","delivered"],"duplicates":[false,false,false]}`),
		ev(5, true, 2, "consumer_fetch_batch", `{"worker":1,"mailbox":"`+mbs[1]+`","profile":"leaseless","size":4}`,
			`{"messages":[{"id":"o2","attempts":0}]}`),
	}
	log := []byte(strings.Join(lines, ""))
	if v := checkJobs(log, "", jobs); v.err != nil || v.found {
		t.Fatalf("%d jobs: %v", jobs, v)
	}
	if v := checkJobs(log, "", 1); v.err != nil || v.found {
		t.Fatalf("1 job: %v", v)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"first partition's row", `"delivered","delivered","delivered"`, `"delivered","delivered","claim_lost"`},
		{"second partition's row", `[false,false,false]`, `[false,true,false]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := append([]string(nil), lines...)
			broken[4] = strings.Replace(broken[4], tc.from, tc.to, 1)
			if v := checkJobs([]byte(strings.Join(broken, "")), "", jobs); !v.found || v.line != 5 {
				t.Fatalf("%d jobs: %v, want a finding at line 5", jobs, v)
			}
		})
	}
}

// TestBatchWorkerAcrossPartitions: a worker (RunWorkers serves several mailboxes) fetches a batch,
// then another from a mailbox of another partition before handling the first. The model refuses
// the second fetch, with one job and with --jobs (whose worker rules follow a worker across the
// partitions); with the handle between them the log is clean.
func TestBatchWorkerAcrossPartitions(t *testing.T) {
	const jobs = 2
	r := observe.NewRouter(jobs)
	var mbs []string // a mailbox of each partition
	for i := 0; len(mbs) < jobs; i++ {
		if mb := fmt.Sprintf("mb%d", i); r.PartOf(mb) == len(mbs) {
			mbs = append(mbs, mb)
		}
	}
	enq := ev(1, false, 0, "enqueue", `{"mailbox":"`+mbs[0]+`","id":"m1","max_attempts":3}`, `{}`) +
		ev(2, false, 0, "enqueue", `{"mailbox":"`+mbs[1]+`","id":"m2","max_attempts":3}`, `{}`)
	fetch1 := ev(3, false, 1, "consumer_fetch_batch", `{"worker":1,"mailbox":"`+mbs[0]+`","profile":"leased","size":4,"lease_for":5000000000}`,
		`{"messages":[{"id":"m1","attempts":1,"token":"T1"}]}`)
	handle1 := ev(4, false, 1, "consumer_handle_batch", `{"worker":1,"mailbox":"`+mbs[0]+`","profile":"leased","outcomes":["ok"],"fault":"none"}`,
		`{"actions":["acked"]}`)
	fetch2 := func(seq int) string {
		return ev(seq, false, 2, "consumer_fetch_batch", `{"worker":1,"mailbox":"`+mbs[1]+`","profile":"leased","size":4,"lease_for":5000000000}`,
			`{"messages":[{"id":"m2","attempts":1,"token":"T2"}]}`)
	}
	for _, n := range []int{1, jobs} {
		if v := checkJobs([]byte(enq+fetch1+handle1+fetch2(5)), "", n); v.err != nil || v.found {
			t.Fatalf("%d jobs, handle between the fetches: %v", n, v)
		}
		if v := checkJobs([]byte(enq+fetch1+fetch2(4)), "", n); !v.found || v.line != 4 {
			t.Fatalf("%d jobs, no handle between the fetches: %v, want a finding at line 4", n, v)
		}
	}
}
