package bridge

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pconform/pconform/internal/variants"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// ObsPrefix starts the name of every observation event. An Announce of an event without it is
// not an observation and is skipped; one with it must be a known observation.
const ObsPrefix = "eObs"

// FinalEvent is the observation that carries the model's final state.
const FinalEvent = "eObsFinal"

// Sentinel errors of the conversion and the test-case mapping.
var (
	// ErrNoObservations reports a schedule that announced no observation at all, so there is no
	// trace to make of it.
	ErrNoObservations = errors.New("schedule announced no observations")
	// ErrUntraced reports a test case of which no trace can be made (see [Untraced]).
	ErrUntraced = errors.New("no trace of this test case")
	// ErrUnknownTestCase reports a counterexample test case whose broken variant the bridge does
	// not know.
	ErrUnknownTestCase = errors.New("unknown counterexample test case")
)

// CounterexampleSuffix ends the name of every test case that must find a bug.
const CounterexampleSuffix = "Counterexample"

// counterexampleVariants maps each counterexample test case to the broken variant whose
// behaviour its bug trace records: the P test cases of internal/variants.
var counterexampleVariants = variants.ByPTestCase()

// untracedTestCases are the green test cases whose executions the trace format cannot hold yet,
// each with the reason. The bridge runs them and judges their verdict as any other, and keeps no
// trace of them. The counterexamples of the same steps are internal/variants'
// ModelOnlyCounterexamples.
// None is left since the format has the batch steps.
var untracedTestCases = map[string]string{}

// Untraced reports whether testCase is a green test case of which the bridge keeps no trace, and
// why: the trace format has no op for some step it announces.
func Untraced(testCase string) (why string, ok bool) {
	why, ok = untracedTestCases[testCase]
	return why, ok
}

