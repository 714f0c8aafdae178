-- Schema version 3: retention. The time a row became final (acked_at on messages; final_at on
-- outbox rows, completed or dead-lettered; dead letters already have dead_at), so Purge can remove
-- rows final for long enough, and the ids Purge removed, kept until the dedup horizon has passed
-- so that an id enqueued again stays a duplicate. Rows final before this version count as final
-- since their creation.
ALTER TABLE {p}messages ADD COLUMN acked_at INTEGER;
UPDATE {p}messages SET acked_at = created_at WHERE state = 'acked';
ALTER TABLE {p}outbox ADD COLUMN final_at INTEGER;
UPDATE {p}outbox SET final_at = created_at WHERE state <> 'pending';

CREATE TABLE {p}purged_ids (
    id         TEXT    PRIMARY KEY,
    expires_at INTEGER NOT NULL
);

-- Purge walks each kind of final row oldest first.
CREATE INDEX {p}messages_acked ON {p}messages (acked_at, id) WHERE state = 'acked';
CREATE INDEX {p}outbox_final ON {p}outbox (final_at, id) WHERE state <> 'pending';
CREATE INDEX {p}dead_letters_dead_at ON {p}dead_letters (dead_at, id);
CREATE INDEX {p}purged_ids_expiry ON {p}purged_ids (expires_at);
