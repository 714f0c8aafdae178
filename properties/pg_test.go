package properties

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pconform/pconform/internal/targets"
)

// pgServers is the PostgreSQL server the property runs share in this test binary, opened on first
// use and closed by TestMain.
var pgServers struct {
	sync.Mutex
	s *targets.PGServer
}

// pgServer returns the shared PostgreSQL server of PCONFORM_PG_DSN. Without a DSN it fails the
// test under CI=true; otherwise the property runs named *Postgres skip and the other callers get nil (and
// run on SQLite only), saying so.
func pgServer(t *testing.T) *targets.PGServer {
	t.Helper()
	dsn := pgDSN(t)
	if dsn == "" {
		if strings.HasSuffix(t.Name(), "Postgres") {
			t.Skip("PCONFORM_PG_DSN is not set: skipping the PostgreSQL property run (scripts/check.sh starts a server)")
		}
		t.Log("PCONFORM_PG_DSN is not set: hunting on SQLite only")
		return nil
	}
	pgServers.Lock()
	defer pgServers.Unlock()
	if pgServers.s == nil {
		s, err := targets.OpenPGServer(dsn)
		if err != nil {
			t.Fatal(err)
		}
		pgServers.s = s
	}
	return pgServers.s
}

// pgDSN returns PCONFORM_PG_DSN; without it, it fails the test under CI=true and returns "".
func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("PCONFORM_PG_DSN")
	if dsn == "" && os.Getenv("CI") == "true" {
		t.Fatal("PCONFORM_PG_DSN is not set and CI=true: the PostgreSQL checks of the properties must run in CI")
	}
	return dsn
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pgServers.s != nil {
		_ = pgServers.s.Close()
	}
	os.Exit(code)
}
