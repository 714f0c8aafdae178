package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// Billing is the mailbox the publisher delivers orders into.
const Billing = "billing"

// ErrDeclined is PlaceOrder's error for an order it refuses: nothing of it is written.
var ErrDeclined = errors.New("service: order declined")

// CreateTables creates the service's own tables, in the store's database: the orders, and one
// invoice row per billed order.
func CreateTables(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, func(ctx context.Context) error {
		tx, err := actordelivery.Tx(ctx)
		if err != nil {
			return err
		}
		for _, q := range []string{
			`CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL)`,
			// No key on order_id: a second invoice for one order must be visible, not refused.
			`CREATE TABLE IF NOT EXISTS invoices (order_id TEXT NOT NULL, amount INTEGER NOT NULL)`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("service: create tables: %w", err)
			}
		}
		return nil
	})
}

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
			Payload: strconv.AppendInt(nil, int64(total), 10)}); err != nil {
			return err
		}
		if total <= 0 {
			return fmt.Errorf("%w: order %s: total %d is not positive", ErrDeclined, id, total) // rolls back both rows
		}
		return nil
	})
}

// Config configures Serve. The zero value is valid.
type Config struct {
	// Workers is the number of billing workers; zero means 4.
	Workers int
	// LeaseFor is how long a worker holds a message before another may take it; zero means the
	// store's 30s.
	LeaseFor time.Duration
	// ClaimFor is how long the publisher holds the outbox rows it claimed. A row claimed when
	// the process stopped is published by the next one once the claim runs out. Zero means the
	// store's 30s.
	ClaimFor time.Duration
	// Retry decides the delay after a failed delivery; nil means the store's backoff from 1s.
	Retry actordelivery.RetryPolicy
	// Charge takes the payment for an order: the call to a payment provider. An error fails the
	// delivery, which is retried, and dead-lettered after the order's third attempt. Delivery is
	// at least once, so an order may be charged twice: pass the order id to the provider as its
	// idempotency key. nil charges nothing.
	Charge func(ctx context.Context, order string, total int) error
	// Logger: nil discards.
	Logger *slog.Logger

	// outbox, when set, stands between the publisher and the store (tests inject failed
	// commits with it); fault selects a bug of faults.go. Both are set only by tests.
	outbox actordelivery.OutboxStore
	fault  fault
}

// Serve runs the outbox publisher and the billing workers until ctx ends, then drains: no new
// message is fetched, every fetched one is handled and committed (for up to the drain timeout),
// and Serve returns once the publisher and every worker have stopped. Close the store only after
// Serve returned.
func Serve(ctx context.Context, st *actordelivery.Store, cfg Config) error {
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	var ob actordelivery.OutboxStore = st
	if cfg.outbox != nil {
		ob = cfg.outbox
	}
	published := make(chan error, 1)
	go func() { published <- publish(ctx, ob, cfg) }()
	err := work(ctx, st, cfg)
	return errors.Join(err, <-published)
}

// publish moves outbox rows into their mailboxes until ctx ends.
func publish(ctx context.Context, ob actordelivery.OutboxStore, cfg Config) error {
	if cfg.fault == faultCompleteAfterFailedEnqueue {
		return publishOwn(ctx, ob, cfg)
	}
	// ModeFold: the enqueue and the completion of the outbox row commit together.
	pub, err := actordelivery.NewPublisher(ob, actordelivery.PublisherOptions{Mode: actordelivery.ModeFold, ClaimFor: cfg.ClaimFor,
		Logger: cfg.Logger})
	if err != nil {
		return err
	}
	return pub.Run(ctx)
}

// work runs the billing workers until ctx ends, then drains them.
func work(ctx context.Context, st *actordelivery.Store, cfg Config) error {
	if cfg.fault == faultRawAttempts || cfg.fault == faultUnfencedAck {
		return workOwn(ctx, st, cfg)
	}
	return actordelivery.RunWorkers(ctx, st, []string{Billing}, cfg.Workers, cfg.bill,
		actordelivery.ConsumerOptions{LeaseFor: cfg.LeaseFor, Retry: cfg.Retry, Logger: cfg.Logger})
}

// bill is the handler of Billing. It charges the order outside any transaction (the handler may
// take its time), and returns the invoice row as its Effects, which commit with the message's
// acknowledgement: one invoice per order, even when a message is delivered twice.
func (cfg Config) bill(ctx context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
	total, err := strconv.Atoi(string(m.Payload))
	if err != nil {
		return nil, fmt.Errorf("service: order %s: total %q: %w", m.ID, m.Payload, err)
	}
	if cfg.Charge != nil {
		if err := cfg.Charge(ctx, m.ID, total); err != nil {
			return nil, fmt.Errorf("service: charge order %s: %w", m.ID, err)
		}
	}
	id := m.ID
	return func(ctx context.Context) error {
		tx, err := actordelivery.Tx(ctx)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO invoices (order_id, amount) VALUES ($1, $2)`, id, total)
		return err
	}, nil
}
