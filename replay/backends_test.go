package replay_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/targets"
)

// backendsFlag lists the store backends the replay tests run the store-backed targets on. The
// PostgreSQL runs need PCONFORM_PG_DSN (scripts/check.sh starts a throwaway server and sets it).
//
//	go test ./replay/ -run 'TestCorpus$' -backends postgres
var backendsFlag = flag.String("backends", "sqlite,postgres", "comma-separated store backends to replay on (sqlite, postgres)")

// pgDSNEnv names the PostgreSQL server the tests replay on.
const pgDSNEnv = "PCONFORM_PG_DSN"

// testBackends returns the backends of -backends, SQLite first when listed. PostgreSQL without a
// DSN is left out with a log line, or fails the test under CI=true.
func testBackends(t testing.TB) []actordelivery.Backend {
	t.Helper()
	var out []actordelivery.Backend
	for _, want := range actordelivery.Backends() {
		if !strings.Contains(","+*backendsFlag+",", ","+string(want)+",") {
			continue
		}
		if want == actordelivery.BackendPostgres && os.Getenv(pgDSNEnv) == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not set and CI=true: the PostgreSQL replays must run in CI", pgDSNEnv)
			}
			t.Logf("%s is not set: replaying on SQLite only (scripts/check.sh starts a PostgreSQL server)", pgDSNEnv)
			continue
		}
		out = append(out, want)
	}
	if len(out) == 0 {
		t.Fatalf("-backends %q selects no backend", *backendsFlag)
	}
	return out
}

// pgServers holds one PGServer per test binary, opened on first use and closed by TestMain.
var pgServers struct {
	sync.Mutex
	s *targets.PGServer
}

// sqliteTemplate is the migrated SQLite database the test binary's SQLite targets start from,
// made on first use: the corpus replays open a fresh store per trace and per target, and
// migrating each cost more than many a trace's replay. TestTemplateIsAFreshStore checks that a
// copy of it is what a migration makes.
var sqliteTemplate struct {
	sync.Mutex
	tp *targets.SQLiteTemplate
}

// storeDB is a fresh database for one store-backed target of t on backend b: on SQLite a copy of
// the migrated template in a directory of t's.
func storeDB(t testing.TB, b actordelivery.Backend) targets.StoreDB {
	t.Helper()
	if b != actordelivery.BackendPostgres {
		sqliteTemplate.Lock()
		defer sqliteTemplate.Unlock()
		if sqliteTemplate.tp == nil {
			tp, err := targets.NewSQLiteTemplate(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			sqliteTemplate.tp = tp
		}
		return targets.StoreDB{Backend: b, Dir: t.TempDir(), Template: sqliteTemplate.tp}
	}
	pgServers.Lock()
	defer pgServers.Unlock()
	if pgServers.s == nil {
		s, err := targets.OpenPGServer(os.Getenv(pgDSNEnv))
		if err != nil {
			t.Fatal(err)
		}
		pgServers.s = s
	}
	return targets.StoreDB{Backend: b, Server: pgServers.s}
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if pgServers.s != nil {
		if err := pgServers.s.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "replay tests: closing the PostgreSQL server:", err)
		}
	}
	os.Exit(code)
}
