package txboundary_test

import (
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/pconform/pconform/analysis/txboundary"
)

// testdata is the GOPATH-style tree shared by pconform's analyzers.
func testdata() string {
	dir, err := filepath.Abs(filepath.Join("..", "testdata"))
	if err != nil {
		panic(err)
	}
	return dir
}

// TestAnalyzer checks every // want annotation over the cases and the stand-in store (whose own
// callbacks use their contexts: nothing to report), and the file after the suggested fixes
// against a.go.golden.
func TestAnalyzer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads and type-checks the fixtures and their imports from source (seconds per package)")
	}
	analysistest.RunWithSuggestedFixes(t, testdata(), txboundary.Analyzer, "txboundary/a", "github.com/pconform/pconform/actordelivery")
}
