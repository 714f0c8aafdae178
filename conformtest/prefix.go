package conformtest

import (
	"context"
	"fmt"
	"slices"

	"github.com/pconform/pconform/internal/modeltarget"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// firstUnsupported is the index and operation of tr's first step the target declares
// unsupported; -1 and "" when it runs every step.
func (k *kit) firstUnsupported(tr *traces.Trace) (int, traces.Op) {
	for i, s := range tr.Steps {
		if !k.caps.Supports(s.Op) {
			return i, s.Op
		}
	}
	return -1, ""
}

// cut is tr's first n steps, with a final snapshot when final is true: the state after those
// steps, as the reference model expects it under tr's own profile (its columns declared unknown
// stay unknown). A variant trace keeps its variant and bug step; its final snapshot, when asked
// for, is left empty for Reexpect to fill.
func cut(tr *traces.Trace, n int, final bool) (*traces.Trace, error) {
	out := *tr
	out.Steps = slices.Clone(tr.Steps[:n])
	out.Final = nil
	if final {
		out.Final = &traces.Snapshot{}
		if tr.Final != nil {
			out.Final.Unknown = slices.Clone(tr.Final.Unknown)
		}
	}
	if !final || tr.Expect.Variant != "" {
		return &out, nil
	}
	re, err := models.Reexpect(modelConfig(tr.Expect.Profile), &out)
	if err != nil {
		return nil, fmt.Errorf("conformtest: expecting the state after the first %d steps of %s: %w", n, tr.Name, err)
	}
	return re, nil
}

// runnable is the part of tr the target runs: tr itself, or its steps before the first one the
// target does not support, with the state after them. stopped says where and why it stops, ""
// when it runs all of tr.
func (k *kit) runnable(tr *traces.Trace) (run *traces.Trace, stopped string, err error) {
	n, op := k.firstUnsupported(tr)
	if n < 0 {
		return tr, "", nil
	}
	stopped = fmt.Sprintf("replayed up to step #%d of %d (its first %d steps and the state after them matched); step #%d is %s, which the target does not support",
		n, len(tr.Steps), n, n, op)
	run, err = cut(tr, n, true)
	return run, stopped, err
}

// exercised reports whether counterexample tr reaches its bug under the kit's profile: the
// reference model under the profile, run on tr's steps, does what the broken variant did at every
// step before the bug's step (expect.diverges_at) and refuses the bug at that step. Otherwise the
// profile moves the run off the bug's path, or allows what the variant does, and why says which;
// the trace then checks nothing about the bug. Only tr's first n steps run (n < 0: all).
func (k *kit) exercised(tr *traces.Trace, n int) (ok bool, why string, err error) {
	bug := tr.Expect.DivergesAt
	if n >= 0 {
		if bug == replay.FinalStep || bug >= n {
			return false, fmt.Sprintf("the target stops at step #%d, before the bug's step %s", n, stepName(bug)), nil
		}
		if tr, err = cut(tr, n, false); err != nil {
			return false, "", err
		}
	}
	v, err := replay.Run(context.Background(), tr, modeltarget.New(modelConfig(k.c.Profile)), replay.Options{})
	switch {
	case err != nil:
		return false, "", fmt.Errorf("conformtest: running %s on the reference model under profile %s: %w", tr.Name, k.c.Profile.Name, err)
	case v.Outcome == replay.Diverged && v.Step == bug:
		return true, "", nil
	case v.Outcome == replay.Diverged && (bug == replay.FinalStep || (v.Step != replay.FinalStep && v.Step < bug)):
		return false, fmt.Sprintf("under this profile a correct store leaves the bug's path at step %s, before the bug's step %s", stepName(v.Step), stepName(bug)), nil
	}
	return false, fmt.Sprintf("under this profile a correct store does what broken variant %s does at the bug's step %s", tr.Expect.Variant, stepName(bug)), nil
}

// stepName is "#N", or "the final snapshot" for replay.FinalStep.
func stepName(step int) string {
	if step == replay.FinalStep {
		return "the final snapshot"
	}
	return fmt.Sprintf("#%d", step)
}
