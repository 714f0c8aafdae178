package observe

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// Finding is an oracle's verdict that the observed history breaks the model: where, and in the
// oracle's own words.
type Finding struct {
	// Oracle is "model" (the Go reference model), "p" (the P spec monitors) or "log" (a
	// malformed event that Check, going on past findings, left out).
	Oracle string
	// Step is the index of the first step the oracle refuses (for an event log, the event's
	// position in commit order, from 0), -1 when it names no step.
	Step int
	// Seq and Line are the refused event's sequence number and line in its log (0 for a trace).
	Seq  int64
	Line int
	// Message says what is wrong.
	Message string
	// Window is a trace of the events that matter to the finding (the rows and tokens involved,
	// back to their creation, and the latest events before it), for explain and replay; nil when
	// the finding names no event. WindowReproduces says whether the model refuses the window's
	// last step on its own; WindowErr why no window could be made.
	Window           *traces.Trace
	WindowReproduces bool
	WindowErr        error
}

func (f *Finding) String() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s oracle: event %d (line %d, seq %d): %s", f.Oracle, f.Step, f.Line, f.Seq, f.Message)
	}
	if f.Step >= 0 {
		return fmt.Sprintf("%s oracle: step %d: %s", f.Oracle, f.Step, f.Message)
	}
	return fmt.Sprintf("%s oracle: %s", f.Oracle, f.Message)
}

// CheckModel steps the Go reference model through t in commit order (models.RunTrace, the
// correct store's configuration under t's profile) and returns the first step whose observed result differs from
// the model's, or at which the model cannot go on (a step the model refuses as impossible, such as
// a second fetch by a worker whose first is unhandled); nil when the model agrees with every
// observed result. t.Final is compared too when present. A trace the store recorded (origin
// observed) is checked with DefaultLateWakes, as Check does. It is an error only for a nil trace.
func CheckModel(t *traces.Trace) (*Finding, error) {
	if t == nil {
		return nil, errors.New("observe: CheckModel: nil trace")
	}
	cfg := models.Config{Profile: t.Expect.Profile}
	if t.Origin.Kind == traces.OriginObserved {
		cfg.LateWakes = lateWakeTicks(0)
	}
	results, final, err := models.RunTrace(cfg, t)
	for i, got := range results {
		want := t.Steps[i].Result
		if !cmp.Equal(want, got, cmpopts.EquateEmpty()) {
			when := fmt.Sprintf("t=%d", t.Steps[i].At)
			if t.Origin.Kind == traces.OriginObserved {
				when = showTicks(t.Steps[i].At)
			}
			return &Finding{Oracle: "model", Step: i, Message: fmt.Sprintf("%s at %s: the store observed %s, the model gives %s",
				models.DescribeOp(t.Steps[i].Op, t.Steps[i].Args), when, show(want), show(got))}, nil
		}
	}
	if err != nil {
		if errors.Is(err, models.ErrMalformed) {
			return &Finding{Oracle: "model", Step: len(results), Message: fmt.Sprintf("the model cannot take the observed step: %v", err)}, nil
		}
		return nil, fmt.Errorf("observe: CheckModel: %w", err)
	}
	if t.Final != nil {
		want := *t.Final
		traces.Canonicalize(&want)
		if d := cmp.Diff(want, final, cmpopts.EquateEmpty()); d != "" {
			return &Finding{Oracle: "model", Step: -1, Message: "the final state differs (-observed +model):\n" + d}, nil
		}
	}
	return nil, nil
}

// show renders a result compactly as JSON.
func show(r traces.Result) string {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Sprintf("%+v", r)
	}
	return string(b)
}
