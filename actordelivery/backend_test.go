package actordelivery

import (
	"crypto/rand"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
)

// The store's tests run on both backends. A test written for both wraps its body in
// forEachBackend, which runs it once per backend as the subtests sqlite and postgres, and passes
// the body the backend it runs on. The body opens its database with testStore or testTarget and
// that backend. A test of something only one backend has (SQLite's pragmas, file names and busy
// timeout; PostgreSQL's schemas and connections) names its backend instead.

// pgDSNEnv names the PostgreSQL server the tests use. scripts/check.sh starts a throwaway one and
// sets it; without it the PostgreSQL tests skip, except under CI=true, where they fail.
const pgDSNEnv = "PCONFORM_PG_DSN"

// backends are the backends forEachBackend runs a test body on, in order.
var backends = []Backend{BackendSQLite, BackendPostgres}

// forEachBackend runs body once per backend, as t's subtest named after the backend. The
// PostgreSQL run skips when no server is configured (and fails under CI=true; see pgDSN).
func forEachBackend(t *testing.T, body func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			if b == BackendPostgres {
				pgDSN(t)
			}
			body(t, b)
		})
	}
}

// pgDSN returns the PostgreSQL server's DSN, skipping t (failing it under CI=true) when none is
// configured.
func pgDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set and CI=true: the PostgreSQL tests must run in CI (scripts/check.sh starts a server)", pgDSNEnv)
		}
		t.Skipf("%s is not set: skipping the PostgreSQL tests (scripts/check.sh starts a throwaway server; see README)", pgDSNEnv)
	}
	return dsn
}

// testTarget returns a fresh, empty database for t: a file in t's temp dir on SQLite; on
// PostgreSQL, a schema of its own (dropped when t ends) named in the DSN's search_path.
func testTarget(t testing.TB, b Backend) string {
	t.Helper()
	if b == BackendSQLite {
		return filepath.Join(t.TempDir(), "store.db")
	}
	return pgSchema(t, pgDSN(t))
}

func pgSchema(t testing.TB, dsn string) string {
	t.Helper()
	schema := "t_" + strings.ToLower(rand.Text()[:12])
	admin := pgAdmin(t, dsn)
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		a, err := sql.Open("pgx", dsn)
		if err != nil {
			return
		}
		defer a.Close()
		if _, err := a.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(dsn, schema)
}

func pgAdmin(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("open %s: %v", pgDSNEnv, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// withSearchPath points dsn (a URL or key=value pairs) at schema.
func withSearchPath(dsn, schema string) string { return withDSNParam(dsn, "search_path", schema) }

// withDSNParam sets one connection parameter in dsn, a URL or key=value pairs.
func withDSNParam(dsn, key, value string) string {
	if u, err := url.Parse(dsn); err == nil && strings.Contains(dsn, "://") {
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " " + key + "=" + value
}

var _ = stdlib.GetDefaultDriver // registers the "pgx" database/sql driver for the helpers above
