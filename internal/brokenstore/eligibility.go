package brokenstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	// The SQLite driver, registered as "sqlite3"; the store registers the same one.
	_ "github.com/mattn/go-sqlite3"

	"github.com/pconform/pconform/actordelivery"
)

// Rules are the eligibility and expiry rules of a copy of the store's SQL. The zero value is the
// store's own rules (docs/semantics.md): a copy built with it behaves exactly like the store,
// which the tests check, so a variant differs from the store only where its rule says so.
type Rules struct {
	// LeaseInclusive keeps a lease live at lease_until == now (the store: live iff
	// lease_until > now): the `<` for `<=` slip of the lease-boundary variant.
	LeaseInclusive bool
	// LeaseSkew is added to now before a lease is compared: one second expires every lease a
	// second early (lease-early: a deadline computed against a clock read a second late).
	LeaseSkew time.Duration
	// HeadBlocksOnlyWhenEligible is the broken keyed-order rule of the fifo-overtake variant: an
	// earlier ready message of the same key blocks only while it could itself be leased
	// (attempts left, no live lease, available). The store's rule: it blocks while it has
	// attempts left or holds a live lease, so a leased or delayed head is never overtaken.
	HeadBlocksOnlyWhenEligible bool
	// ClaimIgnoresMaxDelivery is the outbox-unbounded variant: an outbox claim neither
	// dead-letters rows that used up their delivery attempts nor stops claiming them, so a row is
	// claimed (and delivered) past its max_delivery_attempts. The store: a claim first
	// dead-letters every pending row out of attempts without a live claim, and claims only rows
	// with attempts left.
	ClaimIgnoresMaxDelivery bool
	// ExtendIgnoresToken is the stale-extend variant: a lease extension checks only that the
	// message is leased, not that it carries the caller's token, so a stale token extends the
	// newer lease of whoever holds the message now. The store: extend changes the row only when
	// it carries exactly the caller's token (lease_lost otherwise).
	ExtendIgnoresToken bool
	// ProcessedTTLInverted is the dedup-ttl-inverted variant: MarkProcessed renews a record
	// that is still live (and reports the message as new) and takes an expired one for a
	// duplicate. The store: a live record is a duplicate, an expired one counts as absent.
	ProcessedTTLInverted bool
	// CheckpointFirstSaveResets is the checkpoint-reset variant: a first save (expected version
	// 0) of an actor that already has a checkpoint overwrites it and resets its version to 1.
	// The store: such a save conflicts and changes nothing.
	CheckpointFirstSaveResets bool
	// PurgeForgetsIDs is the purge-forgets-ids variant: a purge removes acked messages and dead
	// letters without retiring their ids, so a purged id is free at once and an enqueue of it
	// inside the dedup horizon inserts a fresh message. The store: the id stays taken until
	// final time + horizon.
	PurgeForgetsIDs bool
	// RedriveKeepsAttempts is the redrive-keeps-attempts variant: a redrive puts a mailbox dead
	// letter back with the attempt count it was dead-lettered with (usually max_attempts, so no
	// worker can ever lease it). The store: attempts 0.
	RedriveKeepsAttempts bool
	// RedriveRecordsReset is the redrive-records-reset variant: a redrive writes its history
	// record after the move, from the reset row, so the record says 0 attempts instead of the
	// count the dead letter had. The store: the dead letter's count.
	RedriveRecordsReset bool
	// BatchSkipsLeasedHead is the batch-skips-key-head variant: in a leased batch fetch, a key's
	// head under a live lease stops blocking its key (as SKIP LOCKED passes over a locked row),
	// so the batch takes the key's next message, even one whose head the same batch leased just
	// before. The store: a head blocks its key while it has attempts left or a live lease. Single
	// leases and fetches keep the store's rule.
	BatchSkipsLeasedHead bool
}

