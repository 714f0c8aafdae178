package properties

import (
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/variants"
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

// KnownIssues lists the known issues hunts avoid by default: none today. Two were found and
// fixed, and TestHuntKnownIssues keeps their reproductions as regression tests:
// split-commit-fails-duplicate (the model reported duplicate=false for a split delivery whose
// enqueue commit failed, while the store reported what the enqueue saw; fixed in the model) and
// batch-delivery-fault-claim-lost (a batch delivery whose commit failed or whose process crashed
// reported commit_failed or crashed for a row whose claim was lost, where the models said
// claim_lost; fixed in the store and its replay target).
func KnownIssues() []KnownIssue {
	return nil
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
