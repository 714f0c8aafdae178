package properties

import (
	"slices"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/variants"
	"github.com/pconform/pconform/traces"
)

// KnownIssue is a divergence between the correct store and the reference model that the
// properties found and that is not fixed yet. Hunts avoid generating its steps unless
// HuntConfig.IncludeKnownIssues is set, so that a hunt for one bug is not stopped by another;
// a test replays each known issue's trace and fails once the two sides agree, so the entry
// is removed when the issue is fixed.
type KnownIssue struct {
	Name string
	// Description says where the store and the model disagree.
	Description string
	// matches reports whether c, after w, is a step of the issue.
	matches func(w *world, c *cmd) bool
}

// KnownIssues lists the known issues hunts avoid by default. The first issue the properties
// found (split-commit-fails-duplicate: the model reported duplicate=false for a split delivery
// whose enqueue commit failed, while the store reported what the enqueue saw) was fixed in the
// model, and TestHuntKnownIssues keeps its reproduction as a regression test.
func KnownIssues() []KnownIssue {
	return []KnownIssue{{
		Name: "batch-delivery-fault-claim-lost",
		Description: "publisher_deliver_batch with fault commit_fails or crash_between where a row's claim is not the " +
			"step's token: the model reports that row claim_lost (a single delivery's answer), the store commit_failed " +
			"(docs/semantics.md, \"Batch publish\": a commit failure releases every row of the batch) or, once the " +
			"batch's transaction committed nothing and the process crashed, crashed for every row",
		matches: func(w *world, c *cmd) bool {
			if c.op != traces.OpPublisherDeliverBatch || (c.args.Fault != traces.FaultCommitFails && c.args.Fault != traces.FaultCrashBetween) {
				return false
			}
			tok := w.modelToken(c.tok)
			rows := w.m.Snapshot().Outbox
			for _, id := range c.args.IDs {
				i := slices.IndexFunc(rows, func(o traces.OutboxRow) bool { return o.ID == id })
				if i < 0 || tok == 0 || rows[i].Token != tok || rows[i].State != traces.StatePending {
					return true
				}
			}
			return false
		},
	}}
}

// notHunted names the broken variants the property tests do not require a hunt to find, each
// with its reason (a measured one: in how many of TestHuntVariants' seeds a hunt finds it at the
// CI budget, and what it needs). It is the NotHunted column of internal/variants, empty today:
// every variant is found in 20 of 20 seeds. A hunt can be asked for any variant
// (HuntConfig.Variant, `pconform hunt --variant`).
var notHunted = func() map[string]string {
	out := map[string]string{}
	for _, r := range variants.All() {
		if r.NotHunted != "" {
			out[r.Name] = r.NotHunted
		}
	}
	return out
}()

// variantHarm is the invariant each broken variant's hunt must show broken (the Harm column of
// internal/variants); a variant without one is absent.
var variantHarm = func() map[string]Check {
	out := map[string]Check{}
	for _, r := range variants.All() {
		if r.Harm != "" {
			out[r.Name] = Check(r.Harm)
		}
	}
	return out
}()

// HuntedVariants lists the broken variants the property tests hunt and must find: every name in
// targets.BrokenVariants but those in notHunted.
func HuntedVariants() []string {
	var out []string
	for _, v := range targets.BrokenVariants() {
		if _, skip := notHunted[v]; !skip {
			out = append(out, v)
		}
	}
	return out
}
