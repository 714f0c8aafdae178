package actordelivery

// Every SQL statement the store runs lives in this file (the schema lives in migrations/sqlite/ and
// migrations/postgres/). {p} stands for the table prefix (Options.TablePrefix).
// The statements use SQLite's dialect: named parameters (:name), RETURNING, ON CONFLICT. PostgreSQL
// runs them as written (parameters rendered as $1, $2, ...) except the few postgres_queries.go
// replaces; the Go code around them is the same for both backends.

const (
	qSchemaVersionTable = `CREATE TABLE IF NOT EXISTS {p}schema_version (
    version    INTEGER PRIMARY KEY,
    applied_at INTEGER NOT NULL
)`
	qSchemaVersion       = `SELECT COALESCE(MAX(version), 0) FROM {p}schema_version`
	qSchemaVersionInsert = `INSERT INTO {p}schema_version (version, applied_at) VALUES (:version, :now)`
	qJournalMode         = `PRAGMA journal_mode`
	qSynchronous         = `PRAGMA synchronous`
	qTempStoreRead       = `PRAGMA temp_store`
)

// Mailbox.

const msgCols = `seq, id, mailbox, key, priority, max_attempts, attempts, available_at, token,
    lease_until, state, payload, created_at`

// qNextCandidate is the eligibility rule of docs/semantics.md, conjunct by conjunct, followed by
// the delivery order. Parameters: :mailbox, :now.
//
// The mailbox parameter is wrapped in a CAST (a no-op: it is text) because SQLite's planner (3.54,
// as go-sqlite3 bundles it) compares a bare parameter with the literals of the partial indexes'
// WHERE clauses while it plans this query, and then marks the statement to be re-prepared each
// time that parameter is bound again: every peek and every lease was parsed and planned anew
// despite the statement cache, at 3 to 5 times the cost of running it (see
// docs/notes/2026-12-01-performance-rounds.md, "Statements compiled at every execution"). Through the CAST the planner sees an expression, not
// a bound value, and the cached statement is reused. The plan is the same, an equality probe of
// messages_next (TestHotStatementPlans).
const qNextCandidate = qCandidates + `
LIMIT 1`

// qCandidates is qNextCandidate without its LIMIT: every eligible message of the mailbox, in
// delivery order. A batch fetch takes its first :limit rows. Each is its key's head, and at most
// one per key is eligible (an eligible message is ready with attempts left, so it blocks its key's
// successors), so the first N rows are what N fetches in a row would take: each fetched message
// still blocks its key (leased with attempts counted, or held by a peeking batch), and taking it
// makes no other message eligible.
const qCandidates = `
FROM {p}messages m
WHERE m.mailbox = CAST(:mailbox AS TEXT)
  AND m.state = 'ready'
  AND m.available_at <= :now
  AND (m.token IS NULL OR m.lease_until <= :now)
  AND m.attempts < m.max_attempts
  AND (m.key = '' OR NOT EXISTS (
        SELECT 1 FROM {p}messages p
        WHERE p.mailbox = m.mailbox
          AND p.key = m.key
          AND p.key <> ''
          AND p.state = 'ready'
          AND p.seq < m.seq
          AND (p.attempts < p.max_attempts OR (p.token IS NOT NULL AND p.lease_until > :now))))
ORDER BY m.priority DESC, m.available_at ASC, m.seq ASC`

