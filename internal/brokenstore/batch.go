package brokenstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// The batch parts (docs/semantics.md, "Batches"): the copied batch fetch, which the Rules
// variants run (BatchSkipsLeasedHead breaks it), and the broken batch handles, which run the
// real consumer's HandleBatch with one rule changed.

// FetchBatch is Consumer.FetchBatch under the rules: on the leased path, after the read that
// finds whether anything would change (as ExpireThenLease), ExpireLeases and then up to n leases
// in a row in one transaction; on the leaseless path one peek of up to n messages. The messages
// are in delivery order.
func (e *Eligibility) FetchBatch(ctx context.Context, now time.Time, mailbox string, path actordelivery.Path,
	leaseFor time.Duration, n int) ([]actordelivery.Message, error) {
	if path == actordelivery.PathLeaseless {
		return e.peekBatch(ctx, now, mailbox, n)
	}
	var expired, candidate bool
	if err := e.queryRow(ctx, e.db, e.qWork, append(e.params(now), sql.Named("mailbox", mailbox))...).Scan(&expired, &candidate); err != nil {
		return nil, fmt.Errorf("brokenstore: fetch batch %q: %w", mailbox, err)
	}
	if !expired && !candidate && !e.rules.BatchSkipsLeasedHead {
		return nil, nil
	}
	var got []actordelivery.Message
	err := e.tx(ctx, func(tx *sql.Tx) error {
		got = got[:0]
		if _, err := e.expire(ctx, tx, now); err != nil {
			return err
		}
		e.tokens++
		batch := fmt.Sprintf("copy-%s%d", e.ns, e.tokens)
		for k := 0; len(got) < n; k++ {
			args := append(e.params(now), sql.Named("mailbox", mailbox),
				sql.Named("token", fmt.Sprintf("%s.%d", batch, k)), sql.Named("batch", batch+".%"),
				sql.Named("until", now.Add(leaseFor).UnixMilli()))
			m, err := scanMessage(e.queryRow(ctx, tx, e.qBatchLease, args...))
			if errors.Is(err, sql.ErrNoRows) {
				break
			}
			if err != nil {
				return fmt.Errorf("brokenstore: fetch batch %q: %w", mailbox, err)
			}
			got = append(got, *m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// peekBatch is the leaseless batch fetch: the store's qPeekBatch, copied.
func (e *Eligibility) peekBatch(ctx context.Context, now time.Time, mailbox string, n int) ([]actordelivery.Message, error) {
	rows, err := e.query(ctx, e.db, e.qPeekBatch, append(e.params(now), sql.Named("mailbox", mailbox), sql.Named("limit", n))...)
	if err != nil {
		return nil, fmt.Errorf("brokenstore: peek batch %q: %w", mailbox, err)
	}
	var got []actordelivery.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("brokenstore: peek batch %q: %w", mailbox, err)
		}
		got = append(got, *m)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("brokenstore: peek batch %q: %w", mailbox, err)
	}
	return got, nil
}

// Owed is the Effects of an acknowledged message that a broken batch handle left to a later
// commit (the trace step consumer_effects_batch).
type Owed struct {
	ID      string
	Effects actordelivery.Effects
}

// BatchHandle replaces Consumer.HandleBatch: it hands ds to a consumer built with consumer and
// returns the outcomes, and the Effects it left owed (only HandleBatchAckBeforeEffects owes any).
type BatchHandle func(ctx context.Context, consumer Consumer, h actordelivery.Handler, ds []actordelivery.Delivery) ([]actordelivery.Outcome, []Owed, error)

// HandleBatchAcksFailed is the batch-acks-failed variant: the real HandleBatch, with a handler
// whose failure is dropped, so a failed handler's message is acknowledged with the rest of the
// batch (with no effect) and never retried or dead-lettered. The store: a failed handler's
// message is retried or dead-lettered, as a single handle's.
func HandleBatchAcksFailed(ctx context.Context, consumer Consumer, h actordelivery.Handler, ds []actordelivery.Delivery) ([]actordelivery.Outcome, []Owed, error) {
	c, err := consumer(func(ctx context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		effects, herr := h(ctx, m)
		if herr != nil {
			// The bug: the failure is dropped, and the message acknowledged without an effect.
			return nil, nil
		}
		return effects, nil
	})
	if err != nil {
		return nil, nil, err
	}
	outs, err := c.HandleBatch(ctx, ds)
	return outs, nil, err
}

// HandleBatchAckBeforeEffects is the batch-ack-before-effects variant: the real HandleBatch,
// with a handler whose Effects are held back, so the batch's transaction commits the
// acknowledgements alone and the Effects are owed to a later commit (CommitOwed). A failure in
// between leaves an acknowledged message whose effect never happened. The store: each
// acknowledgement commits in one transaction with its message's Effects.
func HandleBatchAckBeforeEffects(ctx context.Context, consumer Consumer, h actordelivery.Handler, ds []actordelivery.Delivery) ([]actordelivery.Outcome, []Owed, error) {
	held := map[string]actordelivery.Effects{}
	c, err := consumer(func(ctx context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		effects, herr := h(ctx, m)
		if herr == nil && effects != nil {
			// The bug: the Effects leave the acknowledgement's transaction.
			held[m.ID] = effects
		}
		return nil, herr
	})
	if err != nil {
		return nil, nil, err
	}
	outs, err := c.HandleBatch(ctx, ds)
	if err != nil {
		return nil, nil, err
	}
	var owed []Owed
	for i, out := range outs {
		if id := ds[i].Message.ID; out.Action == actordelivery.ActionAcked {
			owed = append(owed, Owed{ID: id, Effects: held[id]})
		}
	}
	return outs, owed, nil
}

// CommitOwed runs owed Effects in one transaction of their own, in order. With fail set the
// transaction rolls back after they ran: a commit that failed.
func CommitOwed(ctx context.Context, st *actordelivery.Store, owed []Owed, fail bool) error {
	errFailed := errors.New("the commit fails")
	err := st.ExecTx(ctx, false, func(ctx context.Context) error {
		for _, o := range owed {
			if o.Effects == nil {
				continue
			}
			if err := o.Effects(ctx); err != nil {
				return fmt.Errorf("brokenstore: effects of %q: %w", o.ID, err)
			}
		}
		if fail {
			return errFailed
		}
		return nil
	})
	if fail && errors.Is(err, errFailed) {
		return nil
	}
	return err
}
