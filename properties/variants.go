package properties

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Names of this package's own broken variants. Both move the lease boundary of
// docs/semantics.md ("a lease is live iff lease_until > now; at lease_until == now it has
// expired") in the store's eligibility and expiry SQL.
const (
	// VariantLeaseBoundary treats a lease as still live at lease_until == now: the `<` for `<=`
	// slip in "lease_until <= :now".
	VariantLeaseBoundary = "lease-boundary"
	// VariantLeaseEarly treats a lease as expired one second before lease_until: a deadline
	// computed against a clock read one second late.
	VariantLeaseEarly = "lease-early"

	// variantLeaseExact is the same machinery with the store's own boundary. It is not a variant:
	// tests run the properties against it to show that the lease-boundary targets differ from the
	// store only where their rule says so.
	variantLeaseExact = "lease-exact"
)

// BrokenVariants lists every broken variant the properties hunt: replay's variants and this
// package's own, in a stable order.
func BrokenVariants() []string {
	return []string{
		replay.TargetSplitWrite, replay.TargetRawAttempts, replay.TargetUnfencedAck,
		VariantLeaseBoundary, VariantLeaseEarly,
	}
}

// Targets lists the names NewTarget accepts.
func Targets() []string {
	return append(replay.Targets(), VariantLeaseBoundary, VariantLeaseEarly)
}

// ErrUnknownTarget is wrapped by NewTarget (and so by Hunt) for a target name it does not know.
var ErrUnknownTarget = errors.New("properties: unknown target")

// NewTarget returns the named target with its database in dir: one of replay's targets (see
// replay.NewTarget) or one of this package's lease-boundary variants. The CLI uses it so that
// `pconform replay FILE --target lease-boundary` reproduces a hunted trace. Unknown names give an
// error wrapping ErrUnknownTarget.
func NewTarget(name, dir string) (replay.Target, error) {
	switch name {
	case VariantLeaseBoundary:
		return newBoundaryTarget(dir, leaseRule{inclusive: true})
	case VariantLeaseEarly:
		return newBoundaryTarget(dir, leaseRule{skewMillis: 1000})
	case variantLeaseExact:
		return newBoundaryTarget(dir, leaseRule{})
	}
	t, err := replay.NewTarget(name, dir)
	if errors.Is(err, replay.ErrUnknownTarget) {
		return nil, fmt.Errorf("%w %q (known: %q)", ErrUnknownTarget, name, Targets())
	}
	if err != nil {
		return nil, fmt.Errorf("properties: target %q: %w", name, err)
	}
	return t, nil
}

// leaseRule decides when a lease is live. The store's rule is lease_until > now; a lease-boundary
// variant compares with >= (inclusive) or against now plus a skew.
type leaseRule struct {
	// inclusive makes a lease live also at lease_until == now + skew.
	inclusive bool
	// skewMillis is added to now before comparing: 1000 expires every lease a second early.
	skewMillis int64
}

// live is the SQL condition "the lease in column col is live at :cut", where :cut is now + skew.
// The caller checks that the row carries a token.
func (r leaseRule) live(col string) string {
	if r.inclusive {
		return col + " >= :cut"
	}
	return col + " > :cut"
}

// boundaryTarget is the real store target with its own copy of the store's eligibility and expiry
// SQL (actordelivery's qNextCandidate, qLease and qExpire, against the same database file) in which
// the lease boundary follows rule. Lease, peek, expire and the consumer's fetch (expire then lease,
// or peek) run that copy; the consumer's handle runs the real actordelivery.Consumer.Handle on the
// delivery the copy fetched, and every other step goes to the wrapped store target unchanged. With
// the store's own rule (variantLeaseExact) it behaves exactly like the store, which the tests check.
type boundaryTarget struct {
	inner *replay.StoreTarget
	// db is a second connection to the inner store's database file.
	db   *sql.DB
	rule leaseRule
	// qLease, qPeek and qExpire are the copies of the store's statements with rule's boundary.
	qLease, qPeek, qExpire string
	// tokens counts the leases this target issued; a token is "boundary-<n>", which never
	// collides with the store's random tokens.
	tokens int
	// fetched holds each worker's fetched, not yet handled delivery; a crash step clears it.
	fetched map[int]*actordelivery.Delivery
	log     *slog.Logger
}

