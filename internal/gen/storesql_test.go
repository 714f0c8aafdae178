package gen

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestStoreStatementsEvaluateConstants: the generator takes each constant's value as the
// compiler does (a concatenation of other constants included), PostgreSQL's text from
// pgOverrides where it has an entry, and refuses an override of a constant SQLite's file lacks.
func TestStoreStatementsEvaluateConstants(t *testing.T) {
	files := func(overrides string) fstest.MapFS {
		return fstest.MapFS{
			storeSQLiteQueries: {Data: []byte("package actordelivery\n\nconst cols = `a, b`\n\nconst (\n\tqOne = `SELECT ` + cols + ` FROM {p}t`\n\tqTwo = qOne + `\nLIMIT 1`\n)\n")},
			storePostgresQueries: {Data: []byte("package actordelivery\n\nfunc pgOverrides() map[string]string {\n\treturn map[string]string{\n" +
				overrides + "\n\t}\n}\n\nconst qPgOnly = `SELECT pg_notify(:c, :p)`\n")},
		}
	}
	sqlite, postgres, err := storeStatements(files("\t\tqTwo: qOne + `\nFOR UPDATE`,"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sqlite["qTwo"]; got != "SELECT a, b FROM {p}t\nLIMIT 1" {
		t.Errorf("SQLite qTwo = %q", got)
	}
	if got := postgres["qTwo"]; got != "SELECT a, b FROM {p}t\nFOR UPDATE" {
		t.Errorf("PostgreSQL qTwo = %q", got)
	}
	if _, ok := postgres["qOne"]; ok {
		t.Error("PostgreSQL repeats qOne, which it runs as SQLite's text")
	}
	if got := postgres["qPgOnly"]; got != "SELECT pg_notify(:c, :p)" {
		t.Errorf("PostgreSQL qPgOnly = %q", got)
	}
	if _, _, err := storeStatements(files("\t\tqPgOnly: `x`,")); err == nil || !strings.Contains(err.Error(), "qPgOnly") {
		t.Errorf("an override of a constant SQLite lacks: %v", err)
	}
}
