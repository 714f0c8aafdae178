package service

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// This file holds three bugs a service's own code can have, for the test that shows `pconform
// check` finding each one in the log the buggy service recorded. Each replaces a part of Serve with
// hand-written code on the store's public calls, the way a user might write it; Config.fault,
// which only tests set, picks one. Do not copy this file: Serve without a fault is the service.

// fault is a bug injected into the service.
type fault int

const (
	faultNone fault = iota
	// faultCompleteAfterFailedEnqueue: a publisher loop of the service's own enqueues a row's
	// message and completes the row in two transactions, and drops the enqueue's error. When the
	// enqueue fails to commit, the row is completed anyway and its message is lost: the order is
	// never billed.
	faultCompleteAfterFailedEnqueue
	// faultRawAttempts: a leaseless billing worker of the service's own decides retries from the
	// stored attempt count. Nothing has counted the current delivery yet on that path, so the
	// decision is one attempt behind (actordelivery.EffectiveAttempts): a message whose handler
	// keeps failing is retried on its last attempt and stays at attempts == max_attempts, never
	// delivered again and never dead-lettered.
	faultRawAttempts
	// faultUnfencedAck: a leased billing worker of the service's own acknowledges by id, not by
	// its lease's token, and takes "not found" for "acknowledged already". A worker whose lease
	// ran out while it charged still commits its invoice after another worker has billed the same
	// order: two invoices.
	faultUnfencedAck
)

// publishOwn is the publisher loop of faultCompleteAfterFailedEnqueue. pconform-vet's txerr
// reports its bug too; the directive keeps it, on purpose.
//
//pconform:ignore txerr faultCompleteAfterFailedEnqueue drops the enqueue's error on purpose
func publishOwn(ctx context.Context, ob actordelivery.OutboxStore, cfg Config) error {
	log := logger(cfg)
	for ctx.Err() == nil {
		rows, err := ob.OutboxClaim(ctx, 16, cmp.Or(cfg.ClaimFor, 30*time.Second))
		if err != nil && ctx.Err() == nil {
			log.Error("service: claim", "err", err)
		}
		for _, row := range rows {
			// The bug: the enqueue's error is dropped, so the row is completed even when its
			// message never committed. actordelivery.Publisher (ModeFold) commits both together.
			_ = ob.ExecTx(ctx, false, func(ctx context.Context) error {
				_, err := ob.Enqueue(ctx, actordelivery.NewMessage{Mailbox: row.Target, ID: row.ID, Key: row.Key,
					Priority: row.Priority, MaxAttempts: row.MaxAttempts, Payload: row.Payload})
				return err
			})
			err := ob.ExecTx(ctx, false, func(ctx context.Context) error {
				return ob.OutboxComplete(ctx, row.ID, row.ClaimToken)
			})
			if err != nil && ctx.Err() == nil {
				log.Error("service: complete", "id", row.ID, "err", err)
			}
		}
		if len(rows) == 0 {
			pause(ctx, 20*time.Millisecond)
		}
	}
	return nil
}

// workOwn runs the billing workers of faultRawAttempts (one, leaseless) or faultUnfencedAck
// (cfg.Workers, leased) until ctx ends; each handles the message it fetched before it stops.
func workOwn(ctx context.Context, st *actordelivery.Store, cfg Config) error {
	path, n := actordelivery.PathLeased, cfg.Workers
	if cfg.fault == faultRawAttempts {
		path, n = actordelivery.PathLeaseless, 1 // the leaseless path allows one worker per mailbox
	}
	retry := cfg.Retry
	if retry == nil {
		retry = actordelivery.Backoff{}
	}
	done := make(chan error, n)
	for i := range n {
		go func() { done <- workerOwn(ctx, st, cfg, path, i+1, retry) }()
	}
	var errs []error
	for range n {
		errs = append(errs, <-done)
	}
	return errors.Join(errs...)
}

