package bridge_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/traces"
)

// streamConfig is the configuration of the streaming P oracle's tests: the project's models and
// the user's cache, so that a compile is paid once per version of the monitors (about a minute),
// not once per test run. -short skips the tests that need it.
func streamConfig(t testing.TB) bridge.Config {
	t.Helper()
	requireP(t)
	if testing.Short() {
		t.Skip("-short: skipping the streaming P oracle (its first run compiles the monitors, about a minute)")
	}
	return bridge.Config{ProjectDir: modelsDir}
}

// TestStreamOnTheChecker feeds the histories TestCheckObservedOnTheChecker compiles to the
// streaming P oracle: the same monitors fire with the same messages, at the step whose spec event
// they refuse, and the good histories hold; so do the histories that break the monitors of the
// deriver's row copies (rowHistories).
func TestStreamOnTheChecker(t *testing.T) {
	cfg := streamConfig(t)
	good, inverted, reset, unbounded := observedVariants()
	drained, fetchAfterStop := observedStops()
	cases := []struct {
		name string
		t    *traces.Trace
		msg  string
		step int
	}{
		{"split-write", observedSplitWrite(), "outbox row o1 completed at t=2 but no message o1 was ever enqueued in mailbox inbox", 6},
		{"fold-only", good, "", -1},
		{"dedup-checkpoint", observedDedupCheckpoint(), "", -1},
		{"dedup-ttl-inverted", inverted, "message m1 was applied twice by consumer g: mark_processed at t=2 found no live mark, but the mark written before expires at t=3", 1},
		{"checkpoint-reset", reset, "save_checkpoint of a1 at t=3 with the stale expected version 0 (stored: 1) was accepted and set version 1", 3},
		{"outbox-unbounded", unbounded, "outbox row o1 was claimed 2 times at t=4, above its max_delivery_attempts 1", 6},
		{"stop-drained", drained, "", -1},
		{"stop-fetch-after", fetchAfterStop, "worker 1 started a new fetch at t=0 after its stop", 5},
	}
	for _, r := range rowHistories() {
		cases = append(cases, struct {
			name string
			t    *traces.Trace
			msg  string
			step int
		}{r.t.Name, r.t, r.msg, r.step})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, step, err := bridge.CheckObservedStream(context.Background(), cfg, tc.t)
			if err != nil {
				t.Fatal(err)
			}
			if msg != tc.msg || step != tc.step {
				t.Fatalf("got %q at step %d, want %q at step %d", msg, step, tc.msg, tc.step)
			}
		})
	}
}

// logLine is one event line of a recorded log; at is logical seconds.
func logLine(seq, at int, op, args, result string) string {
	return `{"seq":` + strconv.Itoa(seq) + `,"at":"` + traces.At(int64(at)).Format(time.RFC3339) + `","op":"` + op +
		`","args":` + args + `,"result":` + result + "}\n"
}

// splitWriteLog is an event log whose publisher's enqueue failed to commit (fault) while it
// reported the row delivered, followed by more events; with fault "none" it is a correct store's.
func splitWriteLog(fault string) string {
	return logLine(1, 0, "enqueue", `{"mailbox":"inbox","id":"m1","max_attempts":2}`, `{}`) +
		logLine(2, 0, "outbox_enqueue", `{"id":"o1","target":"inbox","max_attempts":2,"max_delivery_attempts":3}`, `{}`) +
		logLine(3, 1, "outbox_claim", `{"limit":1,"claim_for":5000000000}`, `{"claimed":[{"id":"o1","delivery_attempts":1,"token":"c-9"}]}`) +
		logLine(4, 1, "publisher_deliver", `{"id":"o1","token":"c-9","publisher":1,"profile":"split","fault":"`+fault+`"}`, `{"action":"delivered"}`) +
		logLine(5, 2, "mark_processed", `{"id":"m1","consumer":"g","ttl":3000000000}`, `{}`) +
		logLine(6, 2, "enqueue", `{"mailbox":"inbox","id":"m2","max_attempts":2}`, `{}`)
}

