package directive

import (
	"go/ast"
	"strings"
)

// Prefix starts every pconform directive.
const Prefix = "//pconform:"

// Names of the directives the analyzers understand. Each is documented in docs/analyzers.md.
const (
	TxCommit          = "txcommit"          // func: its error result is a transaction outcome (txerr)
	StoredAttempts    = "storedattempts"    // struct field: holds a stored, unbumped attempt count (rawattempts)
	RetryDecision     = "retrydecision"     // func: its int arguments are attempt numbers for a retry decision (rawattempts)
	EffectiveAttempts = "effectiveattempts" // func: turns a stored count into the effective attempt (rawattempts)
	SingleWorker      = "singleworker"      // func: runs only on the single-worker (leaseless) path (unfencedack)
)

// Has reports whether one of the groups carries the directive name. Nil groups are skipped, so
// a field's Doc and Comment can be passed together.
func Has(name string, groups ...*ast.CommentGroup) bool {
	_, ok := Find(name, groups...)
	return ok
}

// Find returns the comment carrying the directive name, for positioning a diagnostic about it.
func Find(name string, groups ...*ast.CommentGroup) (*ast.Comment, bool) {
	for _, g := range groups {
		if g == nil {
			continue
		}
		for _, c := range g.List {
			if Parse(c.Text) == name {
				return c, true
			}
		}
	}
	return nil, false
}

// Parse returns the directive name of one comment's text ("//pconform:txcommit why" gives
// "txcommit"), or "" when the comment is not a pconform directive.
func Parse(text string) string {
	rest, ok := strings.CutPrefix(text, Prefix)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, " ")
	name, _, _ = strings.Cut(name, "\t")
	return name
}
