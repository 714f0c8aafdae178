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

func TestAnalyzer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads and type-checks the fixtures and their imports from source (seconds per package)")
	}
	tests := []struct {
		name string
		pkgs []string
	}{
		{"cases", []string{"unfencedack/a"}},
		// The stand-in store's consumer acks by id only on leaseless branches.
		{"store stand-in is clean", []string{"github.com/pconform/pconform/actordelivery"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			analysistest.Run(t, testdata(), unfencedack.Analyzer, tt.pkgs...)
		})
	}
}
