// Package actordelivery is pconform's durable delivery layer for actors: a SQL-backed mailbox
// (one table for every mailbox, with leases, retries, per-key FIFO and dead letters), a
// transactional outbox, actor checkpoints and processed-message dedup, plus the Consumer that
// drives a Handler from a mailbox and the Publisher that moves outbox rows into mailboxes.
//
// # Contract
//
// The store implements docs/semantics.md exactly; the P models (models/p), the Go reference model
// (models) and conformance replay (replay) hold it to that page. In particular:
//
//   - Eligibility and order: a message is delivered only when ready, available (available_at <=
//     now), not under a live lease (live iff a token is set and lease_until > now; at lease_until
//     == now it has expired), not exhausted (attempts < max_attempts) and not blocked by an earlier
//     ready message of the same mailbox and key that is unexhausted or live-leased. The next message
//     is the eligible one with the highest priority, then the earliest available_at, then the
//     smallest seq.
//   - Ids are unique across all mailboxes, acked rows and dead letters: a repeated Enqueue reports
//     duplicate and leaves the first row untouched. An outbox row whose id is already a message of
//     another mailbox than its target is never reported delivered: the publisher dead-letters it
//     with ReasonIDCollision (an id collision; an id in the target is the row's own delivery).
//   - Fencing: Ack, Nack and ExtendLease act only on a ready message carrying the given token,
//     OutboxComplete, OutboxFail and OutboxDeadLetter only on a pending row carrying the given
//     claim token; otherwise
//     they return ErrLeaseLost / ErrClaimLost and change nothing.
//   - Every operation is atomic: it either commits whole or returns an error and writes nothing.
//     Bad input is ErrInvalidArgument naming the argument, never a panic and never a partial write.
//     The limits (MaxNameBytes, MaxReasonBytes, Options.MaxPayloadBytes; valid UTF-8, no NUL byte)
//     are checked before any SQL, identically on both backends.
//   - Time comes only from Options.Clock and is stored as integer milliseconds since the Unix epoch.
//
// # Transactions
//
// ExecTx puts a transaction in the context it hands its callback; every store call made with that
// context joins it, nested ExecTx calls included. So a Handler's Effects (SaveCheckpoint,
// MarkProcessed, OutboxEnqueue, ...) commit together with the message's acknowledgement, or not at
// all. The boundary is enforced: a store call made on the callback's goroutine with a context that
// does not carry its transaction (the outer ctx, say) fails with ErrOutsideTransaction and writes
// nothing, on both backends (see ExecTx).
//
// The application's own SQL joins it too: Tx(ctx) returns a Querier bound to the transaction, in an
// ExecTx callback and in a Handler's Effects. A business row and the outbox row announcing it thus
// commit or roll back together (ExampleTx). Isolation: on SQLite the transaction holds the single
// writer lock, so it is serializable and every other writer waits for it; on PostgreSQL it runs at
// the server's default level (READ COMMITTED unless configured), a read-only one at REPEATABLE READ.
// The handle refuses statements that end the transaction (COMMIT, ROLLBACK, SAVEPOINT, ...): ExecTx
// commits. Outside a transaction, or after it ended, Tx and the handle fail with ErrNoTransaction;
// in a read-only ExecTx the handle refuses writes. A commit error is always returned. On SQLite, write transactions take the writer lock at BEGIN
// (_txlock=immediate) on the store's single writer connection; read-only transactions and reads
// outside a transaction use a separate pool of query_only connections and never take the writer
// lock, which is what makes Peek, and so the leaseless consumer's idle polling, cheap. The leased
// consumer's idle polling is a read too: its Fetch reads first and takes the writer only when a
// lease has expired or its mailbox has an eligible message. With Options.GroupCommit above 1,
// concurrent write transactions on SQLite take the writer in turn inside one shared transaction and
// share its COMMIT (one fsync); each still commits whole or not at all, and returns only after
// that COMMIT, with its result (groupcommit.go).
//
// # Consumer and publisher
//
// A Consumer serves one mailbox on one of two paths. PathLeased (any number of workers): Fetch
// expires stale leases and leases the next message; Handle commits the handler's Effects with the
// fenced Ack. PathLeaseless (exactly one worker per mailbox): Fetch only peeks; Handle commits the
// Effects with AckByID. Handlers follow Read/Commit: the Handler runs outside any write
// transaction, so handlers of different mailboxes run at the same time and enqueues never wait for
// a handler; only its Effects and the acknowledgement form one short write transaction (on SQLite,
// these commits are what serializes). On a handler failure both paths hand the retry policy the
// same effective attempt (EffectiveAttempts: the stored count on the leased path, stored + 1 on the
// leaseless path) and dead-letter at max_attempts, so no message is ever stranded.
//
// Batches (docs/semantics.md, "Batches"): with ConsumerOptions.BatchSize N > 1 a consumer fetches
// up to N messages in one statement (each its key's head, in delivery order) and commits all
// their outcomes in one transaction; a failed commit changes nothing. PublisherOptions.DeliverBatch
// does the same for fold deliveries. The retried messages of one batch share one retry delay: the
// one the retry policy gives the first of them. A recording store records each batch as one step
// (consumer_fetch_batch, consumer_handle_batch, publisher_deliver_batch).
//
// RunWorkers runs a fixed number of workers over a set of mailboxes (each worker a round of
// consumer steps; on the leaseless path each mailbox has exactly one worker) and drains on cancel:
// no new fetch starts, every fetched message is handled and committed, and the call returns when
// every worker has stopped. The drain has a timeout (ConsumerOptions.DrainTimeout, default 10s):
// after it, handler contexts are cancelled with cause ErrDrainTimeout, and a delivery not yet
// committed commits nothing, leaving its message to the lease or peek rules.
//
// # Retention
//
// Purge removes acked messages, dead letters and final (completed or dead-lettered) outbox rows
// that have been final for a given time, a small batch of each per call (PurgeAll repeats it,
// yielding the database between batches); the ids of purged messages stay duplicates until their
// dedup horizon has passed (docs/semantics.md, "Retention").
//
// # Redrive
//
// Redrive sends a dead letter back once its cause is fixed: a mailbox dead letter re-enters its
// mailbox ready with attempts 0, a dead-lettered outbox row becomes pending with no delivery
// attempts; each redrive is recorded with its time and reason (ListRedrives; docs/semantics.md,
// "Redrive").
//
// # Observability
//
// Options.Metrics receives delivery counters (fetched, acked, retried, dead-lettered, outbox
// delivered and failed, per mailbox), commit latencies and the queue depths RunWorkers samples;
// the default discards them, ExpvarMetrics shows them through the standard library's expvar, and
// any other metrics library plugs in with a three-method adapter (ExampleMetrics). The store calls
// Metrics only after a transaction ended, so a slow sink never holds one open. Log records carry
// typed attributes under fixed snake_case keys (logattrs.go).
//
// A Publisher claims outbox batches and delivers each row: ModeFold enqueues and completes in one
// transaction; ModeSplit commits the enqueue, then the completion, and never completes a row whose
// enqueue failed. A failed delivery releases the row (OutboxFail after RetryDelay), or dead-letters
// it when that was its last of MaxDeliveryAttempts (default 10); OutboxClaim never claims a row past
// that bound and dead-letters one whose last claim ran out, so every outbox row ends completed or
// dead-lettered. A row the publisher's Check refuses is dead-lettered at once.
//
// # What the package never does
//
// It never reads the wall clock except through the Clock (Run's poll waits, RunWorkers' drain
// timeout and the commit latencies reported to Metrics are real time), never keeps package-level mutable state, never
// drops a commit error, and never changes a row when a fence fails. It does not prevent two leaseless consumers on one mailbox; that path's correctness
// rests on the single-worker rule.
//
// # Backends
//
// The store runs on SQLite (Open, the embedded default: one file) or PostgreSQL (OpenPostgres, a
// server through pgx); OpenBackend picks one by name. Both give the same API, the same semantics
// and the same sentinel errors, and both take Options.TablePrefix so the tables can live in an
// application's own database. The Go code is shared; what differs is confined to the SQL text
// (sqlite_queries.go holds every statement, postgres_queries.go the PostgreSQL forms of the few that
// differ), the migrations (migrations/sqlite, migrations/postgres, one version number for both) and
// the connection set-up. On PostgreSQL, write transactions take row locks only (commits on
// different mailboxes run in parallel), fetches skip locked rows, and the post-commit wake-up also
// reaches stores in other processes through LISTEN/NOTIFY; serialization failures and deadlocks
// are ErrBusy, retried a bounded number of times for single store calls.
package actordelivery
