-- Schema version 4: redrive. Every redrive of a dead letter back to ready leaves a record here:
-- the row it moved (a mailbox dead letter, kind 'message', or a dead-lettered outbox row, kind
-- 'outbox'), its mailbox (the outbox row's target), when, why, and what the row had been (its
-- attempt or delivery-attempt count and its dead-letter reason). Records are never changed; Purge
-- does not touch them.
CREATE TABLE {p}redrives (
    rseq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT    NOT NULL,
    kind        TEXT    NOT NULL CHECK (kind IN ('message', 'outbox')),
    mailbox     TEXT    NOT NULL,
    attempts    INTEGER NOT NULL,
    dead_reason TEXT    NOT NULL,
    reason      TEXT    NOT NULL CHECK (reason <> ''),
    redriven_at INTEGER NOT NULL
);

CREATE INDEX {p}redrives_id ON {p}redrives (id, rseq);
