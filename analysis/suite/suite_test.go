package suite_test

import (
	"slices"
	"testing"

	"golang.org/x/tools/go/analysis"

	"github.com/pconform/pconform/analysis/suite"
)

func TestAnalyzersValid(t *testing.T) {
	as := suite.Analyzers()
	if err := analysis.Validate(as); err != nil {
		t.Fatalf("suite is not a valid analyzer set: %v", err)
	}
	var names []string
	for _, a := range as {
		names = append(names, a.Name)
		if a.URL == "" {
			t.Errorf("analyzer %s has no URL to its documentation", a.Name)
		}
	}
	want := []string{"txerr", "rawattempts", "unfencedack", "sqlparams", "txboundary"}
	if !slices.Equal(names, want) {
		t.Errorf("suite analyzers = %v, want %v", names, want)
	}
}

func TestAnalyzersFreshSlice(t *testing.T) {
	a := suite.Analyzers()
	a[0] = nil
	if suite.Analyzers()[0] == nil {
		t.Fatal("Analyzers returned a shared slice: a caller's change leaked into the next call")
	}
}