const (
	qPeek = `SELECT ` + msgCols + qNextCandidate

	// qPeekBatch is the leaseless batch fetch: up to :limit eligible messages, in delivery order.
	qPeekBatch = `SELECT ` + msgCols + qCandidates + `
LIMIT :limit`

	// qLeaseBatch is the leased batch fetch: up to :limit leases in one statement. Each message
	// gets a token of its own (the batch's random token and its seq), so every acknowledgement is
	// fenced exactly as after a single lease. RETURNING does not promise an order; the caller
	// sorts the batch into delivery order.
	qLeaseBatch = `UPDATE {p}messages
SET token = CAST(:token AS TEXT) || '.' || CAST(seq AS TEXT), lease_until = :until, attempts = attempts + 1
WHERE seq IN (SELECT m.seq ` + qCandidates + `
LIMIT :limit)
RETURNING ` + msgCols

	qLease = `UPDATE {p}messages
SET token = :token, lease_until = :until, attempts = attempts + 1
WHERE seq = (SELECT m.seq ` + qNextCandidate + `)
RETURNING ` + msgCols

	// qLeasedWork is the leased fetch's read before it takes the writer: whether any lease has
	// expired (qExpire would clear something) and whether the mailbox has an eligible message
	// (qLease would take something). Both false: the fetch would change nothing, and it commits
	// nothing. The first conjunct is qExpire's WHERE clause, the second qNextCandidate.
	qLeasedWork = `SELECT
    EXISTS (SELECT 1 FROM {p}messages
            WHERE state = 'ready' AND token IS NOT NULL AND lease_until <= :now),
    EXISTS (SELECT 1 ` + qNextCandidate + `)`

	// qEnqueue inserts the message unless its id is taken: by a dead letter or by an id Purge
	// retired whose dedup horizon has not passed (the guard), or by any message (the conflict);
	// no row affected means a duplicate. One statement, so the check and the insert cost one
	// round trip.
	qEnqueue = `INSERT INTO {p}messages
    (id, mailbox, key, priority, max_attempts, attempts, available_at, state, payload, created_at)
SELECT :id, :mailbox, :key, :priority, :max_attempts, 0, :available_at, 'ready', :payload, :now
WHERE NOT EXISTS (SELECT 1 FROM {p}dead_letters WHERE id = :id)
  AND NOT EXISTS (SELECT 1 FROM {p}purged_ids WHERE id = :id AND expires_at > :now)
ON CONFLICT (id) DO NOTHING`

	qAck = `UPDATE {p}messages SET state = 'acked', token = NULL, lease_until = NULL, acked_at = :now
WHERE id = :id AND state = 'ready' AND token = :token`

	qNack = `UPDATE {p}messages SET token = NULL, lease_until = NULL, available_at = :available_at
WHERE id = :id AND state = 'ready' AND token = :token`

	qAckByID = `UPDATE {p}messages SET state = 'acked', token = NULL, lease_until = NULL, acked_at = :now
WHERE id = :id AND state = 'ready'`

	qNackByID = `UPDATE {p}messages
SET attempts = MIN(attempts + 1, max_attempts), token = NULL, lease_until = NULL,
    available_at = :available_at
WHERE id = :id AND state = 'ready'`

	qExtend = `UPDATE {p}messages SET lease_until = :until
WHERE id = :id AND state = 'ready' AND token = :token`

	qHoldsLease = `SELECT EXISTS (
    SELECT 1 FROM {p}messages WHERE id = :id AND state = 'ready' AND token = :token)`

	qExpire = `UPDATE {p}messages SET token = NULL, lease_until = NULL
WHERE state = 'ready' AND token IS NOT NULL AND lease_until <= :now
RETURNING id, attempts >= max_attempts`

	qDeadLetterInsert = `INSERT INTO {p}dead_letters
    (id, seq, mailbox, key, priority, max_attempts, attempts, reason, payload, created_at, dead_at)
SELECT id, seq, mailbox, key, priority, max_attempts, attempts, :reason, payload, created_at, :now
FROM {p}messages WHERE id = :id AND state = 'ready'`

	qDeadLetterDelete = `DELETE FROM {p}messages WHERE id = :id`

	qGetMessage = `SELECT ` + msgCols + ` FROM {p}messages WHERE id = :id`
	// An id is in at most one of the two tables (a dead-letter move deletes the message, a
	// redrive deletes the dead letter, an enqueue checks both), so the union has at most one row.
	qMessageMailbox = `SELECT mailbox FROM {p}messages WHERE id = :id
UNION ALL SELECT mailbox FROM {p}dead_letters WHERE id = :id`
	qReadyAttempts = `SELECT attempts FROM {p}messages WHERE id = :id AND state = 'ready'`

	qQueueDepth = `SELECT COUNT(*) FROM {p}messages WHERE mailbox = :mailbox AND state = 'ready'`

	qListMessages = `SELECT ` + msgCols + ` FROM {p}messages
WHERE (:mailbox = '' OR mailbox = :mailbox) ORDER BY seq`

	qListDeadLetters = `SELECT mailbox, id, key, priority, attempts, max_attempts, reason, payload, dead_at
FROM {p}dead_letters ORDER BY dseq`
)

