-- Schema version 5: indexes that an acknowledgement touches less (docs/performance.md, "Pages
-- written per message").
--
-- messages_next and messages_key hold only ready rows: the next-message probe and the head-of-line
-- check look at nothing else, so an ack removes one entry from each instead of moving it from the
-- ready part of the index to the acked part, and acked rows, which retention may keep for a long
-- time, never lengthen the probe.
--
-- messages_timers replaces messages_leases (leased rows by lease_until, for expire()) and
-- messages_acked (acked rows by acked_at, for Purge) with one index holding both kinds of row. Its
-- key starts with the state, so the acked rows (by acked_at) come first and the leased rows (by
-- lease_until) right after them: the newest ack and the live leases sit side by side, and an ack,
-- which turns a leased row into the newest acked one, usually rewrites one leaf page of it instead
-- of one in each of two indexes. An acked row holds no lease (lease_until is NULL), so Purge reads
-- the acked part in (acked_at, id) order with state = 'acked' AND lease_until IS NULL.
DROP INDEX {p}messages_next;
DROP INDEX {p}messages_key;
DROP INDEX {p}messages_leases;
DROP INDEX {p}messages_acked;
CREATE INDEX {p}messages_next ON {p}messages (mailbox, priority DESC, available_at, seq) WHERE state = 'ready';
CREATE INDEX {p}messages_key ON {p}messages (mailbox, key, seq) WHERE key <> '' AND state = 'ready';
CREATE INDEX {p}messages_timers ON {p}messages (state, lease_until, acked_at, id)
    WHERE token IS NOT NULL OR state = 'acked';
