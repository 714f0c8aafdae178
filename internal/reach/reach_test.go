package reach_test

import (
	"io/fs"
	"slices"
	"testing"

	"github.com/pconform/pconform/internal/reach"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

func committed(t *testing.T, name string) *traces.Trace {
	t.Helper()
	data, err := fs.ReadFile(traces.Committed(), name)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := traces.Unmarshal(data, name)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestExercised checks the verdicts on committed counterexamples under the default profile
// and under one where a lease is live at its end time.
func TestExercised(t *testing.T) {
	var live profile.Profile
	if err := live.Set("lease_at_until", "live"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		trace            string
		p                profile.Profile
		reached, allowed bool
		blame            []string
	}{
		{"corpus/tcUnfencedAckCounterexample-s1-2-bad.json", profile.Profile{}, true, false, nil},
		// The second worker's fetch comes at the first lease's end time: no takeover under live.
		{"corpus/tcUnfencedAckCounterexample-s1-2-bad.json", live, false, false, []string{"lease_at_until"}},
		{"hunted/hunt-unfenced-ack-seed1.json", live, true, false, nil},
		// The variant's bug is what a store under live does.
		{"hunted/hunt-lease-boundary-seed1.json", live, false, true, []string{"lease_at_until"}},
	} {
		tr := committed(t, c.trace)
		v, err := reach.Exercised(tr, c.p, -1)
		if err != nil {
			t.Fatal(err)
		}
		if v.Reached != c.reached || v.Allowed != c.allowed || (!v.Reached && v.Why == "") {
			t.Errorf("%s under %s: %+v, want reached %v, allowed %v and a reason when not reached", c.trace, c.p, v, c.reached, c.allowed)
		}
		var blamed []string
		for _, s := range reach.Blame(tr, c.p) {
			blamed = append(blamed, s.Choice)
		}
		if !slices.Equal(blamed, c.blame) {
			t.Errorf("%s under %s: Blame %v, want %v", c.trace, c.p, blamed, c.blame)
		}
	}
}

// TestExercisedCut: a bug at or past the cut is not reached.
func TestExercisedCut(t *testing.T) {
	tr := committed(t, "corpus/tcUnfencedAckCounterexample-s1-2-bad.json")
	v, err := reach.Exercised(tr, profile.Profile{}, tr.Expect.DivergesAt)
	if err != nil || v.Reached {
		t.Errorf("cut at the bug's step: %+v, %v; want not reached", v, err)
	}
	if _, err := reach.Exercised(committed(t, "corpus/tcCheckpoints-s1-1-ok.json"), profile.Profile{}, -1); err == nil {
		t.Error("a green trace: want an error")
	}
}
