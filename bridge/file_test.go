package bridge_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/bridge"
)

func TestConvertLogFile(t *testing.T) {
	logs := filepath.Join("testdata", "logs")
	green, err := bridge.ConvertLogFile(filepath.Join(logs, "green_verbose.json"), "tcBridgeGreen")
	if err != nil {
		t.Fatal(err)
	}
	if len(green) != 4 || green[3].Name != "tcBridgeGreen-s0-4-ok" || green[3].Origin.Schedule != 4 {
		t.Errorf("got %d traces, last %q", len(green), green[len(green)-1].Name)
	}
	bug, err := bridge.ConvertLogFile(filepath.Join(logs, "bad_bug.json"), "tcLeaselessRawAttemptsCounterexample")
	if err != nil {
		t.Fatal(err)
	}
	if len(bug) != 1 || bug[0].Expect.Variant != "raw-attempts" || bug[0].Expect.DivergesAt != 2 {
		t.Errorf("bug log: %d traces, expect %+v", len(bug), bug[0].Expect)
	}

	// The same counterexample log read as a green test case is refused at its bug step.
	_, err = bridge.ConvertLogFile(filepath.Join(logs, "bad_bug.json"), "tcBridgeGreen")
	if !errors.Is(err, bridge.ErrBadObservation) || !strings.Contains(err.Error(), "entry 14 (eObsConsumerHandle)") || !strings.Contains(err.Error(), "bad_bug.json") {
		t.Errorf("got %v, want ErrBadObservation at entry 14 naming the file", err)
	}

	dir := t.TempDir()
	quiet := filepath.Join(dir, "quiet.json")
	if err := os.WriteFile(quiet, []byte(`[[{"type":"SendEvent","details":{}}],[]]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := bridge.ConvertLogFile(quiet, "tcX"); !errors.Is(err, bridge.ErrNoObservations) || !strings.Contains(err.Error(), "2 schedule(s)") {
		t.Errorf("got %v, want ErrNoObservations", err)
	}
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte(`[[{"type":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := bridge.ConvertLogFile(broken, "tcX"); !errors.Is(err, bridge.ErrMalformedLog) || !strings.Contains(err.Error(), "broken.json") {
		t.Errorf("got %v, want ErrMalformedLog naming the file", err)
	}
	if _, err := bridge.ConvertLogFile(filepath.Join(dir, "absent.json"), "tcX"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want a not-exist error", err)
	}
}
