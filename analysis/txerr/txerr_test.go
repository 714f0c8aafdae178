package txerr_test

import (
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/pconform/pconform/analysis/txerr"
)

// testdata is the GOPATH-style tree shared by pconform's analyzers: one stand-in store package
// and each analyzer's fixtures.
func testdata() string {
	dir, err := filepath.Abs(filepath.Join("..", "testdata"))
	if err != nil {
		panic(err)
	}
	return dir
}

// TestAnalyzer checks every // want annotation and, where fixes are offered, the .golden file
// next to the fixture, over the fixtures (cases, marks and facts, suggested fixes), the stand-in
// store (its ExecTx returns its commit error: nothing to report there) and a copy of the seed
// design's publisher, where it requires txerr to fire on each variant of the dropped commit (fold
// via ExecTx, split via ExecTx, fold via database/sql). One load for all of them: analysistest
// parses and type-checks every package and its imports, the standard library's included, from
// source on each call, which took seconds per call.
func TestAnalyzer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads and type-checks the fixtures and their imports from source (seconds per package)")
	}
	results := analysistest.RunWithSuggestedFixes(t, testdata(), txerr.Analyzer,
		"txerr/a", "txerr/marked", "txerr/markeduse", "txerr/fix",
		"github.com/pconform/pconform/actordelivery", "seedpublisher")
	fired := map[string]bool{}
	for _, r := range results {
		if r.Pass.Pkg.Path() != "seedpublisher" {
			continue
		}
		for _, d := range r.Diagnostics {
			fired[r.Pass.Fset.Position(d.Pos).String()] = true
		}
	}
	if len(fired) != 3 {
		t.Fatalf("txerr reported %d dropped commits in the seed publisher, want 3: %v", len(fired), fired)
	}
}
