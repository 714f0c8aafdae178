package actordelivery

// PostgreSQL's forms of the statements whose SQLite text does not suit it. Each entry is keyed by
// the SQLite constant itself, so a statement edited in sqlite_queries.go keeps its replacement (and
// a removed one fails to compile). Every other statement runs on PostgreSQL as written, with :name
// parameters rendered as $1, $2, ...
//
// Why each replacement:
//   - schema_version: applied_at holds milliseconds, which need BIGINT (SQLite's INTEGER is 64-bit).
//   - Lease, OutboxClaim and ExpireLeases lock the rows they take with FOR UPDATE SKIP LOCKED, so
//     concurrent workers never wait on, or take, a row another worker is taking. READ COMMITTED
//     re-checks a locked row's WHERE clause against its newest version, so a row taken meanwhile
//     is never taken twice.
//   - NackByID: PostgreSQL's two-argument minimum is LEAST.
//   - Enqueue: the parameters of an INSERT ... SELECT get no type from the target columns, so
//     each is cast to its column's type.
//   - The dead-letter move and the lease check lock the message row (FOR UPDATE), so two movers of
//     one message serialize and the second finds it gone (ErrNotFound), and a lease checked inside
//     a transaction stays held until the transaction ends, as under SQLite's writer lock. The
//     leaseless failure decision's read of the stored attempts locks the row for the same reason.
func pgOverrides() map[string]string {
	return map[string]string{
		// A recording store's write transactions take the counter row's lock first, so they
		// run one at a time in the order of their sequence numbers (see recorder.go).
		qSeqLock: `SELECT n AS locked FROM {p}commit_seq WHERE id = 1 FOR UPDATE`,
		qSchemaVersionTable: `CREATE TABLE IF NOT EXISTS {p}schema_version (
    version    INTEGER PRIMARY KEY,
    applied_at BIGINT  NOT NULL
)`,
		qLease: `UPDATE {p}messages
SET token = :token, lease_until = :until, attempts = attempts + 1
WHERE seq = (SELECT m.seq ` + qNextCandidate + `
FOR UPDATE OF m SKIP LOCKED)
RETURNING ` + msgCols,

		// As qOutboxClaim: the rows are picked once, in a materialized CTE, so the LIMIT holds.
		// SKIP LOCKED passes over a row another worker is leasing, never over a key's head to
		// its successor: the successor's NOT EXISTS sees the head in the statement's snapshot.
		qLeaseBatch: `WITH picked AS MATERIALIZED (
    SELECT m.seq ` + qCandidates + `
    LIMIT :limit
    FOR UPDATE OF m SKIP LOCKED)
UPDATE {p}messages o
SET token = CAST(:token AS TEXT) || '.' || CAST(o.seq AS TEXT), lease_until = :until, attempts = o.attempts + 1
FROM picked
WHERE o.seq = picked.seq
RETURNING o.` + msgCols, // only seq is in both tables

		qEnqueue: `INSERT INTO {p}messages
    (id, mailbox, key, priority, max_attempts, attempts, available_at, state, payload, created_at)
SELECT CAST(:id AS TEXT), CAST(:mailbox AS TEXT), CAST(:key AS TEXT), CAST(:priority AS BIGINT),
    CAST(:max_attempts AS BIGINT), 0, CAST(:available_at AS BIGINT), 'ready', CAST(:payload AS BYTEA),
    CAST(:now AS BIGINT)
WHERE NOT EXISTS (SELECT 1 FROM {p}dead_letters WHERE id = :id)
  AND NOT EXISTS (SELECT 1 FROM {p}purged_ids WHERE id = :id AND expires_at > CAST(:now AS BIGINT))
ON CONFLICT (id) DO NOTHING`,

		qNackByID: `UPDATE {p}messages
SET attempts = LEAST(attempts + 1, max_attempts), token = NULL, lease_until = NULL,
    available_at = :available_at
WHERE id = :id AND state = 'ready'`,

		qExpire: `UPDATE {p}messages SET token = NULL, lease_until = NULL
WHERE seq IN (
    SELECT seq FROM {p}messages
    WHERE state = 'ready' AND token IS NOT NULL AND lease_until <= :now
    FOR UPDATE SKIP LOCKED)
RETURNING id, attempts >= max_attempts`,

		// The rows are picked once, in a materialized CTE: as "seq IN (subquery)" the planner
		// may re-run the LIMIT subquery per outer row and claim more than limit rows (the
		// property hunts found this).
		qOutboxClaim: `WITH picked AS MATERIALIZED (
    SELECT seq FROM {p}outbox
    WHERE state = 'pending' AND available_at <= :now
      AND (claim_token IS NULL OR claim_until <= :now)
      AND delivery_attempts < max_delivery_attempts
    ORDER BY seq
    LIMIT :limit
    FOR UPDATE SKIP LOCKED)
UPDATE {p}outbox o
SET claim_token = :token, claim_until = :until, delivery_attempts = o.delivery_attempts + 1
FROM picked
WHERE o.seq = picked.seq
RETURNING o.` + outboxCols, // only seq is in both tables

		qDeadLetterInsert: `INSERT INTO {p}dead_letters
    (id, seq, mailbox, key, priority, max_attempts, attempts, reason, payload, created_at, dead_at)
SELECT id, seq, mailbox, key, priority, max_attempts, attempts, :reason, payload, created_at, :now
FROM {p}messages WHERE id = :id AND state = 'ready'
FOR UPDATE`,

		// A redrive locks the dead letter it records, so two redrives of one id serialize and the
		// second finds it gone (ErrNotFound).
		qRedriveRecordMessage: `INSERT INTO {p}redrives (id, kind, mailbox, attempts, dead_reason, reason, redriven_at)
SELECT id, 'message', mailbox, attempts, reason, CAST(:reason AS TEXT), CAST(:now AS BIGINT)
FROM {p}dead_letters WHERE id = :id
FOR UPDATE
RETURNING mailbox`,
		qRedriveRecordOutbox: `INSERT INTO {p}redrives (id, kind, mailbox, attempts, dead_reason, reason, redriven_at)
SELECT id, 'outbox', target, delivery_attempts, dead_reason, CAST(:reason AS TEXT), CAST(:now AS BIGINT)
FROM {p}outbox WHERE id = :id AND state = 'dead_letter'
FOR UPDATE
RETURNING mailbox`,

		qReadyAttempts: `SELECT attempts FROM {p}messages WHERE id = :id AND state = 'ready' FOR UPDATE`,
		qHoldsLease: `SELECT EXISTS (
    SELECT 1 FROM {p}messages WHERE id = :id AND state = 'ready' AND token = :token FOR UPDATE)`,
	}
}

