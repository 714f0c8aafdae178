package unfencedack_test

import (
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/pconform/pconform/analysis/unfencedack"
)

// testdata is the GOPATH-style tree shared by pconform's analyzers.
func testdata() string {
	dir, err := filepath.Abs(filepath.Join("..", "testdata"))
	if err != nil {
		panic(err)
	}
	return dir
}

// TestAnalyzer checks every // want annotation over the fixture and the stand-in store (its
// consumer acks by id only on leaseless branches: nothing to report), in one load (analysistest
// type-checks every package and its imports from source on each call).
func TestAnalyzer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads and type-checks the fixtures and their imports from source (seconds per package)")
	}
	analysistest.Run(t, testdata(), unfencedack.Analyzer, "unfencedack/a", "github.com/pconform/pconform/actordelivery")
}
