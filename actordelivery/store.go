package actordelivery

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mattn/go-sqlite3"
)

// Options configure Open. The zero value is valid: wall clock, 5s busy timeout, synchronous=FULL,
// no logging.
type Options struct {
	// Clock supplies every time the store reads; nil means the wall clock.
	Clock Clock
	// BusyTimeout is how long a statement waits for another connection's lock before failing with
	// ErrBusy. Zero means 5s; negative is an error.
	BusyTimeout time.Duration
	// Synchronous is SQLite's synchronous pragma: "FULL" (the default; a commit is on disk when it
	// returns) or "NORMAL" (faster; in WAL mode the last commits may be lost on power failure).
	Synchronous string
	// Logger receives the store's diagnostics; nil discards them.
	Logger *slog.Logger
	// TablePrefix is prepended to every table and index name (and, on PostgreSQL, to the
	// notification channel), so the store's tables can live in an application's own database.
	// It must be a plain lower-case identifier ("app_", "jobs"); "" means no prefix.
	TablePrefix string
	// ConnectTimeout bounds how long OpenPostgres waits for the server (PostgreSQL only). Zero
	// means 5s; negative is an error.
	ConnectTimeout time.Duration
	// MaxConns is the PostgreSQL connection pool's size. Zero means 16; negative is an error.
	MaxConns int
	// Metrics receives delivery counters, commit latencies and queue depths; nil means
	// NopMetrics. It is called only outside transactions (see Metrics).
	Metrics Metrics
	// Recorder, if set, receives one Event per committed store operation and protocol step, with
	// its commit sequence number (see Recorder and docs/observed.md). nil records nothing.
	Recorder Recorder
	// CommitLog, if true, makes the store record (with Recorder nil too) and also write every
	// recorded write event into the table {prefix}commit_log, in the transaction that commits
	// it: a process killed between a commit and its Recorder call keeps its history there,
	// complete and without a gap, for CommitLog to read. Read events are not written there (they
	// commit nothing). See docs/observed.md, "Processes killed at random".
	CommitLog bool
	// MaxPayloadBytes bounds a message's or outbox row's payload and a checkpoint's state, in
	// bytes; a larger one is refused with ErrInvalidArgument before any SQL. Zero means
	// DefaultMaxPayloadBytes (1 MiB); negative, or above MaxPayloadLimit (64 MiB), is an error.
	MaxPayloadBytes int
	// GroupCommit, above 1, lets concurrent read-write transactions on SQLite share one COMMIT,
	// and so one fsync: a transaction that begins while another holds the writer joins it, up to
	// GroupCommit transactions per COMMIT. Each still commits whole or not at all, and ExecTx
	// returns only once its COMMIT ended, with that COMMIT's error (docs/semantics.md, "The
	// application's writes"). It pays at synchronous=FULL with several concurrent writers. Zero
	// or 1 means one COMMIT per transaction; negative is an error, and so is a value above 1 on
	// PostgreSQL, whose server groups concurrent commits itself (commit_delay, commit_siblings).
	GroupCommit int
	_           struct{}
}

// Stats are counters since Open.
type Stats struct {
	// Commits counts the COMMITs of write transactions that succeeded (a store call outside
	// ExecTx commits one, an ExecTx(readOnly=false) commits one however many calls it joins).
	Commits uint64
	// Transactions counts committed write transactions: Commits, unless Options.GroupCommit
	// made several of them share one COMMIT.
	Transactions uint64
	// Rollbacks counts write transactions that ended without a commit.
	Rollbacks uint64
}

