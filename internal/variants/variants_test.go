package variants

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestCatalogue checks the table's own rules: unique names, a doc line each, P test cases that
// are counterexamples, and the hunted/observed reasons only on broken rows.
func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range All() {
		if seen[r.Name] {
			t.Errorf("%s is listed twice", r.Name)
		}
		seen[r.Name] = true
		if r.Doc == "" {
			t.Errorf("%s has no doc line", r.Name)
		}
		if r.PTestCase != "" && !strings.HasSuffix(r.PTestCase, "Counterexample") {
			t.Errorf("%s: P test case %q is not a counterexample", r.Name, r.PTestCase)
		}
		if r.Kind != Broken && (r.NotHunted != "" || r.NotObserved != "" || r.PTestCase != "" || r.PVariant != "") {
			t.Errorf("%s is %s but carries a broken variant's columns", r.Name, r.Kind)
		}
		if r.Kind == Broken && r.Part == "" && !r.OnModel {
			t.Errorf("%s is broken but names no brokenstore part", r.Name)
		}
		if r.PVariant != "" && r.PVariant != r.Name {
			t.Errorf("%s: P variant %q differs from the name; the trace's expect.variant is the name", r.Name, r.PVariant)
		}
	}
}

// TestModelOnlyCounterexamples: each is a counterexample no catalogue row names, with a monitor.
func TestModelOnlyCounterexamples(t *testing.T) {
	rows := ByPTestCase()
	for _, m := range ModelOnlyCounterexamples() {
		if !strings.HasSuffix(m.PTestCase, "Counterexample") || m.Monitor == "" || m.Doc == "" {
			t.Errorf("%+v: want a counterexample's name, its monitor and a doc line", m)
		}
		if v, ok := rows[m.PTestCase]; ok {
			t.Errorf("%s is both model-only and variant %s's", m.PTestCase, v)
		}
		if !IsModelOnly(m.PTestCase) {
			t.Errorf("IsModelOnly(%s) = false", m.PTestCase)
		}
	}
	if IsModelOnly("tcUnfencedAckCounterexample") {
		t.Error("a variant's counterexample reads as model-only")
	}
}

// TestLocateEveryRow resolves every row's Go function and SQL statement in the repository's
// sources, so a rename in actordelivery fails here rather than in `pconform explain`.
func TestLocateEveryRow(t *testing.T) {
	src := os.DirFS("../..")
	for _, r := range All() {
		for _, sym := range []string{r.GoFunc, r.SQLSymbol()} {
			if sym == "" {
				continue
			}
			loc, err := Locate(src, sym)
			if err != nil {
				t.Errorf("%s: %v", r.Name, err)
				continue
			}
			if !strings.HasPrefix(loc, "actordelivery/") || !strings.Contains(loc, ".go:") {
				t.Errorf("%s: %s is at %q, want actordelivery/<file>.go:<line>", r.Name, sym, loc)
			}
		}
	}
	if _, err := Locate(src, "actordelivery.(*Consumer).noSuchMethod"); !errors.Is(err, ErrNoSymbol) {
		t.Errorf("an unknown method: err = %v, want ErrNoSymbol", err)
	}
}
