-- Schema version 1 on PostgreSQL: the same tables, columns and constraints as
-- migrations/sqlite/0001_init.sql. Times are BIGINT milliseconds since the Unix epoch (the store's
-- Clock, never the server's clock); NULL means "none". {p} is the table prefix.

-- seq comes from an identity column: never reused, the store-wide creation order.
CREATE TABLE {p}messages (
    seq          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE CHECK (id <> ''),
    mailbox      TEXT    NOT NULL CHECK (mailbox <> ''),
    key          TEXT    NOT NULL DEFAULT '',
    priority     BIGINT  NOT NULL,
    max_attempts BIGINT  NOT NULL CHECK (max_attempts >= 1),
    attempts     BIGINT  NOT NULL DEFAULT 0 CHECK (attempts >= 0 AND attempts <= max_attempts),
    available_at BIGINT  NOT NULL,
    token        TEXT,
    lease_until  BIGINT,
    state        TEXT    NOT NULL CHECK (state IN ('ready', 'acked')),
    payload      BYTEA,
    created_at   BIGINT  NOT NULL,
    CHECK ((token IS NULL) = (lease_until IS NULL)),
    CHECK (token IS NULL OR state = 'ready')
);

CREATE INDEX {p}messages_next ON {p}messages (mailbox, state, priority DESC, available_at, seq);
CREATE INDEX {p}messages_key ON {p}messages (mailbox, key, state, seq) WHERE key <> '';
CREATE INDEX {p}messages_leases ON {p}messages (lease_until) WHERE token IS NOT NULL;

CREATE TABLE {p}dead_letters (
    dseq         BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    seq          BIGINT  NOT NULL,
    mailbox      TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    priority     BIGINT  NOT NULL,
    max_attempts BIGINT  NOT NULL,
    attempts     BIGINT  NOT NULL,
    reason       TEXT    NOT NULL,
    payload      BYTEA,
    created_at   BIGINT  NOT NULL,
    dead_at      BIGINT  NOT NULL
);

CREATE TABLE {p}outbox (
    seq               BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                TEXT    NOT NULL UNIQUE CHECK (id <> ''),
    target            TEXT    NOT NULL CHECK (target <> ''),
    key               TEXT    NOT NULL DEFAULT '',
    priority          BIGINT  NOT NULL,
    max_attempts      BIGINT  NOT NULL CHECK (max_attempts >= 1),
    payload           BYTEA,
    state             TEXT    NOT NULL CHECK (state IN ('pending', 'completed')),
    available_at      BIGINT  NOT NULL,
    delivery_attempts BIGINT  NOT NULL DEFAULT 0,
    claim_token       TEXT,
    claim_until       BIGINT,
    created_at        BIGINT  NOT NULL,
    CHECK ((claim_token IS NULL) = (claim_until IS NULL))
);

CREATE INDEX {p}outbox_pending ON {p}outbox (seq) WHERE state = 'pending';

CREATE TABLE {p}checkpoints (
    actor      TEXT    PRIMARY KEY CHECK (actor <> ''),
    state      BYTEA,
    version    BIGINT  NOT NULL CHECK (version >= 1),
    updated_at BIGINT  NOT NULL
);

CREATE TABLE {p}processed (
    consumer   TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    expires_at BIGINT  NOT NULL,
    PRIMARY KEY (consumer, message_id)
);

CREATE INDEX {p}processed_expiry ON {p}processed (expires_at);
