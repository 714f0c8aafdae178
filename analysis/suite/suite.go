package suite

import (
	"golang.org/x/tools/go/analysis"

	"github.com/pconform/pconform/analysis/rawattempts"
	"github.com/pconform/pconform/analysis/sqlparams"
	"github.com/pconform/pconform/analysis/txboundary"
	"github.com/pconform/pconform/analysis/txerr"
	"github.com/pconform/pconform/analysis/unfencedack"
)

// Analyzers returns pconform's analyzers: txerr, rawattempts, unfencedack, sqlparams and
// txboundary. The slice is new
// on each call; the analyzers are shared.
func Analyzers() []*analysis.Analyzer {
	return []*analysis.Analyzer{
		txerr.Analyzer,
		rawattempts.Analyzer,
		unfencedack.Analyzer,
		sqlparams.Analyzer,
		txboundary.Analyzer,
	}
}