// Outbox.

const outboxCols = `seq, id, target, key, priority, max_attempts, payload, state, available_at,
    delivery_attempts, claim_token, claim_until, max_delivery_attempts, dead_reason`

const (
	qOutboxEnqueue = `INSERT INTO {p}outbox
    (id, target, key, priority, max_attempts, payload, state, available_at, delivery_attempts, created_at,
     max_delivery_attempts)
VALUES (:id, :target, :key, :priority, :max_attempts, :payload, 'pending', :now, 0, :now, :max_delivery_attempts)
ON CONFLICT (id) DO NOTHING`

	// The claim's first statement: every pending row that has used up its delivery attempts and
	// holds no live claim is dead-lettered (its last delivery crashed, or failed without
	// reaching OutboxDeadLetter).
	qOutboxExhausted = `UPDATE {p}outbox
SET state = 'dead_letter', dead_reason = :reason, claim_token = NULL, claim_until = NULL, final_at = :now
WHERE state = 'pending' AND delivery_attempts >= max_delivery_attempts
  AND (claim_token IS NULL OR claim_until <= :now)`

	// RETURNING does not promise an order; the caller sorts the batch by seq.
	qOutboxClaim = `UPDATE {p}outbox
SET claim_token = :token, claim_until = :until, delivery_attempts = delivery_attempts + 1
WHERE seq IN (
    SELECT seq FROM {p}outbox
    WHERE state = 'pending' AND available_at <= :now
      AND (claim_token IS NULL OR claim_until <= :now)
      AND delivery_attempts < max_delivery_attempts
    ORDER BY seq
    LIMIT :limit)
RETURNING ` + outboxCols

	qOutboxComplete = `UPDATE {p}outbox SET state = 'completed', claim_token = NULL, claim_until = NULL,
    final_at = :now
WHERE id = :id AND state = 'pending' AND claim_token = :token`

	qOutboxFail = `UPDATE {p}outbox SET claim_token = NULL, claim_until = NULL, available_at = :available_at
WHERE id = :id AND state = 'pending' AND claim_token = :token`

	qOutboxDeadLetter = `UPDATE {p}outbox
SET state = 'dead_letter', dead_reason = :reason, claim_token = NULL, claim_until = NULL, final_at = :now
WHERE id = :id AND state = 'pending' AND claim_token = :token`

	qListOutbox = `SELECT ` + outboxCols + ` FROM {p}outbox ORDER BY seq`
	// The dead-lettered rows alone, through the partial index outbox_dead (schema version 6).
	qListOutboxDeadLetters = `SELECT ` + outboxCols + ` FROM {p}outbox WHERE state = 'dead_letter' ORDER BY seq`
)

// Checkpoints and processed-message dedup.

