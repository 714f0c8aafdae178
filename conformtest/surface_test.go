package conformtest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// authorPackages are the packages a store author imports to put a store under the kit.
var authorPackages = []string{
	"github.com/pconform/pconform/conformtest",
	"github.com/pconform/pconform/adapter",
	"github.com/pconform/pconform/replay",
	"github.com/pconform/pconform/profile",
	"github.com/pconform/pconform/traces",
}

// TestAuthorLinksNoDriver requires what a store author imports to link no database driver: an
// author's test must not need cgo SQLite or pgx to build. It asks the go command for the
// packages' dependencies.
func TestAuthorLinksNoDriver(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	out, err := exec.Command(goCmd, append([]string{"list", "-deps"}, authorPackages...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < len(authorPackages) {
		t.Fatalf("go list -deps listed %d packages, fewer than it was asked for:\n%s", len(deps), out)
	}
	for _, dep := range deps {
		for _, driver := range []string{"github.com/mattn/go-sqlite3", "github.com/jackc/pgx"} {
			if strings.HasPrefix(dep, driver) {
				t.Errorf("an author's import of %s links %s", strings.Join(authorPackages, ", "), dep)
			}
		}
	}
}
