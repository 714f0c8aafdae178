package observe

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/traces"
)

// ev builds one event line; at is logical seconds.
func ev(seq int, read bool, at int, op, args, result string) string {
	r := ""
	if read {
		r = `"read":true,`
	}
	return `{"seq":` + itoa(seq) + `,` + r + `"at":"2026-01-01T00:00:` + pad(at) + `Z","op":"` + op + `","args":` + args + `,"result":` + result + `}`
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func pad(n int) string {
	if n < 10 {
		return "0" + itoa(n)
	}
	return itoa(n)
}

var (
	enq   = ev(1, false, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`)
	lease = ev(2, false, 1, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":1,"token":"T1"}}`)
	peek  = ev(2, true, 1, "peek", `{"mailbox":"a"}`, `{}`)
	ack   = ev(3, false, 2, "ack", `{"id":"m1","token":"T1"}`, `{}`)
)

// TestReadLogRefuses: every way a log can be untrustworthy is refused with an error naming the
// line or the sequence numbers.
func TestReadLogRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, log, want string
	}{
		{"gap", enq + "\n" + ack + "\n", "gap in the sequence numbers: seq 2 missing"},
		{"long gap", enq + "\n" + ev(5, false, 2, "expire", `{}`, `{}`) + "\n", "seqs 2..4 missing"},
		{"repeat", enq + "\n" + lease + "\n" + strings.Replace(ack, `"seq":3`, `"seq":2`, 1) + "\n", "line 3: ack: seq 2 repeats line 2's (lease)"},
		{"unknown kind", enq + "\n" + ev(2, false, 0, "teleport", `{}`, `{}`) + "\n", `line 2: op "teleport" is not an event kind`},
		{"unknown member", enq + "\n" + strings.Replace(lease, `"op"`, `"colour":1,"op"`, 1) + "\n", `line 2: not an event: json: unknown field "colour"`},
		{"bad middle line", enq + "\n{\"seq\":2,\n" + ack + "\n", "line 2: not an event"},
		{"read after no commit", enq + "\n" + ev(4, true, 0, "peek", `{"mailbox":"a"}`, `{}`) + "\n", "line 2: read peek is placed after seq 4, but the log's last commit is seq 1"},
		{"write seq zero", ev(0, false, 0, "expire", `{}`, `{}`) + "\n", "line 1: expire: a write event has seq 0"},
		{"missing at", `{"seq":1,"op":"expire","args":{},"result":{}}` + "\n", "line 1: expire: at is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadLog(strings.NewReader(tc.log), "log")
			if err == nil || !errors.Is(err, ErrBadLog) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an ErrBadLog containing %q", err, tc.want)
			}
		})
	}
}

// TestConvertRefuses: a result that does not fit its operation is refused with the line number.
func TestConvertRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, log, want string
	}{
		{"result not reported", enq + "\n" + ev(2, false, 0, "ack", `{"id":"m1","token":"X"}`, `{"affected":3}`) + "\n", "line 2 (seq 2, ack): result.affected"},
		{"err kind of another op", enq + "\n" + ev(2, false, 0, "ack", `{"id":"m1","token":"X"}`, `{"err":"not_found"}`) + "\n", "line 2 (seq 2, ack): result.err"},
		{"time goes back", enq + "\n" + lease + "\n" + ev(3, false, 0, "expire", `{}`, `{}`) + "\n", "line 3: expire at 2026-01-01T00:00:00.000Z comes after an event at 2026-01-01T00:00:01.000Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lg, err := ReadLog(strings.NewReader(tc.log), "log")
			if err != nil {
				t.Fatal(err)
			}
			_, err = Convert(lg, Options{Name: "x"})
			if err == nil || !errors.Is(err, ErrBadLog) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an ErrBadLog containing %q", err, tc.want)
			}
		})
	}
}

