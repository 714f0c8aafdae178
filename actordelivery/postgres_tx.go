package actordelivery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// dbTx is a transaction as ExecTx drives it: a *sql.Tx, or on PostgreSQL a read-write pgTx.
type dbTx interface {
	rawQuerier
	Commit() error
	Rollback() error
}

// pgTx is a read-write transaction on PostgreSQL that sends no BEGIN of its own: BEGIN travels
// in one pipeline with the transaction's first statement when that is an ExecContext with
// arguments (the two run as [BEGIN, statement] before one Sync, so the statement runs inside
// the transaction exactly as after a BEGIN of its own), and alone just before a first query.
// A transaction that sends no statement sends nothing at all, not even at its end.
//
// Everything else is what database/sql's Tx over pgx's driver does: statements after the first
// go through the connection as database/sql runs them; COMMIT and ROLLBACK are pgx's (a COMMIT the
// server answers with ROLLBACK, because a statement failed, is pgx.ErrTxCommitRollback; a
// connection whose COMMIT or ROLLBACK failed is closed, never reused); Rows still open at the end
// are closed first. pgx's driver discards a connection returned to the pool inside a
// transaction, so none ever leaks one.
//
// A pgTx belongs to one ExecTx and is used from its goroutine only (see ExecTx).
type pgTx struct {
	// ctx is ExecTx's context. COMMIT carries its values, never its cancellation (see Commit).
	ctx  context.Context
	conn *sql.Conn
	// begun: the server may be inside the transaction (BEGIN was sent). While false the server
	// has seen nothing of it.
	begun bool
	// done: Commit or Rollback was called; conn is back in the pool.
	done bool
	// rows are the results QueryContext returned, closed before COMMIT or ROLLBACK.
	rows []*sql.Rows
}

// beginPG starts a read-write pgTx on s's pool: it takes a connection and sends nothing.
func (s *Store) beginPG(ctx context.Context) (*pgTx, error) {
	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &pgTx{ctx: ctx, conn: conn}, nil
}

// pgxConn is the pgx connection under a database/sql driver connection of a PostgreSQL store
// (OpenPostgres and OpenPostgresDB make sure the pool is pgx's driver).
func pgxConn(dc any) (*pgx.Conn, error) {
	c, ok := dc.(*stdlib.Conn)
	if !ok {
		return nil, fmt.Errorf("actordelivery: pool connection is %T, want pgx's stdlib driver", dc)
	}
	return c.Conn(), nil
}

// pgArgs are database/sql arguments as pgx's driver passes them to pgx: names dropped (it binds
// positionally), values unchanged (its CheckNamedValue accepts every value as it is).
func pgArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if na, ok := a.(sql.NamedArg); ok {
			a = na.Value
		}
		out[i] = a
	}
	return out
}

// begin sends BEGIN alone, if it has not been sent. A connection BEGIN failed on is closed, so
// that no statement of the transaction can run outside it.
func (p *pgTx) begin(ctx context.Context) error {
	if p.begun {
		return nil
	}
	p.begun = true
	_, err := p.conn.ExecContext(ctx, "BEGIN")
	if err != nil {
		_ = p.conn.Raw(func(dc any) error {
			if c, cerr := pgxConn(dc); cerr == nil {
				_ = c.Close(context.Background())
			}
			return nil
		})
	}
	return err
}

