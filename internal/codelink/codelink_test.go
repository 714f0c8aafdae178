package codelink

import (
	"bufio"
	"github.com/pconform/pconform/internal/variants"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/targets"
)

// TestEveryVariantLinksToItsCode: each broken variant has at least one link, and each link's line
// really holds what it names: the function's declaration, or the read of the rule.
func TestEveryVariantLinksToItsCode(t *testing.T) {
	root := os.DirFS("../..")
	for _, v := range targets.BrokenVariants() {
		t.Run(v, func(t *testing.T) {
			if r, _ := variants.Lookup(v); r.OnModel {
				t.Skip("a broken copy of the reference model's rule (models.Config): the store has no code of it to link to yet")
			}
			links, err := Broken(v, root)
			if err != nil {
				t.Fatal(err)
			}
			if len(links) == 0 {
				t.Fatal("no link to the variant's code")
			}
			for _, l := range links {
				line := sourceLine(t, filepath.Join("../..", l.File), l.Line)
				fn := l.Symbol[strings.LastIndex(l.Symbol, ".")+1:]
				switch {
				case strings.HasPrefix(l.What, "where the rule Rules."):
					field := strings.TrimSuffix(strings.TrimPrefix(l.What, "where the rule Rules."), " bends the store's")
					if !strings.Contains(line, "rules."+field) {
						t.Errorf("%s: line %q does not read rules.%s", l, line, field)
					}
				case strings.HasPrefix(l.What, "the store's SQL statement"):
					if !strings.Contains(line, fn+" ") || !strings.Contains(line, "=") {
						t.Errorf("%s: line %q does not declare the statement %s", l, line, fn)
					}
				case !strings.Contains(line, "func "+fn+"("):
					t.Errorf("%s: line %q does not declare %s", l, line, fn)
				}
			}
		})
	}
}

// TestRuleVariantsNameTheirStatement: a variant whose rule decides one SQL statement links the
// store's own statement of that name.
func TestRuleVariantsNameTheirStatement(t *testing.T) {
	for variant, stmt := range map[string]string{
		targets.StaleExtend:          "actordelivery.qExtend",
		targets.DedupTTLInverted:     "actordelivery.qMarkProcessed",
		targets.RedriveKeepsAttempts: "actordelivery.qRedriveMessage",
	} {
		links, err := Broken(variant, os.DirFS("../.."))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range links {
			found = found || l.Symbol == stmt
		}
		if !found {
			t.Errorf("%s links %v, want the store's statement %s", variant, links, stmt)
		}
	}
}

func TestNoLinksForCorrectTargets(t *testing.T) {
	for _, name := range []string{targets.Store, targets.Model, "nosuchvariant"} {
		if links, err := Broken(name, nil); err != nil || len(links) != 0 {
			t.Errorf("Broken(%q) = %v, %v; want nothing", name, links, err)
		}
	}
}

func sourceLine(t *testing.T, path string, n int) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 1; sc.Scan(); i++ {
		if i == n {
			return sc.Text()
		}
	}
	t.Fatalf("%s has no line %d", path, n)
	return ""
}
