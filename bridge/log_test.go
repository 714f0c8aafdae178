package bridge_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/bridge"
)

// -update rewrites the golden files under testdata/ from the current output; review the diff.
var update = flag.Bool("update", false, "rewrite golden files")

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := readFixtureFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readFixtureFile reads one of the committed checker logs in testdata/logs.
func readFixtureFile(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", "logs", name))
}

// checkGolden compares got with testdata/<name>, or rewrites it under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./bridge -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (rerun with -update and review the diff):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestReadVerboseLogFixture(t *testing.T) {
	schedules, err := bridge.ReadVerboseLog(bytes.NewReader(readFixture(t, "green_verbose.json")))
	if err != nil {
		t.Fatal(err)
	}
	if len(schedules) != 4 {
		t.Fatalf("got %d schedules, want 4 (the fixture was made with -s 4)", len(schedules))
	}
	for i, events := range schedules {
		var names []string
		for j, ev := range events {
			if ev.Entry != j {
				t.Errorf("schedule %d: event %d has Entry %d", i+1, j, ev.Entry)
			}
			if ev.Type == bridge.TypeAnnounce {
				names = append(names, ev.Name)
				if ev.Machine != "Store(2)" {
					t.Errorf("schedule %d entry %d: machine %q, want Store(2)", i+1, j, ev.Machine)
				}
				if len(ev.Payload) == 0 || ev.Payload[0] != '{' {
					t.Errorf("schedule %d entry %d: payload %s, want an object", i+1, j, ev.Payload)
				}
			}
		}
		// Every interleaving starts with the two enqueues and ends with the store's closing
		// observations; only the middle four are reordered.
		if len(names) != 9 || names[0] != "eObsEnqueue" || names[1] != "eObsOutboxEnqueue" ||
			strings.Join(names[6:], ",") != "eObsAdvanceClock,eObsPeek,eObsFinal" {
			t.Errorf("schedule %d announces %v", i+1, names)
		}
	}
}

func TestReadBugLogFixture(t *testing.T) {
	events, err := bridge.ReadBugLog(bytes.NewReader(readFixture(t, "bad_bug.json")))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 18 {
		t.Fatalf("got %d events, want 18", len(events))
	}
	last := events[len(events)-1]
	if last.Type != "StrategyDescription" {
		t.Errorf("last entry type %q, want StrategyDescription", last.Type)
	}
	// Non-announce entries of a bug log carry the string "null" (or a machine) as payload; the
	// reader keeps it verbatim.
	if got := string(events[0].Payload); got != `"null"` {
		t.Errorf("first entry payload %s, want \"null\"", got)
	}
	var fail *bridge.Event
	for i := range events {
		if events[i].Type == "AssertionFailure" {
			fail = &events[i]
		}
	}
	if fail == nil {
		t.Error("no AssertionFailure entry in the bug log")
	}

	// Each reader refuses the other layout.
	if _, err := bridge.ReadVerboseLog(bytes.NewReader(readFixture(t, "bad_bug.json"))); !errors.Is(err, bridge.ErrMalformedLog) {
		t.Errorf("ReadVerboseLog(bug log) = %v, want ErrMalformedLog", err)
	}
	if _, err := bridge.ReadBugLog(bytes.NewReader(readFixture(t, "bad_verbose.json"))); !errors.Is(err, bridge.ErrMalformedLog) {
		t.Errorf("ReadBugLog(verbose log) = %v, want ErrMalformedLog", err)
	}
}

func TestReadLogDetectsShape(t *testing.T) {
	for _, tc := range []struct {
		file  string
		shape bridge.LogShape
		n     int
	}{
		{"green_verbose.json", bridge.ShapeVerbose, 4},
		{"bad_verbose.json", bridge.ShapeVerbose, 1},
		{"bad_bug.json", bridge.ShapeBug, 1},
	} {
		schedules, shape, err := bridge.ReadLog(bytes.NewReader(readFixture(t, tc.file)))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if shape != tc.shape || len(schedules) != tc.n {
			t.Errorf("%s: shape %v with %d schedules, want %v with %d", tc.file, shape, len(schedules), tc.shape, tc.n)
		}
	}
}