// wakeFirstLog: a consumer woken for m1 before the enqueue of m1 committed (a wake fired
// before its commit).
func wakeFirstLog() string {
	return logLine(1, 0, "wake", `{"worker":3,"mailbox":"inbox","id":"m1","profile":"local"}`, `{}`) +
		logLine(2, 0, "enqueue", `{"mailbox":"inbox","id":"m1","max_attempts":2}`, `{}`)
}

// tickLog is an event log whose consumer worker 3 is woken for m1 of inbox, then fetches from
// mailbox (inbox answers the wake, another mailbox does not), then reaches its poll tick on inbox.
func tickLog(mailbox string) string {
	return logLine(1, 0, "enqueue", `{"mailbox":"inbox","id":"m1","max_attempts":2}`, `{}`) +
		logLine(2, 0, "wake", `{"worker":3,"mailbox":"inbox","id":"m1","profile":"local"}`, `{}`) +
		logLine(3, 0, "consumer_fetch", `{"worker":3,"mailbox":"`+mailbox+`","profile":"leaseless"}`, `{}`) +
		logLine(4, 1, "poll_tick", `{"worker":3,"mailbox":"inbox"}`, `{}`)
}

// batchTickLog is tickLog with a batch fetch in the consumer_fetch's place.
func batchTickLog(mailbox string) string {
	return logLine(1, 0, "enqueue", `{"mailbox":"inbox","id":"m1","max_attempts":2}`, `{}`) +
		logLine(2, 0, "wake", `{"worker":3,"mailbox":"inbox","id":"m1","profile":"local"}`, `{}`) +
		logLine(3, 0, "consumer_fetch_batch", `{"worker":3,"mailbox":"`+mailbox+`","profile":"leaseless","size":4}`, `{}`) +
		logLine(4, 1, "poll_tick", `{"worker":3,"mailbox":"inbox"}`, `{}`)
}

// stopBatchLog is an event log whose batched worker 3 is stopped while a batch fetch is under
// way, handles that batch, then (when again) starts another batch fetch.
func stopBatchLog(again bool) string {
	log := logLine(1, 0, "enqueue", `{"mailbox":"inbox","id":"m1","max_attempts":2}`, `{}`) +
		logLine(2, 0, "worker_stop", `{"worker":3}`, `{}`) +
		logLine(3, 0, "consumer_fetch_batch", `{"worker":3,"mailbox":"inbox","profile":"leased","size":4,"lease_for":10000000000}`,
			`{"messages":[{"id":"m1","attempts":1,"token":"T1"}]}`) +
		logLine(4, 1, "consumer_handle_batch", `{"worker":3,"mailbox":"inbox","profile":"leased","outcomes":["ok"],"fault":"none"}`,
			`{"actions":["acked"]}`)
	if again {
		log += logLine(5, 1, "consumer_fetch_batch", `{"worker":3,"mailbox":"inbox","profile":"leased","size":4,"lease_for":10000000000}`, `{}`)
	}
	return log
}