const (
	qLoadCheckpoint = `SELECT state, version FROM {p}checkpoints WHERE actor = :actor`

	qInsertCheckpoint = `INSERT INTO {p}checkpoints (actor, state, version, updated_at)
VALUES (:actor, :state, 1, :now)
ON CONFLICT (actor) DO NOTHING`

	qUpdateCheckpoint = `UPDATE {p}checkpoints SET state = :state, version = version + 1, updated_at = :now
WHERE actor = :actor AND version = :version`

	// A row whose TTL ran out counts as absent: the upsert renews it and reports a change.
	qMarkProcessed = `INSERT INTO {p}processed (consumer, message_id, expires_at)
VALUES (:consumer, :message_id, :expires_at)
ON CONFLICT (consumer, message_id) DO UPDATE SET expires_at = excluded.expires_at
WHERE {p}processed.expires_at <= :now`

	qPurgeProcessed = `DELETE FROM {p}processed WHERE expires_at <= :now`
)

// The commit counter a recording store draws its sequence numbers from (see recorder.go).

const (
	qSeqTable = `CREATE TABLE IF NOT EXISTS {p}commit_seq (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  BIGINT  NOT NULL
)`
	qSeqInit = `INSERT INTO {p}commit_seq (id, n) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`
	// qSeqLock reads the counter at the start of a write transaction; SQLite's writer lock,
	// taken at BEGIN IMMEDIATE, is already the commit lock.
	qSeqLock  = `SELECT n AS locked FROM {p}commit_seq WHERE id = 1`
	qSeqRead  = `SELECT n FROM {p}commit_seq WHERE id = 1`
	qSeqWrite = `UPDATE {p}commit_seq SET n = :n WHERE id = 1`

	// The commit log (Options.CommitLog): each write event as its JSON line, by sequence number.
	qLogTable = `CREATE TABLE IF NOT EXISTS {p}commit_log (
    seq   BIGINT PRIMARY KEY,
    event TEXT   NOT NULL
)`
	qLogInsert = `INSERT INTO {p}commit_log (seq, event) VALUES (:seq, :event)`
	qLogRead   = `SELECT seq, event FROM {p}commit_log ORDER BY seq`
)

// Retention. Each purge statement removes at most :limit rows final since :cutoff or earlier,
// oldest first (then by id), among those whose (final time, id) comes after (:after_at,
// :after_id), and returns each removed row's id and the time it became final: the ids of
// messages and dead letters so that the caller can keep them until the dedup horizon passes, and
// the last (time, id) so that PurgeAll's next call can start after it. Purge passes the bound
// noBound (before every row), so it is the plain oldest-first batch. qPurgeAcked's "lease_until IS
// NULL" holds for every acked row (an acked row holds no lease), so ordering by lease_until first is
// ordering by (acked_at, id); both let the query walk messages_timers' acked part in index order
// (schema version 5) instead of sorting every acked row up to the cutoff: SQLite needs the
// condition, PostgreSQL the ORDER BY (TestHotStatementPlans, TestPostgresPurgePlan).
//
// Why the bound: PostgreSQL leaves a deleted row's index entries in place until VACUUM, so an
// oldest-first batch that starts at the beginning of the index reads again every leaf page the
// batches before it emptied; a purge of n rows read O(n²) index pages, each batch more than the
// one before (docs/notes/2026-12-01-performance-rounds.md, "Retention"). The bound is an index condition: each batch starts
// where the previous one stopped (TestPostgresPurgeResumes).

const (
	qPurgeAcked = `DELETE FROM {p}messages WHERE id IN (
    SELECT id FROM {p}messages WHERE state = 'acked' AND lease_until IS NULL AND acked_at <= :cutoff
      AND (acked_at, id) > (:after_at, :after_id)
    ORDER BY lease_until, acked_at, id LIMIT :limit)
RETURNING id, acked_at`

	qPurgeDeadLetters = `DELETE FROM {p}dead_letters WHERE id IN (
    SELECT id FROM {p}dead_letters WHERE dead_at <= :cutoff
      AND (dead_at, id) > (:after_at, :after_id)
    ORDER BY dead_at, id LIMIT :limit)
RETURNING id, dead_at`

	qPurgeOutbox = `DELETE FROM {p}outbox WHERE id IN (
    SELECT id FROM {p}outbox WHERE state <> 'pending' AND final_at <= :cutoff
      AND (final_at, id) > (:after_at, :after_id)
    ORDER BY final_at, id LIMIT :limit)
RETURNING id, final_at`

	qPurgedIDInsert = `INSERT INTO {p}purged_ids (id, expires_at) VALUES (:id, :expires_at)
ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at`

	qPurgeExpiredIDs = `DELETE FROM {p}purged_ids WHERE id IN (
    SELECT id FROM {p}purged_ids WHERE expires_at <= :now ORDER BY expires_at, id LIMIT :limit)`
)