// Eligibility runs the store's lease, peek, expire, extend, outbox claim, processed-message,
// checkpoint, purge and redrive statements, copied with its Rules, beside the store: on a second connection to the
// store's SQLite file, or on the store's PostgreSQL pool in the store's table prefix. Its leases
// carry tokens "copy-<n>", which never collide with the store's random ones.
type Eligibility struct {
	db *sql.DB
	// owned: Close closes db (the SQLite connection opened here); the PostgreSQL pool is the
	// caller's.
	owned bool
	rules Rules
	// positional: the statements' :name parameters are rendered as $1, $2, ... and passed in
	// that order (PostgreSQL through pgx's database/sql driver, which ignores names).
	positional bool
	// qLease, qPeek, qExpire, qWork, qDeadLetter, qDelete and qExtend are the copied statements
	// with rules applied, in the backend's dialect.
	qLease, qPeek, qExpire, qWork, qDeadLetter, qDelete, qExtend string
	// qBatchLease is one lease of a leased batch fetch (qLease, with BatchSkipsLeasedHead's rule
	// when it is set) and qPeekBatch the leaseless batch fetch (the store's qPeekBatch).
	qBatchLease, qPeekBatch string
	// qExhausted and qClaim are the outbox claim's two statements (qExhausted is "" when the rules
	// skip it).
	qExhausted, qClaim string
	// qMarkProcessed, qInsertCheckpoint and qUpdateCheckpoint are the copied processed-message
	// and checkpoint statements (see buildDedup).
	qMarkProcessed, qInsertCheckpoint, qUpdateCheckpoint string
	// The copied purge and redrive statements (see buildRetention).
	qPurgeAcked, qPurgeDead, qPurgeOutbox, qRetire, qForgetExpired                                   string
	qRedriveRecordMessage, qRedriveMessage, qRedriveDeleteDead, qRedriveRecordOutbox, qRedriveOutbox string
	// tokens counts the leases issued; the next token is "copy-<tokens+1>", or
	// "copy-<ns>-<tokens+1>" after Namespace(ns).
	tokens int
	ns     string
}

// Namespace makes the tokens this Eligibility issues "copy-<ns>-<n>": several processes, each
// with an Eligibility of its own on one database, then never issue the same token.
func (e *Eligibility) Namespace(ns string) { e.ns = ns + "-" }

// msgCols are the columns the copies return, in the order scanMessage reads them.
const msgCols = `id, mailbox, key, priority, max_attempts, attempts, available_at, token, lease_until, state, payload, seq`