// TestStreamCheckerOnALog feeds a recorded log event by event to the streaming P oracle as an
// observe.Checker: the log whose publisher completed a row it never enqueued, the one whose
// wake came before its commit, the ones whose woken worker ticked without fetching (single
// or batch), and the one whose stopped worker started a second batch fetch, are
// refused at that event (position, seq and line) in the monitor's words; the logs without a
// fault hold. The events reach the monitors the direct way (StreamVerdict.Direct).
func TestStreamCheckerOnALog(t *testing.T) {
	cfg := streamConfig(t)
	for _, tc := range []struct {
		name, log, msg string
		line           int
	}{
		{"split-write", splitWriteLog("commit_fails"), "outbox row o1 completed at t=1000 but no message o1 was ever enqueued in mailbox inbox", 4},
		{"wake-before-commit", wakeFirstLog(), "a wake of mailbox inbox for message m1 at t=0 came before any committed step put m1 into inbox", 1},
		{"tick-without-fetch", tickLog("other"), "worker 3 was woken for a committed message of mailbox inbox and reached its next poll tick there at t=1000 without fetching from it", 4},
		{"none", splitWriteLog("none"), "", 0},
		{"tick-after-fetch", tickLog("inbox"), "", 0},
		{"tick-without-batch-fetch", batchTickLog("other"), "worker 3 was woken for a committed message of mailbox inbox and reached its next poll tick there at t=1000 without fetching from it", 4},
		{"tick-after-batch-fetch", batchTickLog("inbox"), "", 0},
		{"batch-fetch-after-stop", stopBatchLog(true), "worker 3 started a new fetch at t=1000 after its stop", 5},
		{"batch-under-way-at-stop", stopBatchLog(false), "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lg, err := observe.ReadLog(strings.NewReader(tc.log), "log")
			if err != nil {
				t.Fatal(err)
			}
			c, err := bridge.NewStreamChecker(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var f *observe.Finding
			for i := range lg.Events {
				if f = c.Observe(&lg.Events[i]); f != nil {
					break
				}
			}
			if f == nil {
				f = c.End()
			}
			if err := c.Err(); err != nil {
				t.Fatal(err)
			}
			if !c.Verdict.Direct {
				t.Error("the checker announced the events: StreamDirect could not bind the direct way on this P version")
			}
			switch {
			case tc.msg == "" && f != nil:
				t.Fatalf("a correct store's log: %v", f)
			case tc.msg != "" && f == nil:
				t.Fatal("the monitors held on a log that completes a row it never enqueued")
			case f != nil && (f.Message != tc.msg || f.Oracle != "p" || f.Line != tc.line || f.Seq != int64(tc.line) || f.Step != tc.line-1):
				t.Fatalf("got %+v, want %q at line %d", f, tc.msg, tc.line)
			}
		})
	}
}

