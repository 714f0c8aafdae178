package conformtest_test

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// authorPackages are the packages a store author imports to put a store under the kit.
var authorPackages = []string{
	"github.com/pconform/pconform/conformtest",
	"github.com/pconform/pconform/adapter",
	"github.com/pconform/pconform/replay",
	"github.com/pconform/pconform/profile",
	"github.com/pconform/pconform/traces",
}

// checkerPackages are what a program that reads or checks a service's event log imports: the
// recorded history's types, the checker, and the P bridge behind `check --p`.
var checkerPackages = []string{
	"github.com/pconform/pconform/actordelivery/record",
	"github.com/pconform/pconform/observe",
	"github.com/pconform/pconform/bridge",
}

// TestLinksNoDriver requires what a store author imports, and what a log checker imports, to link
// no database driver: an author's test must not need cgo SQLite or pgx to build, and neither
// must a program that only checks logs. It asks the go command for the packages' dependencies.
func TestLinksNoDriver(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	for _, tc := range []struct {
		who  string
		pkgs []string
	}{
		{"a store author", authorPackages},
		{"a log checker", checkerPackages},
	} {
		out, err := exec.Command(goCmd, append([]string{"list", "-deps"}, tc.pkgs...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps: %v\n%s", err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < len(tc.pkgs) {
			t.Fatalf("go list -deps listed %d packages, fewer than it was asked for:\n%s", len(deps), out)
		}
		for _, dep := range deps {
			for _, driver := range []string{"github.com/mattn/go-sqlite3", "github.com/jackc/pgx"} {
				if strings.HasPrefix(dep, driver) {
					t.Errorf("%s's import of %s links %s", tc.who, strings.Join(tc.pkgs, ", "), dep)
				}
			}
		}
	}
}

// authorFacing are the packages whose names an author needs: adapter to write the adapter,
// conformtest to run the kit. Every other package of the module is reached through them.
var authorFacing = []string{
	"github.com/pconform/pconform/adapter",
	"github.com/pconform/pconform/conformtest",
}

// maxAuthorNames is the most package-level names an author's code may need from the kit.
const maxAuthorNames = 30

// TestAuthorSurface counts the kit's names each example store's code refers to, its tests
// included: the package-level exported identifiers (types, functions, variables, constants) of
// the module's packages, other than the examples themselves and actordelivery (the store that
// examples/adstore puts under test). Fields and methods are not counted: they are reached through
// those names. It requires at most maxAuthorNames per example, all of them from authorFacing,
// and prints each example's list.
func TestAuthorSurface(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	const module = "github.com/pconform/pconform/"
	for _, example := range []string{"examples/memstore", "examples/ledgerstore", "examples/adstore"} {
		t.Run(example, func(t *testing.T) {
			cfg := &packages.Config{
				Mode:  packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax,
				Tests: true,
				Dir:   "..",
			}
			pkgs, err := packages.Load(cfg, "./"+example)
			if err != nil {
				t.Fatalf("loading %s: %v", example, err)
			}
			if packages.PrintErrors(pkgs) > 0 {
				t.Fatalf("%s does not type-check", example)
			}
			names := map[string]bool{}
			files := 0
			for _, p := range pkgs {
				files += len(p.Syntax)
				for _, obj := range p.TypesInfo.Uses {
					if obj.Pkg() == nil || !obj.Exported() || obj.Parent() != obj.Pkg().Scope() {
						continue // a builtin, an unexported name, a field or a method
					}
					path := obj.Pkg().Path()
					if !strings.HasPrefix(path, module) || strings.HasPrefix(path, module+"examples/") ||
						path == module+"actordelivery" {
						continue
					}
					names[path+"."+obj.Name()] = true
				}
			}
			if files == 0 {
				t.Fatalf("no Go file of %s was loaded", example)
			}
			list := slices.Sorted(maps.Keys(names))
			short := make([]string, len(list))
			for i, n := range list {
				short[i] = strings.TrimPrefix(n, module)
			}
			t.Logf("%s uses %d of the kit's names: %s", example, len(list), strings.Join(short, " "))
			if len(list) > maxAuthorNames {
				t.Errorf("%s uses %d of the kit's names, more than %d", example, len(list), maxAuthorNames)
			}
			for _, n := range list {
				if !slices.ContainsFunc(authorFacing, func(p string) bool { return strings.HasPrefix(n, p+".") }) {
					t.Errorf("%s uses %s, outside the author-facing packages %s", example, n, strings.Join(authorFacing, ", "))
				}
			}
		})
	}
}
