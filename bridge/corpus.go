package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pconform/pconform/traces"
)

// ReadmeName is the corpus README that Regenerate writes beside the traces.
const ReadmeName = "README.md"

// RegenerateCommand is the command that regenerates the committed corpus, quoted in the README and
// in staleness errors.
const RegenerateCommand = "go run ./bridge/cmd/pconform-corpus"

// ErrCorpusStale reports a committed corpus that differs from what the models give now.
var ErrCorpusStale = errors.New("corpus is not up to date with the P models")

// Regenerate runs the checker ([RunChecker]) and writes the corpus into outDir: one canonical
// file <name>.json per kept trace and README.md saying where each came from. Trace files of
// earlier generations (JSON files in outDir whose origin kind is "p-checker") that are no longer
// produced are removed; every other file is left alone. Errors are RunChecker's or file system
// errors.
func Regenerate(ctx context.Context, outDir string, cfg Config) (*Corpus, error) {
	corpus, err := RunChecker(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := WriteCorpus(outDir, corpus); err != nil {
		return nil, err
	}
	return corpus, nil
}

// WriteCorpus writes a corpus into dir as [Regenerate] describes.
func WriteCorpus(dir string, corpus *Corpus) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	old, err := generatedFiles(dir)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, tr := range corpus.Traces {
		data, err := traces.Marshal(tr)
		if err != nil {
			return fmt.Errorf("bridge: writing %s: %w", tr.Name, err)
		}
		file := tr.Name + ".json"
		keep[file] = true
		if err := writeIfChanged(filepath.Join(dir, file), data); err != nil {
			return err
		}
	}
	for _, file := range old {
		if !keep[file] {
			if err := os.Remove(filepath.Join(dir, file)); err != nil {
				return fmt.Errorf("bridge: removing stale %w", err)
			}
		}
	}
	return writeIfChanged(filepath.Join(dir, ReadmeName), RenderReadme(corpus))
}

// writeIfChanged leaves an identical file untouched, so a regeneration that changes nothing does
// not even touch modification times.
func writeIfChanged(path string, data []byte) error {
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return nil
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	return nil
}

// generatedFiles lists the JSON files of dir whose origin kind is "p-checker", sorted. A JSON file
// that cannot be read as a trace is not the bridge's and is skipped.
func generatedFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("bridge: %w", err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".json" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("bridge: %w", err)
		}
		var head struct {
			Origin struct {
				Kind string `json:"kind"`
			} `json:"origin"`
		}
		if json.Unmarshal(data, &head) == nil && head.Origin.Kind == OriginKind {
			files = append(files, e.Name())
		}
	}
	slices.Sort(files)
	return files, nil
}

// CheckUpToDate regenerates the corpus into a temporary directory and compares it with the one in
// corpusDir: the same generated trace files, byte for byte, and the same README. A difference is
// an error wrapping [ErrCorpusStale] that lists the missing, extra and changed files; errors of
// the regeneration itself are returned as they are.
func CheckUpToDate(ctx context.Context, corpusDir string, cfg Config) error {
	tmp, err := os.MkdirTemp("", "pconform-corpus-")
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	defer os.RemoveAll(tmp)
	corpus, err := Regenerate(ctx, tmp, cfg)
	if err != nil {
		return err
	}
	return compareCorpus(corpusDir, tmp, corpus)
}

func compareCorpus(committedDir, freshDir string, fresh *Corpus) error {
	committed, err := generatedFiles(committedDir)
	if err != nil {
		return err
	}
	want, err := generatedFiles(freshDir)
	if err != nil {
		return err
	}
	var problems []string
	for _, f := range want {
		if !slices.Contains(committed, f) {
			problems = append(problems, "missing "+f)
		}
	}
	for _, f := range committed {
		if !slices.Contains(want, f) {
			problems = append(problems, "no longer generated: "+f)
		}
	}
	for _, f := range append(slices.Clone(want), ReadmeName) {
		if f != ReadmeName && !slices.Contains(committed, f) {
			continue
		}
		a, errA := os.ReadFile(filepath.Join(committedDir, f))
		b, errB := os.ReadFile(filepath.Join(freshDir, f))
		switch {
		case errB != nil:
			return fmt.Errorf("bridge: %w", errB)
		case errA != nil && errors.Is(errA, os.ErrNotExist):
			problems = append(problems, "missing "+f)
		case errA != nil:
			return fmt.Errorf("bridge: %w", errA)
		case !bytes.Equal(a, b):
			problems = append(problems, "changed "+f+": "+firstDifference(a, b))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if old := readmeModel(committedDir); old != "" && old != fresh.Model {
		problems = append([]string{fmt.Sprintf("P models changed: corpus made from %s, models are now %s", old, fresh.Model)}, problems...)
	}
	// A model change touches every file's origin; the first few differences say enough.
	const shown = 12
	if len(problems) > shown {
		problems = append(problems[:shown], fmt.Sprintf("... and %d more", len(problems)-shown))
	}
	return fmt.Errorf("bridge: %w (%s):\n  %s\nregenerate with: %s", ErrCorpusStale, committedDir, strings.Join(problems, "\n  "), RegenerateCommand)
}

// firstDifference describes the first line where two files differ.
func firstDifference(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: committed %q, regenerated %q", i+1, truncate(x), truncate(y))
		}
	}
	return "same lines, different bytes"
}

