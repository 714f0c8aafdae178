package observe_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/traces"
)

// TestWindowFromPositionsIsUnchanged: a finding whose window is read again from the log's
// positions (CheckOptions.Log) is the finding the oracle gave when it held every live row's
// events in memory. The golden files are the finding and the window the in-memory oracle wrote
// for the synthetic log of TestCheckFindsLateBreak (40,000 events, its fetch at event 30,000
// broken), before the positions existed; both ways must still give them.
func TestWindowFromPositionsIsUnchanged(t *testing.T) {
	synth := newSynthLog(40_000, 100)
	synth.breakAt = 30_000
	log, err := io.ReadAll(synth)
	if err != nil {
		t.Fatal(err)
	}
	wantFinding, err := os.ReadFile(filepath.Join("testdata", "late-break", "finding.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wantWindow, err := os.ReadFile(filepath.Join("testdata", "late-break", "window.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sums []observe.Summary
	for _, way := range windowWays {
		opts := way.options(log, nil)
		sum, f, err := streamCheck(log, opts)
		if err != nil || f == nil || f.Window == nil {
			t.Fatalf("%s: finding %v, error %v", way.name, f, err)
		}
		if sums = append(sums, sum); sum != sums[0] {
			t.Errorf("%s: summary %+v, %s %+v", way.name, sum, windowWays[0].name, sums[0])
		}
		if got := f.String() + "\n"; got != string(wantFinding) {
			t.Errorf("%s: finding\n%s, want\n%s", way.name, got, wantFinding)
		}
		f.Window.Name = "late-break"
		got, err := traces.Marshal(f.Window)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, wantWindow) {
			t.Errorf("%s: the window differs from testdata/late-break/window.json:\n%s", way.name, got)
		}
	}
}

// windowWays are the ways Check can keep what a finding's window needs: every live row's events
// in memory (no log to read again), their positions in the log, or nothing until a finding, when
// the log is checked again (CheckOptions.Reread) with the positions kept.
var windowWays = []struct {
	name    string
	options func(log []byte, rereads *int) observe.CheckOptions
}{
	{"in memory", func([]byte, *int) observe.CheckOptions { return observe.CheckOptions{} }},
	{"positions", func(log []byte, _ *int) observe.CheckOptions {
		return observe.CheckOptions{Log: bytes.NewReader(log)}
	}},
	{"checked again", func(log []byte, rereads *int) observe.CheckOptions {
		return observe.CheckOptions{Log: bytes.NewReader(log), Reread: rereadOf(log, rereads)}
	}},
}

// rereadOf is observe.ReadAgain of log as streamCheck reads it, counting the calls in calls
// when it is not nil.
func rereadOf(log []byte, calls *int) func() (observe.Source, error) {
	again := observe.ReadAgain(bytes.NewReader(log), "log", 0)
	return func() (observe.Source, error) {
		if calls != nil {
			*calls++
		}
		return again()
	}
}

// TestPositionsGiveTheSameFindings: on recorded logs of broken variants, checked past every
// finding, the oracle that keeps positions and reads the log again reports exactly the findings,
// windows included, that the oracle holding the events in memory reports.
func TestPositionsGiveTheSameFindings(t *testing.T) {
	compared := 0
	for _, variant := range []string{"unfenced-ack", "outbox-unbounded", "lease-early"} {
		log := recordLog(t, variant, 1, time.Second)
		findings := make([][]*observe.Finding, len(windowWays))
		for i, way := range windowWays {
			rereads := 0
			opts := way.options(log, &rereads)
			opts.Variant, opts.KeepGoing = variant, true
			opts.OnFinding = func(f *observe.Finding) error { findings[i] = append(findings[i], f); return nil }
			if _, _, err := streamCheck(log, opts); err != nil {
				t.Fatalf("%s, %s: %v", variant, way.name, err)
			}
			// Checked again once, at the first model finding, whose second pass then goes on.
			if opts.Reread != nil && rereads != min(1, countModel(findings[i])) {
				t.Errorf("%s, %s: the log was read again %d times for %d model findings", variant, way.name, rereads, countModel(findings[i]))
			}
		}
		for i := 1; i < len(windowWays); i++ {
			if !reflect.DeepEqual(findings[0], findings[i]) {
				t.Fatalf("%s: %s %v, %s %v", variant, windowWays[0].name, findings[0], windowWays[i].name, findings[i])
			}
		}
		compared += len(findings[0])
	}
	if compared == 0 {
		t.Skip("no variant's run showed a finding: nothing to compare")
	}
}

// TestWindowFromPositionsRefusesAnotherLog: a log that is not the one the events came from
// (here, the same log with its broken line replaced) makes the window an error naming the line,
// never a window of other events.
func TestWindowFromPositionsRefusesAnotherLog(t *testing.T) {
	synth := newSynthLog(2_000, 10)
	synth.breakAt = 1_500
	log, err := io.ReadAll(synth)
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Repeat([]byte("x"), len(log))
	_, f, err := streamCheck(log, observe.CheckOptions{Log: bytes.NewReader(other)})
	if err != nil || f == nil {
		t.Fatalf("finding %v, error %v", f, err)
	}
	if f.Window != nil || f.WindowErr == nil || !strings.Contains(f.WindowErr.Error(), "line ") {
		t.Fatalf("window %v, error %v: want no window and an error naming the line", f.Window, f.WindowErr)
	}
}

// countModel counts the model oracle's findings among fs.
func countModel(fs []*observe.Finding) int {
	n := 0
	for _, f := range fs {
		if f.Oracle == "model" {
			n++
		}
	}
	return n
}

// TestRereadRefusesAnotherLog: when the log read again for a window is not the log checked (its
// finding elsewhere, none, a shorter log) or cannot be read, the finding is still reported, with
// no window and an error that says why; a window is never made of other events.
func TestRereadRefusesAnotherLog(t *testing.T) {
	broken := func(events, breakAt int) []byte {
		synth := newSynthLog(events, 10)
		synth.breakAt = breakAt
		log, err := io.ReadAll(synth)
		if err != nil {
			t.Fatal(err)
		}
		return log
	}
	log := broken(2_000, 1_500)
	errGone := errors.New("the log is gone")
	for _, tc := range []struct {
		name   string
		reread func() (observe.Source, error)
		want   string
	}{
		{"finding elsewhere", rereadOf(broken(2_000, 1_000), nil), "is not the log checked: a finding at line"},
		{"no finding", rereadOf(broken(2_000, -1), nil), "is not the log checked: no finding"},
		{"shorter log", rereadOf(broken(1_000, -1), nil), "before it"},
		{"unreadable", func() (observe.Source, error) { return nil, errGone }, errGone.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, f, err := streamCheck(log, observe.CheckOptions{Log: bytes.NewReader(log), Reread: tc.reread})
			if err != nil || f == nil {
				t.Fatalf("finding %v, error %v", f, err)
			}
			// The summary is the first reading's, which the failed second one does not change.
			if want, _, _ := streamCheck(log, observe.CheckOptions{}); sum != want {
				t.Errorf("summary %+v, want %+v as without reading again", sum, want)
			}
			if f.Line == 0 || f.Window != nil || f.WindowErr == nil || !strings.Contains(f.WindowErr.Error(), tc.want) ||
				!strings.Contains(f.WindowErr.Error(), fmt.Sprintf("line %d", f.Line)) {
				t.Fatalf("window %v, error %v: want no window and an error naming line %d and saying %q", f.Window, f.WindowErr, f.Line, tc.want)
			}
		})
	}
}

