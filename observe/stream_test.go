package observe_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/observe/workload"
	"github.com/pconform/pconform/traces"
)

// record runs the workload of variant for budget with seed and returns its event log.
func recordLog(t testing.TB, variant string, seed int64, budget time.Duration) []byte {
	t.Helper()
	var events bytes.Buffer
	if _, err := workload.Run(context.Background(), workload.Config{Target: filepath.Join(t.TempDir(), "o.db"), Seed: seed,
		Budget: budget, Events: &events, Variant: variant}); err != nil {
		t.Fatal(err)
	}
	return events.Bytes()
}

// streamCheck checks log with the streaming oracle.
func streamCheck(log []byte, opts observe.CheckOptions) (observe.Summary, *observe.Finding, error) {
	return observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "log"), 0), opts)
}

// batchCheck checks log the way a whole trace is checked: read, put in order, convert, CheckModel.
func batchCheck(t *testing.T, log []byte, variant string) (*observe.Finding, int) {
	t.Helper()
	lg, err := observe.ReadLog(bytes.NewReader(log), "log")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := observe.Convert(lg, observe.Options{Name: "batch", Variant: variant})
	if err != nil {
		t.Fatal(err)
	}
	f, err := observe.CheckModel(tr)
	if err != nil {
		t.Fatal(err)
	}
	return f, len(tr.Steps)
}

// TestCheckAgreesWithCheckModel: the streaming oracle and the whole-trace oracle give the same
// verdict at the same position, on a run of the correct store and on runs of broken variants.
func TestCheckAgreesWithCheckModel(t *testing.T) {
	for _, variant := range []string{"", "unfenced-ack", "outbox-unbounded"} {
		t.Run("variant="+variant, func(t *testing.T) {
			target := variant
			if target == "" {
				target = "store"
			}
			log := recordLog(t, target, 3, time.Second)
			want, steps := batchCheck(t, log, variant)
			sum, got, err := streamCheck(log, observe.CheckOptions{Variant: variant})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case (want == nil) != (got == nil):
				t.Fatalf("CheckModel found %v, Check found %v", want, got)
			case want == nil:
				if sum.Events != int64(steps) || sum.Stopped {
					t.Fatalf("Check checked %d events (stopped %v), the log has %d", sum.Events, sum.Stopped, steps)
				}
				if variant != "" {
					t.Logf("seed 3 of %s shows nothing to either oracle", variant)
				}
			default:
				if got.Step != want.Step {
					t.Fatalf("CheckModel refuses step %d (%s), Check event %d (%s)", want.Step, want, got.Step, got)
				}
				if got.Line == 0 || got.Seq == 0 && !strings.Contains(got.Message, "peek") {
					t.Errorf("the finding names no line or seq: %+v", got)
				}
				if got.Window == nil {
					t.Fatalf("the finding has no window: %v", got.WindowErr)
				}
				t.Logf("finding %s; window %d steps, reproduces %v", got, len(got.Window.Steps), got.WindowReproduces)
			}
		})
	}
}

