-- Schema version 1: mailbox, dead letters, outbox, checkpoints, processed-message dedup.
-- Times are integer milliseconds since the Unix epoch; NULL means "none".

-- One table for every mailbox. seq is AUTOINCREMENT so it is never reused, even after a
-- dead-lettered row leaves the table: it is the store-wide creation order.
CREATE TABLE {p}messages (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT    NOT NULL UNIQUE CHECK (id <> ''),
    mailbox      TEXT    NOT NULL CHECK (mailbox <> ''),
    key          TEXT    NOT NULL DEFAULT '',
    priority     INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
    attempts     INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0 AND attempts <= max_attempts),
    available_at INTEGER NOT NULL,
    token        TEXT,
    lease_until  INTEGER,
    state        TEXT    NOT NULL CHECK (state IN ('ready', 'acked')),
    payload      BLOB,
    created_at   INTEGER NOT NULL,
    -- A token exists only together with its expiry, and only on a ready row.
    CHECK ((token IS NULL) = (lease_until IS NULL)),
    CHECK (token IS NULL OR state = 'ready')
);

-- Selecting a mailbox's next message walks this index in delivery order and stops at the first
-- eligible row.
CREATE INDEX {p}messages_next ON {p}messages (mailbox, state, priority DESC, available_at, seq);
-- The head-of-line check looks up earlier ready rows of the same mailbox and key.
CREATE INDEX {p}messages_key ON {p}messages (mailbox, key, state, seq) WHERE key <> '';
-- expire() finds expired leases without scanning unleased rows.
CREATE INDEX {p}messages_leases ON {p}messages (lease_until) WHERE token IS NOT NULL;

CREATE TABLE {p}dead_letters (
    dseq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT    NOT NULL UNIQUE,
    seq          INTEGER NOT NULL,
    mailbox      TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    priority     INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    attempts     INTEGER NOT NULL,
    reason       TEXT    NOT NULL,
    payload      BLOB,
    created_at   INTEGER NOT NULL,
    dead_at      INTEGER NOT NULL
);

CREATE TABLE {p}outbox (
    seq               INTEGER PRIMARY KEY AUTOINCREMENT,
    id                TEXT    NOT NULL UNIQUE CHECK (id <> ''),
    target            TEXT    NOT NULL CHECK (target <> ''),
    key               TEXT    NOT NULL DEFAULT '',
    priority          INTEGER NOT NULL,
    max_attempts      INTEGER NOT NULL CHECK (max_attempts >= 1),
    payload           BLOB,
    state             TEXT    NOT NULL CHECK (state IN ('pending', 'completed')),
    available_at      INTEGER NOT NULL,
    delivery_attempts INTEGER NOT NULL DEFAULT 0,
    claim_token       TEXT,
    claim_until       INTEGER,
    created_at        INTEGER NOT NULL,
    CHECK ((claim_token IS NULL) = (claim_until IS NULL))
);

CREATE INDEX {p}outbox_pending ON {p}outbox (seq) WHERE state = 'pending';

CREATE TABLE {p}checkpoints (
    actor      TEXT    PRIMARY KEY CHECK (actor <> ''),
    state      BLOB,
    version    INTEGER NOT NULL CHECK (version >= 1),
    updated_at INTEGER NOT NULL
);

CREATE TABLE {p}processed (
    consumer   TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (consumer, message_id)
);

CREATE INDEX {p}processed_expiry ON {p}processed (expires_at);
