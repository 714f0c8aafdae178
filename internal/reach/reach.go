package reach

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pconform/pconform/internal/modeltarget"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Verdict says whether a counterexample reaches its bug under a profile.
type Verdict struct {
	// Reached is true when a correct store under the profile follows the variant up to the bug's
	// step and refuses the bug there.
	Reached bool
	// Why says, when not Reached, where the run leaves the bug's path or that the profile allows
	// what the variant does.
	Why string
	// Allowed is true when the run follows the bug's path and a correct store under the profile
	// does what the variant does at the bug's step: the profile permits the "bug".
	Allowed bool
}

// Exercised reports whether counterexample tr reaches its bug under p, running only tr's first
// n steps (n < 0: all; the caller cut the rest, an unsupported step say). Steps that do not fit
// p cut the run further, before the first of them.
func Exercised(tr *traces.Trace, p profile.Profile, n int) (Verdict, error) {
	if tr.Expect.Variant == "" {
		return Verdict{}, fmt.Errorf("reach: %s is no counterexample (expect.variant is empty)", tr.Name)
	}
	bug := tr.Expect.DivergesAt
	if n < 0 || n > len(tr.Steps) {
		n = len(tr.Steps)
	}
	cutAt := func(m int, why string) (Verdict, bool) {
		if bug == replay.FinalStep || bug >= m {
			return Verdict{Why: fmt.Sprintf("%s, before the bug's step %s", why, StepName(bug))}, true
		}
		return Verdict{}, false
	}
	if n < len(tr.Steps) {
		if v, done := cutAt(n, fmt.Sprintf("the replay is cut at step #%d", n)); done {
			return v, nil
		}
	}
	run := tr
	if n < len(tr.Steps) {
		run = prefix(tr, n)
	}
	if m := fits(run, p); m < n {
		if v, done := cutAt(m, fmt.Sprintf("its steps do not fit the profile from step #%d on", m)); done {
			return v, nil
		}
		run = prefix(tr, m)
	}
	v, err := replay.Run(context.Background(), run, modeltarget.New(models.Config{Profile: p}), replay.Options{})
	switch {
	case err != nil:
		return Verdict{}, fmt.Errorf("reach: running %s on the reference model under profile %s: %w", tr.Name, p.Name, err)
	case v.Outcome == replay.Diverged && v.Step == bug:
		return Verdict{Reached: true}, nil
	case v.Outcome == replay.Diverged && (bug == replay.FinalStep || (v.Step != replay.FinalStep && v.Step < bug)):
		return Verdict{Why: fmt.Sprintf("under this profile a correct store leaves the bug's path at step %s, before the bug's step %s", StepName(v.Step), StepName(bug))}, nil
	}
	return Verdict{Allowed: true, Why: fmt.Sprintf("under this profile a correct store does what broken variant %s does at the bug's step %s", tr.Expect.Variant, StepName(bug))}, nil
}

// Blame returns the settings of p (its changed switches, in table order) that take tr's bug away
// under p: each single one that, set back to the default while the rest of p stays, makes tr
// reach its bug; failing any, each pair that does so together. It is empty when no single choice
// or pair does, or when tr reaches its bug under p already.
func Blame(tr *traces.Trace, p profile.Profile) []profile.Setting {
	if v, err := Exercised(tr, p, -1); err != nil || v.Reached {
		return nil
	}
	var switches []profile.Setting
	for _, s := range p.Changed() {
		if c, _ := profile.Lookup(s.Choice); c.Switch() {
			switches = append(switches, s)
		}
	}
	reachedWithout := func(set ...profile.Setting) bool {
		try := p
		for _, s := range set {
			c, _ := profile.Lookup(s.Choice)
			if err := try.Set(s.Choice, c.DefaultValue()); err != nil {
				return false
			}
		}
		v, err := Exercised(tr, try, -1)
		return err == nil && v.Reached
	}
	var out []profile.Setting
	for _, s := range switches {
		if reachedWithout(s) {
			out = append(out, s)
		}
	}
	for i := 0; len(out) == 0 && i < len(switches); i++ {
		for _, t := range switches[i+1:] {
			if reachedWithout(switches[i], t) {
				out = append(out, switches[i], t)
			}
		}
	}
	return slices.CompactFunc(out, func(a, b profile.Setting) bool { return a == b })
}

// StepName is "#N", or "the final snapshot" for replay.FinalStep.
func StepName(step int) string {
	if step == replay.FinalStep {
		return "the final snapshot"
	}
	return fmt.Sprintf("#%d", step)
}

// prefix is tr's first n steps without a final snapshot.
func prefix(tr *traces.Trace, n int) *traces.Trace {
	out := *tr
	out.Steps = slices.Clone(tr.Steps[:n])
	out.Final = nil
	return &out
}

// fits is the number of tr's first steps that fit p: the longest prefix the reference model
// re-expects under it. Only a prefix of a fitting prefix fits, so bisection finds it.
func fits(tr *traces.Trace, p profile.Profile) int {
	lo, hi := 0, len(tr.Steps)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		_, err := models.Reexpect(models.Config{Profile: p}, prefix(tr, mid))
		if errors.Is(err, models.ErrUnfit) {
			hi = mid - 1
		} else {
			lo = mid
		}
	}
	return lo
}
