package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/internal/modeltarget"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// shippedProfiles is the default profile, every profile of profiles/*.json and the examples'
// profiles (examples/*/profile.json).
func shippedProfiles(t *testing.T) []profile.Profile {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "profiles", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped profiles under profiles/ (%v)", err)
	}
	examples, err := filepath.Glob(filepath.Join("..", "examples", "*", "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, examples...)
	out := []profile.Profile{{Name: "default"}}
	for _, f := range files {
		p, err := profile.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// choiceTraces is the hand-written traces of traces/testdata/choices, each expected under a
// profile that changes one choice a store's own design settles.
func choiceTraces(t *testing.T) []*traces.Trace {
	t.Helper()
	files, err := traces.Walk(filepath.Join("..", "traces", "testdata", "choices"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no choice traces under traces/testdata/choices (%v)", err)
	}
	var out []*traces.Trace
	for _, f := range files {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

// everyAlternative is the profile with every switch at its alternative.
func everyAlternative(t *testing.T) profile.Profile {
	t.Helper()
	p := profile.Profile{Name: "every-alternative"}
	for _, c := range profile.Choices {
		if c.Switch() {
			if err := p.Set(c.Name, c.Values[1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p
}

// committedTraces is every committed trace: the P corpus (green and counterexamples), the
// hand-written ones, the hunted ones and the per-profile P corpora.
func committedTraces(t *testing.T) []*traces.Trace {
	t.Helper()
	var out []*traces.Trace
	for _, dir := range []string{"corpus", "testdata/good", "hunted", "profiles/*"} {
		names, err := fs.Glob(traces.Committed(), dir+"/*.json")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			data, err := fs.ReadFile(traces.Committed(), name)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := traces.Unmarshal(data, name)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tr)
		}
	}
	return out
}

// wrapped is WithProtocol under p over the reference model's store-level operations.
func wrapped(p profile.Profile) replay.Target {
	return adapter.WithProtocol(modeltarget.NewStoreOnly(models.Config{Profile: p}), p)
}

// TestWrapperAgreesWithModel holds WithProtocol's reference steps to the reference model's
// protocol steps under every shipped profile: every committed trace, re-expected by the model
// under the profile, must match step by step when run through the wrapper over the model's own
// store-level operations. Nothing but the wrapper differs between the two sides, so a divergence
// is the wrapper's. A failure names the profile choice the wrapper ignores when expecting the
// trace with that one choice flipped makes the divergent step match.
//
// Beside the shipped profiles it runs the profile of each choice trace (one choice changed) and
// the profile with every switch at its alternative, and it runs the choice traces too.
func TestWrapperAgreesWithModel(t *testing.T) {
	all := append(committedTraces(t), choiceTraces(t)...)
	profiles := shippedProfiles(t)
	for _, tr := range choiceTraces(t) {
		profiles = append(profiles, tr.Expect.Profile)
	}
	profiles = append(profiles, everyAlternative(t))
	for _, p := range profiles {
		t.Run(p.Name, func(t *testing.T) {
			ran := 0
			for _, tr := range all {
				if hasBatchStep(tr) {
					continue // WithProtocol has no batch steps yet
				}
				want, err := models.Reexpect(models.Config{Profile: p}, tr)
				if errors.Is(err, models.ErrUnfit) {
					continue // the steps mean nothing under p
				}
				if err != nil {
					t.Fatalf("%s: re-expecting under profile %s: %v", tr.Name, p.Name, err)
				}
				ran++
				v, err := replay.Run(context.Background(), want, wrapped(p), replay.Options{})
				if err != nil {
					t.Errorf("%s: the replay could not run: %v", tr.Name, err)
					continue
				}
				if v.Outcome != replay.Match {
					var b strings.Builder
					_ = v.Report(&b)
					t.Errorf("%s: the wrapper and the model disagree under profile %s: %s%s\n%s", tr.Name, p.Name, v, ignoredChoice(tr, p, v), b.String())
				}
			}
			if ran == 0 {
				t.Fatalf("no committed trace fits profile %s", p.Name)
			}
			t.Logf("%d traces agree", ran)
		})
	}
}

// ignoredChoice names the choice of p the wrapper does not honour: the one whose flip, in the
// model's expectation, makes the step where v diverged match. "" when no single flip does.
func ignoredChoice(tr *traces.Trace, p profile.Profile, v replay.Verdict) string {
	for _, c := range profile.Choices {
		if !c.Switch() {
			continue
		}
		have, _ := p.Value(c.Name)
		q := p
		other := c.Values[0]
		if have == other {
			other = c.Values[1]
		}
		if q.Set(c.Name, other) != nil {
			continue
		}
		want, err := models.Reexpect(models.Config{Profile: q}, tr)
		if err != nil {
			continue
		}
		w, err := replay.Run(context.Background(), want, wrapped(p), replay.Options{})
		if err == nil && passed(w, v) {
			return fmt.Sprintf("\nthe wrapper does not honour %s = %q: expected with %q, step %s matches", c.Name, have, other, stepName(v.Step))
		}
	}
	return ""
}

// passed reports whether verdict w got past the step where v diverged.
func passed(w, v replay.Verdict) bool {
	switch {
	case w.Outcome == replay.Match:
		return true
	case w.Outcome != replay.Diverged:
		return false
	case v.Step == replay.FinalStep:
		return false
	case w.Step == replay.FinalStep:
		return true
	}
	return w.Step > v.Step
}

func stepName(step int) string {
	if step == replay.FinalStep {
		return "final snapshot"
	}
	return fmt.Sprintf("#%d", step)
}

// TestChoiceTracesReplay replays each choice trace as written. Through the wrapper over a store
// that makes the trace's choice it matches; over a store that ignores the choice (the model under
// the default profile) it diverges, so the kit finds a store that does not do what its profile
// declares. Where the wrapper itself reads the choice (wrapperReads), a wrapper told the default
// over a store that makes the choice diverges too: the test fails if the wrapper ignores it.
func TestChoiceTracesReplay(t *testing.T) {
	// dead_letter_id: a delivery whose enqueue does not run reports duplicate from the snapshot.
	wrapperReads := map[string]bool{"dead_letter_id": true}
	for _, tr := range choiceTraces(t) {
		p := tr.Expect.Profile
		choice := p.Changed()[0].Choice
		t.Run(tr.Name, func(t *testing.T) {
			run := func(store, wrapper profile.Profile) replay.Verdict {
				t.Helper()
				v, err := replay.Run(context.Background(), tr, adapter.WithProtocol(
					modeltarget.NewStoreOnly(models.Config{Profile: store}), wrapper), replay.Options{})
				if err != nil {
					t.Fatalf("the replay could not run: %v", err)
				}
				return v
			}
			if v := run(p, p); v.Outcome != replay.Match {
				t.Errorf("under its profile %s: %s", p, v)
			}
			if v := run(profile.Profile{}, p); v.Outcome != replay.Diverged {
				t.Errorf("a store that ignores %s passes: %s", choice, v)
			}
			if wrapperReads[choice] {
				if v := run(p, profile.Profile{}); v.Outcome != replay.Diverged {
					t.Errorf("a wrapper that ignores %s passes: %s", choice, v)
				}
			}
		})
	}
}

// hasBatchStep reports whether tr holds a batch step (docs/semantics.md, "Batches"), which
// WithProtocol's reference steps do not cover yet.
func hasBatchStep(tr *traces.Trace) bool {
	for _, st := range tr.Steps {
		switch st.Op {
		case traces.OpConsumerFetchBatch, traces.OpConsumerHandleBatch, traces.OpConsumerEffectsBatch, traces.OpPublisherDeliverBatch:
			return true
		}
	}
	return false
}
