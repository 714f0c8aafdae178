package targets

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// PGServer is a PostgreSQL server that many store targets replay on, one after another or at
// once. It keeps one connection pool, in a schema of its own, and hands each target a table prefix
// of its own; a closed target's prefix is emptied and handed to the next target, so a
// replay pays for neither a connection nor the schema's creation. Close drops the schema.
type PGServer struct {
	db     *sql.DB
	schema string
	mu     sync.Mutex
	free   []string // prefixes whose tables exist and are empty
	made   int      // prefixes made so far
}

// OpenPGServer connects to the server dsn names and creates the server's schema there.
func OpenPGServer(dsn string) (*PGServer, error) {
	if dsn == "" {
		return nil, errors.New("targets: postgres: no DSN (set PCONFORM_PG_DSN or pass one)")
	}
	schema := "replay_" + strings.ToLower(rand.Text()[:16])
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("targets: postgres: %w", err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, fmt.Errorf("targets: postgres: create schema %s: %w", schema, err)
	}
	db, err := sql.Open("pgx", WithSearchPath(dsn, schema))
	if err != nil {
		return nil, fmt.Errorf("targets: postgres: %w", err)
	}
	db.SetMaxIdleConns(8)
	return &PGServer{db: db, schema: schema}, nil
}

var _ = stdlib.GetDefaultDriver // the "pgx" database/sql driver

// WithSearchPath points dsn (a URL or key=value pairs) at schema.
func WithSearchPath(dsn, schema string) string {
	if u, err := url.Parse(dsn); err == nil && strings.Contains(dsn, "://") {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

// take returns an unused table prefix; its tables, if any, are empty.
func (p *PGServer) take() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		prefix := p.free[n-1]
		p.free = p.free[:n-1]
		return prefix
	}
	p.made++
	return fmt.Sprintf("r%d_", p.made)
}

// give deletes the rows of prefix's tables (all but the schema version, so the next store need not migrate)
// and makes it available again. A prefix that cannot be emptied is dropped from use.
func (p *PGServer) give(prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := p.db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
WHERE table_schema = current_schema() AND starts_with(table_name, $1) AND table_name <> $2`, prefix, prefix+"schema_version")
	if err != nil {
		return fmt.Errorf("targets: postgres: list tables of %s: %w", prefix, err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			_ = rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	if len(tables) > 0 {
		// DELETE, not TRUNCATE: on tables this small it is several times faster, and the
		// identity counters need no reset (seq only orders rows).
		if _, err := p.db.ExecContext(ctx, "DELETE FROM "+strings.Join(tables, "; DELETE FROM ")); err != nil {
			return fmt.Errorf("targets: postgres: empty %s: %w", prefix, err)
		}
	}
	p.mu.Lock()
	p.free = append(p.free, prefix)
	p.mu.Unlock()
	return nil
}

// Close drops the server's schema, with every target's tables, and closes the pool.
func (p *PGServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := p.db.ExecContext(ctx, "DROP SCHEMA "+p.schema+" CASCADE")
	return errors.Join(err, p.db.Close())
}

// Take, Give and DB let a test that opens the store itself (the kit's adapter for actordelivery)
// use the server: Take a table prefix for actordelivery.Options.TablePrefix, open the store on
// DB with it, and Give the prefix back when the store is closed.
func (p *PGServer) Take() string { return p.take() }

// Give empties prefix's tables and makes it available again; see Take.
func (p *PGServer) Give(prefix string) error { return p.give(prefix) }

// DB is the server's pool, whose search path is the server's schema.
func (p *PGServer) DB() *sql.DB { return p.db }
