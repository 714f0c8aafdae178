package bridge

import (
	"errors"
	"fmt"
	"os"

	"github.com/pconform/pconform/traces"
)

// ConvertLogFile converts one checker log file, verbose or bug (the shape is detected), into
// traces for testCase: one per schedule that announced observations, in schedule order. A bug
// log counts as schedule 1. The origins carry the kind and the test case only, since a log does
// not say which command or model made it. Errors are those of [ReadLog] and [Convert], each
// naming path; a log without any observation is an error wrapping [ErrNoObservations].
func ConvertLogFile(path string, testCase string) ([]*traces.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	defer f.Close()
	schedules, _, err := ReadLog(f)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	var out []*traces.Trace
	for i, events := range schedules {
		tr, err := Convert(events, traces.Origin{Kind: OriginKind, TestCase: testCase, Schedule: i + 1}, testCase)
		if errors.Is(err, ErrNoObservations) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w (%s)", err, path)
		}
		out = append(out, tr)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bridge: %w in any of %d schedule(s) (%s)", ErrNoObservations, len(schedules), path)
	}
	return out, nil
}
