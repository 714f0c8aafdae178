package brokenstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// ErrRolledBack is what an Enqueuer's enqueue returns when it was asked to roll back: the
// transaction ended without a commit, as an application's does when a later step of it fails.
var ErrRolledBack = errors.New("brokenstore: rolled back on purpose")

// Enqueuer enqueues a message the way an application does: inside ExecTx, keeping the
// transaction open for hold after the enqueue (the application's other statements), then
// committing, or rolling back when rollback is set (ErrRolledBack).
//
// With NotifyFirst set it is the wake-outside-tx variant: before the enqueue's transaction it
// sends the mailbox's wake-up NOTIFY on Pool, a connection outside that transaction, so other
// stores on the database are woken for a row that is not committed yet, or never will be. The
// store itself sends its NOTIFY inside the transaction, which the server delivers at commit;
// this one is delivered at once. Channel and payload are the store's, copied from actordelivery
// (Store.channel and notifyPayload): a wake-outside-tx test that finds nothing because a
// receiver ignored them would also find no wake at all, which the test refuses.
type Enqueuer struct {
	Store *actordelivery.Store
	// Pool is the database the early NOTIFY goes through; TablePrefix the store's prefix.
	Pool        *sql.DB
	TablePrefix string
	NotifyFirst bool
	_           struct{}
}

// Enqueue enqueues m as described on Enqueuer.
func (e Enqueuer) Enqueue(ctx context.Context, m actordelivery.NewMessage, hold time.Duration, rollback bool) error {
	if e.NotifyFirst {
		// The bug: the wake-up leaves on a pool connection, outside the enqueue's transaction.
		payload := "brokenstore-wake n" + strconv.Itoa(len(m.Mailbox)) + ":" + m.Mailbox + m.ID
		if _, err := e.Pool.ExecContext(ctx, `SELECT pg_notify($1, $2)`, e.TablePrefix+"actordelivery_wake", payload); err != nil {
			return fmt.Errorf("brokenstore: notify: %w", err)
		}
	}
	return e.Store.ExecTx(ctx, false, func(ctx context.Context) error {
		if _, err := e.Store.Enqueue(ctx, m); err != nil {
			return err
		}
		if hold > 0 {
			t := time.NewTimer(hold)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if rollback {
			return ErrRolledBack
		}
		return nil
	})
}
