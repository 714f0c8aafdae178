package observe_test

import (
	"bytes"
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
	for _, positions := range []bool{false, true} {
		opts := observe.CheckOptions{}
		if positions {
			opts.Log = bytes.NewReader(log)
		}
		_, f, err := streamCheck(log, opts)
		if err != nil || f == nil || f.Window == nil {
			t.Fatalf("positions %v: finding %v, error %v", positions, f, err)
		}
		if got := f.String() + "\n"; got != string(wantFinding) {
			t.Errorf("positions %v: finding\n%s, want\n%s", positions, got, wantFinding)
		}
		f.Window.Name = "late-break"
		got, err := traces.Marshal(f.Window)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, wantWindow) {
			t.Errorf("positions %v: the window differs from testdata/late-break/window.json:\n%s", positions, got)
		}
	}
}

// TestPositionsGiveTheSameFindings: on recorded logs of broken variants, checked past every
// finding, the oracle that keeps positions and reads the log again reports exactly the findings,
// windows included, that the oracle holding the events in memory reports.
func TestPositionsGiveTheSameFindings(t *testing.T) {
	compared := 0
	for _, variant := range []string{"unfenced-ack", "outbox-unbounded", "lease-early"} {
		log := recordLog(t, variant, 1, time.Second)
		var findings [2][]*observe.Finding
		for i, positions := range []bool{false, true} {
			opts := observe.CheckOptions{Variant: variant, KeepGoing: true,
				OnFinding: func(f *observe.Finding) error { findings[i] = append(findings[i], f); return nil }}
			if positions {
				opts.Log = bytes.NewReader(log)
			}
			if _, _, err := streamCheck(log, opts); err != nil {
				t.Fatalf("%s: %v", variant, err)
			}
		}
		if !reflect.DeepEqual(findings[0], findings[1]) {
			t.Fatalf("%s: in memory %v, from positions %v", variant, findings[0], findings[1])
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
