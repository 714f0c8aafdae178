package main

import (
	"slices"
	"testing"

	"github.com/pconform/pconform/internal/targets"
)

// TestEfficacyVariants: the efficacy table observes every broken variant of the registry but the
// ones notObserved names, and notObserved names only variants the registry has, each with a reason,
// so a variant added to the registry is in the table until someone says why it cannot be.
func TestEfficacyVariants(t *testing.T) {
	broken := targets.BrokenVariants()
	for v, why := range notObserved {
		if !slices.Contains(broken, v) {
			t.Errorf("notObserved names %q, which is not a broken variant of the registry (%v)", v, broken)
		}
		if why == "" {
			t.Errorf("notObserved gives no reason for %q", v)
		}
	}
	observed := efficacyVariants()
	for _, v := range broken {
		_, skipped := notObserved[v]
		if in := slices.Contains(observed, v); in == skipped {
			t.Errorf("variant %q: in the efficacy table %v, in notObserved %v; want exactly one", v, in, skipped)
		}
	}
}