func (p *pgTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if p.done {
		return nil, sql.ErrTxDone
	}
	if p.begun || len(args) == 0 {
		// Without arguments a statement may hold several (pgx sends it in the simple protocol),
		// which a pipeline cannot carry.
		if err := p.begin(ctx); err != nil {
			return nil, err
		}
		return p.conn.ExecContext(ctx, query, args...)
	}
	var tag pgconn.CommandTag
	err := p.conn.Raw(func(dc any) error {
		c, err := pgxConn(dc)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(query, pgArgs(args)...)
		br := c.SendBatch(ctx, b)
		_, err = br.Exec()
		if err == nil {
			tag, err = br.Exec()
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		// Whether BEGIN ran is the server's word: it may have, even when the statement failed.
		p.begun = c.PgConn().TxStatus() != 'I'
		return err
	})
	if err != nil {
		return nil, err
	}
	return pgResult(tag.RowsAffected()), nil
}

func (p *pgTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if p.done {
		return nil, sql.ErrTxDone
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	rows, err := p.conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	p.rows = append(p.rows, rows)
	return rows, nil
}

// QueryRowContext is for the store's statements, which always scan the row (closing it). The
// application's rows go through QueryContext (see appTx), so an unscanned one cannot keep the
// connection busy at COMMIT. After a failed BEGIN the row carries the closed connection's error.
func (p *pgTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if !p.done {
		_ = p.begin(ctx)
	}
	return p.conn.QueryRowContext(ctx, query, args...)
}

func (p *pgTx) closeRows() {
	for _, r := range p.rows {
		_ = r.Close()
	}
	p.rows = nil
}

// end runs COMMIT or ROLLBACK (if BEGIN was sent) and gives the connection back.
func (p *pgTx) end(ctx context.Context, stmt string) error {
	if p.done {
		return sql.ErrTxDone
	}
	p.done = true
	defer func() { _ = p.conn.Close() }()
	p.closeRows()
	if !p.begun {
		return nil
	}
	return p.conn.Raw(func(dc any) error {
		c, err := pgxConn(dc)
		if err != nil {
			return err
		}
		tag, err := c.Exec(ctx, stmt)
		if err != nil {
			// The connection's state is unknown (pgx's Tx does the same): never reuse it.
			if stmt == "ROLLBACK" || c.PgConn().TxStatus() != 'I' {
				_ = c.Close(context.Background())
			}
			return err
		}
		if stmt == "COMMIT" && tag.String() == "ROLLBACK" {
			return pgx.ErrTxCommitRollback
		}
		return nil
	})
}

// Commit sends COMMIT. ExecTx has already checked its context (a done one rolls back there), and
// from here the context no longer interrupts: pgx would answer a cancellation by breaking the
// connection, while the server may still commit, so the caller would be told of a failure that
// did not happen (a delivery acknowledged but reported abandoned, and on a recording store a
// committed event never recorded: a gap in the history). Waiting for the server's answer keeps
// the outcome known; only a failure of the connection itself can still leave it unknown.
func (p *pgTx) Commit() error { return p.end(context.WithoutCancel(p.ctx), "COMMIT") }

func (p *pgTx) Rollback() error { return p.end(context.Background(), "ROLLBACK") }

// pgResult is an ExecContext result: pgx's driver reports rows affected and no insert ids.
type pgResult int64

func (r pgResult) LastInsertId() (int64, error) {
	return 0, errors.New("actordelivery: LastInsertId is not supported by PostgreSQL (use RETURNING)")
}

func (r pgResult) RowsAffected() (int64, error) { return int64(r), nil }

// enqueueAlone is Enqueue on PostgreSQL outside any transaction, on a store that does not record.
// The insert (qEnqueue) and its re-check (qEnqueueRecheckAlone) go as one pipeline ending in one
// Sync, which the server runs as one implicit transaction: it commits when both statements
// succeed and rolls back whole when either fails (PostgreSQL's protocol, "Pipelining"). So the
// call is one round trip instead of four (BEGIN, insert, re-check, COMMIT), and a failure can only
// abort. The re-check is still a statement of its own, whose snapshot is taken after the insert
// ended (READ COMMITTED takes one per statement), as enqueue needs; since it is sent before the
// insert's result is known, it finds the insert's row by the transaction that wrote it. The
// enqueue of an id dead-lettered meanwhile leaves nothing and sends no NOTIFY, as in enqueue.
// Like autocommitOne, it counts one commit or one rollback, and Metrics.ObserveCommit gets the
// pipeline's duration, which includes its commit.
func (s *Store) enqueueAlone(ctx context.Context, m NewMessage) (duplicate bool, err error) {
	const op = "Enqueue"
	if err := s.checkOpen(op); err != nil {
		return false, err
	}
	if err := s.outsideTx(op); err != nil {
		return false, err
	}
	t := topic{mailbox: m.Mailbox}
	err = s.retryOwn(ctx, op, func() error {
		ins, insArgs := s.d.bind(qEnqueue, enqueueParams(m, s.nowMillis()))
		chk, chkArgs := s.d.bind(qEnqueueRecheckAlone, []any{named("id", m.ID),
			named("channel", s.channel()), named("payload", s.notifyPayload(t, m.ID))})
		conn, err := s.wdb.Conn(ctx)
		if err != nil {
			return s.dbErr(op+" "+m.ID, err)
		}
		defer func() { _ = conn.Close() }()
		var stands bool
		var sent sql.NullString
		start := time.Now()
		err = conn.Raw(func(dc any) error {
			c, err := pgxConn(dc)
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			b := &pgx.Batch{}
			b.Queue(ins, insArgs...)
			b.Queue(chk, chkArgs...)
			// The pipeline ends in its commit: once sent, ctx does not cut it off (see
			// pgTx.Commit), so the outcome the caller gets is the server's.
			br := c.SendBatch(context.WithoutCancel(ctx), b)
			_, err = br.Exec()
			if err == nil {
				err = br.QueryRow().Scan(&stands, &sent)
			}
			if cerr := br.Close(); err == nil {
				err = cerr
			}
			return err
		})
		s.metrics.ObserveCommit(time.Since(start))
		if err != nil {
			s.rollbacks.Add(1)
			return s.dbErr(op+" "+m.ID, err)
		}
		s.commits.Add(1)
		duplicate = !stands
		return nil
	})
	if err != nil {
		return false, err
	}
	if !duplicate {
		s.fireLocal(t, m.ID)
	}
	return duplicate, nil
}
