package actordelivery

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/mattn/go-sqlite3"
)

// qTempStore keeps SQLite's temporary structures in memory. UPDATE ... RETURNING (the lease, the
// expire sweep, the outbox claim) collects its rows in an ephemeral table, and with the default
// temp_store that table lives in a temporary file: every such statement then opened and removed a
// file, which cost more CPU than the statement's own work (about 0.5 ms against tens of µs,
// measured with the sqlite3 shell's timer). The DSN has no parameter for it, so each connection sets
// it when it opens; checkPragmas verifies it on the writer.
const qTempStore = `PRAGMA temp_store = MEMORY`

// openSQLite returns a pool of go-sqlite3 connections to dsn, each with temp_store = MEMORY. Like
// sql.Open, it connects lazily: a bad DSN shows at the first use (Ping).
func openSQLite(dsn string) *sql.DB {
	drv := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(qTempStore, nil)
		return err
	}}
	return sql.OpenDB(sqliteConnector{dsn: dsn, drv: drv})
}

// sqliteConnector is a driver.Connector for one DSN on a go-sqlite3 driver value of the store's
// own (no driver is registered globally).
type sqliteConnector struct {
	dsn string
	drv *sqlite3.SQLiteDriver
}

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c sqliteConnector) Driver() driver.Driver                        { return c.drv }
