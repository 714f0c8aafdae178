package conformtest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/internal/gen"
	"github.com/pconform/pconform/internal/reach"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// pModelUnder is the hash the bridge records for the P project ../models/p compiled under p: its
// sources with p's Profile_gen.p.
func pModelUnder(t *testing.T, p profile.Profile) string {
	t.Helper()
	src, dir := filepath.Join("..", "models", "p"), t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		switch {
		case d.IsDir() && (d.Name() == "PGenerated" || d.Name() == "PCheckerOutput"):
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		case !strings.HasSuffix(path, ".p") && !strings.HasSuffix(path, ".pproj"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	constants, err := gen.PProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "PSrc", "Profile_gen.p"), constants, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := bridge.ModelHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestProfileCorpora keeps the per-profile P corpora (traces/profiles/NAME, written by bash
// scripts/profile-corpus.sh, not in the gate) current and true: each shipped profile has one, made
// by today's P model under that profile, each trace records the profile, and the Go reference
// model under the profile gives every result the P model gave. It runs no P checker.
//
// An example profile (examples/NAME/profile.json) has a corpus only for the replacement
// counterexamples it needs (pconform profile corpus). A counterexample in a corpus must reach
// its bug on the Go model under the profile (internal/reach) instead of matching it.
func TestProfileCorpora(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "profiles", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped profile (%v)", err)
	}
	shipped := len(files)
	examples, err := filepath.Glob(filepath.Join("..", "examples", "*", "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, examples...)
	for i, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if i >= shipped {
			name = filepath.Base(filepath.Dir(f))
		}
		t.Run(name, func(t *testing.T) {
			p, err := profile.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("..", "traces", "profiles", name)
			if _, err := os.Stat(dir); i >= shipped && errors.Is(err, os.ErrNotExist) {
				t.Skipf("example profile %s needs no replacement counterexample", name)
			}
			paths, err := traces.Walk(dir)
			if err != nil || len(paths) == 0 {
				t.Fatalf("no corpus for profile %s (%v): run bash scripts/profile-corpus.sh %s", name, err, f)
			}
			want := pModelUnder(t, p)
			for _, path := range paths {
				tr, err := traces.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(tr.Expect.Profile.Changed(), p.Changed()) {
					t.Errorf("%s: expect.profile is %s, not %s's choices", path, tr.Expect.Profile, f)
				}
				if tr.Origin.Model != want {
					t.Errorf("%s was made by P model %s; under %s today's is %s: rerun bash scripts/profile-corpus.sh", path, tr.Origin.Model, name, want)
					continue
				}
				if tr.Expect.Variant != "" {
					v, err := reach.Exercised(tr, p, -1)
					switch {
					case err != nil:
						t.Fatal(err)
					case !strings.Contains(tr.Name, "-replaced-"):
						t.Errorf("%s: a counterexample in a profile corpus must be a replacement, named <original>-replaced-s<seed>-<schedule>", path)
					case !v.Reached:
						t.Errorf("%s: the replacement does not reach its bug under %s: %s", path, name, v.Why)
					}
					continue
				}
				if i >= shipped {
					t.Errorf("%s: an example profile's corpus holds replacement counterexamples only", path)
					continue
				}
				v, err := replay.Run(context.Background(), tr, targets.NewModelTarget(models.Config{Profile: p}), replay.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if v.Outcome != replay.Match {
					var b strings.Builder
					_ = v.Report(&b)
					t.Errorf("%s: the Go model under %s does not give what the P model gave:\n%s", path, name, b.String())
				}
			}
		})
	}
}

// TestProfileCorpusChild is the child run of TestProfileCorpusRuns: the kit on the reference
// model under the profile and with the semantics its environment names.
func TestProfileCorpusChild(t *testing.T) {
	env := os.Getenv("CONFORMTEST_PROFILE_CORPUS")
	if env == "" {
		t.Skip("the child run of TestProfileCorpusRuns")
	}
	// PROFILE,SEMANTICS,TRACE: the kit's profile, the model target's, and the one trace kept.
	parts := strings.Split(env, ",")
	read := func(name string) profile.Profile {
		if name == "default" {
			return profile.Profile{}
		}
		p, err := profile.ReadFile(filepath.Join("..", "profiles", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	kitProfile, semantics := read(parts[0]), read(parts[1])
	conformtest.Check(t, conformtest.Config{Profile: kitProfile, Hunts: -1,
		NewTarget: func(*testing.T) replay.Target { return targets.NewModelTarget(models.Config{Profile: semantics}) },
		Only:      func(tr string) bool { return tr == parts[2] }})
}

// TestProfileCorpusRuns requires the kit to run a per-profile corpus for a target declaring that
// profile, and only for it: the reference model under no-fetch-sweep passes
// profile/no-fetch-sweep/TRACE and its reopen run; under the default profile the subtest does not
// exist.
func TestProfileCorpusRuns(t *testing.T) {
	if os.Getenv("CONFORMTEST_PROFILE_CORPUS") != "" {
		t.Skip("the child run")
	}
	paths, err := traces.Walk(filepath.Join("..", "traces", "profiles", "no-fetch-sweep"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no no-fetch-sweep corpus (%v)", err)
	}
	trace := strings.TrimSuffix(filepath.Base(paths[0]), ".json")
	const child = "TestProfileCorpusChild/"
	for _, c := range []struct {
		env  string
		want string // the status of profile/no-fetch-sweep/TRACE; "" for no such subtest
	}{
		{"no-fetch-sweep,no-fetch-sweep," + trace, "PASS"},
		{"default,default," + trace, ""},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProfileCorpusChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "CONFORMTEST_PROFILE_CORPUS="+c.env)
		out, _ := cmd.CombinedOutput()
		status, _ := subtests(string(out))
		for _, name := range []string{"profile/no-fetch-sweep/" + trace, "reopen/profile/no-fetch-sweep/" + trace} {
			if got := status[child+name]; got != c.want {
				t.Errorf("%s: subtest %s is %q, want %q\n%s", c.env, name, got, c.want, out)
			}
		}
	}
}
