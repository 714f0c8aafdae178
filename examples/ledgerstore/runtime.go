package ledgerstore

import (
	"context"
	"fmt"
	"time"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
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
func (t *Target) Consumer(a replay.Args) *Consumer {
	return &Consumer{Store: t.st, Mailbox: a.Mailbox, Leaseless: a.Profile == traces.ProfileLeaseless,
		LeaseFor: traces.Duration(a.LeaseFor),
		Handler: func(Message) error {
			if a.Outcome != traces.OutcomeOK {
				return adapter.ErrHandlerFailed
			}
			return nil
		},
		Retry: func(error, int) (delay time.Duration, retry bool) {
			return traces.Duration(a.RetryDelay), a.Outcome != traces.OutcomeFailNoRetry
		}}
}

func (c *consumer) Fetch(_ context.Context, at int64, a replay.Args) (*replay.Message, error) {
	c.t.now = traces.At(at)
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
func (c *consumer) Handle(_ context.Context, at int64, a replay.Args) (replay.Observation, error) {
	c.t.now = traces.At(at)
	d := c.fetched[a.Worker]
	if d == nil {
		return replay.Observation{Action: traces.ActionIdle}, nil
	}
	delete(c.fetched, a.Worker)
	r, err := c.t.Consumer(a).Handle(d)
	return replay.Observation{Action: r.Action, Attempt: r.Attempt}, err
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
func (t *Target) Publisher(a replay.Args, u Updater, undeliverable bool) *Publisher {
	p := &Publisher{Store: u, Split: a.Profile == traces.ProfileSplit, RetryDelay: traces.Duration(a.RetryDelay)}
	if undeliverable {
		p.Check = func(Outbox) error { return adapter.ErrUndeliverable }
	}
	return p
}

// Row is the outbox row a delivery step delivers: the stored row, under the step's claim token.
func (t *Target) Row(a replay.Args) (Outbox, error) {
	var row Outbox
	var ok bool
	t.st.View(func(tx *Tx) { row, ok = tx.OutboxRow(a.ID) })
	if !ok {
		return row, fmt.Errorf("ledgerstore: publisher_deliver of outbox row %q, which does not exist", a.ID)
	}
	row.Token = token(a.Token)
	return row, nil
}

func (p *publisher) Deliver(_ context.Context, at int64, a replay.Args, f *adapter.Faults) (replay.Observation, error) {
	p.t.now = traces.At(at)
	row, err := p.t.Row(a)
	if err != nil {
		return replay.Observation{}, err
	}
	d, err := p.t.Publisher(a, faulty{p.t.st, f}, f.Undeliverable()).Deliver(row)
	return replay.Observation{Action: d.Action, Duplicate: d.Duplicate}, err
}
