package rulecopies_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/traces"
)

// sharedName is one action, state or reason that the store reports and a trace records: the
// store's constant and the traces package's constant of the same name.
type sharedName struct {
	store, trace string
}

// sharedNames pairs every Action, State and Reason constant of actordelivery with its traces
// twin. A replayed or recorded step compares the store's words with the trace's, so the two must
// spell each one the same way.
var sharedNames = map[string]sharedName{
	"ActionAcked":               {actordelivery.ActionAcked, traces.ActionAcked},
	"ActionRetried":             {actordelivery.ActionRetried, traces.ActionRetried},
	"ActionDeadLettered":        {actordelivery.ActionDeadLettered, traces.ActionDeadLettered},
	"ActionLeaseLost":           {actordelivery.ActionLeaseLost, traces.ActionLeaseLost},
	"ActionIdle":                {actordelivery.ActionIdle, traces.ActionIdle},
	"ActionDelivered":           {actordelivery.ActionDelivered, traces.ActionDelivered},
	"ActionClaimLost":           {actordelivery.ActionClaimLost, traces.ActionClaimLost},
	"ActionCommitFailed":        {actordelivery.ActionCommitFailed, traces.ActionCommitFailed},
	"StateReady":                {actordelivery.StateReady, traces.StateReady},
	"StateAcked":                {actordelivery.StateAcked, traces.StateAcked},
	"StatePending":              {actordelivery.StatePending, traces.StatePending},
	"StateCompleted":            {actordelivery.StateCompleted, traces.StateCompleted},
	"StateDeadLetter":           {actordelivery.StateDeadLetter, traces.StateDeadLetter},
	"ReasonMaxAttempts":         {actordelivery.ReasonMaxAttempts, traces.ReasonMaxAttempts},
	"ReasonHandlerFailed":       {actordelivery.ReasonHandlerFailed, traces.ReasonHandlerFailed},
	"ReasonLeaseExpired":        {actordelivery.ReasonLeaseExpired, traces.ReasonLeaseExpired},
	"ReasonMaxDeliveryAttempts": {actordelivery.ReasonMaxDeliveryAttempts, traces.ReasonMaxDeliveryAttempts},
	"ReasonUndeliverable":       {actordelivery.ReasonUndeliverable, traces.ReasonUndeliverable},
	"ReasonIDCollisionPrefix":   {actordelivery.ReasonIDCollisionPrefix, traces.ReasonIDCollisionPrefix},
}

// traceOnlyNames are the traces package's words that the store never reports: a crash is the
// replay's fault, not an outcome the store returns.
var traceOnlyNames = map[string]bool{"ActionCrashed": true}

// sharedNamePattern is what makes a constant one of the shared words.
var sharedNamePattern = regexp.MustCompile(`^(Action|State|Reason)[A-Z]`)

// TestNamesAgree holds the store's action, state and reason words to the trace format's. It reads
// both packages' sources, so a word added to one package and not paired here fails as well as a
// pair whose spellings differ.
func TestNamesAgree(t *testing.T) {
	for name, n := range sharedNames {
		if n.store != n.trace {
			t.Errorf("%s: actordelivery says %q, traces says %q", name, n.store, n.trace)
		}
	}
	for _, pkg := range []struct {
		dir       string
		traceSide bool
	}{{"actordelivery", false}, {"traces", true}} {
		declared := exportedStringConsts(t, filepath.Join("..", "..", pkg.dir))
		for name, value := range declared {
			if !sharedNamePattern.MatchString(name) {
				continue
			}
			n, paired := sharedNames[name]
			want := n.store
			if pkg.traceSide {
				want = n.trace
			}
			switch {
			case paired && want != value:
				t.Errorf("%s.%s = %q in the source, %q through the pair", pkg.dir, name, value, want)
			case !paired && !(pkg.traceSide && traceOnlyNames[name]):
				t.Errorf("%s.%s (%q) has no twin in sharedNames: pair it with the other package's constant, or list it as trace-only", pkg.dir, name, value)
			}
		}
		for name := range sharedNames {
			if _, ok := declared[name]; !ok {
				t.Errorf("sharedNames pairs %s, which %s does not declare as a string constant", name, pkg.dir)
			}
		}
	}
}

// exportedStringConsts returns the exported constants with a string literal value that the
// non-test Go files of dir declare.
func exportedStringConsts(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	sort.Strings(files)
	consts := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !id.IsExported() || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatalf("%s: %s: %v", fset.Position(lit.Pos()), id.Name, err)
					}
					consts[id.Name] = v
				}
			}
		}
	}
	return consts
}
