package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/pconform/pconform/actordelivery"
)

// Billing is the mailbox the publisher delivers orders into.
const Billing = "billing"

// ErrDeclined is PlaceOrder's error for an order it refuses: nothing of it is written.
var ErrDeclined = errors.New("service: order declined")

// PlaceOrder writes order id with total and the outbox row that announces it to Billing, in one
// transaction: both commit, or neither does. Every call inside the callback takes the callback's
// ctx, which carries the transaction; the outer context would write outside it.
func PlaceOrder(ctx context.Context, st *actordelivery.Store, id string, total int) error {
	return st.ExecTx(ctx, false, func(ctx context.Context) error {
		tx, err := actordelivery.Tx(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, total) VALUES ($1, $2)`, id, total); err != nil {
			return fmt.Errorf("service: order %s: %w", id, err)
		}
		if _, err := st.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: id, Target: Billing, MaxAttempts: 3,
			Payload: fmt.Appendf(nil, "%d", total)}); err != nil {
			return err
		}
		if total <= 0 {
			return fmt.Errorf("%w: order %s: total %d is not positive", ErrDeclined, id, total) // rolls back both rows
		}
		return nil
	})
}

// CreateTables creates the service's own table, in the store's database.
func CreateTables(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, func(ctx context.Context) error {
		tx, err := actordelivery.Tx(ctx)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL, billed INTEGER NOT NULL DEFAULT 0)`)
		return err
	})
}

// bill is the handler of Billing: it marks the order billed in its Effects, which commit with the
// message's acknowledgement.
func bill(_ context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
	return func(ctx context.Context) error {
		tx, err := actordelivery.Tx(ctx)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE orders SET billed = 1 WHERE id = $1`, m.ID)
		return err
	}, nil
}

// Serve runs the publisher and workers billing workers until ctx ends, then drains: no new
// message is fetched, every fetched one is handled and committed (for up to the drain timeout),
// and Serve returns once the publisher and every worker have stopped.
func Serve(ctx context.Context, st *actordelivery.Store, workers int, log *slog.Logger) error {
	pub, err := actordelivery.NewPublisher(st, actordelivery.PublisherOptions{Mode: actordelivery.ModeFold, Logger: log})
	if err != nil {
		return err
	}
	published := make(chan error, 1)
	go func() { published <- pub.Run(ctx) }()
	err = actordelivery.RunWorkers(ctx, st, []string{Billing}, workers, bill, actordelivery.ConsumerOptions{Logger: log})
	return errors.Join(err, <-published)
}
