package actordelivery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

const (
	defaultConnectTimeout = 5 * time.Second
	defaultMaxConns       = 16
	// listenRetry is how long the notification listener waits before reconnecting.
	listenRetry = time.Second
)

// OpenPostgres opens a store on the PostgreSQL server dsn names (a postgres:// URL or key=value
// pairs, as pgx accepts), applies any schema migrations this build has and the database lacks, and
// starts listening for the wake-ups other stores on the same database send after their commits.
//
// The store keeps the same API and semantics as the SQLite one, with these differences in
// mechanics: write transactions run at READ COMMITTED on a pool of Options.MaxConns connections and
// take only row locks, so commits touching different mailboxes run in parallel; Lease,
// OutboxClaim and ExpireLeases skip rows another transaction has locked (FOR UPDATE SKIP LOCKED);
// Peek is a plain read that locks nothing; read-only transactions run at REPEATABLE READ (one
// snapshot). A read-write transaction sends its BEGIN in one round trip with its first
// statement (nothing at all when it runs none), and an Enqueue outside ExecTx is one round trip:
// its insert and re-check run as one pipelined implicit transaction. A single store call outside
// ExecTx that fails with a serialization failure or a deadlock is retried up to three times;
// inside ExecTx such a failure is returned as ErrBusy, since the callback may have effects the
// store cannot repeat.
//
// It needs PostgreSQL 13 or later.
//
// Errors: ErrInvalidArgument for a malformed DSN, a bad TablePrefix, negative options or a
// GroupCommit above 1 (checked before connecting); when the
// first connection fails, an error naming host, port and user (never the password) that wraps
// ErrAuthFailed (the server refused the role or password), ErrNoDatabase (no such database) or
// ErrUnreachable (no answer within ConnectTimeout); a wrapped error naming both versions when the database's schema is newer than
// this build.
func OpenPostgres(dsn string, opts Options) (*Store, error) {
	const op = "OpenPostgres"
	switch {
	case opts.ConnectTimeout < 0:
		return nil, invalid(op, "ConnectTimeout %v is negative", opts.ConnectTimeout)
	case opts.MaxConns < 0:
		return nil, invalid(op, "MaxConns %d is negative", opts.MaxConns)
	}
	if err := checkPrefix(op, opts.TablePrefix); err != nil {
		return nil, err
	}
	if _, err := payloadLimit(op, opts); err != nil {
		return nil, err
	}
	if err := checkGroupCommit(op, opts, BackendPostgres); err != nil {
		return nil, err
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = defaultConnectTimeout
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = defaultMaxConns
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, invalid(op, "DSN (%s) is malformed: %s", describeDSN(dsn), parseReason(err))
	}
	cfg.ConnectTimeout = opts.ConnectTimeout
	where := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))) + "/" + cfg.Database

	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(opts.MaxConns)
	db.SetMaxIdleConns(opts.MaxConns)
	ctx, cancel := context.WithTimeout(context.Background(), opts.ConnectTimeout)
	err = db.PingContext(ctx)
	cancel()
	if err != nil {
		_ = db.Close()
		return nil, connectErr(op, where, cfg.User, cfg.Database, opts.ConnectTimeout, err)
	}
	s, err := openPostgres(db, cfg, where, opts)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// OpenPostgresDB opens a store on an application's own connection pool, which must use pgx's
// database/sql driver (github.com/jackc/pgx/v5/stdlib). Options.ConnectTimeout and MaxConns do
// not apply (the pool is the application's); Close leaves the pool open. Several stores, with
// different table prefixes, may share one pool.
//
// Errors: as OpenPostgres (ErrAuthFailed, ErrNoDatabase and ErrUnreachable for a pool whose first
// connection fails, named as OpenPostgres names them); ErrInvalidArgument for a GroupCommit above
// 1, a nil pool or one of another driver.
func OpenPostgresDB(db *sql.DB, opts Options) (*Store, error) {
	const op = "OpenPostgresDB"
	if db == nil {
		return nil, invalid(op, "pool is nil")
	}
	if err := checkPrefix(op, opts.TablePrefix); err != nil {
		return nil, err
	}
	if _, err := payloadLimit(op, opts); err != nil {
		return nil, err
	}
	if err := checkGroupCommit(op, opts, BackendPostgres); err != nil {
		return nil, err
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = defaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.ConnectTimeout)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, poolConnectErr(op, opts.ConnectTimeout, err)
	}
	var cfg *pgx.ConnConfig
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return invalid(op, "pool's driver connection is %T, want pgx's stdlib driver", dc)
		}
		cfg = c.Conn().Config()
		cfg.ConnectTimeout = opts.ConnectTimeout // for the listener's own connection
		// The copy carries the pool connection's notification handler, which would buffer the
		// listener's notifications on that connection; nil lets the listener keep its own.
		cfg.OnNotification = nil
		return nil
	})
	_ = conn.Close()
	if err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := openPostgres(db, cfg, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))+"/"+cfg.Database, opts)
	if err != nil {
		return nil, err
	}
	s.sharedDB = true
	return s, nil
}