// Store is a SQLite-backed mailbox, outbox, checkpoint and dedup store. It is safe for concurrent
// use by many goroutines.
//
// Connections: writes go through a pool of exactly one connection opened with _txlock=immediate, so
// every write transaction takes SQLite's writer lock at BEGIN (no deadlock-prone lock upgrades) and
// in-process writers queue in Go rather than in SQLite's busy handler. Reads outside a transaction
// and read-only transactions go through a separate pool of query_only connections that begin
// DEFERRED transactions: under WAL they read a snapshot and never take the writer lock. This is why
// Peek can be polled by idle consumers without slowing writers.
//
// Inside an ExecTx callback, store calls must use the context the callback received. A call with
// an outer context on the callback's goroutine fails with ErrOutsideTransaction (see ExecTx): it
// would otherwise commit outside the transaction, or, on SQLite, wait for the writer connection
// the callback itself holds.
type Store struct {
	path  string // the SQLite file, or the PostgreSQL server as host:port/database
	id    string // PostgreSQL: tells this store's notifications from other stores'
	d     *dialect
	clock Clock
	log   *slog.Logger
	// metrics is never nil (NopMetrics when Options.Metrics is).
	metrics Metrics
	wdb     *sql.DB // SQLite: one connection, BEGIN IMMEDIATE; PostgreSQL: the pool
	rdb     *sql.DB // SQLite: query_only connections, BEGIN DEFERRED; PostgreSQL: the pool
	closed  atomic.Bool
	// sharedDB: wdb is a pool the caller passed to OpenPostgresDB; Close leaves it open.
	sharedDB bool
	// listenCfg is the PostgreSQL connection configuration the listener uses; nil on SQLite.
	listenCfg *pgx.ConnConfig
	// listenMu guards stopListen, set by the first subscription on PostgreSQL.
	listenMu   sync.Mutex
	stopListen func()

	commits   atomic.Uint64
	rollbacks atomic.Uint64
	// grouped counts the transactions that committed in a COMMIT they shared, beyond the first
	// of each (groupcommit.go).
	grouped atomic.Uint64
	// group is the group commit (Options.GroupCommit above 1, SQLite only); nil commits each
	// read-write transaction on its own.
	group *committer
	// maxPayload is Options.MaxPayloadBytes, defaulted (validate.go).
	maxPayload int

	// cbs are the goroutines running one of this store's ExecTx callbacks (boundary.go).
	cbs callbacks

	notify notifier

	// rec is Options.Recorder; nil when the store does not record.
	rec Recorder
	// incarnation names this Open in the recorded events (Store.Incarnation); "" unless recording.
	incarnation string
	// commitLog is Options.CommitLog.
	commitLog bool
	// workers and publishers number the consumers and publishers that record on this store.
	workers, publishers atomic.Int64
	// lastCommit is the last commit of a recording store (wake.go): the place a wake follows.
	lastCommit struct {
		mu      sync.Mutex
		seq, at int64
	}
}

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFS embed.FS

const (
	defaultBusyTimeout = 5 * time.Second
	readPoolSize       = 4
	stmtCacheSize      = 64
)