// TestReadLogOrdersAndTruncates: events come back in commit order whatever order they were
// written in (reads after the commit they saw), and an incomplete last line is reported, not read.
func TestReadLogOrdersAndTruncates(t *testing.T) {
	log := ack + "\n" + peek + "\n" + enq + "\n" + lease + "\n" + ack[:20]
	lg, err := ReadLog(strings.NewReader(log), "log")
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, e := range lg.Events {
		ops = append(ops, e.Op)
	}
	if got := strings.Join(ops, " "); got != "enqueue lease peek ack" || lg.Truncated != 5 || lg.Writes != 3 {
		t.Fatalf("order %q, truncated line %d, writes %d; want \"enqueue lease peek ack\", 5, 3", got, lg.Truncated, lg.Writes)
	}
	tr, err := Convert(lg, Options{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Steps[1].Result.Message.Token != 1 || tr.Steps[3].Args.Token != 1 || tr.Steps[1].Args.LeaseFor != 5000 {
		t.Fatalf("tokens and durations not converted: %+v", tr.Steps)
	}
	if f, err := CheckModel(tr); err != nil || f != nil {
		t.Fatalf("model check: %v %v", f, err)
	}
}

// TestCheckModelFinds: a history the model cannot agree with is a finding at its step.
func TestCheckModelFinds(t *testing.T) {
	// The lease reports attempts 2 for a fresh message: the model says 1.
	bad := strings.Replace(lease, `"attempts":1`, `"attempts":2`, 1)
	f := checkWhole(t, enq+"\n"+bad+"\n")
	if f == nil || f.Step != 1 || !strings.Contains(f.Message, `"attempts":2`) {
		t.Fatalf("got %v; want a finding at step 1 naming the observed attempts", f)
	}
}

// checkWhole reads log, converts it and gives the whole-trace model check's finding (nil for
// none); an error on the way fails the test.
func checkWhole(t *testing.T, log string) *Finding {
	t.Helper()
	lg, err := ReadLog(strings.NewReader(log), "log")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Convert(lg, Options{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := CheckModel(tr)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCheckModelWakes: a consumer's recorded wake is judged by where it sits in the commit order
// (docs/semantics.md, "Wake-ups"): after the enqueue of its message it agrees with the model; a
// wake placed before that commit (fired early, or by a NOTIFY sent outside the transaction) is a
// finding at the wake, and so is one for a message of another mailbox. The wake's own clock
// reading, later than the commits after it, never makes time go back.
func TestCheckModelWakes(t *testing.T) {
	wake := func(seq int, mailbox, via string) string {
		return ev(seq, true, 9, "wake", `{"worker":3,"mailbox":"`+mailbox+`","id":"m1","profile":"`+via+`"}`, `{}`)
	}
	for _, tc := range []struct {
		name, log string
		finding   int // the step of the finding, -1 for none
	}{
		{"after the commit", enq + "\n" + wake(1, "a", "local") + "\n" + lease + "\n", -1},
		{"notify after the commit", enq + "\n" + lease + "\n" + wake(2, "a", "notify") + "\n", -1},
		{"before the commit", wake(0, "a", "local") + "\n" + enq + "\n" + lease + "\n", 0},
		{"another mailbox", enq + "\n" + wake(1, "b", "notify") + "\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) { checkBothWays(t, tc.log, tc.finding, "not_committed") })
	}
}

// TestCheckModelPollTicks: a consumer's recorded poll tick is judged by the wakes and fetches
// before it in the commit order (docs/semantics.md, "Wake-ups"): a tick of a worker woken for the
// mailbox that has fetched from it since agrees with the model, as does one of another worker or
// mailbox; a tick of a worker woken there that has not fetched since is a wake_not_fetched
// finding at the tick, in the whole-trace check and in the streaming one.
func TestCheckModelPollTicks(t *testing.T) {
	wake := ev(1, true, 1, "wake", `{"worker":3,"mailbox":"a","id":"m1","profile":"local"}`, `{}`)
	fetch := ev(1, true, 1, "consumer_fetch", `{"worker":3,"mailbox":"a","profile":"leaseless"}`, `{"message":{"id":"m1","attempts":0}}`)
	tick := func(worker int, mailbox string) string {
		return ev(1, true, 2, "poll_tick", fmt.Sprintf(`{"worker":%d,"mailbox":"%s"}`, worker, mailbox), `{}`)
	}
	for _, tc := range []struct {
		name    string
		events  []string
		finding int // the step of the finding, -1 for none
	}{
		{"fetched since the wake", []string{enq, wake, fetch, tick(3, "a")}, -1},
		{"another worker", []string{enq, wake, tick(4, "a")}, -1},
		{"another mailbox", []string{enq, wake, tick(3, "b")}, -1},
		{"not fetched since the wake", []string{enq, fetch, wake, tick(3, "a")}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBothWays(t, strings.Join(tc.events, "\n")+"\n", tc.finding, traces.ErrKindWakeNotFetched)
		})
	}
}

// checkBothWays checks log with the whole-trace model check and with the streaming one: with
// finding < 0 neither may find anything; otherwise the whole-trace check must report kind at step
// finding and the streaming check must report a finding.
func checkBothWays(t *testing.T, log string, finding int, kind string) {
	t.Helper()
	f := checkWhole(t, log)
	switch {
	case finding < 0 && f != nil:
		t.Fatalf("finding %v, want none", f)
	case finding >= 0 && (f == nil || f.Step != finding || !strings.Contains(f.Message, kind)):
		t.Fatalf("got %v, want a %s finding at step %d", f, kind, finding)
	}
	sum, sf, err := Check(NewDecoder(strings.NewReader(log), "log"), CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if (sf != nil) != (finding >= 0) {
		t.Fatalf("streaming check: finding %v (summary %+v), want one: %v", sf, sum, finding >= 0)
	}
}

// FuzzReadLog: any input is read or refused with an ErrBadLog, never a panic, and a log read is
// in commit order with its write numbers exactly 1..Writes; what converts passes the trace rules.
func FuzzReadLog(f *testing.F) {
	for _, s := range []string{enq + "\n" + lease + "\n" + peek + "\n" + ack + "\n", enq + "\n" + ack, "", "\n\n", "{}\n", "[1]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lg, err := ReadLog(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			if !errors.Is(err, ErrBadLog) {
				t.Fatalf("error without ErrBadLog: %v", err)
			}
			return
		}
		var w int64
		for _, e := range lg.Events {
			if !e.Read {
				w++
				if e.Seq != w {
					t.Fatalf("write %d has seq %d", w, e.Seq)
				}
			} else if e.Seq > w && e.Seq > lg.Writes {
				t.Fatalf("read after seq %d beyond the last commit %d", e.Seq, lg.Writes)
			}
		}
		if w != lg.Writes {
			t.Fatalf("%d writes, Writes says %d", w, lg.Writes)
		}
		tr, err := Convert(lg, Options{Name: "fuzz"})
		if err != nil {
			if !errors.Is(err, ErrBadLog) {
				t.Fatalf("convert error without ErrBadLog: %v", err)
			}
			return
		}
		if _, err := CheckModel(tr); err != nil {
			t.Fatalf("CheckModel on a converted trace: %v", err)
		}
	})
}

// TestCheckLateWakes: a wake that comes after its message was handled and purged, and after its
// dedup horizon (none here), is for a committed message while it is inside CheckOptions.LateWakes
// of the purge (ten minutes by default); later than that, or with no window, the model knows the
// id no more and it is a not_committed finding, as a wake for a message that never committed is.
func TestCheckLateWakes(t *testing.T) {
	line := func(seq int, read bool, at, op, args, result string) string {
		r := ""
		if read {
			r = `"read":true,`
		}
		return `{"seq":` + itoa(seq) + `,` + r + `"at":"2026-01-01T` + at + `Z","op":"` + op + `","args":` + args + `,"result":` + result + "}\n"
	}
	// m1 enqueued, leased, acked and purged at 00:00:03; m9 enqueued at later; then the wake for
	// m1, which takes m9's time.
	history := func(later, wakeID string) string {
		return enq + "\n" + lease + "\n" + ack + "\n" +
			line(4, false, "00:00:03", "purge", `{"limit":10}`, `{"affected":1}`) +
			line(5, false, later, "enqueue", `{"mailbox":"a","id":"m9","max_attempts":2}`, `{}`) +
			line(5, true, later, "wake", `{"worker":3,"mailbox":"a","id":"`+wakeID+`","profile":"notify"}`, `{}`)
	}
	for _, tc := range []struct {
		name      string
		log       string
		lateWakes time.Duration
		finding   bool
	}{
		{"seconds after the purge", history("00:00:09", "m1"), 0, false},
		{"seconds after, no window", history("00:00:09", "m1"), -1, true},
		{"past the default window", history("00:10:04", "m1"), 0, true},
		{"inside a longer window", history("00:10:04", "m1"), 20 * time.Minute, false},
		{"never committed", history("00:00:09", "m2"), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.lateWakes == 0 {
				// The whole-trace check of a recorded trace (pconform observe's) takes the default.
				if f := checkWhole(t, tc.log); (f != nil) != tc.finding {
					t.Fatalf("whole-trace check: finding %v, want one: %v", f, tc.finding)
				}
			}
			for _, jobs := range []int{1, 2} {
				_, f, err := CheckJobs(NewDecoder(strings.NewReader(tc.log), "log"), CheckOptions{LateWakes: tc.lateWakes}, jobs)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case tc.finding && (f == nil || !strings.Contains(f.Message, traces.ErrKindNotCommitted) || f.Step != 5):
					t.Fatalf("jobs %d: finding %v, want not_committed at the wake (step 5)", jobs, f)
				case !tc.finding && f != nil:
					t.Fatalf("jobs %d: finding %v, want none", jobs, f)
				}
			}
		})
	}
}
