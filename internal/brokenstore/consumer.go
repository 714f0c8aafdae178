package brokenstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

type workerKey struct{}

// WithWorker tells the broken handles which consumer worker they act for, so that on a recording
// store they record their steps under that worker's number (actordelivery.RecordStep), as the
// real consumer records its own.
func WithWorker(ctx context.Context, worker int) context.Context {
	return context.WithValue(ctx, workerKey{}, worker)
}

// recordHandle records a broken handle's consumer_handle step in the transaction ctx carries
// (nothing when the store does not record).
func recordHandle(ctx context.Context, m actordelivery.Message, path actordelivery.Path, outcome string,
	retryDelay time.Duration, out actordelivery.Outcome) {
	w, _ := ctx.Value(workerKey{}).(int)
	actordelivery.RecordStep(ctx, actordelivery.Event{
		Read: out.Action == actordelivery.ActionLeaseLost, Op: "consumer_handle",
		Args: actordelivery.EventArgs{Worker: w, Mailbox: m.Mailbox, Profile: path.String(), Outcome: outcome,
			RetryDelay: retryDelay},
		Result: actordelivery.EventResult{Action: out.Action, Attempt: out.Attempt},
	})
}

// Consumer builds the real consumer a step runs, configured for the step, with handler h.
type Consumer func(h actordelivery.Handler) (*actordelivery.Consumer, error)

// realHandle hands d to the real consumer with handler h.
func realHandle(ctx context.Context, consumer Consumer, h actordelivery.Handler, d *actordelivery.Delivery) (actordelivery.Outcome, error) {
	c, err := consumer(h)
	if err != nil {
		return actordelivery.Outcome{}, err
	}
	return c.Handle(ctx, d)
}

// HandleRawAttempts is a leaseless consumer's handle that hands the retry decision the stored
// attempt count unchanged instead of the effective one (actordelivery.EffectiveAttempts): the
// raw-attempts bug. On the leaseless path nothing has counted the current delivery yet, so after
// max_attempts failures the row has attempts == max_attempts, is never eligible again and is
// never dead-lettered. A leased delivery goes to the real consumer (there the stored count is
// the effective one, so the bug cannot show).
//
// It is the correct leaseless handle in everything else: the handler outside any transaction,
// then AckByID and the handler's Effects in one; on failure NackByID with the policy's delay, or,
// at max_attempts or when the policy declines, NackByID(0) and DeadLetter in one transaction.
func HandleRawAttempts(ctx context.Context, st *actordelivery.Store, consumer Consumer, h actordelivery.Handler,
	retry actordelivery.RetryPolicy, d *actordelivery.Delivery) (actordelivery.Outcome, error) {
	if d == nil || d.Path != actordelivery.PathLeaseless {
		return realHandle(ctx, consumer, h, d)
	}
	return handleLeaselessRaw(ctx, st, h, retry, d.Message)
}

