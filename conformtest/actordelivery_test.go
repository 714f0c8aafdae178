package conformtest_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/examples/adstore"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
)

// pgDSNEnv names the PostgreSQL server the PostgreSQL run uses (bash scripts/pg.sh go test ...
// starts a throwaway one and sets it).
const pgDSNEnv = "PCONFORM_PG_DSN"

// TestActordelivery puts pconform's own store through the kit as any other store: through its
// public-API adapter, examples/adstore, on SQLite and, with PCONFORM_PG_DSN set, on PostgreSQL,
// under the default profile. Only the databases come from internal/targets (a migrated SQLite
// file to copy, a PostgreSQL table prefix), to save a migration per subtest.
func TestActordelivery(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		tp, err := targets.NewSQLiteTemplate(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		conformtest.Check(t, conformtest.Config{Hunts: 5, NewTarget: func(t *testing.T) replay.Target {
			path := filepath.Join(t.TempDir(), "store.db")
			if err := tp.WriteTo(path); err != nil {
				t.Fatal(err)
			}
			return newAdstore(t, func(o actordelivery.Options) (*actordelivery.Store, error) { return actordelivery.Open(path, o) }, nil)
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
			prefix := srv.Take()
			return newAdstore(t, func(o actordelivery.Options) (*actordelivery.Store, error) {
				o.TablePrefix = prefix
				return actordelivery.OpenPostgresDB(srv.DB(), o)
			}, func() error { return srv.Give(prefix) })
		}})
	})
}

// released is an adapter whose Close also hands its database back.
type released struct {
	*adstore.Target
	release func() error
}

func (r released) Close() error { return errors.Join(r.Target.Close(), r.release()) }

func newAdstore(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error), release func() error) replay.Target {
	tg, err := adstore.New(open)
	if err != nil {
		t.Fatal(err)
	}
	if release == nil {
		return adapter.Adapt(tg)
	}
	return adapter.Adapt(released{tg, release})
}
