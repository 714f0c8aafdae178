package brokenstore

import (
	"context"
	"errors"

	"github.com/pconform/pconform/actordelivery"
)

// OutboxStore is what DeliverSplitWrite needs from a store: *actordelivery.Store, or a wrapper of
// it that injects faults into its commits.
type OutboxStore interface {
	ExecTx(ctx context.Context, readOnly bool, fn func(context.Context) error) error
	Enqueue(ctx context.Context, m actordelivery.NewMessage) (bool, error)
	OutboxComplete(ctx context.Context, id, token string) error
}

// DeliverSplitWrite is the seed bug: a split delivery that drops the enqueue transaction's error
// and goes on to complete the row, so a failed enqueue commit leaves a completed outbox row whose
// message never arrived.
//
//pconform:ignore txerr the seed bug, reproduced on purpose by the split-write variant
func DeliverSplitWrite(ctx context.Context, st OutboxStore, row actordelivery.OutboxRow) (actordelivery.DeliveryResult, error) {
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