// OpenEligibility opens a second connection to the SQLite database at path (the store must
// have created it) and prepares the copied statements with rules.
func OpenEligibility(path string, rules Rules) (*Eligibility, error) {
	uri := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite3", uri+"?_busy_timeout=5000&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("brokenstore: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	e := &Eligibility{db: db, owned: true, rules: rules}
	e.build(actordelivery.BackendSQLite, "")
	return e, nil
}

// OpenEligibilityPostgres prepares the copied statements with rules in PostgreSQL's dialect, on
// db (a pool of pgx's database/sql driver that reaches the store's tables) and the store's table
// prefix. Close leaves db open.
func OpenEligibilityPostgres(db *sql.DB, prefix string, rules Rules) (*Eligibility, error) {
	if db == nil {
		return nil, errors.New("brokenstore: postgres eligibility: pool is nil")
	}
	e := &Eligibility{db: db, rules: rules, positional: true}
	e.build(actordelivery.BackendPostgres, prefix)
	return e, nil
}

// build writes the copied statements for backend. They are the store's own (actordelivery's
// sqlite_queries.go and, for PostgreSQL, postgres_queries.go), each comparison of a lease against
// now written through live so that a rule can change it; PostgreSQL's forms differ from SQLite's
// exactly where the store's do: the rows a lease or an expiry takes are locked FOR UPDATE SKIP
// LOCKED, and the dead-letter move locks its row.
func (e *Eligibility) build(backend actordelivery.Backend, prefix string) {
	rules := e.rules
	pg := backend == actordelivery.BackendPostgres
	live := func(col string) string {
		if rules.LeaseInclusive {
			return col + " >= :cut"
		}
		return col + " > :cut"
	}
	blocks := `(p.attempts < p.max_attempts OR (p.token IS NOT NULL AND ` + live("p.lease_until") + `))`
	if rules.HeadBlocksOnlyWhenEligible {
		blocks = `p.attempts < p.max_attempts AND (p.token IS NULL OR NOT (` + live("p.lease_until") + `)) AND p.available_at <= :now`
	}
	// candidates is the store's qCandidates: every eligible message in delivery order, each its
	// key's head; next (qNextCandidate) takes the first.
	candidates := func(blocks string) string {
		return `
FROM {p}messages m
WHERE m.mailbox = CAST(:mailbox AS TEXT)
  AND m.state = 'ready'
  AND m.available_at <= :now
  AND (m.token IS NULL OR NOT (` + live("m.lease_until") + `))
  AND m.attempts < m.max_attempts
  AND (m.key = '' OR NOT EXISTS (
        SELECT 1 FROM {p}messages p
        WHERE p.mailbox = m.mailbox
          AND p.key = m.key
          AND p.key <> ''
          AND p.state = 'ready'
          AND p.seq < m.seq
          AND ` + blocks + `))
ORDER BY m.priority DESC, m.available_at ASC, m.seq ASC`
	}
	next := candidates(blocks) + `
LIMIT 1`
	// A leased batch is leases in a row in one transaction (what the store's one statement takes:
	// its qCandidates comment). Under BatchSkipsLeasedHead a head under a live lease blocks
	// nothing, so the batch's own lease of a head frees the key's next message for its next lease.
	// A batch never takes a message twice (the store's one statement cannot): each lease passes
	// over the rows the batch's earlier leases took, whose tokens match :batch.
	batchBlocks := blocks
	if rules.BatchSkipsLeasedHead {
		batchBlocks = `p.attempts < p.max_attempts AND (p.token IS NULL OR NOT (` + live("p.lease_until") + `))`
	}
	batchNext := strings.Replace(candidates(batchBlocks), `
ORDER BY`, `
  AND (m.token IS NULL OR m.token NOT LIKE CAST(:batch AS TEXT))
ORDER BY`, 1) + `
LIMIT 1`
	e.qPeekBatch = `SELECT ` + msgCols + candidates(blocks) + `
LIMIT :limit`
	expired := `state = 'ready' AND token IS NOT NULL AND NOT (` + live("lease_until") + `)`
	deadLetter := `INSERT INTO {p}dead_letters
    (id, seq, mailbox, key, priority, max_attempts, attempts, reason, payload, created_at, dead_at)
SELECT id, seq, mailbox, key, priority, max_attempts, attempts, :reason, payload, created_at, :now
FROM {p}messages WHERE id = :id AND state = 'ready'`
	e.qPeek = `SELECT ` + msgCols + next
	e.qWork = `SELECT
    EXISTS (SELECT 1 FROM {p}messages WHERE ` + expired + `),
    EXISTS (SELECT 1 ` + next + `)`
	if pg {
		lease := func(next string) string {
			return `UPDATE {p}messages
SET token = :token, lease_until = :until, attempts = attempts + 1
WHERE seq = (SELECT m.seq ` + next + `
FOR UPDATE OF m SKIP LOCKED)
RETURNING ` + msgCols
		}
		e.qLease, e.qBatchLease = lease(next), lease(batchNext)
		e.qExpire = `UPDATE {p}messages SET token = NULL, lease_until = NULL
WHERE seq IN (
    SELECT seq FROM {p}messages
    WHERE ` + expired + `
    FOR UPDATE SKIP LOCKED)
RETURNING id, attempts >= max_attempts`
		e.qDeadLetter = deadLetter + `
FOR UPDATE`
	} else {
		lease := func(next string) string {
			return `UPDATE {p}messages
SET token = :token, lease_until = :until, attempts = attempts + 1
WHERE seq = (SELECT m.seq ` + next + `)
RETURNING ` + msgCols
		}
		e.qLease, e.qBatchLease = lease(next), lease(batchNext)
		e.qExpire = `UPDATE {p}messages SET token = NULL, lease_until = NULL
WHERE ` + expired + `
RETURNING id, attempts >= max_attempts`
		e.qDeadLetter = deadLetter
	}
	e.qDelete = `DELETE FROM {p}messages WHERE id = :id`
	// The store's qExtend (one form in both dialects).
	e.qExtend = `UPDATE {p}messages SET lease_until = :until
WHERE id = :id AND state = 'ready' AND token = :token`
	if rules.ExtendIgnoresToken {
		e.qExtend = `UPDATE {p}messages SET lease_until = :until
WHERE id = :id AND state = 'ready' AND token IS NOT NULL`
	}
	// The outbox claim: the store's qOutboxExhausted and qOutboxClaim (on PostgreSQL its
	// materialized, SKIP LOCKED form).
	claimable := `state = 'pending' AND available_at <= :now
      AND (claim_token IS NULL OR claim_until <= :now)`
	if !rules.ClaimIgnoresMaxDelivery {
		claimable += `
      AND delivery_attempts < max_delivery_attempts`
		e.qExhausted = `UPDATE {p}outbox
SET state = 'dead_letter', dead_reason = :reason, claim_token = NULL, claim_until = NULL, final_at = :now
WHERE state = 'pending' AND delivery_attempts >= max_delivery_attempts
  AND (claim_token IS NULL OR claim_until <= :now)`
	}
	if pg {
		e.qClaim = `WITH picked AS MATERIALIZED (
    SELECT seq FROM {p}outbox
    WHERE ` + claimable + `
    ORDER BY seq
    LIMIT :limit
    FOR UPDATE SKIP LOCKED)
UPDATE {p}outbox o
SET claim_token = :token, claim_until = :until, delivery_attempts = o.delivery_attempts + 1
FROM picked
WHERE o.seq = picked.seq
RETURNING o.` + outboxCols
	} else {
		e.qClaim = `UPDATE {p}outbox
SET claim_token = :token, claim_until = :until, delivery_attempts = delivery_attempts + 1
WHERE seq IN (
    SELECT seq FROM {p}outbox
    WHERE ` + claimable + `
    ORDER BY seq
    LIMIT :limit)
RETURNING ` + outboxCols
	}
	e.buildDedup()
	e.buildRetention(pg)
	for _, q := range []*string{&e.qPeek, &e.qLease, &e.qBatchLease, &e.qPeekBatch, &e.qExpire, &e.qWork, &e.qDeadLetter, &e.qDelete, &e.qExtend, &e.qExhausted, &e.qClaim,
		&e.qMarkProcessed, &e.qInsertCheckpoint, &e.qUpdateCheckpoint,
		&e.qPurgeAcked, &e.qPurgeDead, &e.qPurgeOutbox, &e.qRetire, &e.qForgetExpired,
		&e.qRedriveRecordMessage, &e.qRedriveMessage, &e.qRedriveDeleteDead, &e.qRedriveRecordOutbox, &e.qRedriveOutbox} {
		*q = strings.ReplaceAll(*q, "{p}", prefix)
	}
}

var paramRE = regexp.MustCompile(`:([a-z_][a-z0-9_]*)`)

// bind arranges args (all sql.NamedArg) for query: unchanged on SQLite; on PostgreSQL the query's
// :name parameters become $1, $2, ... and the values are passed in that order. A parameter the
// call does not pass is a bug here: it panics.
func (e *Eligibility) bind(query string, args []any) (string, []any) {
	if !e.positional {
		return query, args
	}
	byName := map[string]any{}
	for _, a := range args {
		na := a.(sql.NamedArg)
		byName[na.Name] = na.Value
	}
	index := map[string]int{}
	var out []any
	text := paramRE.ReplaceAllStringFunc(query, func(m string) string {
		name := m[1:]
		i, ok := index[name]
		if !ok {
			v, found := byName[name]
			if !found {
				panic(fmt.Sprintf("brokenstore: statement needs :%s, the call does not pass it:\n%s", name, query))
			}
			out = append(out, v)
			i = len(out)
			index[name] = i
		}
		return fmt.Sprintf("$%d", i)
	})
	return text, out
}

type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (e *Eligibility) exec(ctx context.Context, q querier, query string, args ...any) (sql.Result, error) {
	text, a := e.bind(query, args)
	return q.ExecContext(ctx, text, a...)
}

func (e *Eligibility) query(ctx context.Context, q querier, query string, args ...any) (*sql.Rows, error) {
	text, a := e.bind(query, args)
	return q.QueryContext(ctx, text, a...)
}

func (e *Eligibility) queryRow(ctx context.Context, q querier, query string, args ...any) *sql.Row {
	text, a := e.bind(query, args)
	return q.QueryRowContext(ctx, text, a...)
}

// Close closes the second connection (SQLite); the PostgreSQL pool stays open.
func (e *Eligibility) Close() error {
	if !e.owned {
		return nil
	}
	return e.db.Close()
}

func (e *Eligibility) params(now time.Time) []any {
	ms := now.UnixMilli()
	return []any{sql.Named("now", ms), sql.Named("cut", ms+e.rules.LeaseSkew.Milliseconds())}
}

// Lease is Store.Lease under the rules, in its own transaction.
func (e *Eligibility) Lease(ctx context.Context, now time.Time, mailbox string, leaseFor time.Duration) (*actordelivery.Message, error) {
	var m *actordelivery.Message
	err := e.tx(ctx, func(tx *sql.Tx) error {
		var err error
		m, err = e.lease(ctx, tx, now, mailbox, leaseFor)
		return err
	})
	return m, err
}

// Peek is Store.Peek under the rules.
func (e *Eligibility) Peek(ctx context.Context, now time.Time, mailbox string) (*actordelivery.Message, error) {
	m, err := scanMessage(e.queryRow(ctx, e.db, e.qPeek, append(e.params(now), sql.Named("mailbox", mailbox))...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("brokenstore: peek %q: %w", mailbox, err)
	}
	return m, nil
}

// Expire is Store.ExpireLeases under the rules, in its own transaction.
func (e *Eligibility) Expire(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := e.tx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = e.expire(ctx, tx, now)
		return err
	})
	return n, err
}

