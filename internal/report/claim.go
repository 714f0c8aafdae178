package report

import (
	"fmt"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Claim is what a trace claims a replay against one target will show, read from its expect
// block (see docs/trace-format.md, "What a trace claims"):
//
//   - a trace without a variant records the correct store: the correct targets ("store", "model")
//     match it;
//   - a trace with expect.variant V records V's behaviour, bug included: target V matches it, and a
//     correct target refuses the bug at step expect.diverges_at (or, with diverges_at -1, somewhere
//     up to the final snapshot);
//   - about any other target a trace claims nothing.
type Claim int

const (
	// ClaimNone: the trace says nothing about this target.
	ClaimNone Claim = iota
	// ClaimMatch: the target must match the trace.
	ClaimMatch
	// ClaimRefuse: the target is the correct store (or model) and must refuse the recorded bug at
	// the predicted step.
	ClaimRefuse
)

// ClaimFor is what t claims about a replay against target.
func ClaimFor(t *traces.Trace, target string) Claim {
	switch {
	case t.Expect.Variant == "" && targets.IsCorrect(target):
		return ClaimMatch
	case t.Expect.Variant != "" && t.Expect.Variant == target:
		return ClaimMatch
	case t.Expect.Variant != "" && targets.IsCorrect(target):
		return ClaimRefuse
	}
	return ClaimNone
}

// Judgement is a verdict read against the trace's claim.
type Judgement struct {
	Claim Claim
	// AsClaimed is true when the verdict is what the trace claims, and for ClaimNone whenever the
	// run was conclusive (a trace says nothing about a variant it does not record, so how that
	// variant does is no finding): no finding.
	AsClaimed bool
	// Summary says so in one line, for a person.
	Summary string
}

// Judge reads v, a replay of t against target, against what t claims. An inconclusive verdict is
// never as claimed.
func Judge(t *traces.Trace, target string, v replay.Verdict) Judgement {
	j := Judgement{Claim: ClaimFor(t, target)}
	violates := ""
	if p := t.Expect.Violates; p != "" {
		violates = fmt.Sprintf("; the bug violates: %s", PlainProperty(p))
	}
	at := func() string {
		if v.Step == replay.FinalStep {
			return "the final snapshot"
		}
		return fmt.Sprintf("step #%d", v.Step)
	}
	predicted := "the final snapshot"
	if d := t.Expect.DivergesAt; d >= 0 {
		predicted = fmt.Sprintf("step #%d", d)
	}
	switch {
	case v.Outcome == replay.Inconclusive:
		j.Summary = fmt.Sprintf("inconclusive: %s cannot run the trace to its end: %s", target, v.Reason)
	case j.Claim == ClaimMatch && v.Outcome == replay.Match && t.Expect.Variant != "":
		j.AsClaimed = true
		j.Summary = fmt.Sprintf("as recorded: %s reproduces the bug of variant %q (the correct store refuses it at %s)%s", target, t.Expect.Variant, predicted, violates)
	case j.Claim == ClaimMatch && v.Outcome == replay.Match:
		j.AsClaimed = true
		j.Summary = fmt.Sprintf("as recorded: %s matches the trace", target)
	case j.Claim == ClaimMatch:
		j.Summary = fmt.Sprintf("finding: %s diverges from the trace at %s, which it should match", target, at())
	case j.Claim == ClaimRefuse && v.Outcome == replay.Diverged && divergesAsPredicted(t, v):
		j.AsClaimed = true
		j.Summary = fmt.Sprintf("as predicted: the correct %s refuses the bug of variant %q at %s%s", correctNoun(target), t.Expect.Variant, at(), violates)
	case j.Claim == ClaimRefuse && v.Outcome == replay.Diverged:
		j.Summary = fmt.Sprintf("finding: the correct %s diverges at %s, but the trace predicts %s", correctNoun(target), at(), predicted)
	case j.Claim == ClaimRefuse:
		j.Summary = fmt.Sprintf("finding: the correct %s matches a trace of variant %q's bug; the trace predicts it refuses the bug at %s", correctNoun(target), t.Expect.Variant, predicted)
	case v.Outcome == replay.Match:
		j.AsClaimed = true
		j.Summary = fmt.Sprintf("no claim about this target: %s matches the trace, which %s", target, records(t))
	default:
		j.AsClaimed = true
		j.Summary = fmt.Sprintf("no claim about this target: %s diverges at %s from a trace that %s", target, at(), records(t))
	}
	return j
}

// records says whose behaviour t records, for a verdict about a target it makes no claim about.
func records(t *traces.Trace) string {
	if t.Expect.Variant == "" {
		return "records the correct store"
	}
	return fmt.Sprintf("records variant %q", t.Expect.Variant)
}

// divergesAsPredicted: at the predicted step, or, when the trace predicts no step (-1), anywhere.
func divergesAsPredicted(t *traces.Trace, v replay.Verdict) bool {
	return t.Expect.DivergesAt < 0 || v.Step == t.Expect.DivergesAt
}

func correctNoun(target string) string {
	if target == targets.Model {
		return "model"
	}
	return "store"
}