// handleLeaselessRaw is HandleRawAttempts on a leaseless delivery of m.
//
//pconform:singleworker the leaseless path: one worker per mailbox, acknowledgements by id
//pconform:ignore rawattempts the raw-attempts variant reproduces this bug on purpose
func handleLeaselessRaw(ctx context.Context, st *actordelivery.Store, h actordelivery.Handler,
	retry actordelivery.RetryPolicy, m actordelivery.Message) (actordelivery.Outcome, error) {
	hm := m
	hm.Payload = append([]byte(nil), m.Payload...)
	effects, herr := h(ctx, &hm)
	if herr == nil {
		err := st.ExecTx(ctx, false, func(ctx context.Context) error {
			if err := st.AckByID(ctx, m.ID); err != nil {
				if errors.Is(err, actordelivery.ErrNotFound) {
					recordHandle(ctx, m, actordelivery.PathLeaseless, "ok", 0, actordelivery.Outcome{Action: actordelivery.ActionLeaseLost})
				}
				return err
			}
			if effects != nil {
				if err := effects(ctx); err != nil {
					herr = err
					return err
				}
			}
			recordHandle(ctx, m, actordelivery.PathLeaseless, "ok", 0, actordelivery.Outcome{Action: actordelivery.ActionAcked})
			return nil
		})
		switch {
		case err == nil:
			return actordelivery.Outcome{Action: actordelivery.ActionAcked}, nil
		case herr != nil:
			// The effects failed and rolled the acknowledgement back: a failed delivery.
		case errors.Is(err, actordelivery.ErrNotFound):
			return actordelivery.Outcome{Action: actordelivery.ActionLeaseLost}, nil
		default:
			return actordelivery.Outcome{}, fmt.Errorf("brokenstore: raw-attempts handle %q: %w", m.ID, err)
		}
	}
	// The bug: the raw stored count, not EffectiveAttempts(stored, path).
	var err error
	attempt := m.Attempts
	out := actordelivery.Outcome{Attempt: attempt}
	reason := ""
	outcome := "fail"
	if attempt >= m.MaxAttempts {
		reason = actordelivery.ReasonMaxAttempts
	} else if delay, ok := retry.Retry(herr, attempt); !ok {
		outcome = "fail_no_retry"
		reason = herr.Error()
		if reason == "" {
			reason = actordelivery.ReasonHandlerFailed
		}
	} else {
		out.Action = actordelivery.ActionRetried
		err = st.ExecTx(ctx, false, func(ctx context.Context) error {
			err := st.NackByID(ctx, m.ID, max(delay, 0))
			recordFailed(ctx, m, outcome, max(delay, 0), out, err)
			return err
		})
	}
	if reason != "" {
		out.Action = actordelivery.ActionDeadLettered
		err = st.ExecTx(ctx, false, func(ctx context.Context) error {
			err := st.NackByID(ctx, m.ID, 0)
			if err == nil {
				err = st.DeadLetter(ctx, m.ID, reason)
			}
			recordFailed(ctx, m, outcome, 0, out, err)
			return err
		})
	}
	switch {
	case err == nil:
		return out, nil
	case errors.Is(err, actordelivery.ErrNotFound):
		out.Action = actordelivery.ActionLeaseLost
		return out, nil
	}
	return actordelivery.Outcome{}, fmt.Errorf("brokenstore: raw-attempts handle %q after handler error: %w", m.ID, err)
}

// recordFailed records a leaseless failure's handle: out when err is nil, lease_lost when the
// message was no longer ready.
func recordFailed(ctx context.Context, m actordelivery.Message, outcome string, delay time.Duration, out actordelivery.Outcome, err error) {
	switch {
	case err == nil:
		if out.Action != actordelivery.ActionRetried {
			delay = 0
		}
		recordHandle(ctx, m, actordelivery.PathLeaseless, outcome, delay, out)
	case errors.Is(err, actordelivery.ErrNotFound):
		out.Action = actordelivery.ActionLeaseLost
		recordHandle(ctx, m, actordelivery.PathLeaseless, outcome, delay, out)
	}
}

// HandleUnfencedAck is a leased consumer's handle that acknowledges by id instead of by token
// when the handler succeeds, taking not_found for "already acknowledged": a worker whose lease
// ran out, and whose message another worker has meanwhile leased or acknowledged, still commits
// its effect and reports acked, so the effect can commit twice. A failing handler's delivery, and
// every leaseless one, is handled by the real consumer.
func HandleUnfencedAck(ctx context.Context, st *actordelivery.Store, consumer Consumer, h actordelivery.Handler,
	_ actordelivery.RetryPolicy, d *actordelivery.Delivery) (actordelivery.Outcome, error) {
	if d == nil || d.Path != actordelivery.PathLeased {
		return realHandle(ctx, consumer, h, d)
	}
	m := d.Message
	hm := m
	hm.Payload = append([]byte(nil), m.Payload...)
	effects, herr := h(ctx, &hm)
	var err error
	if herr == nil {
		err = unfencedAck(ctx, st, m, effects, &herr)
		if err == nil {
			return actordelivery.Outcome{Action: actordelivery.ActionAcked}, nil
		}
	}
	if herr != nil {
		// The handler (or its effects, which rolled back) failed: the real consumer takes the
		// failure from here, with a handler that fails the same way and touches nothing.
		return realHandle(ctx, consumer, func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) { return nil, herr }, d)
	}
	return actordelivery.Outcome{}, fmt.Errorf("brokenstore: unfenced-ack handle %q: %w", m.ID, err)
}

// unfencedAck runs the effects and AckByID in one transaction, taking not_found for "already
// acknowledged"; herr receives the effects' own error.
//
//pconform:ignore unfencedack the unfenced-ack variant reproduces this bug on purpose
func unfencedAck(ctx context.Context, st *actordelivery.Store, m actordelivery.Message, effects actordelivery.Effects, herr *error) error {
	return st.ExecTx(ctx, false, func(ctx context.Context) error {
		if effects != nil {
			if err := effects(ctx); err != nil {
				*herr = err
				return err
			}
		}
		if err := st.AckByID(ctx, m.ID); err != nil && !errors.Is(err, actordelivery.ErrNotFound) {
			return err
		}
		recordHandle(ctx, m, actordelivery.PathLeased, "ok", 0, actordelivery.Outcome{Action: actordelivery.ActionAcked})
		return nil
	})
}

