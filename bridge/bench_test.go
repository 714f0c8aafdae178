package bridge_test

import (
	"bytes"
	"testing"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/traces"
)

// BenchmarkReadAndConvert reads the real four-schedule green log and converts every schedule, the
// work RunChecker does per checker run besides waiting for the checker.
func BenchmarkReadAndConvert(b *testing.B) {
	data, err := readFixtureFile("green_verbose.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	schedules := 0
	for b.Loop() {
		logs, _, err := bridge.ReadLog(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		for i, events := range logs {
			if _, err := bridge.Convert(events, traces.Origin{Kind: bridge.OriginKind, Schedule: i + 1}, "tcBridgeGreen"); err != nil {
				b.Fatal(err)
			}
			schedules++
		}
	}
	b.ReportMetric(float64(schedules)/b.Elapsed().Seconds(), "schedules/s")
}
