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

func TestAnalyzer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads and type-checks the fixtures and their imports from source (seconds per package)")
	}
	tests := []struct {
		name string
		pkgs []string
	}{
		{"marks and facts", []string{"rawattempts/marked"}},
		{"cases", []string{"rawattempts/a"}},
		// The stand-in store's EffectiveAttempts body, its Go ExpireLeases (a Store method
		// comparing stored counts) and its correct consumer must all be accepted.
		{"store stand-in is clean", []string{"github.com/pconform/pconform/actordelivery"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			analysistest.Run(t, testdata(), rawattempts.Analyzer, tt.pkgs...)
		})
	}
}

// TestSeedConsumerBug runs rawattempts over a copy of the seed design's leaseless consumer and
// requires it to fire on both uses of the raw count: the dead-letter comparison and the
// argument to RetryPolicy.Retry.
func TestSeedConsumerBug(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads and type-checks the fixtures and their imports from source (seconds per package)")
	}
	results := analysistest.Run(t, testdata(), rawattempts.Analyzer, "seedconsumer")
	n := 0
	for _, r := range results {
		n += len(r.Diagnostics)
	}
	if n != 2 {
		t.Fatalf("rawattempts reported %d raw uses in the seed consumer, want 2", n)
	}
}
