-- Schema version 2: outbox dead letters. A row carries its own max_delivery_attempts (10 for rows
-- written before this version) and may end dead-lettered with a reason instead of completed.
-- SQLite cannot change a CHECK constraint in place, so the table is rebuilt; seq values are kept.

CREATE TABLE {p}outbox_v2 (
    seq                   INTEGER PRIMARY KEY AUTOINCREMENT,
    id                    TEXT    NOT NULL UNIQUE CHECK (id <> ''),
    target                TEXT    NOT NULL CHECK (target <> ''),
    key                   TEXT    NOT NULL DEFAULT '',
    priority              INTEGER NOT NULL,
    max_attempts          INTEGER NOT NULL CHECK (max_attempts >= 1),
    payload               BLOB,
    state                 TEXT    NOT NULL CHECK (state IN ('pending', 'completed', 'dead_letter')),
    available_at          INTEGER NOT NULL,
    delivery_attempts     INTEGER NOT NULL DEFAULT 0,
    claim_token           TEXT,
    claim_until           INTEGER,
    created_at            INTEGER NOT NULL,
    max_delivery_attempts INTEGER NOT NULL DEFAULT 10 CHECK (max_delivery_attempts >= 1),
    dead_reason           TEXT,
    CHECK ((claim_token IS NULL) = (claim_until IS NULL)),
    -- A reason exists exactly on a dead-lettered row, and a dead-lettered row holds no claim.
    CHECK ((dead_reason IS NULL) = (state <> 'dead_letter')),
    CHECK (claim_token IS NULL OR state = 'pending')
);

INSERT INTO {p}outbox_v2
    (seq, id, target, key, priority, max_attempts, payload, state, available_at, delivery_attempts,
     claim_token, claim_until, created_at)
SELECT seq, id, target, key, priority, max_attempts, payload, state, available_at, delivery_attempts,
       claim_token, claim_until, created_at
FROM {p}outbox;

DROP TABLE {p}outbox;
ALTER TABLE {p}outbox_v2 RENAME TO {p}outbox;
CREATE INDEX {p}outbox_pending ON {p}outbox (seq) WHERE state = 'pending';
