package models

import (
	"path/filepath"
	"testing"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// choiceTraces maps each hand-written trace of traces/testdata/choices to the choice it
// exercises: the one choice its profile changes.
var choiceTraces = map[string]string{
	"completed-claim-kept":            "completed_claim",
	"outbox-dead-letter-fence-silent": "outbox_dead_letter_fence",
	"processed-per-id":                "processed_scope",
	"dead-letter-id-free":             "dead_letter_id",
	"checkpoint-overwrites":           "checkpoint_save",
}

// TestChoiceTracesNeedTheirChoice: each choice trace is the model's own execution under its
// recorded profile, and under that profile with its choice back at the default the model gives a
// different result or final snapshot, at a step the choice governs. So a store (or a wrapper)
// that ignored the choice fails the trace.
func TestChoiceTracesNeedTheirChoice(t *testing.T) {
	files, err := traces.Walk(filepath.Join("..", "traces", "testdata", "choices"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		choice, ok := choiceTraces[tr.Name]
		if !ok {
			t.Fatalf("%s: no choice listed for trace %s", f, tr.Name)
		}
		seen[choice] = true
		t.Run(tr.Name, func(t *testing.T) {
			p := tr.Expect.Profile
			if ch := p.Changed(); len(ch) != 1 || ch[0].Choice != choice {
				t.Fatalf("profile %s changes %v, want %s alone", p, ch, choice)
			}
			re, err := Reexpect(Config{Profile: p}, tr)
			if err != nil {
				t.Fatal(err)
			}
			if at := firstChange(tr, re); at >= 0 {
				t.Fatalf("the model under %s differs from the trace at step %d", p, at)
			}
			c, _ := profile.Lookup(choice)
			q := p
			if err := q.Set(choice, c.DefaultValue()); err != nil {
				t.Fatal(err)
			}
			re, err = Reexpect(Config{Profile: q}, tr)
			if err != nil {
				t.Fatal(err)
			}
			at := firstChange(tr, re)
			if at < 0 {
				t.Fatalf("the trace is the same under %s: it does not exercise %s", q, choice)
			}
			where := "final"
			if at < len(tr.Steps) {
				where = string(tr.Steps[at].Op)
			}
			t.Logf("without %s the trace first differs at %s (step %d)", choice, where, at)
		})
	}
	for _, c := range []string{"completed_claim", "outbox_dead_letter_fence", "processed_scope", "dead_letter_id", "checkpoint_save"} {
		if !seen[c] {
			t.Errorf("no trace under traces/testdata/choices exercises %s", c)
		}
	}
}
