package conformtest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	bugreach "github.com/pconform/pconform/internal/reach"
	"github.com/pconform/pconform/models"
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

// plan is what the kit replays of tr: its expectation under the profile, cut before the first
// step the target does not support or, after that, the first step that does not fit the profile
// (models.ErrUnfit), with the state after the steps kept. n is where it is cut (-1: not cut) and
// stopped says where and why, "" when it is not cut. A trace whose first step does not fit is
// skipped.
func (k *kit) plan(t *testing.T, tr *traces.Trace) (want *traces.Trace, n int, stopped string) {
	t.Helper()
	n, op := k.firstUnsupported(tr)
	run := tr
	var err error
	if n >= 0 {
		stopped = fmt.Sprintf("step #%d is %s, which the target does not support", n, op)
		if run, err = cut(tr, n, true); err != nil {
			t.Fatal(err)
		}
	}
	want, err = k.expected(run)
	var unfit errNotUnderProfile
	if errors.As(err, &unfit) {
		m := k.fits(run)
		if m == 0 {
			t.Skipf("its steps do not fit profile %s: %v", k.c.Profile, unfit.err)
		}
		n, stopped = m, fmt.Sprintf("its steps do not fit profile %s from step #%d on: %v", k.c.Profile.Name, m, unfit.err)
		if run, err = cut(tr, m, true); err != nil {
			t.Fatal(err)
		}
		want, err = k.expected(run)
	}
	if err != nil {
		t.Fatal(err)
	}
	if stopped != "" {
		stopped = fmt.Sprintf("replayed up to step #%d of %d (its first %d steps and the state after them matched); %s", n, len(tr.Steps), n, stopped)
	}
	return want, n, stopped
}

// fits is the number of tr's first steps that fit the kit's profile: the longest prefix the
// reference model re-expects under it. A prefix of an unfit prefix is the only kind that can fit,
// so it is found by bisection.
func (k *kit) fits(tr *traces.Trace) int {
	lo, hi := 0, len(tr.Steps) // the first lo steps fit; the first hi+1 do not, or hi is all
	for lo < hi {
		mid := (lo + hi + 1) / 2
		c, err := cut(tr, mid, false)
		if err == nil {
			_, err = models.Reexpect(modelConfig(k.c.Profile), c)
		}
		if errors.Is(err, models.ErrUnfit) {
			hi = mid - 1
		} else {
			lo = mid
		}
	}
	return lo
}

// exercised reports whether counterexample tr reaches its bug under the kit's profile
// (reach.Exercised): the reference model under the profile, run on tr's steps, does what the
// broken variant did at every step before the bug's step (expect.diverges_at) and refuses the bug
// at that step. Otherwise the profile moves the run off the bug's path, or allows what the
// variant does, and why says which; the trace then checks nothing about the bug. Only tr's first
// n steps run (n < 0: all).
func (k *kit) exercised(tr *traces.Trace, n int) (ok bool, why string, err error) {
	v, err := bugreach.Exercised(tr, k.c.Profile, n)
	if err != nil {
		return false, "", fmt.Errorf("conformtest: %w", err)
	}
	return v.Reached, v.Why, nil
}
