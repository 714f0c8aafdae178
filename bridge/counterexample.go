package bridge

import (
	"context"
	"fmt"

	"github.com/pconform/pconform/profile"
)

// CheckCounterexample runs the counterexample test case tc on the compiled project
// cfg.ProjectDir by its exact name (`p check -tc tc -s cfg.CounterexampleSchedules --seed
// cfg.Seed`, no -v), the project compiled under profile p. The run stops at its first buggy
// schedule; its trace is the broken variant's, expected under p, with expect.diverges_at at the
// first step the variant flags and origin.model the project's [ModelHash]. An Outcome without a
// bug is the budget run through with no monitor failing: under p the test case did not find its
// bug. It refuses a green test case, one of a broken model machine and an untraced one (no
// trace can be made of them); errors wrap [ErrChecker] for a run that goes wrong and the
// conversion's errors.
func CheckCounterexample(ctx context.Context, cfg Config, tc string, p profile.Profile) (Outcome, error) {
	cfg = cfg.filled()
	variant, counterexample, err := Variant(tc)
	switch {
	case err != nil:
		return Outcome{}, err
	case !counterexample:
		return Outcome{}, fmt.Errorf("bridge: %w: %s is a green test case, not a counterexample", ErrChecker, tc)
	case variant == "":
		return Outcome{}, fmt.Errorf("bridge: %w: %s breaks a machine of the model, not the store: no trace is made of it", ErrChecker, tc)
	}
	model, err := ModelHash(cfg.ProjectDir)
	if err != nil {
		return Outcome{}, err
	}
	o, err := checkCase(ctx, cfg, tc, p, cfg.CounterexampleSchedules)
	if err != nil || !o.Bug {
		return o, err
	}
	if o.Trace.Expect.DivergesAt < 0 {
		return o, fmt.Errorf("bridge: %w: %s: the bug schedule flags no step with bug == true, so its trace cannot say where the variant diverges", ErrChecker, o.Command)
	}
	o.Trace.Origin.Model = model
	return o, nil
}