// Open opens (creating if needed) the SQLite database at path, switches it to WAL, applies any
// schema migrations this build has and the file lacks, and returns the store.
//
// Errors: ErrInvalidArgument for an empty or in-memory path, a negative BusyTimeout or
// GroupCommit, or an unknown Synchronous value; ErrBusy if another process holds the writer lock beyond the busy timeout; a
// wrapped error when the file cannot be opened or its schema is newer than this build.
func Open(path string, opts Options) (*Store, error) {
	switch {
	case path == "":
		return nil, fmt.Errorf("actordelivery: Open: %w: path is empty", ErrInvalidArgument)
	case path == ":memory:" || strings.HasPrefix(path, "file::memory:") || strings.Contains(path, "mode=memory"):
		return nil, fmt.Errorf("actordelivery: Open: %w: path %q is an in-memory database; the writer and reader pools need a file", ErrInvalidArgument, path)
	case opts.BusyTimeout < 0:
		return nil, fmt.Errorf("actordelivery: Open: %w: BusyTimeout %v is negative", ErrInvalidArgument, opts.BusyTimeout)
	}
	if err := checkPrefix("Open", opts.TablePrefix); err != nil {
		return nil, err
	}
	maxPayload, err := payloadLimit("Open", opts)
	if err != nil {
		return nil, err
	}
	if err := checkGroupCommit("Open", opts, BackendSQLite); err != nil {
		return nil, err
	}
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = defaultBusyTimeout
	}
	syncMode := strings.ToUpper(opts.Synchronous)
	switch syncMode {
	case "":
		syncMode = "FULL"
	case "FULL", "NORMAL", "EXTRA":
	default:
		return nil, fmt.Errorf("actordelivery: Open: %w: Synchronous %q is not FULL or NORMAL", ErrInvalidArgument, opts.Synchronous)
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}

	// A "file:" URI keeps go-sqlite3 from cutting the path at a '?'; the characters a URI path
	// treats specially are escaped.
	uri := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	common := fmt.Sprintf("_busy_timeout=%d&_stmt_cache_size=%d", opts.BusyTimeout.Milliseconds(), stmtCacheSize)
	wdb := openSQLite(uri + "?" + common + "&_journal_mode=WAL&_synchronous=" + syncMode + "&_txlock=immediate")
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)

	s := &Store{path: path, d: &dialect{backend: BackendSQLite, prefix: opts.TablePrefix},
		clock: opts.Clock, log: opts.Logger, metrics: metricsOrNop(opts.Metrics), wdb: wdb, maxPayload: maxPayload}
	s.notify.init()
	if err := s.checkPragmas(syncMode); err != nil {
		_ = wdb.Close()
		return nil, err
	}
	if err := s.migrate(nil); err != nil {
		_ = wdb.Close()
		return nil, err
	}
	if err := s.startRecording(opts.Recorder, opts.CommitLog); err != nil {
		_ = wdb.Close()
		return nil, err
	}
	// The reader pool is opened only after the writer made the file a WAL database (journal mode
	// is persistent), so query_only connections never need to change it.
	rdb := openSQLite(uri + "?" + common + "&_txlock=deferred&_query_only=1")
	rdb.SetMaxOpenConns(readPoolSize)
	rdb.SetMaxIdleConns(readPoolSize)
	if err := rdb.Ping(); err != nil {
		_ = wdb.Close()
		_ = rdb.Close()
		return nil, s.dbErr("Open: reader pool", err)
	}
	s.rdb = rdb
	if opts.GroupCommit > 1 {
		// Only now: Open's own transactions (migrations, the recorder's opening) commit alone.
		s.group = &committer{max: opts.GroupCommit}
	}
	return s, nil
}

