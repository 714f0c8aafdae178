package replay

import (
	"strings"
	"testing"

	"github.com/pconform/pconform/traces"
)

func TestJudge(t *testing.T) {
	green := &traces.Trace{Name: "g", Expect: traces.Expect{DivergesAt: -1}, Steps: make([]traces.Step, 4)}
	bad := &traces.Trace{Name: "b", Expect: traces.Expect{Variant: TargetSplitWrite, DivergesAt: 2, Violates: "outbox row o1 completed but no message o1 was ever enqueued"}, Steps: make([]traces.Step, 4)}
	match := Verdict{Outcome: Match, Step: 4}
	at := func(i int) Verdict { return Verdict{Outcome: Diverged, Step: i} }
	cases := []struct {
		name   string
		trace  *traces.Trace
		target string
		v      Verdict
		claim  Claim
		ok     bool
		says   string
	}{
		{"green trace, store matches", green, TargetStore, match, ClaimMatch, true, "as recorded: store matches"},
		{"green trace, store diverges", green, TargetStore, at(1), ClaimMatch, false, "finding: store diverges from the trace at step #1"},
		{"green trace, model diverges at the final snapshot", green, TargetModel, at(FinalStep), ClaimMatch, false, "at the final snapshot"},
		{"green trace, a variant diverges: no claim", green, TargetRawAttempts, at(1), ClaimNone, false, "makes no claim"},
		{"green trace, a variant matches: no claim", green, TargetRawAttempts, match, ClaimNone, true, "makes no claim"},
		{"counterexample, its variant reproduces it", bad, TargetSplitWrite, match, ClaimMatch, true, `reproduces the bug of variant "split-write"`},
		{"counterexample, its variant diverges", bad, TargetSplitWrite, at(3), ClaimMatch, false, "which it should match"},
		{"counterexample, store refuses at the predicted step", bad, TargetStore, at(2), ClaimRefuse, true, "as predicted: the correct store refuses the bug of variant \"split-write\" at step #2; the bug violates: outbox row o1"},
		{"counterexample, model refuses at the predicted step", bad, TargetModel, at(2), ClaimRefuse, true, "the correct model refuses"},
		{"counterexample, store diverges elsewhere", bad, TargetStore, at(1), ClaimRefuse, false, "diverges at step #1, but the trace predicts step #2"},
		{"counterexample, store matches", bad, TargetStore, match, ClaimRefuse, false, "matches a trace of variant"},
		{"counterexample, another variant diverges", bad, TargetRawAttempts, at(2), ClaimNone, false, "makes no claim"},
		{"inconclusive is never as claimed", green, TargetStore, Verdict{Outcome: Inconclusive, Step: 1, Reason: "unsupported"}, ClaimMatch, false, "inconclusive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := Judge(tc.trace, tc.target, tc.v)
			if j.Claim != tc.claim || j.AsClaimed != tc.ok {
				t.Errorf("Judge = claim %d as-claimed %t, want claim %d as-claimed %t (%s)", j.Claim, j.AsClaimed, tc.claim, tc.ok, j.Summary)
			}
			if !strings.Contains(j.Summary, tc.says) {
				t.Errorf("summary %q lacks %q", j.Summary, tc.says)
			}
		})
	}
}
