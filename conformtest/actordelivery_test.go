package conformtest_test

import (
	"os"
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
)

// pgDSNEnv names the PostgreSQL server the PostgreSQL run uses (bash scripts/pg.sh go test ...
// starts a throwaway one and sets it).
const pgDSNEnv = "PCONFORM_PG_DSN"

// TestActordelivery puts pconform's own store through the kit, as any other store: its registry
// target on SQLite and, with PCONFORM_PG_DSN set, on PostgreSQL, under the default profile. It
// replaces replay's crash-every-step run of the corpus (the kit's reopen subtests).
func TestActordelivery(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		tp, err := targets.NewSQLiteTemplate(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		conformtest.Check(t, conformtest.Config{Hunts: 5, NewTarget: func(t *testing.T) replay.Target {
			return storeTarget(t, targets.StoreDB{Dir: t.TempDir(), Template: tp})
		}})
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv(pgDSNEnv)
		if dsn == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not set and CI=true: the PostgreSQL run must happen in CI", pgDSNEnv)
			}
			t.Skipf("%s is not set (bash scripts/pg.sh go test ./conformtest starts a server)", pgDSNEnv)
		}
		srv, err := targets.OpenPGServer(dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		conformtest.Check(t, conformtest.Config{Hunts: 5, NewTarget: func(t *testing.T) replay.Target {
			return storeTarget(t, targets.StoreDB{Backend: actordelivery.BackendPostgres, Server: srv})
		}})
	})
}

func storeTarget(t *testing.T, db targets.StoreDB) replay.Target {
	tg, err := targets.NewOn(targets.Store, db)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}
