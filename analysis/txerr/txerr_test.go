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
// next to the fixture.
func TestAnalyzer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads and type-checks the fixtures and their imports from source (seconds per package)")
	}
	tests := []struct {
		name string
		pkgs []string
	}{
		{"cases", []string{"txerr/a"}},
		{"marks and facts", []string{"txerr/marked", "txerr/markeduse"}},
		{"suggested fixes", []string{"txerr/fix"}},
		// The stand-in store's ExecTx returns its commit error: nothing to report there.
		{"store stand-in is clean", []string{"github.com/pconform/pconform/actordelivery"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			analysistest.RunWithSuggestedFixes(t, testdata(), txerr.Analyzer, tt.pkgs...)
		})
	}
}

// TestSeedPublisherBug runs txerr over a copy of the seed design's publisher and requires it to
// fire on each variant of the dropped commit (fold via ExecTx, split via ExecTx, fold via
// database/sql).
func TestSeedPublisherBug(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads and type-checks the fixtures and their imports from source (seconds per package)")
	}
	results := analysistest.RunWithSuggestedFixes(t, testdata(), txerr.Analyzer, "seedpublisher")
	fired := map[string]bool{}
	for _, r := range results {
		for _, d := range r.Diagnostics {
			fired[r.Pass.Fset.Position(d.Pos).String()] = true
		}
	}
	if len(fired) != 3 {
		t.Fatalf("txerr reported %d dropped commits in the seed publisher, want 3: %v", len(fired), fired)
	}
}
