package conformtest

import (
	"fmt"
	"slices"
	"strings"

	bugreach "github.com/pconform/pconform/internal/reach"
	"github.com/pconform/pconform/traces"
)

// replacedInfix joins a replacement's name to the counterexample it stands in for
// (`pconform profile corpus`: <original>-replaced-s<seed>-<schedule>).
const replacedInfix = "-replaced-"

// coveredBy says which committed trace the kit runs that reaches the bug of tr, a counterexample
// the profile moves off its bug's path: its own replacement in the profile's corpus first, then
// any trace of the same variant that reaches the bug under the profile (a committed
// counterexample under the default profile, or a profile corpus's replacement for the same
// choices). With none, it says how to make one.
func (k *kit) coveredBy(tr *traces.Trace) string {
	var cands []*traces.Trace
	for _, c := range k.all {
		if c == tr || c.Expect.Variant != tr.Expect.Variant {
			continue
		}
		if !c.Expect.Profile.IsDefault() && !sameChoices(c.Expect.Profile, k.c.Profile) {
			continue
		}
		cands = append(cands, c)
	}
	// Its own replacement first, then the other replacements, then the rest, each in path order.
	rank := func(c *traces.Trace) int {
		switch {
		case strings.HasPrefix(c.Name, tr.Name+replacedInfix):
			return 0
		case !c.Expect.Profile.IsDefault():
			return 1
		}
		return 2
	}
	slices.SortStableFunc(cands, func(a, b *traces.Trace) int { return rank(a) - rank(b) })
	for _, c := range cands {
		if v, err := bugreach.Exercised(c, k.c.Profile, -1); err == nil && v.Reached {
			where := "variant/" + c.Expect.Variant + "/" + c.Name
			if !c.Expect.Profile.IsDefault() {
				where = "variant/" + c.Expect.Variant + "/profile/" + c.Expect.Profile.Name + "/" + c.Name
			}
			if rank(c) == 0 {
				return fmt.Sprintf("its replacement %s (subtest %s) reaches the bug under this profile", c.Name, where)
			}
			return fmt.Sprintf("its bug is covered by %s (subtest %s), which reaches it under this profile", c.Name, where)
		}
	}
	return fmt.Sprintf("no committed trace reaches the bug of %s under this profile: pconform profile corpus PROFILE makes a replacement, or says why the bug cannot happen under it", tr.Expect.Variant)
}