// HandleFetchedAttempts handles a failed leaseless delivery as the consumer did before it read the
// row at handle time: it decides retry or dead letter from the attempt count its fetch saw (a
// retry policy that declines still dead-letters, with the handler's error, as the real consumer
// does). A
// nack_by_id that landed between the fetch and the handle has already counted attempts, so the
// decision can retry a message this failure exhausts: the retry's nack_by_id leaves it at
// attempts == max_attempts, never eligible and never dead-lettered. A leased delivery, and a
// leaseless one whose handler succeeds, goes to the real consumer.
//
//pconform:singleworker the leaseless path: one worker per mailbox, acknowledgements by id
func HandleFetchedAttempts(ctx context.Context, st *actordelivery.Store, consumer Consumer, h actordelivery.Handler,
	retry actordelivery.RetryPolicy, d *actordelivery.Delivery) (actordelivery.Outcome, error) {
	if d == nil || d.Path != actordelivery.PathLeaseless {
		return realHandle(ctx, consumer, h, d)
	}
	m := d.Message
	hm := m
	hm.Payload = append([]byte(nil), m.Payload...)
	effects, herr := h(ctx, &hm)
	if herr == nil {
		// The handler already ran: the real consumer commits the effects it returned.
		return realHandle(ctx, consumer, func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) { return effects, nil }, d)
	}
	eff := min(actordelivery.EffectiveAttempts(m.Attempts, actordelivery.PathLeaseless), m.MaxAttempts)
	out := actordelivery.Outcome{Attempt: eff, Action: actordelivery.ActionRetried}
	reason := ""
	delay, retried := time.Duration(0), false
	if eff >= m.MaxAttempts {
		reason = actordelivery.ReasonMaxAttempts
	} else if delay, retried = retry.Retry(herr, eff); !retried {
		// The policy declines: dead-lettered with the handler's error, as the real consumer does.
		reason = herr.Error()
		if reason == "" {
			reason = actordelivery.ReasonHandlerFailed
		}
	}
	var err error
	if reason != "" {
		out.Action = actordelivery.ActionDeadLettered
		err = st.ExecTx(ctx, false, func(ctx context.Context) error {
			if err := st.NackByID(ctx, m.ID, 0); err != nil {
				return err
			}
			return st.DeadLetter(ctx, m.ID, reason)
		})
	} else {
		err = st.NackByID(ctx, m.ID, max(delay, 0))
	}
	switch {
	case errors.Is(err, actordelivery.ErrNotFound):
		out.Action = actordelivery.ActionLeaseLost
		return out, nil
	case err != nil:
		return actordelivery.Outcome{}, fmt.Errorf("brokenstore: fetched-attempts handle %q: %w", m.ID, err)
	}
	return out, nil
}

// HandleEarlyDeadLetterUnfenced is a leased consumer's handle whose early dead-letter (the
// handler failed before max_attempts and the retry policy declines to retry) skips the token
// fence: a worker whose lease ran out, and whose message another worker has leased since,
// dead-letters that worker's message from under its live lease (the real consumer checks that it
// still holds the lease, in the dead-letter's transaction, and reports lease_lost). A retried
// failure is the real consumer's fenced nack; a success, a failure at max_attempts and every
// leaseless delivery go to the real consumer.
func HandleEarlyDeadLetterUnfenced(ctx context.Context, st *actordelivery.Store, consumer Consumer, h actordelivery.Handler,
	retry actordelivery.RetryPolicy, d *actordelivery.Delivery) (actordelivery.Outcome, error) {
	return handleUnfencedFailure(ctx, st, consumer, h, d, "early-dead-letter-unfenced",
		func(m actordelivery.Message, eff int) bool { return eff < m.MaxAttempts },
		func(ctx context.Context, m actordelivery.Message, eff int, herr error) unfencedWrite {
			// The policy is asked once, as the real consumer asks it (a policy may draw its answer).
			delay, retried := retry.Retry(herr, eff)
			if retried {
				return unfencedWrite{outcome: "fail", delay: max(delay, 0), action: actordelivery.ActionRetried,
					write: func(ctx context.Context) error { return st.Nack(ctx, m.ID, m.Token, max(delay, 0)) }}
			}
			reason := herr.Error()
			if reason == "" {
				reason = actordelivery.ReasonHandlerFailed
			}
			return unfencedWrite{outcome: "fail_no_retry", action: actordelivery.ActionDeadLettered,
				// The bug: no check that the message still carries m.Token.
				write: func(ctx context.Context) error { return st.DeadLetter(ctx, m.ID, reason) }}
		})
}