// TestRereadOnlyAtAFinding: a check that finds nothing never reads the log again.
func TestRereadOnlyAtAFinding(t *testing.T) {
	log, err := io.ReadAll(newSynthLog(2_000, 10))
	if err != nil {
		t.Fatal(err)
	}
	rereads := 0
	sum, f, err := streamCheck(log, observe.CheckOptions{Log: bytes.NewReader(log), Reread: rereadOf(log, &rereads)})
	if err != nil || f != nil || sum.Events == 0 {
		t.Fatalf("summary %+v, finding %v, error %v", sum, f, err)
	}
	if rereads != 0 {
		t.Fatalf("the log was read again %d times without a finding", rereads)
	}
}

// TestJobsWindowCheckedAgain: a partitioned check whose partitions keep no history (Reread) gives
// its finding the window one job gives the finding at that event, checking the log again with
// one job.
func TestJobsWindowCheckedAgain(t *testing.T) {
	compared := 0
	for _, variant := range []string{"unfenced-ack", "outbox-unbounded", "lease-early"} {
		log := recordLog(t, variant, 1, time.Second)
		_, one, err := streamCheck(log, observe.CheckOptions{Variant: variant})
		if err != nil {
			t.Fatalf("%s: %v", variant, err)
		}
		rereads := 0
		src := observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log), "log"), 0)
		_, two, err := observe.CheckJobs(src, observe.CheckOptions{Variant: variant, Log: bytes.NewReader(log), Reread: rereadOf(log, &rereads)}, 2)
		if err != nil {
			t.Fatalf("%s, two jobs: %v", variant, err)
		}
		if (one == nil) != (two == nil) {
			t.Fatalf("%s: one job %v, two jobs %v", variant, one, two)
		}
		if one == nil {
			if rereads != 0 {
				t.Fatalf("%s: no finding, yet the log was read again %d times", variant, rereads)
			}
			continue
		}
		if two.Step != one.Step || rereads != 1 || two.WindowErr != nil || !reflect.DeepEqual(two.Window, one.Window) ||
			two.WindowReproduces != one.WindowReproduces {
			t.Fatalf("%s: read again %d times; two jobs %v (window error %v), one job %v: want the same window", variant, rereads, two, two.WindowErr, one)
		}
		compared++
	}
	if compared == 0 {
		t.Skip("no variant's run showed a finding: nothing to compare")
	}
}
