package sqlparams_test

import (
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/pconform/pconform/analysis/sqlparams"
)

func TestAnalyzer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads and type-checks the fixtures from source")
	}
	dir, err := filepath.Abs(filepath.Join("..", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	analysistest.Run(t, dir, sqlparams.Analyzer, "sqlparams/a")
}
