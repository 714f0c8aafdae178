package actordelivery

import (
	"context"
	"fmt"
)

// EnqueueBatch enqueues ms, in order, as that many Enqueue calls in one transaction would: in
// the transaction ctx carries (ExecTx), or in one of its own. duplicates[i] is Enqueue's
// duplicate for ms[i]; an id that an earlier message of ms takes is a duplicate too. A recording
// store records one enqueue event per message, in order, as for the Enqueue calls.
//
// On PostgreSQL the batch costs one insert statement, one re-check of the dead letters (see
// Enqueue) and one NOTIFY per mailbox, where Enqueue calls cost two statements a message. On
// SQLite, where a statement costs no round trip, it runs the Enqueue calls.
//
// Errors: as Enqueue's. ErrInvalidArgument names the message at fault, and then nothing is
// enqueued.
func (s *Store) EnqueueBatch(ctx context.Context, ms []NewMessage) (duplicates []bool, err error) {
	const op = "EnqueueBatch"
	for i, m := range ms {
		if err := s.checkNewMessage(op, m); err != nil {
			return nil, fmt.Errorf("message %d of %d: %w", i, len(ms), err)
		}
	}
	if len(ms) == 0 {
		return nil, nil
	}
	dups := make([]bool, len(ms))
	err = s.write(ctx, op, func(ts *txState, now int64) error {
		clear(dups) // the transaction may run again
		if s.d.backend == BackendPostgres {
			if err := s.enqueueBatchPostgres(ctx, ts, now, ms, dups); err != nil {
				return err
			}
		} else {
			for i, m := range ms {
				if err := s.enqueue(ctx, ts, now, m, &dups[i]); err != nil {
					return err
				}
			}
		}
		for i, m := range ms {
			ts.record("enqueue", false, enqueueArgs(m), EventResult{Duplicate: dups[i]})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dups, nil
}

// enqueueBatchPostgres is EnqueueBatch's work in ts on PostgreSQL: it sets dups. An id that an
// earlier message of ms takes is not sent (a duplicate, as the second Enqueue would find it).
// The rest go in one INSERT, in the order of ms, so that their creation order is theirs; then
// one statement re-checks the inserted ids against the dead letters and deletes the rows of any
// id dead-lettered meanwhile (Enqueue's re-check, for the whole batch); then each mailbox whose
// first wake in the transaction this is gets its NOTIFY.
func (s *Store) enqueueBatchPostgres(ctx context.Context, ts *txState, now int64, ms []NewMessage, dups []bool) error {
	const op = "EnqueueBatch"
	n := len(ms)
	ids, mailboxes, keys := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	priorities, maxAttempts, availableAt := make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
	payloads := make([][]byte, 0, n)
	first := make(map[string]int, n) // id -> the index in ms of the message that sends it
	for i, m := range ms {
		if _, seen := first[m.ID]; seen {
			dups[i] = true
			continue
		}
		first[m.ID] = i
		p := m.Payload
		if p == nil {
			p = []byte{}
		}
		ids, mailboxes, keys = append(ids, m.ID), append(mailboxes, m.Mailbox), append(keys, m.Key)
		priorities, maxAttempts = append(priorities, int64(m.Priority)), append(maxAttempts, int64(m.MaxAttempts))
		availableAt, payloads = append(availableAt, now+durMillis(m.Delay)), append(payloads, p)
	}
	rows, err := ts.tx.QueryContext(ctx, qEnqueueBatch, named("ids", ids), named("mailboxes", mailboxes),
		named("keys", keys), named("priorities", priorities), named("max_attempts", maxAttempts),
		named("available_at", availableAt), named("payloads", payloads), named("now", now))
	if err != nil {
		return s.dbErr(op, err)
	}
	inserted := make(map[string]bool, len(ids))
	var insertedIDs []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return s.dbErr(op, err)
		}
		inserted[id] = true
		insertedIDs = append(insertedIDs, id)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return s.dbErr(op, err)
	}
	if err := rows.Close(); err != nil {
		return s.dbErr(op, err)
	}
	if len(insertedIDs) > 0 {
		rows, err := ts.tx.QueryContext(ctx, qEnqueueBatchRecheck, named("ids", insertedIDs))
		if err != nil {
			return s.dbErr(op, err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return s.dbErr(op, err)
			}
			delete(inserted, id) // dead-lettered meanwhile: its insert is undone
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return s.dbErr(op, err)
		}
		if err := rows.Close(); err != nil {
			return s.dbErr(op, err)
		}
	}
	for i, m := range ms {
		if first[m.ID] != i {
			continue
		}
		if !inserted[m.ID] {
			dups[i] = true
			continue
		}
		if err := s.wakeAfterCommit(ctx, ts, topic{mailbox: m.Mailbox}, m.ID); err != nil {
			return err
		}
	}
	return nil
}
