// Package seedpublisher is a copy of the seed design's publisher bug: the outcome of the
// delivery transaction is dropped, so a failed commit looks like a delivery and nothing is
// logged. The split variant goes on to complete the row, leaving a completed outbox row whose
// message never arrived.
package seedpublisher

import (
	"context"
	"database/sql"
	"log/slog"

	"github.com/pconform/pconform/actordelivery"
)

type Publisher struct {
	st  *actordelivery.Store
	db  *sql.DB
	log *slog.Logger
}

func target(row actordelivery.OutboxRow) actordelivery.NewMessage {
	return actordelivery.NewMessage{
		Mailbox: row.Target, ID: row.ID, Key: row.Key,
		Priority: row.Priority, MaxAttempts: row.MaxAttempts, Payload: row.Payload,
	}
}

// DeliverFold enqueues and completes in one transaction, then ignores whether it committed.
func (p *Publisher) DeliverFold(ctx context.Context, row actordelivery.OutboxRow) (string, error) {
	_ = p.st.ExecTx(ctx, false, func(ctx context.Context) error { // want `error of transaction call p.st.ExecTx is assigned to _`
		if _, err := p.st.Enqueue(ctx, target(row)); err != nil {
			return err
		}
		return p.st.OutboxComplete(ctx, row.ID, row.ClaimToken)
	})
	return "delivered", nil
}

// DeliverSplit commits the enqueue, drops that commit's error, and completes the row anyway.
func (p *Publisher) DeliverSplit(ctx context.Context, row actordelivery.OutboxRow) (string, error) {
	p.st.ExecTx(ctx, false, func(ctx context.Context) error { // want `error of transaction call p.st.ExecTx is discarded`
		_, err := p.st.Enqueue(ctx, target(row))
		return err
	})
	if err := p.st.OutboxComplete(ctx, row.ID, row.ClaimToken); err != nil {
		return "claim_lost", err
	}
	return "delivered", nil
}

// DeliverSQL is the same fold written against database/sql: the commit error is dropped.
func (p *Publisher) DeliverSQL(ctx context.Context, row actordelivery.OutboxRow) (string, error) {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return "commit_failed", err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO mailbox(id) VALUES (?)", row.ID); err != nil {
		_ = tx.Rollback()
		return "commit_failed", err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE outbox SET state = 'completed' WHERE id = ?", row.ID); err != nil {
		_ = tx.Rollback()
		return "claim_lost", err
	}
	tx.Commit() // want `error of transaction call tx.Commit is discarded`
	return "delivered", nil
}
