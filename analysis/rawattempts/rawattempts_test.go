package rawattempts_test

import (
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/pconform/pconform/analysis/rawattempts"
)

// testdata is the GOPATH-style tree shared by pconform's analyzers.
func testdata() string {
	dir, err := filepath.Abs(filepath.Join("..", "testdata"))
	if err != nil {
		panic(err)
	}
	return dir
}

// TestAnalyzer checks every // want annotation over the fixtures (marks and facts, cases), the
// stand-in store (its EffectiveAttempts body, its Go ExpireLeases, a Store method comparing
// stored counts, and its correct consumer must all be accepted) and a copy of the seed design's
// leaseless consumer, where it requires rawattempts to fire on both uses of the raw count: the
// dead-letter comparison and the argument to RetryPolicy.Retry. One load for all of them:
// analysistest parses and type-checks every package and its imports, the standard library's
// included, from source on each call, which took seconds per call.
func TestAnalyzer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads and type-checks the fixtures and their imports from source (seconds per package)")
	}
	results := analysistest.Run(t, testdata(), rawattempts.Analyzer,
		"rawattempts/marked", "rawattempts/a", "github.com/pconform/pconform/actordelivery", "seedconsumer")
	n := 0
	for _, r := range results {
		if r.Pass.Pkg.Path() == "seedconsumer" {
			n += len(r.Diagnostics)
		}
	}
	if n != 2 {
		t.Fatalf("rawattempts reported %d raw uses in the seed consumer, want 2", n)
	}
}