// Extend is Store.ExtendLease under the rules: it sets the lease of the ready message id to run
// until now + leaseFor when the message carries token (with ExtendIgnoresToken: any token), and
// reports an error wrapping actordelivery.ErrLeaseLost when it changed nothing.
func (e *Eligibility) Extend(ctx context.Context, now time.Time, id, token string, leaseFor time.Duration) error {
	n, err := e.extend(ctx, e.db, now, id, token, leaseFor)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("brokenstore: extend %q: %w", id, actordelivery.ErrLeaseLost)
	}
	return nil
}

// extend runs the extension on q and returns how many rows it changed.
func (e *Eligibility) extend(ctx context.Context, q querier, now time.Time, id, token string, leaseFor time.Duration) (int64, error) {
	args := []any{sql.Named("id", id), sql.Named("until", now.Add(leaseFor).UnixMilli())}
	if !e.rules.ExtendIgnoresToken {
		args = append(args, sql.Named("token", token))
	}
	res, err := e.exec(ctx, q, e.qExtend, args...)
	if err != nil {
		return 0, fmt.Errorf("brokenstore: extend %q: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("brokenstore: extend %q: %w", id, err)
	}
	return n, nil
}

// ExpireThenLease is the leased consumer's fetch under the rules: ExpireLeases then Lease, in
// one transaction, after a read that finds whether either would change anything (when neither
// would, no transaction runs), as the store's consumer does.
func (e *Eligibility) ExpireThenLease(ctx context.Context, now time.Time, mailbox string, leaseFor time.Duration) (*actordelivery.Message, error) {
	var expired, candidate bool
	if err := e.queryRow(ctx, e.db, e.qWork, append(e.params(now), sql.Named("mailbox", mailbox))...).Scan(&expired, &candidate); err != nil {
		return nil, fmt.Errorf("brokenstore: fetch %q: %w", mailbox, err)
	}
	if !expired && !candidate {
		return nil, nil
	}
	var m *actordelivery.Message
	err := e.tx(ctx, func(tx *sql.Tx) error {
		if _, err := e.expire(ctx, tx, now); err != nil {
			return err
		}
		var err error
		m, err = e.lease(ctx, tx, now, mailbox, leaseFor)
		return err
	})
	return m, err
}

func (e *Eligibility) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("brokenstore: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("brokenstore: commit: %w", err)
	}
	return nil
}

