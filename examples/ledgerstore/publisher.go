package ledgerstore

import (
	"errors"
	"fmt"
	"time"
)

// Updater runs a transaction and commits it: what a Publisher delivers through. *Store is one.
type Updater interface {
	Update(fn func(tx *Tx) error) error
}

// Publisher delivers claimed outbox rows into their target mailboxes.
type Publisher struct {
	Store Updater
	// Split delivers in two commits (the enqueue, then the completion), as a store without
	// cross-table transactions must; otherwise one transaction does both.
	Split bool
	// RetryDelay is how long a row whose delivery failed waits before a claim takes it again.
	RetryDelay time.Duration
	// Check, when set, refuses a row that cannot be delivered; the row is dead-lettered with
	// the error's message as the reason.
	Check func(Outbox) error
}

// Delivered is what a Deliver did.
type Delivered struct {
	// Action is "delivered", "claim_lost", "commit_failed" or "dead_lettered".
	Action string
	// Duplicate: the enqueue found the id present (even when its transaction then rolled back).
	Duplicate bool
}

// errClaimLost rolls a fold delivery back.
var errClaimLost = errors.New("ledgerstore: claim lost")

// Deliver delivers row, which the publisher claimed under row.Token. A failed commit ends
// "commit_failed" with the commit's error, and the row is released (failed, or dead-lettered
// after its last attempt) in a transaction of its own.
func (p *Publisher) Deliver(row Outbox) (Delivered, error) {
	if p.Check != nil {
		if cerr := p.Check(row); cerr != nil {
			err := p.Store.Update(func(tx *Tx) error { return tx.OutboxSettle(row.ID, row.Token, DeadState, cerr.Error(), 0) })
			if errors.Is(err, ErrClaimLost) {
				return Delivered{Action: "claim_lost"}, nil
			}
			return Delivered{Action: "dead_lettered"}, err
		}
	}
	var r Delivered
	enqueue := func(tx *Tx) {
		r.Duplicate = tx.Enqueue(Message{Mailbox: row.Target, ID: row.ID, Key: row.Key, Priority: row.Priority,
			Max: row.Max, Payload: row.Payload}, 0)
	}
	// An id the enqueue found in another mailbox is another message's: the row is dead-lettered
	// in place of the completion, or the target would never get its message.
	collided := false
	complete := func(tx *Tx) error {
		if mb := tx.MailboxOf(row.ID); r.Duplicate && mb != "" && mb != row.Target {
			collided = true
			return tx.OutboxSettle(row.ID, row.Token, DeadState, ReasonIDCollision+mb, 0)
		}
		return tx.OutboxSettle(row.ID, row.Token, Completed, "", 0)
	}
	var err error
	if p.Split {
		if err = p.Store.Update(func(tx *Tx) error { enqueue(tx); return nil }); err != nil {
			return p.failed(row, r, err)
		}
		err = p.Store.Update(complete)
	} else {
		err = p.Store.Update(func(tx *Tx) error {
			enqueue(tx)
			if complete(tx) != nil {
				return errClaimLost
			}
			return nil
		})
		if err != nil && !errors.Is(err, errClaimLost) {
			return p.failed(row, r, err)
		}
	}
	switch {
	case errors.Is(err, ErrClaimLost), errors.Is(err, errClaimLost):
		r.Action = "claim_lost"
		return r, nil
	case err != nil:
		return r, err
	}
	r.Action = "delivered"
	if collided {
		r.Action = "dead_lettered"
	}
	return r, nil
}

// ReasonIDCollision begins the reason of a row dead-lettered because its id is a message of
// another mailbox; the mailbox's name follows.
const ReasonIDCollision = "id collides with a message in mailbox "

// failed releases row after its delivery's commit failed, fenced by the claim.
func (p *Publisher) failed(row Outbox, r Delivered, cerr error) (Delivered, error) {
	r.Action = "commit_failed"
	err := p.Store.Update(func(tx *Tx) error {
		cur, err := tx.Claimed(row.ID, row.Token)
		if err != nil {
			return nil // the claim is gone: nothing to release
		}
		if cur.Claims >= cur.MaxClaims {
			return tx.OutboxSettle(row.ID, row.Token, DeadState, ReasonMaxDeliveryAttempts, 0)
		}
		return tx.OutboxSettle(row.ID, row.Token, Pending, "", p.RetryDelay)
	})
	return r, errors.Join(fmt.Errorf("ledgerstore: delivering %s: %w", row.ID, cerr), err)
}