// UntracedTestCases lists the [Untraced] test cases, sorted.
func UntracedTestCases() []string {
	names := make([]string, 0, len(untracedTestCases))
	for n := range untracedTestCases {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Variant returns the variant a test case's traces describe: "" for a green test case (its name
// does not end in "Counterexample") and for a counterexample of a broken model machine
// (variants.ModelOnlyCounterexamples, of which no trace is made), the mapped variant name for a
// known counterexample, and an error wrapping [ErrUnknownTestCase] for any other counterexample.
func Variant(testCase string) (variant string, counterexample bool, err error) {
	if !IsCounterexample(testCase) {
		return "", false, nil
	}
	if variants.IsModelOnly(testCase) {
		return "", true, nil
	}
	v, ok := counterexampleVariants[testCase]
	if !ok {
		return "", true, fmt.Errorf("bridge: %w %q (known: %s)", ErrUnknownTestCase, testCase, strings.Join(knownCounterexamples(), ", "))
	}
	return v, true, nil
}

func knownCounterexamples() []string {
	names := make([]string, 0, len(counterexampleVariants))
	for n := range counterexampleVariants {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TraceName is the corpus name of a checker trace: <testcase>-s<seed>-<schedule>, then "-ok" for
// a green test case or "-bad" for a counterexample.
func TraceName(testCase string, seed int64, schedule int, counterexample bool) string {
	verdict := "ok"
	if counterexample {
		verdict = "bad"
	}
	return fmt.Sprintf("%s-s%d-%d-%s", testCase, seed, schedule, verdict)
}

// Convert turns the events of one schedule into a trace: each eObs* Announce becomes one step in
// log order, eObsFinal becomes the final state (nil when the schedule was cut short before it),
// and every other event is skipped. origin is recorded as given (origin.Schedule labels errors);
// testCase picks the variant (see [Variant]) and, with origin.Seed and origin.Schedule, the
// trace's name (see [TraceName]). Expect.DivergesAt is the index of the first step whose
// observation carries bug == true, -1 when none does; a green test case's trace with such a step
// is refused. For a counterexample, Expect.Violates is the first AssertionFailure's message (see
// [ViolatedProperty]): the property the P monitor found broken.
//
// Errors: a [*LogError] wrapping [ErrBadObservation] names the schedule, the entry, the event and
// the field of an observation that breaks the contract (unknown eObs event, missing, unexpected
// or mistyped field, an observation after eObsFinal, a trace that fails traces.Validate); an
// error wrapping [ErrNoObservations] or [ErrUnknownTestCase] as documented there.
func Convert(events []Event, origin traces.Origin, testCase string) (*traces.Trace, error) {
	return ConvertUnder(events, origin, testCase, profile.Profile{})
}

// ConvertUnder is [Convert] for a P project compiled under the semantic profile p: the trace's
// expect.profile is p, and it is validated as a trace of that profile.
func ConvertUnder(events []Event, origin traces.Origin, testCase string, p profile.Profile) (*traces.Trace, error) {
	variant, counterexample, err := Variant(testCase)
	if err != nil {
		return nil, err
	}
	if why, ok := Untraced(testCase); ok {
		return nil, fmt.Errorf("bridge: %w: %s: %s", ErrUntraced, testCase, why)
	}
	tr := &traces.Trace{
		Format: traces.Format,
		Name:   TraceName(testCase, origin.Seed, origin.Schedule, counterexample),
		Origin: origin,
		Expect: traces.Expect{Variant: variant, DivergesAt: -1, Profile: p},
		Steps:  []traces.Step{},
	}
	sched := origin.Schedule
	finalAt := -1 // entry of eObsFinal, -1 until seen
	observed := 0
	for _, ev := range events {
		if ev.Type == TypeAssertionFailure && counterexample && tr.Expect.Violates == "" {
			tr.Expect.Violates = ViolatedProperty(ev.Error)
		}
		if ev.Type != TypeAnnounce || !strings.HasPrefix(ev.Name, ObsPrefix) {
			continue
		}
		observed++
		bad := func(err error) error { return observationError(sched, ev, err) }
		if finalAt >= 0 {
			return nil, bad(fmt.Errorf("observation after %s (entry %d)", FinalEvent, finalAt))
		}
		if ev.Name == FinalEvent {
			snap, err := decodeFinal(ev.Payload)
			if err != nil {
				return nil, bad(err)
			}
			tr.Final = snap
			finalAt = ev.Entry
			continue
		}
		spec, ok := observations[ev.Name]
		if !ok {
			return nil, bad(fmt.Errorf("unknown observation event (known: %s, %s)", strings.Join(observationNames(), ", "), FinalEvent))
		}
		step, bug, err := decodeStep(spec, ev.Payload)
		if err != nil {
			return nil, bad(err)
		}
		if bug && tr.Expect.DivergesAt < 0 {
			if !counterexample {
				return nil, bad(fmt.Errorf("bug == true in green test case %s", testCase))
			}
			tr.Expect.DivergesAt = len(tr.Steps)
		}
		tr.Steps = append(tr.Steps, step)
	}
	if observed == 0 {
		return nil, &LogError{Schedule: sched, Entry: -1, Err: ErrNoObservations}
	}
	if err := traces.Validate(tr); err != nil {
		return nil, &LogError{Schedule: sched, Entry: -1, Err: fmt.Errorf("%w: trace %s: %w", ErrBadObservation, tr.Name, err)}
	}
	return tr, nil
}

// assertionPrefix starts every assertion message the checker logs, then comes the source
// position ("PSpec/Outbox.p:16:7 "), then the assertion's own message.
const assertionPrefix = "Assertion Failed: "

// ViolatedProperty turns the checker's failure message into the trace's expect.violates: the
// monitor's own words first, the P source position after them in parentheses. A message in any
// other shape (a liveness failure, say) is kept whole, trimmed.
func ViolatedProperty(msg string) string {
	msg = strings.TrimSpace(msg)
	rest, ok := strings.CutPrefix(msg, assertionPrefix)
	if !ok {
		return msg
	}
	pos, words, ok := strings.Cut(rest, " ")
	if !ok || !strings.Contains(pos, ".p:") || strings.TrimSpace(words) == "" {
		return strings.TrimSpace(rest)
	}
	return fmt.Sprintf("%s (%s)", strings.TrimSpace(words), pos)
}

func observationError(schedule int, ev Event, err error) error {
	le := &LogError{Schedule: schedule, Entry: ev.Entry, Event: ev.Name}
	var fe *fieldError
	if errors.As(err, &fe) {
		le.Field = fe.field
		le.Err = fmt.Errorf("%w: %s", ErrBadObservation, fe.msg)
	} else {
		le.Err = fmt.Errorf("%w: %w", ErrBadObservation, err)
	}
	return le
}
