package conformtest_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/internal/modeltarget"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// counterexamples is every committed counterexample (a trace with expect.variant), by name.
func counterexamples(t *testing.T) map[string]*traces.Trace {
	t.Helper()
	out := map[string]*traces.Trace{}
	for _, dir := range []string{"corpus", "hunted"} {
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
			if tr.Expect.Variant != "" {
				out[tr.Name] = tr
			}
		}
	}
	return out
}

// shippedProfileFiles is every shipped profile (profiles/*.json) and example profile.
func shippedProfileFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"../profiles/*.json", "../examples/*/profile.json"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no shipped profiles")
	}
	return files
}

// TestCounterexamplesChild is the child run of TestNoVacuousCounterexamples: the kit's
// counterexample subtests on the reference model under the profile its environment names.
func TestCounterexamplesChild(t *testing.T) {
	file := os.Getenv("CONFORMTEST_PROFILE")
	if file == "" {
		t.Skip("the child run of TestNoVacuousCounterexamples")
	}
	var p profile.Profile
	if file != "default" {
		var err error
		if p, err = profile.ReadFile(file); err != nil {
			t.Fatal(err)
		}
	}
	bad := counterexamples(t)
	conformtest.Check(t, conformtest.Config{Profile: p, Hunts: -1,
		NewTarget: func(*testing.T) replay.Target { return modeltarget.New(models.Config{Profile: p}) },
		Only:      func(name string) bool { return bad[name] != nil || strings.Contains(name, "-replaced-") }})
}

// reachesBug reports whether the correct store's results under p, as models.Reexpect states them,
// are the broken variant's at every step before tr's bug step and differ from them at it (at
// the final snapshot, when the bug's step is the final snapshot).
func reachesBug(t *testing.T, p profile.Profile, tr *traces.Trace) bool {
	t.Helper()
	re, err := models.Reexpect(models.Config{Profile: p}, tr)
	if err != nil {
		t.Fatalf("%s: %v", tr.Name, err)
	}
	bug := tr.Expect.DivergesAt
	for i := range tr.Steps {
		same := cmp.Equal(re.Steps[i].Result, tr.Steps[i].Result)
		switch {
		case i == bug:
			return !same
		case !same:
			return false
		}
	}
	return bug == replay.FinalStep && !cmp.Equal(re.Final, tr.Final)
}

// TestNoVacuousCounterexamples runs the kit's counterexample subtests on a correct target (the
// reference model) under the default profile and every shipped and example profile, and
// requires that no counterexample passes unless the correct store under that profile follows
// the bug's path up to the bug's step and refuses the bug there (checked here from
// models.Reexpect, apart from the kit's own check). The known vacuous cases must be reported as
// not exercised.
func TestNoVacuousCounterexamples(t *testing.T) {
	if os.Getenv("CONFORMTEST_PROFILE") != "" {
		t.Skip("the child run")
	}
	bad := counterexamples(t)
	// Under lease_at_until "live" the stale worker's lease is still live when the other worker
	// fetches, so no takeover happens before the bug's step. Each has a replacement in the
	// profile's corpus (pconform profile corpus) that the kit runs and names.
	liveAtUntil := []string{"tcEarlyDeadLetterUnfencedCounterexample-s1-1-bad", "tcExhaustedDeadLetterUnfencedCounterexample-s1-1-bad", "tcUnfencedAckCounterexample-s1-2-bad"}
	vacuous := map[string][]string{"live-at-until-ack-deletes": liveAtUntil, "memstore": liveAtUntil}
	const child = "TestCounterexamplesChild/variant/"
	for _, file := range append([]string{"default"}, shippedProfileFiles(t)...) {
		var p profile.Profile
		if file != "default" {
			var err error
			if p, err = profile.ReadFile(file); err != nil {
				t.Fatal(err)
			}
		}
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		if p.Name != "" {
			name = p.Name
		}
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestCounterexamplesChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "CONFORMTEST_PROFILE="+file)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the kit failed the reference model under its own profile:\n%s", out)
			}
			status, text := subtests(string(out))
			passed := 0
			for sub, s := range status {
				tr := bad[sub[strings.LastIndex(sub, "/")+1:]]
				if !strings.HasPrefix(sub, child) || tr == nil {
					continue
				}
				switch {
				case s == "PASS" && !reachesBug(t, p, tr):
					t.Errorf("%s passes under profile %s, but the correct store does not reach its bug at step %d there", tr.Name, name, tr.Expect.DivergesAt)
				case s == "PASS":
					passed++
				case s == "SKIP" && !strings.Contains(text[sub], "not exercised under this profile") && !strings.Contains(text[sub], "do not fit"):
					t.Errorf("%s is skipped under profile %s without saying why it is not exercised:\n%s", tr.Name, name, text[sub])
				case s == "SKIP" && !strings.Contains(text[sub], "does what broken variant") &&
					!strings.Contains(text[sub], "its replacement") && !strings.Contains(text[sub], "its bug is covered by"):
					// Unless the profile allows what the variant does, some trace the kit runs
					// must reach the bug in its place.
					t.Errorf("%s is not exercised under profile %s and nothing the kit runs reaches its bug (bash scripts/profile-corpus.sh --replacements-only):\n%s", tr.Name, name, text[sub])
				}
			}
			for _, v := range vacuous[name] {
				if sub := child + bad[v].Expect.Variant + "/" + v; status[sub] != "SKIP" || !strings.Contains(text[sub], "not exercised under this profile") {
					t.Errorf("%s: %q under profile %s, want a skip saying it is not exercised:\n%s", v, status[sub], name, text[sub])
				} else if !strings.Contains(text[sub], "its replacement "+v+"-replaced-") {
					t.Errorf("%s: under profile %s its skip names no replacement:\n%s", v, name, text[sub])
				}
				// The replacement runs as a counterexample and reaches the bug on the correct store.
				replaced := 0
				for sub, s := range status {
					if strings.HasPrefix(sub, child+bad[v].Expect.Variant+"/profile/") && strings.Contains(sub, "/"+v+"-replaced-") {
						replaced++
						if s != "PASS" {
							t.Errorf("replacement %s is %s under profile %s, want PASS:\n%s", sub, s, name, text[sub])
						}
					}
				}
				if replaced != 1 {
					t.Errorf("%s: %d replacement subtests under profile %s, want 1 (make it with: bash scripts/profile-corpus.sh)", v, replaced, name)
				}
			}
			if passed == 0 {
				t.Errorf("no counterexample passes under profile %s", name)
			}
			t.Logf("%d of %d counterexamples reach their bug and pass", passed, len(bad))
		})
	}
}
