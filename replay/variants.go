package replay

import (
	"context"
	"errors"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// The broken variants: real configurations of the store target that reproduce one known bug
// each, built only from actordelivery's public API and configuration points. They exist so that
// a trace of the bug (expect.variant) replays to a match against its variant and diverges from
// the correct store where the model says it must. actordelivery carries no flag for any of them.

// rawAttempts hands the consumer's retry decision the stored attempt count unchanged. On the
// leaseless path nothing has counted the current delivery yet, so after max_attempts failures the
// row has attempts == max_attempts, is never eligible again and is never dead-lettered.
func rawAttempts(stored int, _ actordelivery.Path) int { return stored }

// splitWriteDeliver is the seed bug: a split delivery that drops the enqueue transaction's error
// and goes on to complete the row, so a failed enqueue commit leaves a completed outbox row whose
// message never arrived.
//
//pconform:ignore txerr the seed bug, reproduced on purpose by replay's split-write variant
func splitWriteDeliver(ctx context.Context, st actordelivery.OutboxStore, row actordelivery.OutboxRow) (actordelivery.DeliveryResult, error) {
	var dup bool
	// The bug: the enqueue transaction's error is dropped. dup stays what the enqueue statement
	// saw, as the broken code would report it.
	_ = st.ExecTx(ctx, false, func(ctx context.Context) error {
		var err error
		dup, err = st.Enqueue(ctx, actordelivery.NewMessage{
			Mailbox: row.Target, ID: row.ID, Key: row.Key, Priority: row.Priority,
			MaxAttempts: row.MaxAttempts, Payload: row.Payload,
		})
		return err
	})
	err := st.ExecTx(ctx, false, func(ctx context.Context) error {
		return st.OutboxComplete(ctx, row.ID, row.ClaimToken)
	})
	switch {
	case err == nil:
		return actordelivery.DeliveryResult{Action: actordelivery.ActionDelivered, Duplicate: dup}, nil
	case errors.Is(err, actordelivery.ErrClaimLost):
		return actordelivery.DeliveryResult{Action: actordelivery.ActionClaimLost, Duplicate: dup}, nil
	default:
		return actordelivery.DeliveryResult{Action: actordelivery.ActionCommitFailed, Duplicate: dup}, err
	}
}

// unfencedAck handles a leased delivery whose handler succeeds by acknowledging by id instead of
// by token, taking not_found for "already acknowledged": a worker whose lease ran out, and whose
// message another worker has meanwhile taken over or acknowledged, still commits its effect and
// reports acked, so the effect can commit twice.
//
//pconform:ignore unfencedack the bug of replay's unfenced-ack variant, reproduced on purpose
func unfencedAck(ctx context.Context, st *actordelivery.Store, h actordelivery.Handler, d *actordelivery.Delivery) (actordelivery.Outcome, error) {
	m := d.Message
	effects, err := h(ctx, &m)
	if err != nil {
		return actordelivery.Outcome{}, err
	}
	err = st.ExecTx(ctx, false, func(ctx context.Context) error {
		if effects != nil {
			if err := effects(ctx); err != nil {
				return err
			}
		}
		if err := st.AckByID(ctx, m.ID); err != nil && !errors.Is(err, actordelivery.ErrNotFound) {
			return err
		}
		return nil
	})
	if err != nil {
		return actordelivery.Outcome{}, err
	}
	return actordelivery.Outcome{Action: actordelivery.ActionAcked}, nil
}

// fetchedAttempts handles a failed leaseless delivery as the consumer did before it read the row:
// it decides retry or dead letter from the attempt count its fetch saw. A nack_by_id that landed
// between the fetch and the handle has already counted attempts, so the decision can retry a
// message this failure exhausts: the retry's nack_by_id leaves it at attempts == max_attempts,
// never eligible and never dead-lettered.
func fetchedAttempts(ctx context.Context, st *actordelivery.Store, d *actordelivery.Delivery, retryDelay time.Duration) (actordelivery.Outcome, error) {
	m := d.Message
	eff := min(actordelivery.EffectiveAttempts(m.Attempts, actordelivery.PathLeaseless), m.MaxAttempts)
	out := actordelivery.Outcome{Attempt: eff, Action: actordelivery.ActionRetried}
	var err error
	if eff >= m.MaxAttempts {
		out.Action = actordelivery.ActionDeadLettered
		err = st.ExecTx(ctx, false, func(ctx context.Context) error {
			if err := st.NackByID(ctx, m.ID, 0); err != nil {
				return err
			}
			return st.DeadLetter(ctx, m.ID, actordelivery.ReasonMaxAttempts)
		})
	} else {
		err = st.NackByID(ctx, m.ID, retryDelay)
	}
	switch {
	case errors.Is(err, actordelivery.ErrNotFound):
		out.Action = actordelivery.ActionLeaseLost
		return out, nil
	case err != nil:
		return actordelivery.Outcome{}, err
	}
	return out, nil
}
