package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

var updateReports = flag.Bool("update", false, "TestProfileCheckReports: rewrite the table in profiles/README.md from profiles/check")

// monitorVerdict is one monitor's line of a profile check report.
type monitorVerdict struct {
	monitor, verdict string
	traces           []string // counterexample paths, relative to the repository root
	// needs holds, for each of traces, the report's line under it: the choices it needs.
	needs []string
}

var (
	verdictLine = regexp.MustCompile(`^([A-Za-z0-9_]+): (kept|gives up|violated by the model|undecided)`)
	traceLine   = regexp.MustCompile(`^  trace: (\S+) \(\d+ steps\)`)
	modelLine   = regexp.MustCompile(`^P model \S+ (sha256:[0-9a-f]+)\b`)
)

// readReport reads a committed report: the profile file's hash, the P model's hash and the
// monitors' verdicts.
func readReport(t *testing.T, path string) (profileHash, modelHash string, verdicts []monitorVerdict) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run bash scripts/profile-check.sh", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "# profile "); ok {
			profileHash = h
		}
		if m := modelLine.FindStringSubmatch(line); m != nil {
			modelHash = m[1]
		}
		if m := verdictLine.FindStringSubmatch(line); m != nil {
			verdicts = append(verdicts, monitorVerdict{monitor: m[1], verdict: m[2]})
		}
		if m := traceLine.FindStringSubmatch(line); m != nil && len(verdicts) > 0 {
			v := &verdicts[len(verdicts)-1]
			v.traces = append(v.traces, m[1])
			sc.Scan()
			v.needs = append(v.needs, sc.Text())
		}
	}
	return profileHash, modelHash, verdicts
}

// TestProfileCheckReports keeps the committed profile check reports (profiles/check, written by
// bash scripts/profile-check.sh, not run in the gate) honest and current: each shipped profile
// has one, made from today's P model and profile file; every monitor it gives up has a
// counterexample trace, and each replays on the model; the table in profiles/README.md is built
// from them (-update rewrites it); the choices a counterexample is said to need are what
// choicesInPlay says of it today. It runs no P checker.
func TestProfileCheckReports(t *testing.T) {
	root := "../.."
	model, err := bridge.ModelHash(filepath.Join(root, "models", "p"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "profiles", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped profile (%v)", err)
	}
	var table strings.Builder
	table.WriteString("| profile | gives up by a declared choice (counterexample) | violated by the model (counterexample) | undecided | kept |\n|---|---|---|---|---|\n")
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		p, err := profile.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		report := filepath.Join(root, "profiles", "check", name+".txt")
		ph, mh, verdicts := readReport(t, report)
		// The reports show what a user's check finds at the default budget.
		if head, err := os.ReadFile(report); err == nil && !bytes.Contains(head, fmt.Appendf(nil, " --schedules %d ", defaultProfileSchedules)) {
			t.Errorf("profiles/check/%s.txt was not made at profile check's default budget, --schedules %d: rerun bash scripts/profile-check.sh with it", name, defaultProfileSchedules)
		}
		if ph != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Errorf("profiles/check/%s.txt was made from another %s (profile %q): rerun bash scripts/profile-check.sh %s", name, filepath.Base(f), ph, "profiles/"+filepath.Base(f))
		}
		if mh != model {
			t.Errorf("profiles/check/%s.txt was made from P model %s, today's is %s: rerun bash scripts/profile-check.sh", name, mh, model)
		}
		if len(verdicts) == 0 {
			t.Errorf("profiles/check/%s.txt has no monitor verdict", name)
		}
		var gives, violated, undecided, kept []string
		for _, v := range verdicts {
			switch v.verdict {
			case "kept":
				kept = append(kept, v.monitor)
			case "undecided":
				undecided = append(undecided, v.monitor)
			case "gives up", "violated by the model":
				if len(v.traces) == 0 {
					t.Errorf("profiles/check/%s.txt: %s is given up without a counterexample trace", name, v.monitor)
				}
				var links []string
				for k, tr := range v.traces {
					if ct, err := traces.ReadFile(filepath.Join(root, tr)); err != nil {
						t.Error(err)
					} else if want := needsLine(choicesInPlay(ct, p)); v.needs[k] != want {
						t.Errorf("profiles/check/%s.txt says of %s\n%s\nbut today's check would say\n%s\nrerun bash scripts/profile-check.sh %s", name, tr, v.needs[k], want, "profiles/"+filepath.Base(f))
					}
					var out, errOut bytes.Buffer
					if code := run([]string{"replay", filepath.Join(root, tr), "--target", "model"}, &out, &errOut); code != exitPass {
						t.Errorf("%s, the counterexample of %s under %s, does not replay on the model: exit %d\n%s%s", tr, v.monitor, name, code, out.String(), errOut.String())
					}
					links = append(links, fmt.Sprintf("[%s](%s)", strings.TrimSuffix(filepath.Base(tr), ".json"), strings.TrimPrefix(tr, "profiles/")))
				}
				cell := v.monitor + " (" + strings.Join(links, ", ") + ")"
				if v.verdict == "gives up" {
					gives = append(gives, cell)
				} else {
					violated = append(violated, cell)
				}
			}
		}
		fmt.Fprintf(&table, "| [%s](%s) | %s | %s | %s | %s |\n", name, filepath.Base(f), orDash(gives), orDash(violated), orDash(undecided), orDash(kept))
	}
	readme := filepath.Join(root, "profiles", "README.md")
	const begin, end = "<!-- begin profile check table -->\n", "<!-- end profile check table -->\n"
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(b, []byte(begin)), bytes.Index(b, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q and %q", readme, begin, end)
	}
	want := append(append(append([]byte{}, b[:i+len(begin)]...), table.String()...), b[j:]...)
	if bytes.Equal(b, want) {
		return
	}
	if *updateReports {
		if err := os.WriteFile(readme, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the table in profiles/README.md is not the reports': go test ./cmd/pconform -run TestProfileCheckReports -update\nwant:\n%s", table.String())
}

func orDash(xs []string) string {
	if len(xs) == 0 {
		return "-"
	}
	return strings.Join(xs, ", ")
}