var _ replay.Target = (*boundaryTarget)(nil)

// msgCols are the columns the copies return, in the order scanMessage reads them.
const msgCols = `id, mailbox, key, priority, max_attempts, attempts, available_at, token, lease_until, state, payload, seq`

func newBoundaryTarget(dir string, rule leaseRule) (*boundaryTarget, error) {
	inner, err := replay.NewStoreTarget(dir)
	if err != nil {
		return nil, fmt.Errorf("properties: lease-boundary target: %w", err)
	}
	// replay.NewStoreTarget keeps its database in dir/replay.db (its documented contract).
	path := filepath.Join(dir, "replay.db")
	uri := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite3", uri+"?_busy_timeout=5000&_txlock=immediate")
	if err != nil {
		_ = inner.Close()
		return nil, fmt.Errorf("properties: lease-boundary target: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	next := `
FROM messages m
WHERE m.mailbox = :mailbox
  AND m.state = 'ready'
  AND m.available_at <= :now
  AND (m.token IS NULL OR NOT (` + rule.live("m.lease_until") + `))
  AND m.attempts < m.max_attempts
  AND (m.key = '' OR NOT EXISTS (
        SELECT 1 FROM messages p
        WHERE p.mailbox = m.mailbox
          AND p.key = m.key
          AND p.key <> ''
          AND p.state = 'ready'
          AND p.seq < m.seq
          AND (p.attempts < p.max_attempts OR (p.token IS NOT NULL AND ` + rule.live("p.lease_until") + `))))
ORDER BY m.priority DESC, m.available_at ASC, m.seq ASC
LIMIT 1`
	return &boundaryTarget{
		inner: inner, db: db, rule: rule,
		qPeek: `SELECT ` + msgCols + next,
		qLease: `UPDATE messages
SET token = :token, lease_until = :until, attempts = attempts + 1
WHERE seq = (SELECT m.seq ` + next + `)
RETURNING ` + msgCols,
		qExpire: `UPDATE messages SET token = NULL, lease_until = NULL
WHERE state = 'ready' AND token IS NOT NULL AND NOT (` + rule.live("lease_until") + `)
RETURNING id, attempts >= max_attempts`,
		fetched: map[int]*actordelivery.Delivery{},
		log:     slog.New(slog.DiscardHandler),
	}, nil
}

// Do runs lease, peek, expire and the consumer steps itself and hands every other step to the
// wrapped store target.
func (b *boundaryTarget) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	var o replay.Observation
	var err error
	switch op {
	case traces.OpLease:
		var m *actordelivery.Message
		err = b.tx(ctx, func(tx *sql.Tx) error {
			var lerr error
			m, lerr = b.lease(ctx, tx, at, a.Mailbox, a.LeaseFor)
			return lerr
		})
		o.Message = observed(m, true)
	case traces.OpPeek:
		var m *actordelivery.Message
		m, err = b.peek(ctx, b.db, at, a.Mailbox)
		o.Message = observed(m, false)
	case traces.OpExpire:
		err = b.tx(ctx, func(tx *sql.Tx) error {
			var xerr error
			o.Affected, xerr = b.expire(ctx, tx, at)
			return xerr
		})
	case traces.OpConsumerFetch:
		o, err = b.fetch(ctx, at, a)
	case traces.OpConsumerHandle:
		o, err = b.handle(ctx, at, a)
	case traces.OpCrash:
		clear(b.fetched)
		return b.inner.Do(ctx, op, at, a)
	default:
		return b.inner.Do(ctx, op, at, a)
	}
	if err != nil {
		return replay.Observation{}, fmt.Errorf("properties: lease-boundary target: %s: %w", op, err)
	}
	return o, nil
}

// tx runs fn in one write transaction on the second connection.
func (b *boundaryTarget) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func millis(at int64) int64 { return traces.At(at).UnixMilli() }

func (b *boundaryTarget) params(at int64) []any {
	now := millis(at)
	return []any{sql.Named("now", now), sql.Named("cut", now+b.rule.skewMillis)}
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

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (b *boundaryTarget) lease(ctx context.Context, tx *sql.Tx, at int64, mailbox string, leaseFor int64) (*actordelivery.Message, error) {
	b.tokens++
	args := append(b.params(at), sql.Named("mailbox", mailbox),
		sql.Named("token", fmt.Sprintf("boundary-%d", b.tokens)),
		sql.Named("until", millis(at)+leaseFor*1000))
	m, err := scanMessage(tx.QueryRowContext(ctx, b.qLease, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return m, err
}

func (b *boundaryTarget) peek(ctx context.Context, q querier, at int64, mailbox string) (*actordelivery.Message, error) {
	m, err := scanMessage(q.QueryRowContext(ctx, b.qPeek, append(b.params(at), sql.Named("mailbox", mailbox))...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return m, err
}

// expire is actordelivery's ExpireLeases with the rule's boundary: it clears the leases the rule
// calls expired and dead-letters those messages whose attempts are used up, in tx.
func (b *boundaryTarget) expire(ctx context.Context, tx *sql.Tx, at int64) (int, error) {
	rows, err := tx.QueryContext(ctx, b.qExpire, b.params(at)...)
	if err != nil {
		return 0, err
	}
	var exhausted []string
	n := 0
	for rows.Next() {
		var id string
		var done bool
		if err := rows.Scan(&id, &done); err != nil {
			_ = rows.Close()
			return 0, err
		}
		n++
		if done {
			exhausted = append(exhausted, id)
		}
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, id := range exhausted {
		if _, err := tx.ExecContext(ctx, `INSERT INTO dead_letters
    (id, seq, mailbox, key, priority, max_attempts, attempts, reason, payload, created_at, dead_at)
SELECT id, seq, mailbox, key, priority, max_attempts, attempts, :reason, payload, created_at, :now
FROM messages WHERE id = :id AND state = 'ready'`,
			sql.Named("id", id), sql.Named("reason", actordelivery.ReasonLeaseExpired), sql.Named("now", millis(at))); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE id = :id`, sql.Named("id", id)); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// observed is the message a caller sees, as replay's store target reports it.
func observed(m *actordelivery.Message, withToken bool) *replay.Message {
	if m == nil {
		return nil
	}
	o := &replay.Message{ID: m.ID, Attempts: m.Attempts}
	if withToken {
		o.Token = m.Token
	}
	return o
}

// fetch is Consumer.Fetch over the copied SQL: leased, expire then lease in one transaction;
// leaseless, peek.
func (b *boundaryTarget) fetch(ctx context.Context, at int64, a replay.Args) (replay.Observation, error) {
	if d := b.fetched[a.Worker]; d != nil {
		return replay.Observation{}, fmt.Errorf("worker %d still holds its fetch of %q: a consumer_handle must come between two fetches", a.Worker, d.Message.ID)
	}
	var m *actordelivery.Message
	var err error
	path := actordelivery.PathLeased
	switch a.Profile {
	case traces.ProfileLeaseless:
		path = actordelivery.PathLeaseless
		m, err = b.peek(ctx, b.db, at, a.Mailbox)
	case traces.ProfileLeased:
		err = b.tx(ctx, func(tx *sql.Tx) error {
			if _, err := b.expire(ctx, tx, at); err != nil {
				return err
			}
			var err error
			m, err = b.lease(ctx, tx, at, a.Mailbox, a.LeaseFor)
			return err
		})
	default:
		return replay.Observation{}, fmt.Errorf("consumer profile %q is not %q or %q", a.Profile, traces.ProfileLeased, traces.ProfileLeaseless)
	}
	if err != nil || m == nil {
		return replay.Observation{}, err
	}
	b.fetched[a.Worker] = &actordelivery.Delivery{Message: *m, Path: path}
	return replay.Observation{Message: observed(m, path == actordelivery.PathLeased)}, nil
}

// handle runs the real Consumer.Handle on the worker's delivery, with the handler replay's store
// target uses: it fails when the step's outcome is "fail", and otherwise its effects append the
// message id to the checkpoint "effects/<mailbox>" in the acknowledgement's transaction.
func (b *boundaryTarget) handle(ctx context.Context, at int64, a replay.Args) (replay.Observation, error) {
	// advance_clock sets the inner store's clock to the step's time and registers the mailbox,
	// so the snapshot reads its effect log; it changes nothing else.
	if _, err := b.inner.Do(ctx, traces.OpAdvanceClock, at, replay.Args{Mailbox: a.Mailbox}); err != nil {
		return replay.Observation{}, err
	}
	d := b.fetched[a.Worker]
	if d == nil {
		return replay.Observation{Action: traces.ActionIdle}, nil
	}
	delete(b.fetched, a.Worker)
	st := b.inner.Store()
	path := actordelivery.PathLeased
	if a.Profile == traces.ProfileLeaseless {
		path = actordelivery.PathLeaseless
	}
	c, err := actordelivery.NewConsumer(st, effectHandler(st, a.Outcome), actordelivery.ConsumerOptions{
		Mailbox: a.Mailbox, Path: path, LeaseFor: time.Duration(max(a.LeaseFor, 1)) * time.Second,
		Retry: fixedRetry(time.Duration(a.RetryDelay) * time.Second), Logger: b.log,
	})
	if err != nil {
		return replay.Observation{}, err
	}
	out, err := c.Handle(ctx, d)
	if err != nil {
		return replay.Observation{}, err
	}
	return replay.Observation{Action: out.Action, Attempt: out.Attempt}, nil
}

// fixedRetry always retries, after the step's retry_delay.
type fixedRetry time.Duration

func (d fixedRetry) Retry(error, int) (time.Duration, bool) { return time.Duration(d), true }

var errHandlerFails = errors.New("properties: handler outcome is fail")

func effectHandler(st *actordelivery.Store, outcome string) actordelivery.Handler {
	return func(_ context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		if outcome == traces.OutcomeFail {
			return nil, errHandlerFails
		}
		// The effect log is read and written inside the acknowledgement's transaction.
		return func(ctx context.Context) error {
			actor := "effects/" + m.Mailbox
			state, version, err := st.LoadCheckpoint(ctx, actor)
			if err != nil && !errors.Is(err, actordelivery.ErrNotFound) {
				return err
			}
			var ids []string
			if len(state) > 0 {
				if err := json.Unmarshal(state, &ids); err != nil {
					return fmt.Errorf("properties: effect log %q: %w", actor, err)
				}
			}
			data, err := json.Marshal(append(slices.Clip(ids), m.ID))
			if err != nil {
				return err
			}
			_, err = st.SaveCheckpoint(ctx, actor, data, version)
			return err
		}, nil
	}
}

func (b *boundaryTarget) Snapshot(ctx context.Context) (replay.Snapshot, error) {
	return b.inner.Snapshot(ctx)
}

// Reopen reopens the inner store; fetched deliveries are kept, as replay's store target keeps them.
func (b *boundaryTarget) Reopen(ctx context.Context) error { return b.inner.Reopen(ctx) }

func (b *boundaryTarget) Close() error {
	return errors.Join(b.db.Close(), b.inner.Close())
}

// The driver registers itself as "sqlite3"; naming the package keeps the dependency explicit.
var _ = sqlite3.SQLiteDriver{}
