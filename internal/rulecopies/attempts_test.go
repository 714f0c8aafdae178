package rulecopies_test

import (
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/models"
)

// TestAttemptsCopiesAgree evaluates the Go copies of the attempts rule (the attempt a failed
// delivery counts as: the stored count on the leased path, where the lease counted it; stored + 1
// on the leaseless path, where nothing has) on every stored count a fetched message can carry
// (leased: 1 to max_attempts; leaseless: 0 to max_attempts-1), and fails at the first
// disagreement, naming the copies and the case. The rule has no profile choice. The P model's
// copy (EffectiveAttempt in models/p/PSrc/Rules.p) is not evaluated here.
func TestAttemptsCopiesAgree(t *testing.T) {
	const maxAttempts = 3
	for _, path := range []actordelivery.Path{actordelivery.PathLeased, actordelivery.PathLeaseless} {
		leaseless := path == actordelivery.PathLeaseless
		lo, hi := 1, maxAttempts
		if leaseless {
			lo, hi = 0, maxAttempts-1
		}
		for stored := lo; stored <= hi; stored++ {
			want := stored
			if leaseless {
				want = stored + 1
			}
			copies := []struct {
				name string
				got  int
			}{
				{"actordelivery.EffectiveAttempts (actordelivery/consumer.go)", actordelivery.EffectiveAttempts(stored, path)},
				{"models.CorrectAttempts (models/config.go)", models.CorrectAttempts(stored, leaseless)},
			}
			for _, c := range copies {
				if c.got != want {
					t.Fatalf("%s disagrees on the %s path, stored %d of max %d: %d, want %d", c.name, path, stored, maxAttempts, c.got, want)
				}
			}
		}
	}
}
