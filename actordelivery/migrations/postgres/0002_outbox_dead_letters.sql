-- Schema version 2: outbox dead letters. A row carries its own max_delivery_attempts (10 for rows
-- written before this version) and may end dead-lettered with a reason instead of completed.

ALTER TABLE {p}outbox ADD COLUMN max_delivery_attempts BIGINT NOT NULL DEFAULT 10
    CHECK (max_delivery_attempts >= 1);
ALTER TABLE {p}outbox ADD COLUMN dead_reason TEXT;
-- The state's column check was named by PostgreSQL's rule, <table>_<column>_check.
ALTER TABLE {p}outbox DROP CONSTRAINT {p}outbox_state_check;
ALTER TABLE {p}outbox ADD CONSTRAINT {p}outbox_state_check
    CHECK (state IN ('pending', 'completed', 'dead_letter'));
-- A reason exists exactly on a dead-lettered row, and a dead-lettered row holds no claim.
ALTER TABLE {p}outbox ADD CONSTRAINT {p}outbox_dead_reason_check
    CHECK ((dead_reason IS NULL) = (state <> 'dead_letter'));
ALTER TABLE {p}outbox ADD CONSTRAINT {p}outbox_claim_state_check
    CHECK (claim_token IS NULL OR state = 'pending');
