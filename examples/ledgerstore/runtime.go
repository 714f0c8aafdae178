package ledgerstore

import (
	"context"
	"fmt"
	"time"

	"github.com/pconform/pconform/adapter"
)

// Runtime is the store's own consumer and publisher as the kit drives them (adapter.Consumer,
// adapter.Publisher): each protocol step runs a real Consumer's Fetch or Handle, or a real
// Publisher's Deliver, on the adapter's store at the step's time.
func (t *Target) Runtime() adapter.Runtime {
	return adapter.Runtime{Consumer: &consumer{t: t, fetched: map[int]*Delivery{}}, Publisher: &publisher{t: t}}
}

// consumer runs the store's Consumer; it keeps each worker's fetched delivery.
type consumer struct {
	t       *Target
	fetched map[int]*Delivery
}

// Consumer is the consumer a step's worker runs: its handler fails unless the step's outcome is
// ok, and its retry policy declines for fail_no_retry, else retries after retry_delay.
func (t *Target) Consumer(a adapter.Args) *Consumer {
	return &Consumer{Store: t.st, Mailbox: a.Mailbox, Leaseless: a.Leaseless(),
		LeaseFor: adapter.Duration(a.LeaseFor),
		Handler: func(Message) error {
			if !a.Succeeds() {
				return adapter.HandlerError(a)
			}
			return nil
		},
		Retry: func(error, int) (delay time.Duration, retry bool) {
			return adapter.Duration(a.RetryDelay), a.Retries()
		}}
}

func (c *consumer) Fetch(_ context.Context, at int64, a adapter.Args) (*adapter.Message, error) {
	c.t.now = adapter.At(at)
	delete(c.fetched, a.Worker)
	d, err := c.t.Consumer(a).Fetch()
	if err != nil || d == nil {
		return nil, err
	}
	c.fetched[a.Worker] = d
	return message(d.Message, true, !d.Leaseless), nil
}

// Handle runs the consumer's Handle on the worker's fetched delivery, with the handle's own
// consumer (handler and retry policy).
func (c *consumer) Handle(_ context.Context, at int64, a adapter.Args) (adapter.Observation, error) {
	c.t.now = adapter.At(at)
	// The kit calls Handle only for a worker that holds a delivery.
	d := c.fetched[a.Worker]
	if d == nil {
		return adapter.Observation{}, fmt.Errorf("ledgerstore: worker %d handles, but holds no delivery", a.Worker)
	}
	delete(c.fetched, a.Worker)
	r, err := c.t.Consumer(a).Handle(d)
	return adapter.Observation{Action: r.Action, Attempt: r.Attempt}, err
}

func (c *consumer) Crash() { clear(c.fetched) }

// publisher runs the store's Publisher through the step's faults.
type publisher struct{ t *Target }

// faulty is the store as a delivery step's publisher sees it: each commit first asks the step's
// faults, and rolls back when they fail it.
type faulty struct {
	st *Store
	f  *adapter.Faults
}

func (s faulty) Update(fn func(tx *Tx) error) error {
	return s.st.Update(func(tx *Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return s.f.Commit()
	})
}

// Publisher is the publisher a delivery step runs, committing through u.
func (t *Target) Publisher(a adapter.Args, u Updater, undeliverable bool) *Publisher {
	p := &Publisher{Store: u, Split: a.Split(), RetryDelay: adapter.Duration(a.RetryDelay)}
	if undeliverable {
		p.Check = func(Outbox) error { return adapter.ErrUndeliverable }
	}
	return p
}

// Row is the outbox row a delivery step delivers: the stored row, under the step's claim token.
func (t *Target) Row(a adapter.Args) (Outbox, error) {
	var row Outbox
	var ok bool
	t.st.View(func(tx *Tx) { row, ok = tx.OutboxRow(a.ID) })
	if !ok {
		return row, fmt.Errorf("ledgerstore: publisher_deliver of outbox row %q, which does not exist", a.ID)
	}
	row.Token = token(a.Token)
	return row, nil
}

func (p *publisher) Deliver(_ context.Context, at int64, a adapter.Args, f *adapter.Faults) (adapter.Observation, error) {
	p.t.now = adapter.At(at)
	row, err := p.t.Row(a)
	if err != nil {
		return adapter.Observation{}, err
	}
	d, err := p.t.Publisher(a, faulty{p.t.st, f}, f.Undeliverable()).Deliver(row)
	return adapter.Observation{Action: d.Action, Duplicate: d.Duplicate}, err
}
