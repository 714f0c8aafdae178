package actordelivery

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Querier runs the application's own SQL. Tx returns one bound to the store's transaction, so the
// application's rows commit or roll back together with the store's (an outbox row, a message's
// acknowledgement). The SQL is passed to the database as written: use the backend's own
// placeholders ("?" or "$1" on SQLite, "$1" on PostgreSQL) and its own table names (TablePrefix
// applies only to the store's tables).
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *Row
}

// Row is the result of Querier.QueryRowContext: a *sql.Row, or the error that kept the statement
// from running (ErrNoTransaction, ErrInvalidArgument), which Scan and Err then return.
type Row struct {
	// One of row and rows is set when err is nil: rows on PostgreSQL's read-write transactions,
	// whose COMMIT must find no result still open (pgTx closes the rows it handed out).
	row  *sql.Row
	rows *sql.Rows
	err  error
}

// Scan copies the row's columns into dest, as sql.Row.Scan does; sql.ErrNoRows when there is none.
func (r *Row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if r.rows == nil {
		return r.row.Scan(dest...)
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}

// Err is the error that kept the statement from running, or the database's error, without
// scanning.
func (r *Row) Err() error {
	if r.err != nil {
		return r.err
	}
	if r.rows != nil {
		return r.rows.Err()
	}
	return r.row.Err()
}

// Tx returns the application's handle on the transaction ctx carries: the one ExecTx handed its
// callback, or a Handler's Effects. Statements made through it are part of that transaction. The
// handle works only while the transaction is open: after ExecTx returned, every call fails with
// ErrNoTransaction and runs nothing.
//
// In a read-only ExecTx the handle reads from the transaction's snapshot, and ExecContext refuses
// every statement with ErrInvalidArgument. A write sent through QueryContext or QueryRowContext
// is refused by the database itself (SQLite's query_only connection, PostgreSQL's READ ONLY
// transaction).
//
// The transaction is the store's, so the handle refuses statements that would end or split it
// (BEGIN, COMMIT, ROLLBACK, END, SAVEPOINT, RELEASE) with ErrInvalidArgument: ExecTx commits.
//
// Errors: ErrNoTransaction when ctx carries no transaction of a store.
func Tx(ctx context.Context) (Querier, error) {
	ts, _ := ctx.Value(txKey{}).(*txState)
	if ts == nil {
		return nil, fmt.Errorf("actordelivery: Tx: %w: the context carries no transaction (use the context ExecTx or Effects received)", ErrNoTransaction)
	}
	if ts.ended.Load() {
		return nil, fmt.Errorf("actordelivery: Tx: %w: the transaction has ended", ErrNoTransaction)
	}
	return appTx{ts: ts}, nil
}

// appTx is the handle Tx returns. It runs statements on the raw transaction (not through the
// store's dialect: the SQL is the application's).
type appTx struct{ ts *txState }

func (a appTx) check(op, query string, write bool) error {
	if a.ts.ended.Load() {
		return fmt.Errorf("actordelivery: Tx.%s: %w: the transaction has ended", op, ErrNoTransaction)
	}
	if err := a.ts.store.checkOpen("Tx." + op); err != nil {
		return err
	}
	if kw := leadingKeyword(query); txControl[kw] {
		return invalid("Tx."+op, "statement %s would end or split the store's transaction; ExecTx commits or rolls back", kw)
	}
	if write && a.ts.readOnly {
		return invalid("Tx."+op, "the transaction is read-only (ExecTx with readOnly true)")
	}
	return nil
}

// txControl are the statements that begin, end or split a transaction, on either backend.
var txControl = map[string]bool{"BEGIN": true, "COMMIT": true, "ROLLBACK": true, "END": true,
	"SAVEPOINT": true, "RELEASE": true, "ABORT": true, "START": true}

// leadingKeyword is the statement's first word, upper-cased, after blanks and SQL comments.
func leadingKeyword(query string) string {
	q := query
	for {
		q = strings.TrimLeft(q, " \t\r\n;(")
		switch {
		case strings.HasPrefix(q, "--"):
			if i := strings.IndexByte(q, '\n'); i >= 0 {
				q = q[i+1:]
				continue
			}
			return ""
		case strings.HasPrefix(q, "/*"):
			if i := strings.Index(q, "*/"); i >= 0 {
				q = q[i+2:]
				continue
			}
			return ""
		}
		end := strings.IndexFunc(q, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		})
		if end < 0 {
			end = len(q)
		}
		return strings.ToUpper(q[:end])
	}
}

func (a appTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := a.check("ExecContext", query, true); err != nil {
		return nil, err
	}
	res, err := a.ts.sqltx.ExecContext(ctx, query, args...)
	if err != nil {
		return nil, a.ts.store.dbErr("Tx.ExecContext", err)
	}
	return res, nil
}

func (a appTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := a.check("QueryContext", query, false); err != nil {
		return nil, err
	}
	rows, err := a.ts.sqltx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, a.ts.store.dbErr("Tx.QueryContext", err)
	}
	return rows, nil
}

// QueryRowContext reports a refused statement, or the database's error, through the returned
// row's Scan and Err.
func (a appTx) QueryRowContext(ctx context.Context, query string, args ...any) *Row {
	if err := a.check("QueryRowContext", query, false); err != nil {
		return &Row{err: err}
	}
	if p, ok := a.ts.sqltx.(*pgTx); ok {
		rows, err := p.QueryContext(ctx, query, args...)
		return &Row{rows: rows, err: err}
	}
	return &Row{row: a.ts.sqltx.QueryRowContext(ctx, query, args...)}
}
