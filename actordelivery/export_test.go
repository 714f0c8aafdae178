package actordelivery

import "testing"

// PostgresTestDSN hands the package's external tests (example_postgres_test.go) a fresh schema
// of the test server, as testTarget gives the package's own PostgreSQL tests; it skips t when no
// server is configured (fails it under CI=true).
func PostgresTestDSN(t testing.TB) string {
	t.Helper()
	return pgSchema(t, pgDSN(t))
}
