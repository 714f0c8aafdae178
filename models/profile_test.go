package models

import (
	"strings"
	"testing"

	"github.com/pconform/pconform/profile"
)

// choiceProfiles returns one profile per choice of profile.Choices, with that choice alone at its
// alternative, and one with every choice at its alternative.
func choiceProfiles(t *testing.T) map[string]profile.Profile {
	t.Helper()
	out := map[string]profile.Profile{}
	var all profile.Profile
	for _, c := range profile.Choices {
		alt := "a wording of " + c.Name
		if c.Switch() {
			alt = c.Values[1]
		}
		var p profile.Profile
		if err := p.Set(c.Name, alt); err != nil {
			t.Fatal(err)
		}
		if err := all.Set(c.Name, alt); err != nil {
			t.Fatal(err)
		}
		out[c.Name] = p
	}
	out["every-alternative"] = all
	return out
}

// TestModelMatchesNaiveUnderProfiles holds the model to the naive model under every choice's
// alternative (one at a time, then all together), on fewer sequences than the default profile
// gets. Rerun one with
//
//	go test ./models/ -run 'TestModelMatchesNaiveUnderProfiles/CHOICE' -seed=N -runs=1
func TestModelMatchesNaiveUnderProfiles(t *testing.T) {
	runs := min(*runsFlag, 40)
	if testing.Short() {
		runs = min(runs, 10)
	}
	for name, p := range choiceProfiles(t) {
		t.Run(name, func(t *testing.T) {
			for i := range runs {
				seed := *seedFlag + uint64(i)
				if failure := compareUnderProfiles(seed, *stepsFlag, nil, nil, "", nil, p, p); failure != "" {
					t.Fatalf("profile %s, seed %d: %s\nrerun: go test ./models/ -run 'TestModelMatchesNaiveUnderProfiles/%s' -seed=%d -runs=1",
						p, seed, failure, name, seed)
				}
			}
		})
	}
}

// TestEveryChoiceIsObservable: for every choice, the model under its alternative must disagree with
// the naive model under the default profile on some generated sequence. So each choice changes
// something a caller sees, the generator reaches it, and the comparison above has teeth for it.
func TestEveryChoiceIsObservable(t *testing.T) {
	for name, p := range choiceProfiles(t) {
		t.Run(name, func(t *testing.T) {
			for i := range *runsFlag {
				seed := *seedFlag + uint64(i)
				if failure := compareUnderProfiles(seed, *stepsFlag, nil, nil, "", nil, p, profile.Profile{}); failure != "" {
					if !strings.Contains(failure, "differ") {
						t.Fatalf("seed %d: the comparison failed for another reason: %s", seed, failure)
					}
					return
				}
			}
			t.Fatalf("no sequence out of %d told the model under %s from the naive model under the default", *runsFlag, p)
		})
	}
}
