// Package actordelivery is a stand-in for the real store, for the analyzers' tests. It has the
// names and shapes of the store API (the analyzers key on them) and just enough behaviour to
// type-check; it also carries the store-internal patterns the analyzers must accept.
package actordelivery

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

var (
	ErrLeaseLost = errors.New("actordelivery: lease lost")
	ErrClaimLost = errors.New("actordelivery: claim lost")
	ErrNotFound  = errors.New("actordelivery: not found")
)

type Store struct {
	db *sql.DB
}

type txKey struct{}

// ExecTx runs fn in a transaction; the commit error is returned wrapped.
func (s *Store) ExecTx(ctx context.Context, readOnly bool, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(txKey{}).(*sql.Tx); ok {
		return fn(ctx)
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: readOnly})
	if err != nil {
		return err
	}
	if err := fn(context.WithValue(ctx, txKey{}, tx)); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return errors.Join(errors.New("actordelivery: commit"), err)
	}
	return nil
}

type NewMessage struct {
	Mailbox, ID, Key      string
	Priority, MaxAttempts int
	Delay                 time.Duration
	Payload               []byte
}

type Message struct {
	Mailbox, ID, Key                string
	Priority, Attempts, MaxAttempts int
	AvailableAt                     time.Time
	Token                           string
	LeaseUntil                      time.Time
	State                           string
	Payload                         []byte
	Seq                             int64
	CreatedAt                       time.Time
}

func (s *Store) Enqueue(ctx context.Context, m NewMessage) (bool, error) { return false, nil }
func (s *Store) Lease(ctx context.Context, mailbox string, leaseFor time.Duration) (*Message, error) {
	return nil, nil
}
func (s *Store) Peek(ctx context.Context, mailbox string) (*Message, error)        { return nil, nil }
func (s *Store) Ack(ctx context.Context, id, token string) error                   { return nil }
func (s *Store) Nack(ctx context.Context, id, token string, d time.Duration) error { return nil }
func (s *Store) AckByID(ctx context.Context, id string) error                      { return nil }
func (s *Store) NackByID(ctx context.Context, id string, d time.Duration) error    { return nil }
func (s *Store) ExtendLease(ctx context.Context, id, token string, d time.Duration) error {
	return nil
}
func (s *Store) DeadLetter(ctx context.Context, id, reason string) error     { return nil }
func (s *Store) GetMessage(ctx context.Context, id string) (*Message, error) { return nil, nil }
func (s *Store) ListMessages(ctx context.Context, mailbox string) ([]Message, error) {
	return nil, nil
}

// ExpireLeases is written in Go here (the real store uses SQL) so that the analyzers' tests
// show a store method may compare stored counts with MaxAttempts and dead-letter: the stored
// count is the truth inside the store.
func (s *Store) ExpireLeases(ctx context.Context) (int, error) {
	msgs, err := s.ListMessages(ctx, "")
	if err != nil {
		return 0, err
	}
	cleared := 0
	for _, m := range msgs {
		if m.Token == "" {
			continue
		}
		cleared++
		if m.Attempts >= m.MaxAttempts {
			if err := s.DeadLetter(ctx, m.ID, "lease expired after max attempts"); err != nil {
				return cleared, err
			}
		}
	}
	return cleared, nil
}

type OutboxMessage struct {
	ID, Target, Key       string
	Priority, MaxAttempts int
	Payload               []byte
}

type OutboxRow struct {
	OutboxMessage
	State            string
	DeliveryAttempts int
	AvailableAt      time.Time
	ClaimToken       string
	ClaimUntil       time.Time
	Seq              int64
}

func (s *Store) OutboxEnqueue(ctx context.Context, m OutboxMessage) (bool, error) { return false, nil }
func (s *Store) OutboxClaim(ctx context.Context, limit int, claimFor time.Duration) ([]OutboxRow, error) {
	return nil, nil
}
func (s *Store) OutboxComplete(ctx context.Context, id, token string) error { return nil }
func (s *Store) OutboxFail(ctx context.Context, id, token string, delay time.Duration) error {
	return nil
}

type PurgeResult struct{ Acked, DeadLetters, Outbox int }

func (s *Store) Purge(ctx context.Context, olderThan, horizon time.Duration, batch int) (PurgeResult, error) {
	return PurgeResult{}, nil
}

func (s *Store) Redrive(ctx context.Context, id, reason string) error { return nil }

// Path says which consumer profile fetched a message.
type Path int

const (
	PathLeased Path = iota
	PathLeaseless
)

// EffectiveAttempts is the helper: its own body reads the stored count and must not be flagged.
func EffectiveAttempts(stored int, path Path) int {
	if path == PathLeaseless {
		return stored + 1
	}
	return stored
}

// Effects is the write a handler returns, committed with the acknowledgement.
type Effects func(ctx context.Context) error

type Handler func(ctx context.Context, m *Message) (Effects, error)

type RetryPolicy interface {
	Retry(err error, attempt int) (delay time.Duration, retry bool)
}

type Backoff struct{ Base, Max time.Duration }

func (b Backoff) Retry(err error, attempt int) (time.Duration, bool) {
	return b.Base << attempt, true
}

type ConsumerOptions struct {
	Mailbox  string
	Path     Path
	LeaseFor time.Duration
	Retry    RetryPolicy
	_        struct{}
}

type Delivery struct {
	Message Message
	Path    Path
}

type Outcome struct {
	Action  string
	Attempt int
}

type Consumer struct {
	st   *Store
	h    Handler
	opts ConsumerOptions
}

// Handle is the correct consumer: the effective attempt comes from EffectiveAttempts, the
// unfenced acks run only on the leaseless branch.
func (c *Consumer) Handle(ctx context.Context, d *Delivery) (Outcome, error) {
	m := &d.Message
	_, herr := c.h(ctx, m)
	if herr == nil {
		err := c.st.ExecTx(ctx, false, func(ctx context.Context) error {
			if d.Path == PathLeaseless {
				return c.st.AckByID(ctx, m.ID)
			}
			return c.st.Ack(ctx, m.ID, m.Token)
		})
		if err != nil {
			return Outcome{Action: "lease_lost"}, err
		}
		return Outcome{Action: "acked"}, nil
	}
	attempt := EffectiveAttempts(m.Attempts, d.Path)
	if attempt >= m.MaxAttempts {
		err := c.st.ExecTx(ctx, false, func(ctx context.Context) error {
			if d.Path == PathLeaseless {
				if err := c.st.NackByID(ctx, m.ID, 0); err != nil {
					return err
				}
			}
			return c.st.DeadLetter(ctx, m.ID, "max attempts reached")
		})
		return Outcome{Action: "dead_lettered", Attempt: attempt}, err
	}
	delay, _ := c.opts.Retry.Retry(herr, attempt)
	var err error
	switch d.Path {
	case PathLeaseless:
		err = c.st.NackByID(ctx, m.ID, delay)
	default:
		err = c.st.Nack(ctx, m.ID, m.Token, delay)
	}
	return Outcome{Action: "retried", Attempt: attempt}, err
}