// TestCompileStreamCaches: a second compile of the same sources is the cached project's; a
// change to a monitor's source is a new project.
func TestCompileStreamCaches(t *testing.T) {
	cfg := streamConfig(t)
	dll, _, err := bridge.CompileStream(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	again, compiled, err := bridge.CompileStream(context.Background(), cfg)
	if err != nil || compiled || again != dll {
		t.Fatalf("second compile: %s compiled=%v %v; want the cached %s", again, compiled, err, dll)
	}
	// A copy of the monitors' sources hashes to the cached project; with one spec file changed,
	// elsewhere (not compiled here: the key is what the cache is looked up by).
	other := t.TempDir()
	specs, err := filepath.Glob(filepath.Join(modelsDir, "PSpec", "*.p"))
	if err != nil {
		t.Fatal(err)
	}
	rels := []string{"PSrc/Types.p", "PSrc/Observations.p", "PSrc/ObservationEvents_gen.p", "PSrc/Rules.p", "PSrc/Variants_gen.p"}
	for _, s := range specs {
		rels = append(rels, "PSpec/"+filepath.Base(s))
	}
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(modelsDir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(other, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(other, rel), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	key, err := bridge.StreamKey(other)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dll, key) {
		t.Fatalf("a copy of the sources hashes to %s, not to the cached project %s", key, dll)
	}
	f, err := os.OpenFile(filepath.Join(other, "PSpec", "Outbox.p"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n// changed\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if changed, err := bridge.StreamKey(other); err != nil || changed == key {
		t.Fatalf("a changed monitor hashes to %s (%v), the unchanged one's", changed, err)
	}
}

// TestStreamCheckerSnapshot: the streaming P oracle, beside the model as check --p runs it,
// adopts a log's starting snapshot, so an old row's first use (a wake of it) is no false
// finding; a restart's snapshot after the history began is no step, and the log's verdict is the
// one without it.
func TestStreamCheckerSnapshot(t *testing.T) {
	cfg := streamConfig(t)
	inc := func(seq, at int, id string) string {
		return `{"seq":` + strconv.Itoa(seq) + `,"read":true,"at":"` + traces.At(int64(at)).Format(time.RFC3339) + `","op":"incarnation","args":{"incarnation":"` + id + `"},"result":{}}` + "\n"
	}
	row := func(seq, at int, id, r string) string {
		return `{"seq":` + strconv.Itoa(seq) + `,"read":true,"at":"` + traces.At(int64(at)).Format(time.RFC3339) + `","op":"snapshot","args":{"incarnation":"` + id + `"},"result":{},"row":` + r + "}\n"
	}
	m1 := `{"table":"message","mailbox":"inbox","id":"m1","state":"ready","max_attempts":2,"available_at":"` + traces.At(0).Format(time.RFC3339) + `"}`
	check := func(log string) (*observe.Finding, error) {
		c, err := bridge.NewStreamChecker(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(strings.NewReader(log), "log"), 0), observe.CheckOptions{Checkers: []observe.Checker{c}})
		if err != nil {
			t.Fatal(err)
		}
		return f, c.Close()
	}
	f, err := check(inc(0, 0, "i-1") + row(0, 0, "i-1", m1) + row(0, 0, "i-1", `{"table":"end","rows":1}`) +
		logLine(1, 0, "wake", `{"worker":3,"mailbox":"inbox","id":"m1","profile":"local"}`, `{}`))
	if f != nil || err != nil {
		t.Fatalf("a log that starts from a snapshot: finding %v, error %v; want it clean", f, err)
	}
	restart := inc(0, 0, "i-1") + splitWriteLog("none") + inc(6, 3, "i-2") + row(6, 3, "i-2", m1) +
		row(6, 3, "i-2", `{"table":"message","mailbox":"inbox","id":"m2","state":"ready","max_attempts":2,"available_at":"`+traces.At(2).Format(time.RFC3339)+`"}`) +
		row(6, 3, "i-2", `{"table":"outbox","id":"o1","target":"inbox","max_attempts":2,"max_delivery_attempts":3,"state":"completed","attempts":1,"available_at":"`+traces.At(0).Format(time.RFC3339)+`","final_at":"`+traces.At(1).Format(time.RFC3339)+`"}`) +
		row(6, 3, "i-2", `{"table":"processed","consumer":"g","id":"m1","expires_at":"`+traces.At(5).Format(time.RFC3339)+`"}`) +
		row(6, 3, "i-2", `{"table":"message","mailbox":"inbox","id":"o1","state":"ready","max_attempts":2,"available_at":"`+traces.At(1).Format(time.RFC3339)+`"}`) +
		row(6, 3, "i-2", `{"table":"end","rows":5}`)
	if f, err := check(restart); f != nil || err != nil {
		t.Fatalf("a restart's snapshot: finding %v, error %v; want the log clean", f, err)
	}
}

// snapLine is a snapshot event of the row row (JSON) at time at (seconds).
func snapLine(at int, row string) string {
	return `{"seq":0,"read":true,"at":"` + traces.At(int64(at)).Format(time.RFC3339) + `","op":"snapshot","args":{"incarnation":"i-1"},"result":{},"row":` + row + "}\n"
}

// snapOpen is the incarnation event of the Open whose snapshot follows.
func snapOpen(at int) string {
	return `{"seq":0,"read":true,"at":"` + traces.At(int64(at)).Format(time.RFC3339) + `","op":"incarnation","args":{"incarnation":"i-1"},"result":{}}` + "\n"
}

// snapEnd ends a snapshot of n rows.
func snapEnd(at, n int) string { return snapLine(at, `{"table":"end","rows":`+strconv.Itoa(n)+`}`) }

// TestStreamCheckerAdoptsASnapshot: a log that starts from a snapshot starts the monitors from
// its rows (bridge.SpecDeriver.Adopt). The first use of an adopted row is no false finding (a
// wake and a fetch of an adopted message, a load and a save of an adopted checkpoint, the
// completion of an adopted outbox row whose message the snapshot does not hold), and a step that
// breaks a rule over an adopted row is a finding at its line: a mark applied again while its
// adopted mark lives, a purged id inserted again inside its horizon, a keyed message leased
// while its adopted head holds a live lease.
func TestStreamCheckerAdoptsASnapshot(t *testing.T) {
	cfg := streamConfig(t)
	until := traces.At(100).Format(time.RFC3339)
	for _, tc := range []struct {
		name, log, msg string
		line           int
	}{
		{"first-use-clean",
			snapOpen(0) + snapLine(0, `{"table":"message","mailbox":"inbox","id":"m1","state":"ready","attempts":0,"max_attempts":2,"available_at":"`+traces.At(0).Format(time.RFC3339)+`"}`) +
				snapLine(0, `{"table":"checkpoint","actor":"x","version":3}`) +
				snapLine(0, `{"table":"outbox","id":"o1","target":"b","max_attempts":2,"max_delivery_attempts":4,"state":"pending","attempts":1,"token":"C1","until":"`+until+`","available_at":"`+traces.At(0).Format(time.RFC3339)+`"}`) +
				snapEnd(0, 3) +
				logLine(1, 1, "wake", `{"worker":3,"mailbox":"inbox","id":"m1","profile":"local"}`, `{}`) +
				logLine(2, 1, "consumer_fetch", `{"worker":3,"mailbox":"inbox","profile":"leaseless"}`, `{"message":{"id":"m1","attempts":0}}`) +
				logLine(3, 2, "load_checkpoint", `{"actor":"x"}`, `{"version":3}`) +
				logLine(4, 2, "save_checkpoint", `{"actor":"x","expect_version":3}`, `{"version":4}`) +
				logLine(5, 3, "outbox_complete", `{"id":"o1","token":"C1"}`, `{}`),
			"", 0},
		{"mark-applied-again",
			snapOpen(0) + snapLine(0, `{"table":"processed","consumer":"c","id":"m1","expires_at":"`+until+`"}`) + snapEnd(0, 1) +
				logLine(1, 1, "mark_processed", `{"consumer":"c","id":"m1","ttl":10000000000}`, `{}`),
			"message m1 was applied twice by consumer c", 4},
		{"purged-id-again",
			snapOpen(0) + snapLine(0, `{"table":"purged_id","id":"m9","expires_at":"`+until+`"}`) + snapEnd(0, 1) +
				logLine(1, 1, "enqueue", `{"mailbox":"inbox","id":"m9","max_attempts":2}`, `{}`),
			"message m9 was purged and inserted again", 4},
		{"head-leased",
			snapOpen(0) + snapLine(0, `{"table":"message","mailbox":"inbox","id":"m1","key":"k","state":"ready","attempts":1,"max_attempts":2,"token":"T1","until":"`+until+`","available_at":"`+traces.At(0).Format(time.RFC3339)+`"}`) +
				snapLine(0, `{"table":"message","mailbox":"inbox","id":"m2","key":"k","state":"ready","attempts":0,"max_attempts":2,"available_at":"`+traces.At(0).Format(time.RFC3339)+`"}`) +
				snapEnd(0, 2) +
				logLine(1, 1, "lease", `{"mailbox":"inbox","lease_for":10000000000}`, `{"message":{"id":"m2","attempts":1,"token":"T2"}}`),
			"message m2 (key k) leased at t=1000 while earlier message m1 was still live", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lg, err := observe.ReadLog(strings.NewReader(tc.log), "log")
			if err != nil {
				t.Fatal(err)
			}
			c, err := bridge.NewStreamChecker(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var f *observe.Finding
			for i := range lg.Events {
				if f = c.Observe(&lg.Events[i]); f != nil {
					break
				}
			}
			if f == nil {
				f = c.End()
			}
			if err := c.Err(); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.msg == "" && f != nil:
				t.Fatalf("false finding on an adopted row: %v", f)
			case tc.msg != "" && f == nil:
				t.Fatalf("the monitors held; want %q", tc.msg)
			case f != nil && (!strings.Contains(f.Message, tc.msg) || f.Line != tc.line):
				t.Fatalf("got %+v, want %q at line %d", f, tc.msg, tc.line)
			}
		})
	}
}
