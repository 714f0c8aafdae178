-- Schema version 6: the dead-lettered outbox rows by seq, so that ListOutboxDeadLetters reads only
-- them. Retention keeps completed rows for as long as their horizon asks; an operator looking for
-- the rows to redrive should not read those.
CREATE INDEX {p}outbox_dead ON {p}outbox (seq) WHERE state = 'dead_letter';
