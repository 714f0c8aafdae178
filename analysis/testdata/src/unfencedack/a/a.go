// Package a holds unfencedack's positive and negative cases.
package a

import (
	"context"
	"time"

	ad "github.com/pconform/pconform/actordelivery"
)

// ---- unfenced acknowledgement of a leased message ----

func leaseThenAckByID(ctx context.Context, st *ad.Store) error {
	m, err := st.Lease(ctx, "mb", time.Minute)
	if err != nil || m == nil {
		return err
	}
	return st.AckByID(ctx, m.ID) // want `unfenced AckByID on message m, which holds a lease token: use Ack with the token`
}

func tokenThenNackByID(ctx context.Context, st *ad.Store, d *ad.Delivery) error {
	m := d.Message
	if err := st.ExtendLease(ctx, m.ID, m.Token, time.Minute); err != nil {
		return err
	}
	id := m.ID
	return st.NackByID(ctx, id, time.Second) // want `unfenced NackByID on message d, which holds a lease token: use Nack with the token`
}

func wrongGuard(ctx context.Context, st *ad.Store, d *ad.Delivery) error {
	if d.Path == ad.PathLeased {
		return st.AckByID(ctx, d.Message.ID) // want `unfenced AckByID on message d`
	}
	return st.Ack(ctx, d.Message.ID, d.Message.Token)
}

func invertedElse(ctx context.Context, st *ad.Store, d *ad.Delivery) error {
	if d.Path == ad.PathLeaseless {
		return st.Ack(ctx, d.Message.ID, d.Message.Token)
	} else {
		return st.AckByID(ctx, d.Message.ID) // want `unfenced AckByID on message d`
	}
}

func inTransaction(ctx context.Context, st *ad.Store) error {
	var m *ad.Message
	return st.ExecTx(ctx, false, func(ctx context.Context) error {
		var err error
		m, err = st.Lease(ctx, "mb", time.Minute)
		if err != nil || m == nil {
			return err
		}
		return st.AckByID(ctx, m.ID) // want `unfenced AckByID on message m`
	})
}

// acker is some narrower view of the store.
type acker interface {
	AckByID(ctx context.Context, id string) error
}

func viaInterface(ctx context.Context, a acker, m *ad.Message) error {
	if m.Token != "" {
		return a.AckByID(ctx, m.ID) // want `unfenced AckByID on message m`
	}
	return nil
}

// ---- leaseless-only or not a leased message ----

type consumer struct {
	st   *ad.Store
	path ad.Path
}

// handle has the real store's shape: an early exit on the leased path.
func (c *consumer) handle(ctx context.Context, m ad.Message) error {
	return c.st.ExecTx(ctx, false, func(ctx context.Context) error {
		if c.path == ad.PathLeased {
			return c.st.Ack(ctx, m.ID, m.Token)
		}
		return c.st.AckByID(ctx, m.ID)
	})
}

func (c *consumer) failed(ctx context.Context, m ad.Message, reason string) error {
	switch {
	case reason != "" && c.path == ad.PathLeaseless:
		return c.st.NackByID(ctx, m.ID, 0)
	case c.path != ad.PathLeased:
		return c.st.NackByID(ctx, m.ID, time.Second)
	default:
		return c.st.Nack(ctx, m.ID, m.Token, time.Second)
	}
}

func tagSwitch(ctx context.Context, st *ad.Store, d *ad.Delivery) error {
	switch d.Path {
	case ad.PathLeaseless:
		return st.AckByID(ctx, d.Message.ID)
	default:
		return st.Ack(ctx, d.Message.ID, d.Message.Token)
	}
}

func noToken(ctx context.Context, st *ad.Store, m *ad.Message) error {
	if m.Token == "" {
		return st.AckByID(ctx, m.ID)
	}
	return st.Ack(ctx, m.ID, m.Token)
}

func negatedLeased(ctx context.Context, st *ad.Store, d ad.Delivery) error {
	if !(d.Path == ad.PathLeased) {
		return st.NackByID(ctx, d.Message.ID, 0)
	}
	return st.Nack(ctx, d.Message.ID, d.Message.Token, 0)
}

func elseOfLeased(ctx context.Context, st *ad.Store, d ad.Delivery) error {
	if d.Path == ad.PathLeased {
		return st.Ack(ctx, d.Message.ID, d.Message.Token)
	} else {
		return st.AckByID(ctx, d.Message.ID)
	}
}

// drain runs only on the single-worker path; it reads the token for logging.
//
//pconform:singleworker
func drain(ctx context.Context, st *ad.Store, m *ad.Message) error {
	_ = m.Token
	return st.AckByID(ctx, m.ID)
}

func leaseless(ctx context.Context, st *ad.Store) error {
	m, err := st.Peek(ctx, "mb")
	if err != nil || m == nil {
		return err
	}
	return st.AckByID(ctx, m.ID)
}

func literalIDs(ctx context.Context, st *ad.Store) error {
	if _, err := st.Lease(ctx, "mb", time.Minute); err != nil {
		return err
	}
	return st.AckByID(ctx, "a")
}

func otherMessage(ctx context.Context, st *ad.Store) error {
	leased, err := st.Lease(ctx, "mb", time.Minute)
	if err != nil {
		return err
	}
	_ = leased
	peeked, err := st.Peek(ctx, "other")
	if err != nil || peeked == nil {
		return err
	}
	return st.AckByID(ctx, peeked.ID)
}

// ---- deliveries: either path ----

func deliveryUnguarded(ctx context.Context, st *ad.Store, d *ad.Delivery) error {
	m := d.Message
	return st.AckByID(ctx, m.ID) // want `unfenced AckByID on message d, which may hold a lease token`
}

func deliveryGuarded(ctx context.Context, st *ad.Store, d *ad.Delivery) error {
	if d.Path == ad.PathLeaseless {
		return st.AckByID(ctx, d.Message.ID)
	}
	return st.Ack(ctx, d.Message.ID, d.Message.Token)
}

// ---- suppression ----

// unfencedVariant reproduces the unfenced-ack bug for replay.
//
//pconform:ignore unfencedack the broken variant exists to reproduce this bug
func unfencedVariant(ctx context.Context, st *ad.Store, d *ad.Delivery) error {
	return st.AckByID(ctx, d.Message.ID)
}

func lineSuppressed(ctx context.Context, st *ad.Store, d *ad.Delivery) error {
	//pconform:ignore unfencedack exercised on purpose
	return st.AckByID(ctx, d.Message.ID)
}

func noReason(ctx context.Context, st *ad.Store, d *ad.Delivery) error {
	// want +1 `//pconform:ignore unfencedack needs a reason` `unfenced AckByID on message d`
	return st.AckByID(ctx, d.Message.ID) //pconform:ignore unfencedack
}