// TestCheckKeepGoing: with KeepGoing a check goes on past its first finding to the end of the log.
func TestCheckKeepGoing(t *testing.T) {
	log := recordLog(t, "unfenced-ack", 1, time.Second)
	var found []*observe.Finding
	sum, first, err := streamCheck(log, observe.CheckOptions{Variant: "unfenced-ack", KeepGoing: true,
		OnFinding: func(f *observe.Finding) error { found = append(found, f); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if first == nil {
		t.Skip("this run of unfenced-ack showed nothing")
	}
	if sum.Findings != len(found) || found[0] != first {
		t.Fatalf("summary %+v, %d findings reported, first %v", sum, len(found), first)
	}
	// Every line is an event but the incarnation lines, which the Decoder takes in itself.
	lines := int64(bytes.Count(log, []byte("\n")) - bytes.Count(log, []byte(`"op":"incarnation"`)))
	if !sum.Stopped && sum.Events != lines {
		t.Fatalf("kept going but checked %d events of %d", sum.Events, lines)
	}
}

// TestCheckKeepGoingPastMalformed: with KeepGoing a malformed event (one the trace format
// refuses, and one the model cannot take) is a finding with its line, left out, and the check goes
// on to find the disagreement after it; without KeepGoing the first is an error and the check ends.
func TestCheckKeepGoingPastMalformed(t *testing.T) {
	log := ev(1, false, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`) +
		ev(2, false, 1, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":0,"token":"T1"}}`) + // attempts 0: not a result of lease
		ev(3, false, 1, "consumer_handle", `{"worker":1,"mailbox":"b","outcome":"ok","profile":"leased"}`, `{"action":"idle"}`) + // fine: worker 1 holds nothing
		ev(4, false, 1, "consumer_fetch", `{"worker":2,"mailbox":"a","lease_for":5000000000,"profile":"leased"}`, `{"message":{"id":"m1","attempts":1,"token":"T2"}}`) +
		ev(5, false, 2, "consumer_handle", `{"worker":2,"mailbox":"b","outcome":"ok","profile":"leased"}`, `{"action":"acked"}`) + // the model cannot take it: worker 2 fetched from a
		ev(6, false, 3, "ack", `{"id":"m1","token":"T2"}`, `{}`) +
		ev(7, false, 4, "ack", `{"id":"m1","token":"T2"}`, `{}`) // acked twice: lease_lost
	if _, _, err := streamCheck([]byte(log), observe.CheckOptions{}); !errors.Is(err, observe.ErrBadLog) || !strings.Contains(err.Error(), "line 2 (seq 2, lease)") {
		t.Fatalf("without KeepGoing: got %v, want ErrBadLog naming line 2", err)
	}
	var found []*observe.Finding
	sum, _, err := streamCheck([]byte(log), observe.CheckOptions{KeepGoing: true,
		OnFinding: func(f *observe.Finding) error { found = append(found, f); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, fmt.Sprintf("%s@line%d", f.Oracle, f.Line))
	}
	want := []string{"log@line2", "model@line5", "model@line7"}
	if !slices.Equal(got, want) || sum.Stopped || sum.Events != 7 || sum.Findings != 3 {
		t.Fatalf("findings %v (summary %+v), want %v, none stopping the check, 7 events", got, sum, want)
	}
	if !strings.Contains(found[0].Message, "result.message.attempts") || !strings.Contains(found[1].Message, "cannot take the observed step") ||
		!strings.Contains(found[2].Message, "lease_lost") {
		t.Fatalf("messages: %s | %s | %s", found[0], found[1], found[2])
	}
}

// ev builds one event line; at is logical seconds.
func ev(seq int, read bool, at int, op, args, result string) string {
	r := ""
	if read {
		r = `"read":true,`
	}
	ts := traces.At(int64(at)).Format(time.RFC3339)
	return `{"seq":` + strconv.Itoa(seq) + `,` + r + `"at":"` + ts + `","op":"` + op + `","args":` + args + `,"result":` + result + "}\n"
}

// TestCheckRefuses: a log the streaming oracle cannot trust is an error naming the line.
func TestCheckRefuses(t *testing.T) {
	enq := ev(1, false, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`)
	lease := ev(2, false, 1, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":1,"token":"T1"}}`)
	ack := ev(3, false, 2, "ack", `{"id":"m1","token":"T1"}`, `{}`)
	for _, tc := range []struct{ name, log, want string }{
		{"not json", enq + "hello\n" + lease, "line 2: not an event"},
		{"gap", enq + ack, "gap in the sequence numbers: seq 2 missing before line 2's seq 3"},
		{"repeat", enq + lease + strings.Replace(ack, `"seq":3`, `"seq":2`, 1), "line 3: ack: seq 2 repeats line 2's"},
		{"unknown kind", enq + ev(2, false, 0, "teleport", `{}`, `{}`), `line 2: op "teleport" is not an event kind`},
		{"impossible result", enq + ev(2, false, 1, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":0,"token":"T1"}}`),
			"line 2 (seq 2, lease): result.message.attempts"},
		{"not a result of its op", enq + ev(2, false, 1, "ack", `{"id":"m1","token":"T1"}`, `{"affected":3}`), "line 2 (seq 2, ack): result.affected"},
		{"time goes back", ev(1, false, 5, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`) + ev(2, false, 1, "expire", `{}`, `{}`), "line 2: expire at 2026-01-01T00:00:01.000Z comes after line 1's event at 2026-01-01T00:00:05.000Z"},
		{"read after no commit", enq + ev(4, true, 0, "peek", `{"mailbox":"a"}`, `{}`), "line 2: read peek is placed after seq 4, but the log's last commit is seq 1"},
		{"time goes back a millisecond",
			`{"seq":1,"at":"2026-01-01T00:00:05.002Z","op":"enqueue","args":{"mailbox":"a","id":"m1","max_attempts":2},"result":{}}` + "\n" +
				`{"seq":2,"at":"2026-01-01T00:00:05.001Z","op":"expire","args":{},"result":{}}` + "\n",
			"line 2: expire at 2026-01-01T00:00:05.001Z comes after line 1's event at 2026-01-01T00:00:05.002Z in commit order (time goes back)"},
		{"two incarnations with the same id", ev(0, true, 0, "incarnation", `{"incarnation":"i-1"}`, `{}`) + enq + ev(1, true, 1, "incarnation", `{"incarnation":"i-1"}`, `{}`),
			"line 3: incarnation i-1 was opened already at line 1"},
		{"incarnation without an id", enq + ev(1, true, 1, "incarnation", `{}`, `{}`), "line 2: incarnation event without an incarnation id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := streamCheck([]byte(tc.log), observe.CheckOptions{})
			if err == nil || !errors.Is(err, observe.ErrBadLog) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an ErrBadLog containing %q", err, tc.want)
			}
		})
	}
	t.Run("truncated last line", func(t *testing.T) {
		dec := observe.NewDecoder(strings.NewReader(enq+lease[:30]), "log")
		sum, f, err := observe.Check(observe.NewOrdered(dec, 0), observe.CheckOptions{})
		if err != nil || f != nil || sum.Events != 1 || dec.Truncated != 2 {
			t.Fatalf("got %+v %v %v, truncated line %d; want one event checked and line 2 reported", sum, f, err, dec.Truncated)
		}
	})
	t.Run("out of order beyond the window", func(t *testing.T) {
		log := enq + lease + ev(3, false, 1, "expire", `{}`, `{}`) + ev(1, true, 0, "peek", `{"mailbox":"a"}`, `{"message":{"id":"m1","attempts":0}}`)
		_, _, err := observe.Check(observe.NewOrdered(observe.NewDecoder(strings.NewReader(log), "log"), 1), observe.CheckOptions{})
		if err == nil || !strings.Contains(err.Error(), "line 4: peek (seq 1) belongs before line") {
			t.Fatalf("got %v", err)
		}
	})
}

// TestCheckFindsDisagreement: a result the model does not give is a finding at its event, whose
// window reproduces it.
func TestCheckFindsDisagreement(t *testing.T) {
	log := ev(1, false, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`) +
		ev(2, false, 0, "enqueue", `{"mailbox":"b","id":"x","max_attempts":2}`, `{}`) +
		ev(3, false, 1, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":1,"token":"T1"}}`) +
		ev(4, false, 2, "ack", `{"id":"m1","token":"T1"}`, `{}`) +
		ev(5, false, 3, "ack", `{"id":"m1","token":"T1"}`, `{}`) // acked twice: the model gives lease_lost
	_, f, err := streamCheck([]byte(log), observe.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f == nil || f.Step != 4 || f.Seq != 5 || f.Line != 5 || !strings.Contains(f.Message, "lease_lost") {
		t.Fatalf("got %v, want a finding at event 4 (line 5, seq 5) naming lease_lost", f)
	}
	if f.Window == nil || !f.WindowReproduces {
		t.Fatalf("window %v reproduces %v (%v)", f.Window, f.WindowReproduces, f.WindowErr)
	}
	ops := []traces.Op{}
	for _, st := range f.Window.Steps {
		ops = append(ops, st.Op)
	}
	// The window is m1's history; the other mailbox's row takes no part.
	if !slices.Equal(ops, []traces.Op{"enqueue", "lease", "ack", "ack"}) {
		t.Fatalf("window ops %v", ops)
	}
}

// TestResultFields: the streaming oracle compares results field by field; a field traces.Result
// gains must be added to that comparison (sameResult) and to this list.
func TestResultFields(t *testing.T) {
	var names []string
	rt := reflect.TypeOf(traces.Result{})
	for i := range rt.NumField() {
		names = append(names, rt.Field(i).Name)
	}
	want := []string{"Err", "Duplicate", "Message", "Affected", "Claimed", "Action", "Attempt", "Version", "Redrives",
		"Messages", "Actions", "Duplicates", "Effects"}
	if !slices.Equal(names, want) {
		t.Fatalf("traces.Result has fields %v; sameResult compares %v", names, want)
	}
}

// FuzzCheck: any input is checked or refused with an ErrBadLog, never a panic; and where both the
// streaming oracle and the whole-trace one (ReadLog, Convert, CheckModel) take the log, they give
// the same verdict at the same event.
func FuzzCheck(f *testing.F) {
	enq := ev(1, false, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`)
	lease := ev(2, false, 1, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":1,"token":"T1"}}`)
	ack := ev(3, false, 2, "ack", `{"id":"m1","token":"T1"}`, `{}`)
	for _, s := range []string{enq + lease + ack + ack, enq + ack, enq + lease[:20], "", "{}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, got, err := streamCheck(data, observe.CheckOptions{})
		if err != nil {
			if !errors.Is(err, observe.ErrBadLog) {
				t.Fatalf("error without ErrBadLog: %v", err)
			}
			return
		}
		lg, err := observe.ReadLog(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		tr, err := observe.Convert(lg, observe.Options{Name: "fuzz"})
		if err != nil {
			return
		}
		want, err := observe.CheckModel(tr)
		if err != nil {
			t.Fatal(err)
		}
		if (want == nil) != (got == nil) || want != nil && want.Step != got.Step {
			t.Fatalf("the whole-trace oracle finds %v, the streaming one %v", want, got)
		}
	})
}

// TestCheckFindsLateBreak: a long log whose one wrong event comes late is refused at that event,
// and the finding's window reaches back to the creation of the row involved (enqueued about a
// backlog of cycles earlier), stays small, and reproduces on its own. It is the same check as
// the 10^7-event run of docs/observed.md, at a size a unit test affords.
func TestCheckFindsLateBreak(t *testing.T) {
	const n, breakAt, backlog = 40_000, 30_000, 100
	synth := newSynthLog(n, backlog)
	synth.breakAt = breakAt
	_, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(synth, "synth"), 0), observe.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if synth.broken == 0 {
		t.Fatal("the synthetic log broke no event")
	}
	if f == nil || f.Line != synth.broken || !strings.Contains(f.Message, "attempts") {
		t.Fatalf("got %v, want a finding at line %d naming the attempts", f, synth.broken)
	}
	if f.Window == nil || !f.WindowReproduces {
		t.Fatalf("window %v reproduces %v (%v)", f.Window, f.WindowReproduces, f.WindowErr)
	}
	first := f.Window.Steps[0]
	if first.Op != traces.OpEnqueue || first.Args.ID != synth.brokenID {
		t.Fatalf("window starts with %s %q, want the enqueue of %q", first.Op, first.Args.ID, synth.brokenID)
	}
	if len(f.Window.Steps) > 50 {
		t.Fatalf("window of %d steps for one row's history", len(f.Window.Steps))
	}
}