func (e *Eligibility) lease(ctx context.Context, tx *sql.Tx, now time.Time, mailbox string, leaseFor time.Duration) (*actordelivery.Message, error) {
	e.tokens++
	args := append(e.params(now), sql.Named("mailbox", mailbox),
		sql.Named("token", fmt.Sprintf("copy-%s%d", e.ns, e.tokens)),
		sql.Named("until", now.Add(leaseFor).UnixMilli()))
	m, err := scanMessage(e.queryRow(ctx, tx, e.qLease, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("brokenstore: lease %q: %w", mailbox, err)
	}
	return m, nil
}

// expire clears the leases the rules call expired and dead-letters those messages whose
// attempts are used up, as the store's ExpireLeases does, in tx.
func (e *Eligibility) expire(ctx context.Context, tx *sql.Tx, now time.Time) (int, error) {
	rows, err := e.query(ctx, tx, e.qExpire, e.params(now)...)
	if err != nil {
		return 0, fmt.Errorf("brokenstore: expire: %w", err)
	}
	var exhausted []string
	n := 0
	for rows.Next() {
		var id string
		var done bool
		if err := rows.Scan(&id, &done); err != nil {
			_ = rows.Close()
			return 0, fmt.Errorf("brokenstore: expire: %w", err)
		}
		n++
		if done {
			exhausted = append(exhausted, id)
		}
	}
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		return 0, fmt.Errorf("brokenstore: expire: %w", err)
	}
	for _, id := range exhausted {
		if _, err := e.exec(ctx, tx, e.qDeadLetter,
			sql.Named("id", id), sql.Named("reason", actordelivery.ReasonLeaseExpired), sql.Named("now", now.UnixMilli())); err != nil {
			return 0, fmt.Errorf("brokenstore: expire: dead-letter %q: %w", id, err)
		}
		if _, err := e.exec(ctx, tx, e.qDelete, sql.Named("id", id)); err != nil {
			return 0, fmt.Errorf("brokenstore: expire: delete %q: %w", id, err)
		}
	}
	return n, nil
}

