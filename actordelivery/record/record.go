package record

import "time"

// Event is one recorded operation. Its JSON form (one object per line, see actordelivery.JSONRecorder) is what
// `pconform convert` reads; its field names are part of that contract.
//
// Seq places the event in the commit order, which is the linearization: a write event (Read
// false) is the Seq-th committed event of the database; events of one transaction have
// consecutive numbers. A read event (Read true: a peek, or a step that found its lease or claim
// lost and changed nothing) committed nothing; it saw exactly the state after commit Seq, because
// while a store records, every transaction holding an event, reads included, runs under the one
// commit lock (SQLite's writer lock, the counter row's lock on PostgreSQL). See docs/observed.md.
type Event struct {
	Seq  int64 `json:"seq"`
	Read bool  `json:"read,omitempty"`
	// At is the store clock's time for the whole transaction (read once, under the commit lock).
	At time.Time `json:"at"`
	// Op is an operation of the trace format: enqueue, lease, peek, ack, nack, ack_by_id,
	// nack_by_id, extend, expire, dead_letter, outbox_enqueue, outbox_claim, outbox_complete,
	// outbox_fail, outbox_dead_letter, purge, redrive, mark_processed, save_checkpoint,
	// load_checkpoint, consumer_fetch, consumer_handle, publisher_deliver, consumer_fetch_batch,
	// consumer_handle_batch, publisher_deliver_batch, worker_stop or
	// worker_drain (RunWorkers' stop and drain); and, when the store opens, incarnation (the
	// Open itself) and snapshot (a row the database held then, see SnapshotRow).
	Op     string `json:"op"`
	Args   Args   `json:"args"`
	Result Result `json:"result"`
	// Row is a "snapshot" event's row (see SnapshotRow); nil on every other event.
	Row *SnapshotRow `json:"row,omitempty"`
}

// Args are an event's arguments, named as in the trace format; durations in nanoseconds,
// tokens as the store issued them.
type Args struct {
	Mailbox     string        `json:"mailbox,omitempty"`
	ID          string        `json:"id,omitempty"`
	Key         string        `json:"key,omitempty"`
	Priority    int           `json:"priority,omitempty"`
	MaxAttempts int           `json:"max_attempts,omitempty"`
	Delay       time.Duration `json:"delay,omitempty"`
	Payload     string        `json:"payload,omitempty"`
	// MaxDeliveryAttempts is an outbox row's bound as stored (the default filled in).
	MaxDeliveryAttempts int           `json:"max_delivery_attempts,omitempty"`
	LeaseFor            time.Duration `json:"lease_for,omitempty"`
	Token               string        `json:"token,omitempty"`
	// Reason is a dead_letter's, outbox_dead_letter's or redrive's reason, and a consumer_handle's
	// for a failure the retry policy declined (fail_no_retry): the dead letter's reason, the
	// handler's error text, left out when it is "handler failed".
	Reason   string        `json:"reason,omitempty"`
	Target   string        `json:"target,omitempty"`
	Limit    int           `json:"limit,omitempty"`
	ClaimFor time.Duration `json:"claim_for,omitempty"`
	// Worker numbers a Consumer, Publisher a Publisher, within one store (from 1, in creation order).
	Worker    int `json:"worker,omitempty"`
	Publisher int `json:"publisher,omitempty"`
	// Incarnation names the Open of the store whose worker or publisher took the step (see
	// actordelivery.Store.Incarnation): with it, the worker and publisher numbers of a restarted
	// process, or of several processes recording into one log, never collide. Set on every event
	// that names a worker or a publisher.
	Incarnation string        `json:"incarnation,omitempty"`
	Profile     string        `json:"profile,omitempty"`
	Outcome     string        `json:"outcome,omitempty"`
	RetryDelay  time.Duration `json:"retry_delay,omitempty"`
	Fault       string        `json:"fault,omitempty"`
	// OlderThan and Horizon are purge's age and dedup horizon.
	OlderThan time.Duration `json:"older_than,omitempty"`
	Horizon   time.Duration `json:"horizon,omitempty"`
	// Consumer and TTL are a mark_processed's consumer and ttl.
	Consumer string        `json:"consumer,omitempty"`
	TTL      time.Duration `json:"ttl,omitempty"`
	// Actor names a checkpoint (save_checkpoint, load_checkpoint); ExpectVersion is the version
	// a save expected.
	Actor         string `json:"actor,omitempty"`
	ExpectVersion int64  `json:"expect_version,omitempty"`
	// Size, Outcomes and IDs are a batch step's: a consumer_fetch_batch's batch size, a
	// consumer_handle_batch's outcome per message (in batch order), a publisher_deliver_batch's
	// rows (in delivery order). Reasons are a consumer_handle_batch's dead-letter reasons, one
	// per outcome, set only for a declined failure (fail_no_retry) whose reason is not
	// "handler failed", and absent when no part's is.
	Size     int      `json:"size,omitempty"`
	Outcomes []string `json:"outcomes,omitempty"`
	IDs      []string `json:"ids,omitempty"`
	Reasons  []string `json:"reasons,omitempty"`
}

