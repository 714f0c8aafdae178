package replay_test

import (
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

func TestJudge(t *testing.T) {
	green := &traces.Trace{Name: "g", Expect: traces.Expect{DivergesAt: -1}, Steps: make([]traces.Step, 4)}
	bad := &traces.Trace{Name: "b", Expect: traces.Expect{Variant: targets.SplitWrite, DivergesAt: 2, Violates: "outbox row o1 completed but no message o1 was ever enqueued"}, Steps: make([]traces.Step, 4)}
	match := replay.Verdict{Outcome: replay.Match, Step: 4}
	at := func(i int) replay.Verdict { return replay.Verdict{Outcome: replay.Diverged, Step: i} }
	cases := []struct {
		name   string
		trace  *traces.Trace
		target string
		v      replay.Verdict
		claim  report.Claim
		ok     bool
		says   string
	}{
		{"green trace, store matches", green, targets.Store, match, report.ClaimMatch, true, "as recorded: store matches"},
		{"green trace, store diverges", green, targets.Store, at(1), report.ClaimMatch, false, "finding: store diverges from the trace at step #1"},
		{"green trace, model diverges at the final snapshot", green, targets.Model, at(replay.FinalStep), report.ClaimMatch, false, "at the final snapshot"},
		{"green trace, a variant diverges: no claim", green, targets.RawAttempts, at(1), report.ClaimNone, true, "no claim about this target: raw-attempts diverges at step #1 from a trace that records the correct store"},
		{"green trace, a variant matches: no claim", green, targets.RawAttempts, match, report.ClaimNone, true, "no claim about this target"},
		{"counterexample, its variant reproduces it", bad, targets.SplitWrite, match, report.ClaimMatch, true, `reproduces the bug of variant "split-write"`},
		{"counterexample, its variant diverges", bad, targets.SplitWrite, at(3), report.ClaimMatch, false, "which it should match"},
		{"counterexample, store refuses at the predicted step", bad, targets.Store, at(2), report.ClaimRefuse, true, "as predicted: the correct store refuses the bug of variant \"split-write\" at step #2; the bug violates: outbox row o1"},
		{"counterexample, model refuses at the predicted step", bad, targets.Model, at(2), report.ClaimRefuse, true, "the correct model refuses"},
		{"counterexample, store diverges elsewhere", bad, targets.Store, at(1), report.ClaimRefuse, false, "diverges at step #1, but the trace predicts step #2"},
		{"counterexample, store matches", bad, targets.Store, match, report.ClaimRefuse, false, "matches a trace of variant"},
		{"counterexample, another variant diverges", bad, targets.RawAttempts, at(2), report.ClaimNone, true, `no claim about this target: raw-attempts diverges at step #2 from a trace that records variant "split-write"`},
		{"inconclusive without a claim is no pass", bad, targets.RawAttempts, replay.Verdict{Outcome: replay.Inconclusive, Step: 1, Reason: "unsupported"}, report.ClaimNone, false, "inconclusive"},
		{"inconclusive is never as claimed", green, targets.Store, replay.Verdict{Outcome: replay.Inconclusive, Step: 1, Reason: "unsupported"}, report.ClaimMatch, false, "inconclusive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := report.Judge(tc.trace, tc.target, tc.v)
			if j.Claim != tc.claim || j.AsClaimed != tc.ok {
				t.Errorf("Judge = claim %d as-claimed %t, want claim %d as-claimed %t (%s)", j.Claim, j.AsClaimed, tc.claim, tc.ok, j.Summary)
			}
			if !strings.Contains(j.Summary, tc.says) {
				t.Errorf("summary %q lacks %q", j.Summary, tc.says)
			}
		})
	}
}