type rowScanner interface{ Scan(...any) error }

func scanMessage(sc rowScanner) (*actordelivery.Message, error) {
	var (
		m          actordelivery.Message
		token      sql.NullString
		leaseUntil sql.NullInt64
		avail      int64
	)
	if err := sc.Scan(&m.ID, &m.Mailbox, &m.Key, &m.Priority, &m.MaxAttempts, &m.Attempts, &avail,
		&token, &leaseUntil, &m.State, &m.Payload, &m.Seq); err != nil {
		return nil, err
	}
	m.AvailableAt = time.UnixMilli(avail).UTC()
	if token.Valid {
		m.Token = token.String
		m.LeaseUntil = time.UnixMilli(leaseUntil.Int64).UTC()
	}
	if len(m.Payload) == 0 {
		m.Payload = nil
	}
	return &m, nil
}

// Recording is how the copies' recorded calls (FetchRecorded, ExtendRecorded, ClaimRecorded,
// MarkProcessedRecorded, SaveCheckpointRecorded) record, on a store that records: the store's
// clock, its actordelivery.Options.Recorder, and whether it writes a commit log
// (Options.CommitLog).
type Recording struct {
	Clock     actordelivery.Clock
	Rec       actordelivery.Recorder
	CommitLog bool
}

// recorded runs fn in one transaction of the second connection, which takes SQLite's writer
// lock at its start, as a recording store's own transaction does (see actordelivery's recorder):
// it reads the store's commit counter, reads the clock once, runs fn, numbers fn's write events
// counter+1, counter+2, ..., moves the counter past them and (with CommitLog) writes them into
// the commit log, all in the transaction. After the commit it hands every event to the Recorder,
// a read event placed after the counter it read. When fn fails, nothing is recorded.
func (e *Eligibility) recorded(ctx context.Context, r Recording, fn func(tx *sql.Tx, now time.Time) ([]actordelivery.Event, error)) error {
	var evs []actordelivery.Event
	err := e.tx(ctx, func(tx *sql.Tx) error {
		var seq int64
		if err := tx.QueryRowContext(ctx, `SELECT n FROM commit_seq WHERE id = 1`).Scan(&seq); err != nil {
			return fmt.Errorf("brokenstore: read commit counter: %w", err)
		}
		now := r.Clock.Now()
		var err error
		if evs, err = fn(tx, now); err != nil {
			return err
		}
		base := seq
		for i := range evs {
			evs[i].At = now
			if !evs[i].Read {
				seq++
			}
			evs[i].Seq = seq
		}
		if seq == base {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE commit_seq SET n = :n WHERE id = 1`, sql.Named("n", seq)); err != nil {
			return fmt.Errorf("brokenstore: advance commit counter: %w", err)
		}
		if !r.CommitLog {
			return nil
		}
		for _, ev := range evs {
			if ev.Read {
				continue
			}
			line, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO commit_log (seq, event) VALUES (:seq, :event)`,
				sql.Named("seq", ev.Seq), sql.Named("event", string(line))); err != nil {
				return fmt.Errorf("brokenstore: write commit log: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, ev := range evs {
		r.Rec.Record(ev)
	}
	return nil
}

// FetchRecorded is a consumer's fetch under the rules on a store that records (see Recording):
// ExpireThenLease on the leased path, Peek on the leaseless one, in one recorded transaction.
// It records the fetch as worker's consumer_fetch step: a write on the leased path, a read (the
// peek) on the leaseless one.
func (e *Eligibility) FetchRecorded(ctx context.Context, r Recording, worker int,
	mailbox string, path actordelivery.Path, leaseFor time.Duration) (*actordelivery.Message, error) {
	var m *actordelivery.Message
	leased := path == actordelivery.PathLeased
	err := e.recorded(ctx, r, func(tx *sql.Tx, now time.Time) ([]actordelivery.Event, error) {
		var err error
		if !leased {
			m, err = scanMessage(tx.QueryRowContext(ctx, e.qPeek, append(e.params(now), sql.Named("mailbox", mailbox))...))
			if errors.Is(err, sql.ErrNoRows) {
				m, err = nil, nil
			}
		} else if _, err = e.expire(ctx, tx, now); err == nil {
			m, err = e.lease(ctx, tx, now, mailbox, leaseFor)
		}
		if err != nil {
			return nil, err
		}
		ev := actordelivery.Event{Read: !leased, Op: "consumer_fetch",
			Args: actordelivery.EventArgs{Worker: worker, Mailbox: mailbox, Profile: path.String()}}
		if leased {
			ev.Args.LeaseFor = leaseFor
		}
		if m != nil {
			// A leaseless fetch takes no lease: it shows no token, as the store records it.
			ev.Result.Message = &actordelivery.EventMessage{ID: m.ID, Attempts: m.Attempts}
			if leased {
				ev.Result.Message.Token = m.Token
			}
		}
		return []actordelivery.Event{ev}, nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// ExtendRecorded is Extend in a recorded transaction (see Recording), recorded as an extend
// (lease_lost when it changed nothing, as the store records it).
func (e *Eligibility) ExtendRecorded(ctx context.Context, r Recording, id, token string, leaseFor time.Duration) error {
	var lost bool
	err := e.recorded(ctx, r, func(tx *sql.Tx, now time.Time) ([]actordelivery.Event, error) {
		n, err := e.extend(ctx, tx, now, id, token, leaseFor)
		if err != nil {
			return nil, err
		}
		ev := actordelivery.Event{Op: "extend", Args: actordelivery.EventArgs{ID: id, Token: token, LeaseFor: leaseFor}}
		if lost = n == 0; lost {
			ev.Result.Err = "lease_lost"
		}
		return []actordelivery.Event{ev}, nil
	})
	if err == nil && lost {
		err = fmt.Errorf("brokenstore: extend %q: %w", id, actordelivery.ErrLeaseLost)
	}
	return err
}

// ClaimRecorded is OutboxClaim in a recorded transaction (see Recording), recorded as an
// outbox_claim with the rows it returned.
func (e *Eligibility) ClaimRecorded(ctx context.Context, r Recording, limit int, claimFor time.Duration) ([]actordelivery.OutboxRow, error) {
	var out []actordelivery.OutboxRow
	err := e.recorded(ctx, r, func(tx *sql.Tx, now time.Time) ([]actordelivery.Event, error) {
		var err error
		if out, err = e.claim(ctx, tx, now, limit, claimFor); err != nil {
			return nil, err
		}
		ev := actordelivery.Event{Op: "outbox_claim", Args: actordelivery.EventArgs{Limit: limit, ClaimFor: claimFor}}
		for _, row := range out {
			ev.Result.Claimed = append(ev.Result.Claimed, actordelivery.EventClaimed{ID: row.ID, DeliveryAttempts: row.DeliveryAttempts, Token: row.ClaimToken})
		}
		return []actordelivery.Event{ev}, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// OutboxClaim is Store.OutboxClaim under the rules, in its own transaction. Its claims carry
// tokens "copy-<n>" from the same counter as its leases.
func (e *Eligibility) OutboxClaim(ctx context.Context, now time.Time, limit int, claimFor time.Duration) ([]actordelivery.OutboxRow, error) {
	var out []actordelivery.OutboxRow
	err := e.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = e.claim(ctx, tx, now, limit, claimFor)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// claim is OutboxClaim in the transaction tx; the rows come in claim (seq) order.
func (e *Eligibility) claim(ctx context.Context, tx *sql.Tx, now time.Time, limit int, claimFor time.Duration) ([]actordelivery.OutboxRow, error) {
	var out []actordelivery.OutboxRow
	ms := now.UnixMilli()
	if e.qExhausted != "" {
		if _, err := e.exec(ctx, tx, e.qExhausted, sql.Named("reason", actordelivery.ReasonMaxDeliveryAttempts),
			sql.Named("now", ms)); err != nil {
			return nil, fmt.Errorf("brokenstore: outbox claim: %w", err)
		}
	}
	e.tokens++
	rows, err := e.query(ctx, tx, e.qClaim, sql.Named("token", fmt.Sprintf("copy-%s%d", e.ns, e.tokens)),
		sql.Named("until", now.Add(claimFor).UnixMilli()), sql.Named("now", ms), sql.Named("limit", limit))
	if err != nil {
		return nil, fmt.Errorf("brokenstore: outbox claim: %w", err)
	}
	for rows.Next() {
		r, err := scanOutbox(rows)
		if err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("brokenstore: outbox claim: %w", err)
		}
		out = append(out, *r)
	}
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		return nil, fmt.Errorf("brokenstore: outbox claim: %w", err)
	}
	slices.SortFunc(out, func(a, b actordelivery.OutboxRow) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// outboxCols are the outbox columns the claim copy returns, in the order scanOutbox reads them.
const outboxCols = `seq, id, target, key, priority, max_attempts, payload, state, available_at,
    delivery_attempts, claim_token, claim_until, max_delivery_attempts, dead_reason`

func scanOutbox(sc rowScanner) (*actordelivery.OutboxRow, error) {
	var (
		r      actordelivery.OutboxRow
		token  sql.NullString
		until  sql.NullInt64
		avail  int64
		reason sql.NullString
	)
	if err := sc.Scan(&r.Seq, &r.ID, &r.Target, &r.Key, &r.Priority, &r.MaxAttempts, &r.Payload, &r.State, &avail,
		&r.DeliveryAttempts, &token, &until, &r.MaxDeliveryAttempts, &reason); err != nil {
		return nil, err
	}
	r.AvailableAt = time.UnixMilli(avail).UTC()
	if token.Valid {
		r.ClaimToken = token.String
		r.ClaimUntil = time.UnixMilli(until.Int64).UTC()
	}
	r.DeadReason = reason.String
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	return &r, nil
}
