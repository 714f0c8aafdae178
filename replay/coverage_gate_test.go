package replay_test

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/pconform/pconform/traces"
)

// Coverage counts, over a set of traces, how often each operation was expected to end in each
// outcome: an error kind, an action (with "+duplicate" when the delivery found the id present),
// "duplicate", "message" or "no-message", "claimed" or "none", "redrives" or "none", "affected" or
// "none", else "ok".
type Coverage map[traces.Op]map[string]int

// OutcomeLabel is the coverage cell a step's expected result falls in.
func OutcomeLabel(s traces.Step) string {
	r := s.Result
	results := traces.Spec[s.Op].Results
	switch {
	case r.Err != "":
		return r.Err
	case r.Action != "" && r.Duplicate:
		return r.Action + "+duplicate"
	case r.Action != "":
		return r.Action
	case r.Duplicate:
		return "duplicate"
	case slices.Contains(results, "message") && r.Message == nil:
		return "no-message"
	case slices.Contains(results, "message"):
		return "message"
	case slices.Contains(results, "claimed") && len(r.Claimed) == 0:
		return "none"
	case slices.Contains(results, "claimed"):
		return "claimed"
	case slices.Contains(results, "redrives") && len(r.Redrives) == 0:
		return "none"
	case slices.Contains(results, "redrives"):
		return "redrives"
	case slices.Contains(results, "affected") && r.Affected == 0:
		return "none"
	case slices.Contains(results, "affected"):
		return "affected"
	}
	return "ok"
}

// CoverageOf counts the outcomes of every step of trs.
func CoverageOf(trs []*traces.Trace) Coverage {
	c := Coverage{}
	for _, t := range trs {
		for _, s := range t.Steps {
			if c[s.Op] == nil {
				c[s.Op] = map[string]int{}
			}
			c[s.Op][OutcomeLabel(s)]++
		}
	}
	return c
}

// Missing lists what the traces never exercise: every operation, every consumer_handle action and
// every publisher_deliver action (with or without duplicate) must occur at least once. A wake and
// a poll tick are the exceptions: only a waiting consumer records one, the P model's wakes are
// spec events (WakeFollowsCommit), not observations, so no checker trace has one; the
// hand-written wake-after-commit.json and wake-poll-tick.json replay them (TestSymbolPathsAgree,
// TestRecordedHistory).
func (c Coverage) Missing() []string {
	var missing []string
	for _, op := range traces.Ops {
		// A consumer_effects_batch commits an effect only a broken consumer owes, so only
		// counterexamples hold one, and a store replays them to a divergence, not a match
		// (TestBatchTraces, TestOutsideFoldTraces).
		if len(c[op]) == 0 && op != traces.OpWake && op != traces.OpPollTick && op != traces.OpConsumerEffectsBatch {
			missing = append(missing, string(op))
		}
	}
	actions := map[traces.Op][]string{
		traces.OpConsumerHandle:   {traces.ActionAcked, traces.ActionRetried, traces.ActionDeadLettered, traces.ActionLeaseLost, traces.ActionIdle},
		traces.OpPublisherDeliver: {traces.ActionDelivered, traces.ActionClaimLost, traces.ActionCommitFailed, traces.ActionCrashed},
	}
	for _, op := range []traces.Op{traces.OpConsumerHandle, traces.OpPublisherDeliver} {
		for _, a := range actions[op] {
			if c[op][a]+c[op][a+"+duplicate"] == 0 {
				missing = append(missing, fmt.Sprintf("%s -> %s", op, a))
			}
		}
	}
	return missing
}

// String renders the table: one row per operation (in traces.Ops order), its cells sorted.
func (c Coverage) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "op\tsteps\toutcomes")
	for _, op := range traces.Ops {
		labels := make([]string, 0, len(c[op]))
		total := 0
		for l, n := range c[op] {
			labels = append(labels, l)
			total += n
		}
		slices.Sort(labels)
		cells := make([]string, len(labels))
		for i, l := range labels {
			cells[i] = fmt.Sprintf("%s=%d", l, c[op][l])
		}
		fmt.Fprintf(w, "%s\t%d\t%s\n", op, total, strings.Join(cells, " "))
	}
	w.Flush()
	return b.String()
}
