package conformtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// reach is how far a verdict got: the number of steps that agreed, one more when the final
// snapshot was compared and differed, and one more again for a match.
func reach(v replay.Verdict, steps int) int {
	switch {
	case v.Outcome == replay.Match:
		return steps + 2
	case v.Step == replay.FinalStep:
		return steps + 1
	}
	return v.Step
}

// explain looks for the rule a divergence comes from: the choice of the profile which, set the
// other way, carries the target furthest past the step where it diverged (tr re-expected by the
// model under that profile, replayed with the same opts). It returns a sentence naming the rule, or "" when no single choice
// moves the divergence.
func (k *kit) explain(t *testing.T, tr *traces.Trace, v replay.Verdict, opts replay.Options) string {
	n := len(tr.Steps)
	best, bestReach := "", reach(v, n)
	for _, c := range profile.Choices {
		if !c.Switch() {
			continue // a wording shows in the diff itself
		}
		have, _ := k.c.Profile.Value(c.Name)
		other := c.Values[0]
		if have == other {
			other = c.Values[1]
		}
		q := k.c.Profile
		if err := q.Set(c.Name, other); err != nil {
			continue
		}
		want, err := models.Reexpect(modelConfig(q), tr)
		if err != nil {
			continue
		}
		w, err := replay.Run(context.Background(), want, k.target(t), opts)
		if err != nil || reach(w, n) <= bestReach {
			continue
		}
		bestReach = reach(w, n)
		how := "agrees throughout"
		switch {
		case w.Outcome != replay.Match && w.Step == replay.FinalStep:
			how = "agrees at every step"
		case w.Outcome != replay.Match:
			how = fmt.Sprintf("agrees up to step #%d", w.Step)
		}
		where := "the final snapshot"
		if v.Step != replay.FinalStep {
			where = fmt.Sprintf("step #%d", v.Step)
		}
		best = fmt.Sprintf("rule %s: the target follows %s = %q where the profile says %q: with it, the target %s, past %s (docs/semantics.md#%s: %s); declare it in the profile, or change the store",
			c.Name, c.Name, other, have, how, where, c.Anchor, c.Doc)
	}
	return best
}