// Result is what the caller observed, named as in the trace format.
type Result struct {
	Err       string    `json:"err,omitempty"`
	Duplicate bool      `json:"duplicate,omitempty"`
	Message   *Message  `json:"message,omitempty"`
	Affected  int       `json:"affected,omitempty"`
	Claimed   []Claimed `json:"claimed,omitempty"`
	Action    string    `json:"action,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	// Version is a checkpoint's version: the new one after a save, the stored one after a load.
	Version int64 `json:"version,omitempty"`
	// Messages, Actions and Duplicates are a batch step's: the messages a consumer_fetch_batch
	// returned, the action per message or row of a consumer_handle_batch or
	// publisher_deliver_batch, and the duplicate flag per row of a publisher_deliver_batch.
	Messages   []Message `json:"messages,omitempty"`
	Actions    []string  `json:"actions,omitempty"`
	Duplicates []bool    `json:"duplicates,omitempty"`
}

// Message is a message a lease, peek or fetch returned.
type Message struct {
	ID       string `json:"id"`
	Attempts int    `json:"attempts"`
	Token    string `json:"token,omitempty"`
}

// Claimed is one row an outbox claim returned.
type Claimed struct {
	ID               string `json:"id"`
	DeliveryAttempts int    `json:"delivery_attempts"`
	Token            string `json:"token"`
}

// SnapshotRow is one durable row of the store as it was when a recording store opened: the row of
// a "snapshot" event (Event.Row). A log that begins while the database already holds rows can only
// be checked from the state it begins in; the store states that state, row by row, right after
// its "incarnation" event (see docs/observed.md, "A log that starts mid-life").
//
// Table names the row's kind; the other fields are its columns, named as in the trace format's
// snapshot, with the store's real times and tokens:
//   - "message": Mailbox, ID, Key, Priority, Payload, State ("ready" or "acked"), Attempts,
//     MaxAttempts, AvailableAt, Token and Until (its lease, if it carries one), FinalAt (acked_at).
//   - "dead_letter": Mailbox, ID, Key, Priority, Payload, Attempts, MaxAttempts, Reason, FinalAt
//     (dead_at).
//   - "outbox": ID, Target, Key, Priority, Payload, MaxAttempts, MaxDeliveryAttempts, State
//     ("pending", "completed" or "dead_letter"), Attempts (delivery attempts), AvailableAt, Token
//     and Until (its claim), Reason (why dead-lettered), FinalAt.
//   - "processed": Consumer, ID (the message id), ExpiresAt.
//   - "checkpoint": Actor, Version.
//   - "purged_id": ID (a purged message or dead letter still a duplicate), ExpiresAt.
//   - "end": Rows, the number of rows stated before it. It closes a complete snapshot.
//
// Each table comes in its creation order (messages and outbox rows by their seq), so a checker
// that adds them in that order orders them as the store does.
type SnapshotRow struct {
	Table               string    `json:"table"`
	Mailbox             string    `json:"mailbox,omitempty"`
	ID                  string    `json:"id,omitempty"`
	Key                 string    `json:"key,omitempty"`
	Priority            int       `json:"priority,omitempty"`
	Payload             string    `json:"payload,omitempty"`
	State               string    `json:"state,omitempty"`
	Attempts            int       `json:"attempts,omitempty"`
	MaxAttempts         int       `json:"max_attempts,omitempty"`
	Target              string    `json:"target,omitempty"`
	MaxDeliveryAttempts int       `json:"max_delivery_attempts,omitempty"`
	Token               string    `json:"token,omitempty"`
	Until               time.Time `json:"until,omitzero"`
	AvailableAt         time.Time `json:"available_at,omitzero"`
	FinalAt             time.Time `json:"final_at,omitzero"`
	ExpiresAt           time.Time `json:"expires_at,omitzero"`
	Reason              string    `json:"reason,omitempty"`
	Consumer            string    `json:"consumer,omitempty"`
	Actor               string    `json:"actor,omitempty"`
	Version             int64     `json:"version,omitempty"`
	Rows                int64     `json:"rows,omitempty"`
}

// The snapshot's tables (SnapshotRow.Table).
const (
	SnapMessage    = "message"
	SnapDeadLetter = "dead_letter"
	SnapOutbox     = "outbox"
	SnapProcessed  = "processed"
	SnapCheckpoint = "checkpoint"
	SnapPurgedID   = "purged_id"
	SnapEnd        = "end"
)

// OpSnapshot is the op of a snapshot event.
const OpSnapshot = "snapshot"