func openPostgres(db *sql.DB, cfg *pgx.ConnConfig, where string, opts Options) (*Store, error) {
	maxPayload, err := payloadLimit("OpenPostgres", opts)
	if err != nil {
		return nil, err
	}
	s := &Store{
		maxPayload: maxPayload,
		path:       where,
		id:         newToken(),
		d:          &dialect{backend: BackendPostgres, prefix: opts.TablePrefix, overrides: pgOverrides(), positional: true},
		clock:      opts.Clock, log: opts.Logger, metrics: metricsOrNop(opts.Metrics), wdb: db, rdb: db, listenCfg: cfg,
	}
	s.notify.init()
	lockName := "actordelivery migrate " + opts.TablePrefix
	err = s.migrate(func(ctx context.Context, tx querier) error {
		_, err := tx.ExecContext(ctx, qMigrationLock, named("name", lockName))
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := s.startRecording(opts.Recorder, opts.CommitLog); err != nil {
		return nil, err
	}
	return s, nil
}

// describeDSN names the host and port a DSN points at, as far as they can be read from it, and
// nothing else (never the user's password).
func describeDSN(dsn string) string {
	host, port := "", ""
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		host, port = u.Hostname(), u.Port()
	} else if _, rest, ok := strings.Cut(dsn, "://"); ok {
		// A URL too broken to parse: read the authority by hand, dropping the user info.
		authority, _, _ := strings.Cut(rest, "/")
		authority, _, _ = strings.Cut(authority, "?")
		if i := strings.LastIndex(authority, "@"); i >= 0 {
			authority = authority[i+1:]
		}
		host = authority
		if i := strings.LastIndex(authority, ":"); i >= 0 && !strings.HasSuffix(authority, "]") {
			host, port = authority[:i], authority[i+1:]
		}
	} else {
		for _, f := range strings.Fields(dsn) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "host":
				host = v
			case "port":
				port = v
			}
		}
	}
	if host == "" {
		host = "(default host)"
	}
	if port == "" {
		port = "(default port)"
	}
	return "host " + host + ", port " + port
}

// parseReason is why pgx refused a DSN, without the DSN itself (pgx's own message quotes it, and a
// URL parse error quotes it whole, password included).
func parseReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		if inner := errors.Unwrap(pe); inner != nil && !strings.Contains(inner.Error(), pe.ConnString) {
			return inner.Error()
		}
		return "pgx cannot parse it"
	}
	return "pgx cannot parse it"
}

// connectErr names why a first connection to the server failed: the server refused the role or
// its credentials (ErrAuthFailed), it has no such database (ErrNoDatabase), or it did not answer
// (ErrUnreachable: no listener, no route, no answer within the timeout). The server's own error
// stays in the chain.
func connectErr(op, where, user, database string, timeout time.Duration, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "28P01" || pe.Code == "28000":
			return fmt.Errorf("actordelivery: %s: PostgreSQL at %s refused user %q: %w: %w", op, where, user, ErrAuthFailed, err)
		case pe.Code == "3D000":
			return fmt.Errorf("actordelivery: %s: PostgreSQL at %s has no database %q: %w: %w", op, where, database, ErrNoDatabase, err)
		}
		return fmt.Errorf("actordelivery: %s: PostgreSQL at %s (user %q) refused the connection: %w", op, where, user, err)
	}
	return fmt.Errorf("actordelivery: %s: cannot reach PostgreSQL at %s (user %q) within %v: %w: %w",
		op, where, user, timeout, ErrUnreachable, err)
}

// poolConnectErr is connectErr for an application's pool, whose configuration the store does not
// see: pgx's connect error carries the one it tried, so the message names the same server, user
// and database as OpenPostgres's would. Without it (another error, or no configuration) the
// server is "the pool's server".
func poolConnectErr(op string, timeout time.Duration, err error) error {
	where, user, database := "the pool's server", "", ""
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) && ce.Config != nil {
		where = net.JoinHostPort(ce.Config.Host, strconv.Itoa(int(ce.Config.Port))) + "/" + ce.Config.Database
		user, database = ce.Config.User, ce.Config.Database
	}
	return connectErr(op, where, user, database, timeout, err)
}

// pgRetryable reports a PostgreSQL error that means "try again": serialization failure, deadlock,
// lock not available, too many connections.
func pgRetryable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "40001", "40P01", "55P03", "53300":
		return true
	}
	return false
}

// channel is the PostgreSQL notification channel of the store's prefix (a plain identifier, so
// LISTEN needs no quoting).
func (s *Store) channel() string { return s.d.prefix + "actordelivery_wake" }