func (s *Store) checkPragmas(syncMode string) error {
	var mode string
	if err := s.wdb.QueryRow(qJournalMode).Scan(&mode); err != nil {
		return s.dbErr("Open "+strconv.Quote(s.path), err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("actordelivery: Open %q: journal mode is %q, want wal", s.path, mode)
	}
	want := map[string]int{"NORMAL": 1, "FULL": 2, "EXTRA": 3}[syncMode]
	var got int
	if err := s.wdb.QueryRow(qSynchronous).Scan(&got); err != nil {
		return s.dbErr("Open "+strconv.Quote(s.path), err)
	}
	if got != want {
		return fmt.Errorf("actordelivery: Open %q: synchronous is %d, want %d (%s)", s.path, got, want, syncMode)
	}
	var temp int
	if err := s.wdb.QueryRow(qTempStoreRead).Scan(&temp); err != nil {
		return s.dbErr("Open "+strconv.Quote(s.path), err)
	}
	if temp != 2 {
		return fmt.Errorf("actordelivery: Open %q: temp_store is %d, want 2 (MEMORY)", s.path, temp)
	}
	return nil
}

// migration is one embedded schema file; version comes from its numeric name prefix.
type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations(b Backend) ([]migration, error) {
	dir := "migrations/" + string(b)
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("actordelivery: migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("actordelivery: migrations: file %q does not start with a version number and '_'", name)
		}
		body, err := migrationFS.ReadFile(path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("actordelivery: migrations: %w", err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := range ms {
		if ms[i].version != i+1 {
			return nil, fmt.Errorf("actordelivery: migrations: %q has version %d, want %d (versions must be 1, 2, 3, ...)", ms[i].name, ms[i].version, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this build migrates a database to (the same number on every
// backend: a version stands for the same tables and columns everywhere).
func SchemaVersion() int {
	ms, err := loadMigrations(BackendSQLite)
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate brings the schema up to date in one transaction, so two processes opening a fresh
// database at once apply each migration exactly once, and a failed migration leaves nothing
// behind (SQLite and PostgreSQL both roll DDL back). lock, when non-nil, runs first in the
// transaction to serialize concurrent migrators (SQLite's writer lock already does).
func (s *Store) migrate(lock func(ctx context.Context, tx querier) error) error {
	ms, err := loadMigrations(s.d.backend)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if lock != nil {
		// A database already at this build's version (every open but the first) needs no
		// lock and no transaction: one read decides.
		var have int
		if err := s.rdb.QueryRowContext(ctx, s.d.render(qSchemaVersion).text).Scan(&have); err == nil && have == len(ms) {
			return nil
		}
	}
	return s.execTx(ctx, "migrate", false, false, func(ctx context.Context) error {
		tx := s.txFrom(ctx).tx
		if lock != nil {
			if err := lock(ctx, tx); err != nil {
				return s.dbErr("migrate", err)
			}
		}
		if _, err := tx.ExecContext(ctx, qSchemaVersionTable); err != nil {
			return s.dbErr("migrate", err)
		}
		var have int
		if err := tx.QueryRowContext(ctx, qSchemaVersion).Scan(&have); err != nil {
			return s.dbErr("migrate", err)
		}
		if have > len(ms) {
			return fmt.Errorf("actordelivery: Open %q: database schema version %d is newer than this build's %d", s.path, have, len(ms))
		}
		for _, m := range ms[have:] {
			if _, err := s.txFrom(ctx).sqltx.ExecContext(ctx, strings.ReplaceAll(m.sql, "{p}", s.d.prefix)); err != nil {
				return s.dbErr("migrate "+m.name, err)
			}
			if _, err := tx.ExecContext(ctx, qSchemaVersionInsert, sql.Named("version", m.version), sql.Named("now", s.nowMillis())); err != nil {
				return s.dbErr("migrate "+m.name, err)
			}
			s.log.LogAttrs(ctx, slog.LevelInfo, "actordelivery: applied migration", slog.String(logKeyDatabase, s.path), slog.String(logKeyMigration, m.name))
		}
		return nil
	})
}

// Close closes the store. Calls made after Close return ErrClosed. Close waits for no transaction:
// one still running fails when it next touches the database.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.listenMu.Lock()
	if s.stopListen != nil {
		s.stopListen()
	}
	s.listenMu.Unlock()
	var errs []error
	if s.sharedDB {
		// The application's pool: the store only stops using it.
	} else if err := s.wdb.Close(); err != nil {
		errs = append(errs, err)
	}
	if s.rdb != nil && s.rdb != s.wdb {
		if err := s.rdb.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("actordelivery: Close %q: %w", s.path, err)
	}
	return nil
}

// Path returns the database file path the store was opened with; on PostgreSQL, the server as
// host:port/database (never the password).
func (s *Store) Path() string { return s.path }

// Backend returns the backend the store runs on.
func (s *Store) Backend() Backend { return s.d.backend }

// metricsSink is how the consumer and publisher (and wrappers that embed *Store) find the
// store's Metrics.
func (s *Store) metricsSink() Metrics { return s.metrics }

func metricsOrNop(m Metrics) Metrics {
	if m == nil {
		return NopMetrics{}
	}
	return m
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	c := s.commits.Load()
	return Stats{Commits: c, Transactions: c + s.grouped.Load(), Rollbacks: s.rollbacks.Load()}
}

func (s *Store) nowMillis() int64 { return toMillis(s.clock.Now()) }

func (s *Store) checkOpen(op string) error {
	if s.closed.Load() {
		return fmt.Errorf("actordelivery: %s: %w", op, ErrClosed)
	}
	return nil
}

// dbErr wraps an error from database/sql or the driver: a closed store (or a closed pool under
// it) becomes ErrClosed, SQLite's BUSY and LOCKED become ErrBusy (with the driver error still in
// the chain), anything else is wrapped as is. A connection that is done (sql.ErrConnDone) on an
// open store is not ErrClosed: a context that ended in the middle of a transaction leaves one,
// and the loops that stop for good on ErrClosed (Run, RunWorkers) must not stop for it.
func (s *Store) dbErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if s.closed.Load() || strings.Contains(err.Error(), "sql: database is closed") {
		return fmt.Errorf("actordelivery: %s: %w: %w", op, ErrClosed, err)
	}
	if isBusy(err) {
		return fmt.Errorf("actordelivery: %s: %w: %w", op, ErrBusy, err)
	}
	return fmt.Errorf("actordelivery: %s: %w", op, err)
}

// isBusy reports a driver error that means "try again later": SQLite's BUSY and LOCKED, and on
// PostgreSQL a serialization failure, a deadlock, a lock timeout or too many connections.
func isBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return pgRetryable(err)
}

// newToken returns a fresh opaque lease or claim token (26 base32 characters, 128 random bits).
func newToken() string { return rand.Text() }

// querier is what a store call needs from a transaction or a pool.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Transactions.

type txKey struct{}

// txState is the transaction a context carries. It belongs to one store: a context carrying another
// store's transaction does not make this store join it.
type txState struct {
	store *Store
	// sqltx is the transaction itself, for statements the store does not render (the
	// application's, migrations): a *sql.Tx, or a pgTx for a read-write one on PostgreSQL.
	sqltx    dbTx
	tx       querier // sqltx through the store's dialect
	readOnly bool
	// ended is set once ExecTx is past fn: the application's handles (Tx) refuse from then on.
	ended       atomic.Bool
	afterCommit []func()
	// woken holds the topics whose wake-up this transaction has scheduled (see wakeLocal).
	woken map[topic]bool

	// Recording (recorder.go); all zero when the store does not record. base is the commit
	// counter when the transaction began, now the clock read once after that, events what the
	// transaction recorded, step whether one of them is a protocol step.
	recording bool
	base      int64
	now       int64
	events    []Event
	step      bool
}

func (s *Store) txFrom(ctx context.Context) *txState {
	ts, _ := ctx.Value(txKey{}).(*txState)
	if ts == nil || ts.store != s {
		return nil
	}
	return ts
}

// ExecTx runs fn in a transaction. The context fn receives carries the transaction: every store
// call made with it joins the transaction, and so does a nested ExecTx (which then neither commits
// nor rolls back; the outermost one does). If fn returns an error or panics, the transaction rolls
// back and that error is returned unchanged (the panic is re-raised); otherwise ExecTx commits and
// returns the commit's error, wrapped (ErrBusy, ErrClosed or the driver's error) — a commit error
// is never dropped.
//
// If ctx is done when fn returns, the transaction rolls back and ExecTx returns an error wrapping
// the context's error and its cause. Once the commit has begun, ctx no longer interrupts it: ExecTx
// waits for the database's answer, so its error says whether the transaction committed. Only a
// PostgreSQL connection that fails during COMMIT leaves that unknown.
//
// A read-only transaction runs on the reader pool: it sees one snapshot and never takes SQLite's
// writer lock. A write call inside it, or a nested read-write ExecTx, fails with
// ErrInvalidArgument. A read-write transaction takes the writer lock when it begins. With
// Options.GroupCommit above 1 (SQLite), it may share its COMMIT with other callers' transactions:
// it returns once that COMMIT ended, with its error, and fn must not wait for another write
// transaction's ExecTx to return (docs/semantics.md, "The application's writes").
//
// fn must not use the context from another goroutine, nor keep it after returning.
//
// The boundary: while fn runs, every store call it makes must carry the context fn received (or
// one derived from it). A store call of this store made on fn's goroutine with a context that does
// not carry the transaction (typically the outer ctx) fails with ErrOutsideTransaction before any
// SQL: it writes nothing, and it does not wait for the writer connection the transaction holds.
// The same holds in a Handler's Effects. The check keys on the goroutine, since fn runs on the
// caller's goroutine: another goroutine using the same outer context meanwhile is an ordinary
// concurrent caller and is served. It costs one atomic load per call while no callback runs, and
// reading the goroutine's id (about a microsecond) while one does (docs/semantics.md, "The
// transaction boundary").
func (s *Store) ExecTx(ctx context.Context, readOnly bool, fn func(ctx context.Context) error) error {
	return s.execTx(ctx, "ExecTx", readOnly, true, fn)
}

// execTx is ExecTx for op. guard registers fn's goroutine as running a callback (boundary.go):
// ExecTx does, the store's own transactions (write, a recording store's reads) do not, since their
// work never calls the store with another context.
func (s *Store) execTx(ctx context.Context, op string, readOnly, guard bool, fn func(ctx context.Context) error) error {
	if fn == nil {
		return fmt.Errorf("actordelivery: %s: %w: fn is nil", op, ErrInvalidArgument)
	}
	if ts := s.txFrom(ctx); ts != nil {
		if !readOnly && ts.readOnly {
			return fmt.Errorf("actordelivery: %s: %w: read-write transaction nested in a read-only one", op, ErrInvalidArgument)
		}
		return fn(ctx)
	}
	if err := s.checkOpen(op); err != nil {
		return err
	}
	if err := s.outsideTx(op); err != nil {
		return err
	}
	if !readOnly && s.group != nil {
		return s.execMember(ctx, op, guard, fn)
	}
	db := s.wdb
	var txo *sql.TxOptions
	if readOnly {
		db = s.rdb
		if s.d.backend == BackendPostgres {
			// One snapshot for the whole transaction, as SQLite's deferred read gives.
			txo = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
		}
	}
	var tx dbTx
	var err error
	if !readOnly && s.d.backend == BackendPostgres {
		// BEGIN goes with the first statement (see pgTx).
		tx, err = s.beginPG(ctx)
	} else {
		tx, err = db.BeginTx(ctx, txo)
	}
	if err != nil {
		return s.dbErr("begin transaction", err)
	}
	ts := &txState{store: s, sqltx: tx, tx: boundQuerier{q: tx, d: s.d}, readOnly: readOnly}
	done := false
	defer func() {
		ts.ended.Store(true)
		if !done {
			_ = tx.Rollback()
			if !readOnly {
				s.rollbacks.Add(1)
			}
			if ts.recording {
				s.seqEmit(ts, false)
			}
		}
	}()
	if err := s.runTx(ctx, ts, guard, fn); err != nil {
		return err
	}
	if ts.recording && !readOnly {
		// Part of the commit: from here on the context no longer decides.
		if err := s.seqCommit(context.WithoutCancel(ctx), ts); err != nil {
			return err
		}
	}
	done = true
	start := time.Now()
	err = tx.Commit()
	if !readOnly {
		// After the commit ended: a slow Metrics never holds the transaction open.
		s.metrics.ObserveCommit(time.Since(start))
	}
	if err != nil {
		if !readOnly {
			s.rollbacks.Add(1)
		}
		return s.dbErr("commit", err)
	}
	if !readOnly {
		s.commits.Add(1)
	}
	if ts.recording {
		if readOnly {
			for i := range ts.events {
				ts.events[i].Seq = ts.base
			}
		}
		s.seqEmit(ts, true)
		if !readOnly {
			s.noteCommit(ts)
		}
	}
	for _, f := range ts.afterCommit {
		f()
	}
	return nil
}

// runTx runs fn in the transaction ts, up to its commit: it starts the recording, runs fn with a
// context that carries ts (as a guarded callback when guard is set) and marks ts ended. An error of
// fn's is returned unchanged. A ctx done when fn returns is an error too, wrapping the context's
// error and its cause: the caller then rolls back. This is the one check on both backends; sending
// the recorder's counter or COMMIT with this context would fail with a broken connection on
// PostgreSQL and ErrTxDone on SQLite, neither of which names the cause.
func (s *Store) runTx(ctx context.Context, ts *txState, guard bool, fn func(ctx context.Context) error) error {
	if s.rec != nil {
		if err := s.seqStart(ctx, ts); err != nil {
			return err
		}
	}
	var err error
	if guard {
		leave := s.cbs.enter()
		err = func() error {
			defer leave()
			return fn(context.WithValue(ctx, txKey{}, ts))
		}()
	} else {
		err = fn(context.WithValue(ctx, txKey{}, ts))
	}
	ts.ended.Store(true)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		if cause := context.Cause(ctx); cause != err {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		return s.dbErr("commit", err)
	}
	return nil
}

// write runs fn in the context's transaction, or in a transaction of its own. now is read once per
// call. Write calls inside a read-only transaction fail.
func (s *Store) write(ctx context.Context, op string, fn func(ts *txState, now int64) error) error {
	if ts := s.txFrom(ctx); ts != nil {
		if ts.readOnly {
			return fmt.Errorf("actordelivery: %s: %w: called inside a read-only transaction", op, ErrInvalidArgument)
		}
		if err := s.checkOpen(op); err != nil {
			return err
		}
		return fn(ts, ts.nowMillis())
	}
	if err := s.checkOpen(op); err != nil {
		return err
	}
	if err := s.outsideTx(op); err != nil {
		return err
	}
	return s.retryOwn(ctx, op, func() error {
		return s.execTx(ctx, op, false, false, func(ctx context.Context) error {
			ts := s.txFrom(ctx)
			return fn(ts, ts.nowMillis())
		})
	})
}

// retryOwn runs tx, a whole transaction of the call's own, again while it fails with a
// serialization failure or deadlock on PostgreSQL (ErrBusy), up to maxTxRetries attempts.
// SQLite's busy timeout has already waited, so there it runs once.
func (s *Store) retryOwn(ctx context.Context, op string, tx func() error) error {
	for attempt := 1; ; attempt++ {
		err := tx()
		if err == nil || attempt == maxTxRetries || s.d.backend != BackendPostgres || !errors.Is(err, ErrBusy) || ctx.Err() != nil {
			return err
		}
		s.log.LogAttrs(ctx, slog.LevelDebug, "actordelivery: retrying after a transient conflict", slog.String(logKeyOp, op), slog.Int(logKeyAttempt, attempt), attrError(err))
		time.Sleep(time.Duration(attempt) * time.Millisecond)
	}
}

// maxTxRetries bounds the attempts of a single store call on PostgreSQL that fails with a
// serialization failure or deadlock; after the last one the ErrBusy is returned.
const maxTxRetries = 4

// read runs fn against the context's transaction, or against the reader pool (single statements
// need no explicit transaction: each is its own snapshot).
func (s *Store) read(ctx context.Context, op string, fn func(q querier, now int64) error) error {
	return s.readOn(ctx, op, s.rdb, fn)
}

// readOn is read with the pool to use outside a transaction: s.rdb, or s.wdb for a read that
// should find the writer connection's page cache warm (see peek).
func (s *Store) readOn(ctx context.Context, op string, pool *sql.DB, fn func(q querier, now int64) error) error {
	if err := s.checkOpen(op); err != nil {
		return err
	}
	if ts := s.txFrom(ctx); ts != nil {
		return fn(ts.tx, ts.nowMillis())
	}
	if err := s.outsideTx(op); err != nil {
		return err
	}
	return fn(boundQuerier{q: pool, d: s.d}, s.nowMillis())
}

// autocommitOne runs one write statement on SQLite's writer connection outside any explicit
// transaction, and reports whether it changed a row. SQLite runs a lone statement as a write
// transaction of its own (autocommit): the statement is atomic and durable exactly as inside
// ExecTx, without BEGIN IMMEDIATE and COMMIT as statements of their own and without database/sql's
// transaction bookkeeping, which together cost more CPU than the statement itself (see
// docs/notes/2026-12-01-performance-rounds.md, "Round 7"). It counts as one commit (Stats; Metrics.ObserveCommit with the
// statement's duration, which includes its commit), or as one rollback when it fails. Only for a
// single statement that is a whole write, on a SQLite store that does not record (a recorded write
// takes the commit lock in ExecTx), with no transaction of this store in ctx.
func (s *Store) autocommitOne(ctx context.Context, op, query string, args []any) (bool, error) {
	if err := s.checkOpen(op); err != nil {
		return false, err
	}
	if err := s.outsideTx(op); err != nil {
		return false, err
	}
	start := time.Now()
	res, err := (boundQuerier{q: s.wdb, d: s.d}).ExecContext(ctx, query, args...)
	s.metrics.ObserveCommit(time.Since(start))
	if err != nil {
		s.rollbacks.Add(1)
		return false, s.dbErr(op, err)
	}
	s.commits.Add(1)
	n, err := res.RowsAffected()
	if err != nil {
		return false, s.dbErr(op, err)
	}
	return n > 0, nil
}

// nowMillis is the transaction's instant: the one clock reading of a recording transaction, or a
// fresh reading.
func (ts *txState) nowMillis() int64 {
	if ts.recording {
		return ts.now
	}
	return ts.store.nowMillis()
}

// Notifications.

// notifier wakes local subscribers after commits that may have made work available. A wake is a
// hint: channels hold at most one pending signal, and a subscriber that misses one still polls.
type notifier struct {
	mu   sync.Mutex
	subs map[topic]map[*subscription]struct{}
}

type topic struct {
	outbox  bool
	mailbox string
}

// subscription is one subscriber: its channel, and, on a recording store, the cause of the last
// wake sent to it that it has not taken yet (wake.go).
type subscription struct {
	ch    chan struct{}
	mu    sync.Mutex
	cause wakeCause
}

func (n *notifier) init() { n.subs = make(map[topic]map[*subscription]struct{}) }

// subscribe returns one subscription signalled by a commit on any of ts, and the function that
// ends it.
func (n *notifier) subscribe(ts ...topic) (*subscription, func()) {
	sub := &subscription{ch: make(chan struct{}, 1)}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range ts {
		if n.subs[t] == nil {
			n.subs[t] = make(map[*subscription]struct{})
		}
		n.subs[t][sub] = struct{}{}
	}
	var once sync.Once
	return sub, func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			for _, t := range ts {
				delete(n.subs[t], sub)
				if len(n.subs[t]) == 0 {
					delete(n.subs, t)
				}
			}
		})
	}
}

// fireAll signals every subscriber of every topic (with no cause: a lost listener connection).
func (n *notifier) fireAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, subs := range n.subs {
		for sub := range subs {
			sub.signal(wakeCause{})
		}
	}
}

// fire signals t's subscribers; c is the wake's cause (zero when the store does not record).
func (n *notifier) fire(t topic, c wakeCause) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for sub := range n.subs[t] {
		sub.signal(c)
	}
}

// Subscribe returns a channel that receives a signal after a commit enqueued a message into
// mailbox, and a function that ends the subscription. Signals coalesce:
// the channel holds at most one.
//
// On PostgreSQL the first subscription starts the store's listener, so commits of stores in other
// processes signal too; if it cannot connect, the failure is logged and subscribers are signalled
// by this store's own commits only (a consumer's poll ticker still finds the rest).
func (s *Store) Subscribe(mailbox string) (<-chan struct{}, func()) {
	sub, stop := s.subscribeMailboxes([]string{mailbox})
	return sub.ch, stop
}

// subscribeMailboxes is Subscribe for several mailboxes at once: one channel, signalled by an
// enqueue into any of them.
func (s *Store) subscribeMailboxes(mailboxes []string) (*subscription, func()) {
	s.startListener()
	ts := make([]topic, len(mailboxes))
	for i, mb := range mailboxes {
		ts[i] = topic{mailbox: mb}
	}
	return s.notify.subscribe(ts...)
}

// SubscribeOutbox is Subscribe for commits that added outbox rows.
func (s *Store) SubscribeOutbox() (<-chan struct{}, func()) {
	s.startListener()
	sub, stop := s.notify.subscribe(topic{outbox: true})
	return sub.ch, stop
}

// afterCommit schedules f to run once ts commits (never if it rolls back).
func (ts *txState) onCommit(f func()) { ts.afterCommit = append(ts.afterCommit, f) }
