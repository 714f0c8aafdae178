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
	// The statements below are the store's own, in the backend's dialect, with rules applied
	// (build). qLease, qPeek, qExpire, qWork (the store's qLeasedWork), qDeadLetter (its
	// qDeadLetterInsert), qDelete (its qDeadLetterDelete) and qExtend are a lease's.
	qLease, qPeek, qExpire, qWork, qDeadLetter, qDelete, qExtend string
	// qBatchLease is one lease of a leased batch fetch (qLease with one conjunct added, and
	// BatchSkipsLeasedHead's rule when it is set) and qPeekBatch the leaseless batch fetch.
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
	// qSeqLock, qSeqWrite and qLogInsert are the recording store's commit counter and log
	// statements (see recorded).
	qSeqLock, qSeqWrite, qLogInsert string
	// tokens counts the leases issued; the next token is "copy-<tokens+1>", or
	// "copy-<ns>-<tokens+1>" after Namespace(ns).
	tokens int
	ns     string
}

// Namespace makes the tokens this Eligibility issues "copy-<ns>-<n>": several processes, each
// with an Eligibility of its own on one database, then never issue the same token.
func (e *Eligibility) Namespace(ns string) { e.ns = ns + "-" }

// OpenEligibility opens a second connection to the SQLite database at path (the store must
// have created it) and builds the copied statements with rules. It fails when the store's
// statements no longer hold a conjunct a rule edits (see applyEdits).
func OpenEligibility(path string, rules Rules) (*Eligibility, error) {
	uri := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite3", uri+"?_busy_timeout=5000&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("brokenstore: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	e := &Eligibility{db: db, owned: true, rules: rules}
	if err := e.build(actordelivery.BackendSQLite, ""); err != nil {
		_ = db.Close()
		return nil, err
	}
	return e, nil
}

// OpenEligibilityPostgres builds the copied statements with rules in PostgreSQL's dialect, on
// db (a pool of pgx's database/sql driver that reaches the store's tables) and the store's table
// prefix. Close leaves db open. It fails as OpenEligibility does.
func OpenEligibilityPostgres(db *sql.DB, prefix string, rules Rules) (*Eligibility, error) {
	if db == nil {
		return nil, errors.New("brokenstore: postgres eligibility: pool is nil")
	}
	e := &Eligibility{db: db, rules: rules, positional: true}
	if err := e.build(actordelivery.BackendPostgres, prefix); err != nil {
		return nil, err
	}
	return e, nil
}

// The store's conjuncts the rules edit, as its statements spell them (actordelivery's
// qCandidates, qExpire and qLeasedWork, qOutboxClaim, qExtend).
const (
	// A message's own lease is over: it may be leased.
	storeOwnLeaseOver = `(m.token IS NULL OR m.lease_until <= :now)`
	// A keyed head blocks its successors while it has attempts left or holds a live lease.
	storeHeadBlocks = `(p.attempts < p.max_attempts OR (p.token IS NOT NULL AND p.lease_until > :now))`
	// The head's lease is live (inside storeHeadBlocks, and inside each rule's replacement of it).
	storeHeadLeaseLive = `p.lease_until > :now`
	// A lease has expired: ExpireLeases clears it.
	storeLeaseExpired = `token IS NOT NULL AND lease_until <= :now`
	// An outbox row is claimed only with delivery attempts left.
	storeClaimAttemptsLeft = "\n      AND delivery_attempts < max_delivery_attempts"
	// An extension changes the row only when it carries the caller's token.
	storeExtendToken = `AND token = :token`
	// Delivery order, where a leased batch's lease adds its conjunct.
	storeDeliveryOrder = "\nORDER BY m.priority DESC"
)

// build makes the copied statements for backend from the store's own text (storeText, generated
// from actordelivery's query files), each rule applied as an edit of the one conjunct or value
// it changes. PostgreSQL's forms differ from SQLite's exactly where the store's do, since they
// are the store's. It fails, naming the statement and the text, when a conjunct a rule edits is
// not in the store's statement exactly once.
func (e *Eligibility) build(backend actordelivery.Backend, prefix string) error {
	rules := e.rules
	b := &builder{backend: backend, prefix: prefix}
	// The lease-live rule, in its three conjuncts. :cut is now + LeaseSkew; with no skew the
	// statements keep the store's :now.
	cut, over, live := ":now", "<=", ">"
	if rules.LeaseSkew != 0 {
		cut = ":cut"
	}
	if rules.LeaseInclusive {
		over, live = "<", ">="
	}
	ownOver := edit{storeOwnLeaseOver, `(m.token IS NULL OR m.lease_until ` + over + ` ` + cut + `)`}
	headLive := edit{storeHeadLeaseLive, `p.lease_until ` + live + ` ` + cut}
	expired := edit{storeLeaseExpired, `token IS NOT NULL AND lease_until ` + over + ` ` + cut}
	// The keyed-order rule. Each replacement keeps the head's lease comparison as the store
	// writes it, so headLive (made after it) applies the lease-live rule there too.
	blocks := storeHeadBlocks
	if rules.HeadBlocksOnlyWhenEligible {
		blocks = `(p.attempts < p.max_attempts AND (p.token IS NULL OR NOT (p.lease_until > :now)) AND p.available_at <= :now)`
	}
	// A leased batch is leases in a row in one transaction (what the store's one statement takes:
	// its qCandidates comment), each the store's qLease with one conjunct added: it passes over
	// the rows the batch's earlier leases took, whose tokens match :batch, so a batch never takes
	// a message twice (the store's one statement cannot). Under BatchSkipsLeasedHead a head under
	// a live lease blocks nothing, so the batch's own lease of a head frees the key's next
	// message for its next lease.
	batchBlocks := blocks
	if rules.BatchSkipsLeasedHead {
		batchBlocks = `(p.attempts < p.max_attempts AND (p.token IS NULL OR NOT (p.lease_until > :now)))`
	}
	eligible := []edit{{storeHeadBlocks, blocks}, ownOver, headLive}
	e.qPeek = b.from("qPeek", eligible...)
	e.qLease = b.from("qLease", eligible...)
	e.qBatchLease = b.from("qLease", edit{storeDeliveryOrder,
		"\n  AND (m.token IS NULL OR m.token NOT LIKE CAST(:batch AS TEXT))" + storeDeliveryOrder},
		edit{storeHeadBlocks, batchBlocks}, ownOver, headLive)
	e.qPeekBatch = b.from("qPeekBatch", eligible...)
	e.qExpire = b.from("qExpire", expired)
	e.qWork = b.from("qLeasedWork", append([]edit{expired}, eligible...)...)
	e.qDeadLetter = b.from("qDeadLetterInsert")
	e.qDelete = b.from("qDeadLetterDelete")
	tokenCheck := storeExtendToken
	if rules.ExtendIgnoresToken {
		tokenCheck = `AND token IS NOT NULL`
	}
	e.qExtend = b.from("qExtend", edit{storeExtendToken, tokenCheck})
	// The outbox claim: qOutboxExhausted, then qOutboxClaim. ClaimIgnoresMaxDelivery drops the
	// first and the claim's attempts conjunct.
	claimAttempts := storeClaimAttemptsLeft
	if rules.ClaimIgnoresMaxDelivery {
		claimAttempts = ""
	}
	e.qClaim = b.from("qOutboxClaim", edit{storeClaimAttemptsLeft, claimAttempts})
	if !rules.ClaimIgnoresMaxDelivery {
		e.qExhausted = b.from("qOutboxExhausted")
	}
	// The commit counter and log a recorded call writes, as a recording store does.
	e.qSeqLock = b.from("qSeqLock")
	e.qSeqWrite = b.from("qSeqWrite")
	e.qLogInsert = b.from("qLogInsert")
	e.buildDedup(b)
	e.buildRetention(b)
	return b.err
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

// params are the clock parameters of the lease statements: :now, and :cut, the instant a lease
// is compared with under LeaseSkew (now when the skew is 0, and then no statement reads it).
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
		avail, crt int64
	)
	// The store's msgCols, which its statements return.
	if err := sc.Scan(&m.Seq, &m.ID, &m.Mailbox, &m.Key, &m.Priority, &m.MaxAttempts, &m.Attempts,
		&avail, &token, &leaseUntil, &m.State, &m.Payload, &crt); err != nil {
		return nil, err
	}
	m.AvailableAt = time.UnixMilli(avail).UTC()
	m.CreatedAt = time.UnixMilli(crt).UTC()
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
		if err := e.queryRow(ctx, tx, e.qSeqLock).Scan(&seq); err != nil {
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
		if _, err := e.exec(ctx, tx, e.qSeqWrite, sql.Named("n", seq)); err != nil {
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
			if _, err := e.exec(ctx, tx, e.qLogInsert, sql.Named("seq", ev.Seq), sql.Named("event", string(line))); err != nil {
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

// scanOutbox reads the store's outboxCols, which its claim returns.
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