// workerOwn is one worker of workOwn. The store's Consumer fetches, and handles every delivery
// the worker's bug leaves alone; its handler answers what bill already answered.
func workerOwn(ctx context.Context, st *actordelivery.Store, cfg Config, path actordelivery.Path, worker int,
	retry actordelivery.RetryPolicy) error {
	var effects actordelivery.Effects
	var herr error
	c, err := actordelivery.NewConsumer(st, func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) {
		return effects, herr
	}, actordelivery.ConsumerOptions{Mailbox: Billing, Path: path, LeaseFor: cfg.LeaseFor, Retry: retry,
		Worker: worker, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	log := logger(cfg)
	for ctx.Err() == nil {
		d, err := c.Fetch(ctx)
		if err != nil || d == nil {
			if err != nil && ctx.Err() == nil {
				log.Error("service: fetch", "err", err)
			}
			pause(ctx, 20*time.Millisecond)
			continue
		}
		hctx := context.WithoutCancel(ctx) // a fetched message is handled even once ctx ends
		m := d.Message
		effects, herr = cfg.bill(hctx, &m)
		switch {
		case cfg.fault == faultUnfencedAck && herr == nil:
			err = ackUnfenced(hctx, st, worker, m, effects)
		case cfg.fault == faultRawAttempts && herr != nil:
			err = failRaw(hctx, st, worker, m, herr, retry)
		default:
			_, err = c.Handle(hctx, d)
		}
		if err != nil {
			log.Error("service: handle", "id", m.ID, "err", err)
		}
	}
	return nil
}

// ackUnfenced commits the invoice with an acknowledgement by id: faultUnfencedAck.
func ackUnfenced(ctx context.Context, st *actordelivery.Store, worker int, m actordelivery.Message, effects actordelivery.Effects) error {
	return st.ExecTx(ctx, false, func(ctx context.Context) error {
		// The bug: st.Ack(ctx, m.ID, m.Token) fails with ErrLeaseLost once the lease is lost.
		if err := st.AckByID(ctx, m.ID); err != nil && !errors.Is(err, actordelivery.ErrNotFound) {
			return err
		}
		if err := effects(ctx); err != nil {
			return err
		}
		recordHandle(ctx, worker, actordelivery.PathLeased, "ok", "", 0, actordelivery.ActionAcked, 0)
		return nil
	})
}

// failRaw records a failed leaseless delivery with the raw attempt count: faultRawAttempts.
// pconform-vet's rawattempts reports its bug too; the directive keeps it, on purpose.
//
//pconform:ignore rawattempts faultRawAttempts hands the policy the stored count on purpose
func failRaw(ctx context.Context, st *actordelivery.Store, worker int, m actordelivery.Message, herr error,
	retry actordelivery.RetryPolicy) error {
	attempt := m.Attempts // the bug: actordelivery.EffectiveAttempts(m.Attempts, actordelivery.PathLeaseless)
	return st.ExecTx(ctx, false, func(ctx context.Context) error {
		delay, again := retry.Retry(herr, attempt)
		if attempt < m.MaxAttempts && again {
			if err := st.NackByID(ctx, m.ID, max(delay, 0)); err != nil {
				return err
			}
			recordHandle(ctx, worker, actordelivery.PathLeaseless, "fail", "", max(delay, 0), actordelivery.ActionRetried, attempt)
			return nil
		}
		outcome, reason := "fail", actordelivery.ReasonMaxAttempts
		if attempt < m.MaxAttempts {
			outcome, reason = "fail_no_retry", herr.Error()
		}
		if err := st.NackByID(ctx, m.ID, 0); err != nil {
			return err
		}
		if err := st.DeadLetter(ctx, m.ID, reason); err != nil {
			return err
		}
		declined := ""
		if outcome == "fail_no_retry" {
			declined = reason // the handler's text: the recorded step states the dead letter's reason
		}
		recordHandle(ctx, worker, actordelivery.PathLeaseless, outcome, declined, 0, actordelivery.ActionDeadLettered, attempt)
		return nil
	})
}

// recordHandle records a hand-written handle as the consumer_handle step the store's Consumer
// records, so that the log is checked step by step (actordelivery.RecordStep).
func recordHandle(ctx context.Context, worker int, path actordelivery.Path, outcome, reason string, delay time.Duration, action string, attempt int) {
	actordelivery.RecordStep(ctx, actordelivery.Event{Op: "consumer_handle",
		Args:   actordelivery.EventArgs{Worker: worker, Mailbox: Billing, Profile: path.String(), Outcome: outcome, Reason: reason, RetryDelay: delay},
		Result: actordelivery.EventResult{Action: action, Attempt: attempt}})
}

func logger(cfg Config) *slog.Logger {
	if cfg.Logger != nil {
		return cfg.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
