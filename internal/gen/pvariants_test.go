package gen

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/variants"
)

// TestPSourcesNameVariantsThroughGeneratedFunctions keeps the catalogue the one list of the P
// model's variants: outside Variants_gen.p no P source spells a catalogue name as a string
// literal (comments aside), and every function Variants_gen.p defines is called somewhere, so a
// row's PVariant always reaches the model.
func TestPSourcesNameVariantsThroughGeneratedFunctions(t *testing.T) {
	root := filepath.Join("..", "..", "models", "p")
	names := map[string]bool{}
	for _, r := range variants.All() {
		names[r.Name] = true
		if r.PVariant != "" {
			names[r.PVariant] = true
		}
	}
	called := map[string]bool{}
	for _, r := range variants.All() {
		if r.PVariant != "" {
			called[pVariantFunc(r.Name)] = false
		}
	}
	literal := regexp.MustCompile(`"([^"\\]*)"`)
	ident := regexp.MustCompile(`\bVariant[A-Z][A-Za-z0-9]*\b`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "PGenerated" || n == "PCheckerOutput" {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(path) != ".p" || d.Name() == "Variants_gen.p" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			code, _, _ := strings.Cut(line, "//")
			for _, m := range literal.FindAllStringSubmatch(code, -1) {
				if names[m[1]] {
					t.Errorf("%s:%d: the variant %q is spelled out; call its function from Variants_gen.p", path, i+1, m[1])
				}
			}
			for _, f := range ident.FindAllString(code, -1) {
				if _, ok := called[f]; ok {
					called[f] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f, ok := range called {
		if !ok {
			t.Errorf("Variants_gen.p defines %s(), which no P source calls: its catalogue row's PVariant reaches no scenario", f)
		}
	}
}

// TestPCounterexamplesMatchCatalogue: the counterexample test cases the P sources declare are
// exactly the catalogue's PTestCase values and its model-only counterexamples, so a counterexample without a row (or a row whose
// test case was renamed) fails here rather than in the corpus check.
func TestPCounterexamplesMatchCatalogue(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "models", "p", "PTst", "*.p"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no P test sources in models/p/PTst (%v)", err)
	}
	decl := regexp.MustCompile(`(?m)^\s*test\s+([A-Za-z_][A-Za-z0-9_]*)\s*\[`)
	declared := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(data), -1) {
			if strings.HasSuffix(m[1], "Counterexample") {
				declared[m[1]] = true
			}
		}
	}
	rows := map[string]bool{}
	for _, r := range variants.All() {
		if r.PTestCase == "" {
			continue
		}
		rows[r.PTestCase] = true
		if !declared[r.PTestCase] {
			t.Errorf("catalogue row %s names P test case %s, which models/p/PTst does not declare", r.Name, r.PTestCase)
		}
	}
	for _, m := range variants.ModelOnlyCounterexamples() {
		rows[m.PTestCase] = true
		if !declared[m.PTestCase] {
			t.Errorf("model-only counterexample %s is not declared in models/p/PTst", m.PTestCase)
		}
	}
	for tc := range declared {
		if !rows[tc] {
			t.Errorf("models/p/PTst declares %s, which no catalogue row (internal/variants) names as its PTestCase, nor ModelOnlyCounterexamples", tc)
		}
	}
}
