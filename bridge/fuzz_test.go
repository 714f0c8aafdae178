package bridge_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/traces"
)

// FuzzReadLog feeds arbitrary bytes to the log reader and every schedule it accepts to the
// converter. Neither may panic; every refusal must be one of the documented errors, located by a
// *LogError. The seed corpus is testdata/fuzz/FuzzReadLog (real checker logs, hand-made bad
// logs) plus the logs below. Run with:
//
//	go test ./bridge -run '^$' -fuzz FuzzReadLog -fuzztime 60s -fuzzminimizetime 5x
//
// (minimizing every new input of a multi-kilobyte log costs more than fuzzing; 5x keeps it cheap)
func FuzzReadLog(f *testing.F) {
	for _, tc := range badLogs {
		f.Add([]byte(tc.log))
	}
	f.Add([]byte(`[[{"type":"Announce","details":{"id":"Store(2)","event":"eObsCrash","payload":{"at":0}}}]]`))
	f.Add([]byte(`[{"type":"Announce","details":{"id":"S(1)","event":"eObsFinal","payload":{"messages":[],"outbox":[],"dead_letters":[],"effects":{"\"a\"":["x"]}}}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		schedules, shape, err := bridge.ReadLog(bytes.NewReader(data))
		if err != nil {
			var le *bridge.LogError
			if !errors.Is(err, bridge.ErrMalformedLog) || !errors.As(err, &le) {
				t.Fatalf("refusal %v is not a *LogError wrapping ErrMalformedLog", err)
			}
			return
		}
		if len(schedules) == 0 || (shape == bridge.ShapeBug && len(schedules) != 1) {
			t.Fatalf("shape %v with %d schedules", shape, len(schedules))
		}
		if shape == bridge.ShapeVerbose {
			// Reading a prefix agrees with reading it all: the same count, the same schedules.
			for _, n := range []int{0, 1} {
				prefix, total, err := bridge.ReadVerboseLogPrefix(bytes.NewReader(data), n)
				if err != nil || total != len(schedules) || len(prefix) != min(n, total) {
					t.Fatalf("prefix %d: %d schedules of %d, err %v; ReadLog read %d", n, len(prefix), total, err, len(schedules))
				}
				if n == 1 && !reflect.DeepEqual(prefix[0], schedules[0]) {
					t.Fatalf("prefix 1: first schedule differs from ReadLog's")
				}
			}
		}
		for i, events := range schedules {
			for j, ev := range events {
				if ev.Entry != j || ev.Type == "" {
					t.Fatalf("schedule %d event %d: %+v", i+1, j, ev)
				}
				if ev.Type == bridge.TypeAnnounce && (ev.Name == "" || ev.Machine == "" || ev.Payload == nil) {
					t.Fatalf("schedule %d: announce without name, machine or payload: %+v", i+1, ev)
				}
			}
			for _, tc := range []string{"tcFuzz", "tcUnfencedAckCounterexample"} {
				tr, err := bridge.Convert(events, traces.Origin{Kind: bridge.OriginKind, Schedule: i + 1}, tc)
				if err != nil {
					if !errors.Is(err, bridge.ErrBadObservation) && !errors.Is(err, bridge.ErrNoObservations) {
						t.Fatalf("conversion refusal %v wraps neither ErrBadObservation nor ErrNoObservations", err)
					}
					continue
				}
				if tr.Expect.DivergesAt >= len(tr.Steps) {
					t.Fatalf("diverges_at %d with %d steps", tr.Expect.DivergesAt, len(tr.Steps))
				}
			}
		}
	})
}