// Redrive. Each record statement writes the history row of one kind of dead letter named :id and
// returns its mailbox, or affects nothing when there is no such dead letter; the move follows
// only when it wrote one. Parameters in a SELECT list carry casts, as PostgreSQL gives them no
// type from the target columns.

const (
	qRedriveRecordMessage = `INSERT INTO {p}redrives (id, kind, mailbox, attempts, dead_reason, reason, redriven_at)
SELECT id, 'message', mailbox, attempts, reason, CAST(:reason AS TEXT), CAST(:now AS BIGINT)
FROM {p}dead_letters WHERE id = :id
RETURNING mailbox`

	// qRedriveMessage puts the dead letter back into its mailbox as a fresh ready row: attempts 0,
	// available now, a new seq (it joins the back of its mailbox and key).
	qRedriveMessage = `INSERT INTO {p}messages
    (id, mailbox, key, priority, max_attempts, attempts, available_at, state, payload, created_at)
SELECT id, mailbox, key, priority, max_attempts, 0, CAST(:now AS BIGINT), 'ready', payload, CAST(:now AS BIGINT)
FROM {p}dead_letters WHERE id = :id`

	qRedriveDeleteDead = `DELETE FROM {p}dead_letters WHERE id = :id`

	qRedriveRecordOutbox = `INSERT INTO {p}redrives (id, kind, mailbox, attempts, dead_reason, reason, redriven_at)
SELECT id, 'outbox', target, delivery_attempts, dead_reason, CAST(:reason AS TEXT), CAST(:now AS BIGINT)
FROM {p}outbox WHERE id = :id AND state = 'dead_letter'
RETURNING mailbox`

	qRedriveOutbox = `UPDATE {p}outbox
SET state = 'pending', dead_reason = NULL, delivery_attempts = 0, available_at = :now, final_at = NULL
WHERE id = :id AND state = 'dead_letter'`

	qListRedrives = `SELECT id, kind, mailbox, attempts, dead_reason, reason, redriven_at FROM {p}redrives
WHERE (:id = '' OR id = :id) ORDER BY rseq`
)

// The snapshot a recording store writes when it opens (snapshot.go): every durable row, each
// table in its creation order, so that a checker starting from it numbers rows as the store does.

const (
	qSnapMessages = `SELECT id, mailbox, key, priority, max_attempts, attempts, available_at, token,
    lease_until, state, payload, acked_at FROM {p}messages ORDER BY seq`
	qSnapDeadLetters = `SELECT id, mailbox, key, priority, max_attempts, attempts, reason, payload, dead_at
FROM {p}dead_letters ORDER BY dseq`
	qSnapOutbox = `SELECT id, target, key, priority, max_attempts, payload, state, available_at,
    delivery_attempts, claim_token, claim_until, max_delivery_attempts, dead_reason, final_at
FROM {p}outbox ORDER BY seq`
	qSnapProcessed   = `SELECT consumer, message_id, expires_at FROM {p}processed ORDER BY consumer, message_id`
	qSnapCheckpoints = `SELECT actor, version FROM {p}checkpoints ORDER BY actor`
	qSnapPurgedIDs   = `SELECT id, expires_at FROM {p}purged_ids ORDER BY expires_at, id`
)
