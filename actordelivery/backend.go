package actordelivery

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Backend names the database a Store runs on.
type Backend string

const (
	// BackendSQLite is the embedded default: one database file, opened with Open.
	BackendSQLite Backend = "sqlite"
	// BackendPostgres is a PostgreSQL server (through pgx), opened with OpenPostgres.
	BackendPostgres Backend = "postgres"
)

// Backends lists every backend, the default first.
func Backends() []Backend { return []Backend{BackendSQLite, BackendPostgres} }

// ParseBackend returns the backend named s ("sqlite" or "postgres").
//
// Errors: ErrInvalidArgument naming s and the known backends.
func ParseBackend(s string) (Backend, error) {
	for _, b := range Backends() {
		if string(b) == s {
			return b, nil
		}
	}
	return "", invalid("ParseBackend", "backend %q is unknown (want sqlite or postgres)", s)
}

// OpenBackend opens a store on backend b: target is the SQLite file path or the PostgreSQL DSN.
func OpenBackend(b Backend, target string, opts Options) (*Store, error) {
	switch b {
	case BackendSQLite:
		return Open(target, opts)
	case BackendPostgres:
		return OpenPostgres(target, opts)
	}
	return nil, invalid("OpenBackend", "backend %q is unknown (want sqlite or postgres)", b)
}

// prefixRE is what a table prefix may look like: a plain lower-case SQL identifier start, so that
// every table and index name it makes needs no quoting on either backend. The length bound keeps
// the longest derived name within PostgreSQL's 63-byte identifier limit.
var prefixRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`)

func checkPrefix(op, prefix string) error {
	if prefix != "" && !prefixRE.MatchString(prefix) {
		return invalid(op, "table prefix %q is not a plain identifier (want lower-case letters, digits and '_', not starting with a digit, at most 40 characters)", prefix)
	}
	return nil
}

// dialect is everything about the SQL text that differs between backends. Statements are written
// once, in SQLite's dialect, in sqlite_queries.go, with {p} where the table prefix goes and :name
// parameters; a backend may replace a statement (postgres_queries.go keys its replacements by the
// SQLite constant itself) and renders parameters its own way. Rendered statements are cached per
// store.
type dialect struct {
	backend   Backend
	prefix    string
	overrides map[string]string // SQLite template -> this backend's template; nil for SQLite
	// positional: parameters become $1, $2, ... in order of first appearance, and named
	// arguments are passed positionally (pgx's database/sql driver ignores names).
	positional bool
	cache      sync.Map // template -> *rendered
}

type rendered struct {
	text  string
	names []string // positional parameter order; nil when parameters stay named
}

var paramRE = regexp.MustCompile(`:([a-z_][a-z0-9_]*)`)

func (d *dialect) render(template string) *rendered {
	if r, ok := d.cache.Load(template); ok {
		return r.(*rendered)
	}
	text := template
	if o, ok := d.overrides[template]; ok {
		text = o
	}
	text = strings.ReplaceAll(text, "{p}", d.prefix)
	r := &rendered{text: text}
	if d.positional {
		index := map[string]int{}
		r.text = paramRE.ReplaceAllStringFunc(text, func(m string) string {
			name := m[1:]
			i, ok := index[name]
			if !ok {
				r.names = append(r.names, name)
				i = len(r.names)
				index[name] = i
			}
			return fmt.Sprintf("$%d", i)
		})
		r.names = append([]string{}, r.names...)
	}
	d.cache.Store(template, r)
	return r
}

// bind renders template and arranges args for it. A statement naming a parameter the call does not
// pass is a bug in this package, not bad input: it panics.
func (d *dialect) bind(template string, args []any) (string, []any) {
	r := d.render(template)
	if !d.positional {
		return r.text, args
	}
	byName := make(map[string]any, len(args))
	for _, a := range args {
		na, ok := a.(sql.NamedArg)
		if !ok {
			panic(fmt.Sprintf("actordelivery: statement argument %v is not named", a))
		}
		byName[na.Name] = na.Value
	}
	out := make([]any, len(r.names))
	for i, n := range r.names {
		v, ok := byName[n]
		if !ok {
			panic(fmt.Sprintf("actordelivery: statement needs parameter :%s, the call does not pass it:\n%s", n, template))
		}
		out[i] = v
	}
	return r.text, out
}

// rawQuerier is what database/sql's DB, Tx and Conn share.
type rawQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// boundQuerier runs statement templates through a dialect. It implements querier.
type boundQuerier struct {
	q rawQuerier
	d *dialect
}

func (b boundQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	text, a := b.d.bind(query, args)
	return b.q.ExecContext(ctx, text, a...)
}

func (b boundQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	text, a := b.d.bind(query, args)
	return b.q.QueryContext(ctx, text, a...)
}

func (b boundQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	text, a := b.d.bind(query, args)
	return b.q.QueryRowContext(ctx, text, a...)
}