// badLogs are hand-made defective logs; their error messages are kept in
// testdata/read_errors.golden so a change in what the reader reports shows up in review.
var badLogs = []struct {
	name, log string
}{
	{"empty input", ""},
	{"not json", "hello"},
	{"top-level object", `{"type":"Announce"}`},
	{"empty array", `[]`},
	{"array of numbers", `[1,2]`},
	{"truncated verbose", `[[{"type":"SendEvent","details":{}},{"type":"Ann`},
	{"truncated after schedule", `[[{"type":"SendEvent","details":{}}]`},
	{"truncated bug log", `[{"type":"SendEvent","details":{}}`},
	{"trailing data", `[[{"type":"SendEvent","details":{}}]] []`},
	{"schedule not an array", `[[{"type":"SendEvent","details":{}}], {"type":"x","details":{}}]`},
	{"entry not an object", `[[{"type":"SendEvent","details":{}}], [{"type":"SendEvent","details":{}}, 7]]`},
	{"entry null", `[[null]]`},
	{"missing type", `[[{"details":{}}]]`},
	{"type not a string", `[[{"type":3,"details":{}}]]`},
	{"empty type", `[[{"type":"","details":{}}]]`},
	{"missing details", `[[{"type":"SendEvent"}]]`},
	{"details not an object", `[[{"type":"SendEvent","details":[1]}]]`},
	{"details null", `[[{"type":"SendEvent","details":null}]]`},
	{"unexpected entry key", `[[{"type":"SendEvent","details":{},"extra":1}]]`},
	{"case-folded key", `[[{"Type":"SendEvent","details":{}}]]`},
	{"announce without event", `[[{"type":"Announce","details":{"id":"Store(2)","payload":{}}}]]`},
	{"announce event not a string", `[[{"type":"Announce","details":{"id":"Store(2)","event":1,"payload":{}}}]]`},
	{"announce empty event", `[[{"type":"Announce","details":{"id":"Store(2)","event":"","payload":{}}}]]`},
	{"announce without id", `[[{"type":"Announce","details":{"event":"eObsCrash","payload":{"at":0}}}]]`},
	{"announce without payload", `[[{"type":"Announce","details":{"id":"Store(2)","event":"eObsCrash"}}]]`},
	{"bug log with a schedule inside", `[{"type":"SendEvent","details":{}}, []]`},
	{"verbose log with an entry at top level", `[[], {"type":"SendEvent","details":{}}]`},
}

func TestReadLogErrors(t *testing.T) {
	var golden bytes.Buffer
	for _, tc := range badLogs {
		_, _, err := bridge.ReadLog(strings.NewReader(tc.log))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !errors.Is(err, bridge.ErrMalformedLog) {
			t.Errorf("%s: error %v does not wrap ErrMalformedLog", tc.name, err)
		}
		var le *bridge.LogError
		if !errors.As(err, &le) {
			t.Errorf("%s: error %v is not a *LogError", tc.name, err)
		}
		fmt.Fprintf(&golden, "%s\n\t%s\n", tc.name, err)
	}
	checkGolden(t, "read_errors.golden", golden.Bytes())
}

// TestReadLogErrorPosition pins the schedule and entry a defect deep in a real log is reported at.
func TestReadLogErrorPosition(t *testing.T) {
	log := `[[{"type":"SendEvent","details":{}}],[{"type":"SendEvent","details":{}},{"type":"SendEvent","details":{}},{"type":"Announce","details":{"id":"Store(2)","event":"eObsCrash"}}]]`
	_, _, err := bridge.ReadLog(strings.NewReader(log))
	var le *bridge.LogError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want a *LogError", err)
	}
	if le.Schedule != 2 || le.Entry != 2 {
		t.Errorf("reported schedule %d entry %d, want schedule 2 entry 2 (%v)", le.Schedule, le.Entry, err)
	}
}

// TestReadLogTruncated cuts a real log at many offsets: every cut is an error, never a panic,
// and the full log still reads.
func TestReadLogTruncated(t *testing.T) {
	data := readFixture(t, "bad_verbose.json")
	for cut := 0; cut < len(data)-1; cut += 37 {
		if _, _, err := bridge.ReadLog(bytes.NewReader(data[:cut])); !errors.Is(err, bridge.ErrMalformedLog) {
			t.Fatalf("cut at %d of %d: got %v, want ErrMalformedLog", cut, len(data), err)
		}
	}
	if _, _, err := bridge.ReadLog(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReadLogReaderError(t *testing.T) {
	_, _, err := bridge.ReadLog(failingReader{})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || errors.Is(err, bridge.ErrMalformedLog) {
		t.Errorf("got %v, want the reader's error and not ErrMalformedLog", err)
	}
}