// HandleExhaustedDeadLetterUnfenced is a leased consumer's handle whose dead-letter at
// max_attempts skips the token fence: a worker whose lease ran out with its attempts used up, and
// whose message expire dead-lettered, a redrive put back and another worker leased since,
// dead-letters that worker's message from under its live lease (the real consumer checks that it
// still holds the lease, in the dead-letter's transaction, and reports lease_lost). A success, a
// failure below max_attempts and every leaseless delivery go to the real consumer.
func HandleExhaustedDeadLetterUnfenced(ctx context.Context, st *actordelivery.Store, consumer Consumer, h actordelivery.Handler,
	_ actordelivery.RetryPolicy, d *actordelivery.Delivery) (actordelivery.Outcome, error) {
	return handleUnfencedFailure(ctx, st, consumer, h, d, "exhausted-dead-letter-unfenced",
		func(m actordelivery.Message, eff int) bool { return eff >= m.MaxAttempts },
		func(ctx context.Context, m actordelivery.Message, _ int, _ error) unfencedWrite {
			return unfencedWrite{outcome: "fail", action: actordelivery.ActionDeadLettered,
				// The bug: no check that the message still carries m.Token.
				write: func(ctx context.Context) error { return st.DeadLetter(ctx, m.ID, actordelivery.ReasonMaxAttempts) }}
		})
}

// unfencedWrite is how a broken leased handle commits a failure: the trace's outcome and retry
// delay, the action when the write succeeds, and the one store write.
type unfencedWrite struct {
	outcome string
	delay   time.Duration
	action  string
	write   func(context.Context) error
}

// handleUnfencedFailure is the shape both unfenced dead-letter variants share. It runs the handler
// on a leased delivery; a success, every leaseless delivery, and a failure whose effective attempt
// mine does not claim go to the real consumer (with a handler that answers what this one did).
// Otherwise decide says how to commit the failure, and the write runs in a transaction of its
// own: the handle is recorded with the write's action, or lease_lost when the write finds the
// lease lost or the row gone.
func handleUnfencedFailure(ctx context.Context, st *actordelivery.Store, consumer Consumer, h actordelivery.Handler,
	d *actordelivery.Delivery, variant string, mine func(m actordelivery.Message, eff int) bool,
	decide func(ctx context.Context, m actordelivery.Message, eff int, herr error) unfencedWrite) (actordelivery.Outcome, error) {
	if d == nil || d.Path != actordelivery.PathLeased {
		return realHandle(ctx, consumer, h, d)
	}
	m := d.Message
	hm := m
	hm.Payload = append([]byte(nil), m.Payload...)
	effects, herr := h(ctx, &hm)
	eff := min(actordelivery.EffectiveAttempts(m.Attempts, actordelivery.PathLeased), m.MaxAttempts)
	if herr == nil || !mine(m, eff) {
		// The handler already ran: the real consumer takes over with one that answers the same.
		return realHandle(ctx, consumer, func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) {
			return effects, herr
		}, d)
	}
	w := decide(ctx, m, eff, herr)
	out := actordelivery.Outcome{Attempt: eff, Action: w.action}
	lost := func(err error) bool {
		return errors.Is(err, actordelivery.ErrLeaseLost) || errors.Is(err, actordelivery.ErrNotFound)
	}
	err := st.ExecTx(ctx, false, func(ctx context.Context) error {
		err := w.write(ctx)
		switch {
		case err == nil:
			recordHandle(ctx, m, actordelivery.PathLeased, w.outcome, w.delay, out)
		case lost(err):
			recordHandle(ctx, m, actordelivery.PathLeased, w.outcome, w.delay,
				actordelivery.Outcome{Attempt: eff, Action: actordelivery.ActionLeaseLost})
		}
		return err
	})
	switch {
	case err == nil:
		return out, nil
	case lost(err):
		out.Action = actordelivery.ActionLeaseLost
		return out, nil
	}
	return actordelivery.Outcome{}, fmt.Errorf("brokenstore: %s handle %q: %w", variant, m.ID, err)
}