// wakeAfterCommit signals t's subscribers once ts commits: this store's at once, and on PostgreSQL
// every other store listening on the database, through a NOTIFY the server delivers at commit.
// A transaction sends at most one NOTIFY per topic, however many calls in it wake the topic.
// id is the message the wake is for ("" for the outbox).
func (s *Store) wakeAfterCommit(ctx context.Context, ts *txState, t topic, id string) error {
	if !s.wakeLocal(ts, t, id) || s.d.backend != BackendPostgres {
		return nil
	}
	if _, err := ts.tx.ExecContext(ctx, qNotify, named("channel", s.channel()), named("payload", s.notifyPayload(t, id))); err != nil {
		return s.dbErr("notify", err)
	}
	return nil
}

// wakeLocal schedules the local signal of t's subscribers for when ts commits, once per
// transaction; it reports whether this was the first wake of t in ts (the one whose NOTIFY, on
// PostgreSQL, the caller must send). id is the message the wake is for.
func (s *Store) wakeLocal(ts *txState, t topic, id string) bool {
	if ts.woken[t] {
		return false
	}
	if ts.woken == nil {
		ts.woken = map[topic]bool{}
	}
	ts.woken[t] = true
	ts.onCommit(func() { s.fireLocal(t, id) })
	return true
}

// notifyPayload is the NOTIFY payload for t and the message id it is for. It carries the sender's
// id, so the sender's own listener skips what the local signal already did: "<sender> o" for the
// outbox, "<sender> n<len(mailbox)>:<mailbox><id>" for a mailbox (parsed by deliver).
func (s *Store) notifyPayload(t topic, id string) string {
	if t.outbox {
		return s.id + " o"
	}
	return s.id + " n" + strconv.Itoa(len(t.mailbox)) + ":" + t.mailbox + id
}

// startListener starts the PostgreSQL listener once; a no-op on SQLite and after Close.
func (s *Store) startListener() {
	if s.listenCfg == nil {
		return
	}
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	if s.stopListen != nil || s.closed.Load() {
		return
	}
	stop, err := s.listen(s.listenCfg)
	if err != nil {
		s.log.LogAttrs(context.Background(), slog.LevelError, "actordelivery: cannot LISTEN for other processes' commits; relying on polling", slog.String(logKeyServer, s.path), attrError(err))
		stop = func() {}
	}
	s.stopListen = stop
}

// listen connects a dedicated connection, LISTENs on the store's channel, and turns notifications
// into local wake-ups until stop is called. A lost connection is re-established after listenRetry;
// every subscriber is then woken once, since notifications sent meanwhile were lost.
func (s *Store) listen(cfg *pgx.ConnConfig) (stop func(), err error) {
	connect := func(ctx context.Context) (*pgx.Conn, error) {
		cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
		defer cancel()
		conn, err := pgx.ConnectConfig(cctx, cfg)
		if err != nil {
			return nil, err
		}
		if _, err := conn.Exec(cctx, "LISTEN "+s.channel()); err != nil {
			_ = conn.Close(context.Background())
			return nil, err
		}
		return conn, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := connect(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			n, err := conn.WaitForNotification(ctx)
			if err == nil {
				if n != nil {
					s.deliver(n.Payload)
				}
				continue
			}
			_ = conn.Close(context.Background())
			if ctx.Err() != nil {
				return
			}
			s.log.LogAttrs(ctx, slog.LevelWarn, "actordelivery: notification listener lost its connection", slog.String(logKeyServer, s.path), attrError(err))
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(listenRetry):
				}
				if conn, err = connect(ctx); err == nil {
					break
				}
			}
			s.notify.fireAll()
		}
	}()
	return func() { cancel(); wg.Wait() }, nil
}

// deliver turns another store's NOTIFY payload into a local wake. A payload of an earlier
// version, "m<mailbox>", names no message: it wakes without a cause.
func (s *Store) deliver(payload string) {
	sender, payload, _ := strings.Cut(payload, " ")
	if sender == s.id {
		return
	}
	switch {
	case payload == "o":
		s.notify.fire(topic{outbox: true}, wakeCause{})
	case strings.HasPrefix(payload, "m"):
		s.notify.fire(topic{mailbox: payload[1:]}, wakeCause{})
	case strings.HasPrefix(payload, "n"):
		n, rest, ok := strings.Cut(payload[1:], ":")
		k, err := strconv.Atoi(n)
		if !ok || err != nil || k < 0 || k > len(rest) {
			s.log.LogAttrs(context.Background(), slog.LevelWarn, "actordelivery: notification payload not understood", slog.String(logKeyServer, s.path), slog.String("payload", payload))
			return
		}
		mailbox, id := rest[:k], rest[k:]
		s.notify.fire(topic{mailbox: mailbox}, s.notifyCause(mailbox, id))
	}
}