const (
	// qNotify wakes the listeners of every store on the same database and prefix; PostgreSQL
	// delivers it only when the transaction commits.
	qNotify = `SELECT pg_notify(:channel, :payload)`
	// qDeadLetterRecheckNotify is Enqueue's check, after its insert, that the id was not
	// dead-lettered meanwhile (see Enqueue), and, when :notify is set and the id is not dead, the
	// wake-up's NOTIFY, in one round trip. CASE evaluates pg_notify only in the branch it takes.
	qDeadLetterRecheckNotify = `SELECT d.dead,
    CASE WHEN NOT d.dead AND CAST(:notify AS BOOLEAN) THEN CAST(pg_notify(:channel, :payload) AS TEXT) END
FROM (SELECT EXISTS (SELECT 1 FROM {p}dead_letters WHERE id = :id) AS dead) d`
	// qEnqueueRecheckAlone is qDeadLetterRecheckNotify and qDeadLetterDelete for enqueueAlone,
	// which sends it in one pipeline with the insert, before the insert's result is known. "mine"
	// is the row the insert wrote, if it wrote one: the row of this id whose version this
	// transaction created (none when the insert found a duplicate, which assigns no transaction
	// id). When the id is dead-lettered meanwhile, "undone" deletes that row (a data-modifying
	// WITH runs to completion whether or not the query reads it). stands is whether the insert
	// stands; the NOTIFY is sent only then. Needs PostgreSQL 13 (pg_current_xact_id_if_assigned).
	qEnqueueRecheckAlone = `WITH mine AS (
    SELECT seq FROM {p}messages WHERE id = :id AND xmin = CAST(pg_current_xact_id_if_assigned() AS xid)),
d AS (SELECT EXISTS (SELECT 1 FROM {p}dead_letters WHERE id = :id) AS dead),
undone AS (DELETE FROM {p}messages WHERE seq IN (SELECT seq FROM mine) AND (SELECT dead FROM d))
SELECT s.stands, CASE WHEN s.stands THEN CAST(pg_notify(:channel, :payload) AS TEXT) END
FROM (SELECT EXISTS (SELECT 1 FROM mine) AND NOT d.dead AS stands FROM d) s`
	// qEnqueueBatch is qEnqueue for many messages (EnqueueBatch): one row per element of the
	// arrays, inserted in the arrays' order (so their seq follows it), each under qEnqueue's
	// guard; it returns the ids it inserted. The caller sends each id once.
	qEnqueueBatch = `INSERT INTO {p}messages
    (id, mailbox, key, priority, max_attempts, attempts, available_at, state, payload, created_at)
SELECT v.id, v.mailbox, v.key, v.priority, v.max_attempts, 0, v.available_at, 'ready', v.payload,
    CAST(:now AS BIGINT)
FROM unnest(CAST(:ids AS TEXT[]), CAST(:mailboxes AS TEXT[]), CAST(:keys AS TEXT[]),
    CAST(:priorities AS BIGINT[]), CAST(:max_attempts AS BIGINT[]), CAST(:available_at AS BIGINT[]),
    CAST(:payloads AS BYTEA[]))
    WITH ORDINALITY AS v(id, mailbox, key, priority, max_attempts, available_at, payload, ord)
WHERE NOT EXISTS (SELECT 1 FROM {p}dead_letters d WHERE d.id = v.id)
  AND NOT EXISTS (SELECT 1 FROM {p}purged_ids p WHERE p.id = v.id AND p.expires_at > CAST(:now AS BIGINT))
ORDER BY v.ord
ON CONFLICT (id) DO NOTHING
RETURNING id`
	// qEnqueueBatchRecheck is qDeadLetterRecheckNotify's re-check and qDeadLetterDelete for the
	// ids an EnqueueBatch inserted: it deletes the rows of the ids dead-lettered meanwhile (a
	// data-modifying WITH runs whether or not the query reads it) and returns those ids.
	qEnqueueBatchRecheck = `WITH dead AS (SELECT id FROM {p}dead_letters WHERE id = ANY(CAST(:ids AS TEXT[]))),
undone AS (DELETE FROM {p}messages WHERE id IN (SELECT id FROM dead))
SELECT id FROM dead`
	// qMigrationLock serializes concurrent migrators of one prefix until their transaction ends.
	qMigrationLock = `SELECT pg_advisory_xact_lock(hashtext(:name))`
)