const readmeModelPrefix = "- P model: `"

// readmeModel returns the model hash a committed README records, "" when none.
func readmeModel(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, ReadmeName))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, readmeModelPrefix); ok {
			hash, _, _ := strings.Cut(rest, "`")
			return hash
		}
	}
	return ""
}

// RenderReadme renders the corpus README: how the traces were made and one line per trace.
func RenderReadme(c *Corpus) []byte {
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Conformance trace corpus\n\n")
	w("Each `*.json` file here is one execution in the `%s` format (see `traces/`). The files whose\n", traces.Format)
	w("`origin.kind` is `%s` are generated by the bridge (`bridge/`) from the P models: the P checker\n", OriginKind)
	w("explores schedules of each test case, every schedule's announced observations become one trace.\n")
	w("Do not edit them; regenerate with\n\n    %s\n\n", RegenerateCommand)
	w("The gate checks that they are up to date with the models (`%s -check`).\n", RegenerateCommand)
	w("Files with another origin kind are not generated; they are neither listed nor touched here.\n\n")
	w("Names are `<test case>-s<seed>-<schedule>-ok` for a green test case and `-bad` for a counterexample\n")
	w("(the schedule that found the bug; its `expect.variant` names the broken variant and\n")
	w("`expect.diverges_at` the first step where the correct store would differ).\n\n")
	w("## Provenance\n\n")
	w("%s%s` (SHA-256 over every `.p` and `.pproj` file of the P project, in path order)\n", readmeModelPrefix, c.Model)
	w("- Checker: `%s`, random strategy, `--seed %d`, `-s %d` per green test case and a budget of\n", c.PVersion, c.Seed, c.Schedules)
	w("  `-s %d` per counterexample (its run stops at the first buggy schedule), each test case run on\n", c.CounterexampleSchedules)
	w("  its own by its exact name in the P project directory after `p compile`\n")
	w("- Kept: per green test case the first %d distinct traces in schedule order (distinct: differing in\n", c.PerTest)
	w("  anything but name and origin); per counterexample the trace of the schedule that found the bug\n\n")
	w("| test case | variant | command | schedules | with observations | distinct | kept |\n")
	w("|---|---|---|---:|---:|---:|---:|\n")
	for _, r := range c.Runs {
		variant := r.Variant
		if variant == "" {
			variant = "-"
		}
		observed, distinct := fmt.Sprint(r.Observed), fmt.Sprint(r.Distinct)
		if r.Counterexample {
			observed, distinct = "bug only", "bug only"
		}
		if r.Untraced != "" {
			observed, distinct = "untraced", "untraced"
		}
		w("| %s | %s | `%s` | %d | %s | %s | %d |\n", r.TestCase, variant, r.Command, r.Schedules, observed, distinct, len(r.Kept))
	}
	for _, r := range c.Runs {
		if r.Untraced != "" {
			w("\nAn `untraced` test case is checked like the others, but no trace of it is kept: %s.\n", r.Untraced)
			break
		}
	}
	w("\n## Traces\n\n")
	w("| file | test case | schedule | steps | diverges at | final state |\n")
	w("|---|---|---:|---:|---:|---|\n")
	steps := 0
	for _, tr := range c.Traces {
		final := "yes"
		if tr.Final == nil {
			final = "none (cut short by the bug)"
		}
		w("| %s.json | %s | %d | %d | %d | %s |\n", tr.Name, tr.Origin.TestCase, tr.Origin.Schedule, len(tr.Steps), tr.Expect.DivergesAt, final)
		steps += len(tr.Steps)
	}
	w("\n%d traces, %d steps in all.\n", len(c.Traces), steps)
	return b.Bytes()
}
