package ledgerstore

import (
	"errors"
	"time"
)

// Handler handles one message. On success it returns nil; its effect is the message id in the
// mailbox's ledger, committed with the acknowledgement.
type Handler func(m Message) error

// RetryPolicy decides a failed attempt: the delay before the next one, or false to dead-letter
// the message at once (with the handler's error as the reason). attempt is the attempt that
// failed, counting from 1.
type RetryPolicy func(err error, attempt int) (delay time.Duration, retry bool)

// Consumer serves one mailbox, one fetch and one handle at a time. On the leased path any number
// of consumers may share the mailbox; on the leaseless path it must be the only one.
type Consumer struct {
	Store     *Store
	Mailbox   string
	Leaseless bool
	// LeaseFor is the lease of a leased fetch.
	LeaseFor time.Duration
	Handler  Handler
	Retry    RetryPolicy
}

// Delivery is a fetched message: the message as the fetch saw it (leased: with its token and the
// attempts the lease counted).
type Delivery struct {
	Message
	Leaseless bool
}

// Result is what a Handle did.
type Result struct {
	// Action is "acked", "retried", "dead_lettered" or "lease_lost".
	Action string
	// Attempt is the attempt a failure was decided on; 0 on success.
	Attempt int
}

// Fetch takes the mailbox's next message: leased, it first ends the leases that ran out, then
// leases; leaseless, it peeks. It returns nil when none is deliverable.
func (c *Consumer) Fetch() (*Delivery, error) {
	var d *Delivery
	err := c.Store.Update(func(tx *Tx) error {
		var m Message
		var ok bool
		if c.Leaseless {
			m, ok = tx.Peek(c.Mailbox)
		} else {
			tx.Expire()
			m, ok = tx.Lease(c.Mailbox, c.LeaseFor)
		}
		if ok {
			d = &Delivery{Message: m, Leaseless: c.Leaseless}
		}
		return nil
	})
	return d, err
}

// errLost rolls a handle's transaction back: its lease is gone, or its message.
var errLost = errors.New("ledgerstore: delivery lost")

// Handle runs the handler on d and commits its outcome in one transaction: the acknowledgement
// with the effect, or the retry, or the dead letter. A lost lease (or, leaseless, a message no
// longer ready) changes nothing.
func (c *Consumer) Handle(d *Delivery) (Result, error) {
	if herr := c.Handler(d.Message); herr != nil {
		return c.fail(d, herr)
	}
	err := c.Store.Update(func(tx *Tx) error {
		var err error
		if d.Leaseless {
			err = tx.AckByID(d.ID)
		} else {
			err = tx.Ack(d.ID, d.Token)
		}
		if err != nil {
			return errLost
		}
		tx.Record(d.Mailbox, d.ID)
		return nil
	})
	if errors.Is(err, errLost) {
		return Result{Action: "lease_lost"}, nil
	}
	return Result{Action: "acked"}, err
}

// Attempt is the attempt a failure counts: the leased path's lease counted it already; the
// leaseless path counts it now, on top of what the row holds at handle time. Never past max.
func Attempt(stored, max int, leaseless bool) int {
	if leaseless {
		stored++
	}
	return min(stored, max)
}

// fail decides a failed attempt, inside the transaction that commits the decision.
func (c *Consumer) fail(d *Delivery, herr error) (Result, error) {
	r := Result{Action: "lease_lost"}
	err := c.Store.Update(func(tx *Tx) error {
		stored := d.Attempts
		if m, ok := tx.Get(d.ID); d.Leaseless && ok {
			stored = m.Attempts
		}
		r.Attempt = Attempt(stored, d.Max, d.Leaseless)
		reason, delay, retry := ReasonMaxAttempts, time.Duration(0), false
		if r.Attempt < d.Max {
			delay, retry = c.Retry(herr, r.Attempt)
			reason = herr.Error()
		}
		// The fence: the lease's token on the leased path, the row on the leaseless one.
		var err error
		if d.Leaseless {
			err = tx.NackByID(d.ID, delay)
		} else {
			err = tx.Nack(d.ID, d.Token, delay)
		}
		if err != nil {
			return errLost
		}
		if retry {
			r.Action = "retried"
			return nil
		}
		r.Action = "dead_lettered"
		return tx.DeadLetter(d.ID, reason)
	})
	if errors.Is(err, errLost) {
		return Result{Action: "lease_lost", Attempt: r.Attempt}, nil
	}
	return r, err
}
