package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/brokenstore"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// The batch steps of docs/semantics.md ("Batches") on the store's own batch code: the consumer's
// FetchBatch and HandleBatch, the publisher's DeliverBatch.

// fetchBatch runs the real consumer's FetchBatch with the step's size for the step's worker and
// keeps the batch it returns until the worker's handle. Like fetch, it drops whatever the worker
// held.
func (t *StoreTarget) fetchBatch(ctx context.Context, a replay.Args) (replay.Observation, error) {
	delete(t.fetched, a.Worker)
	delete(t.batches, a.Worker)
	opts, err := t.consumerOptions(a)
	if err != nil {
		return replay.Observation{}, err
	}
	opts.BatchSize = a.Size
	var ds []actordelivery.Delivery
	if t.elig != nil {
		ds, err = t.fetchBatchCopy(ctx, a, opts)
	} else {
		var c *actordelivery.Consumer
		if c, err = actordelivery.NewConsumer(t.st, t.handler(traces.OutcomeOK, ""), opts); err == nil {
			ds, err = c.FetchBatch(ctx)
		}
	}
	if err != nil || len(ds) == 0 {
		return replay.Observation{}, err
	}
	t.batches[a.Worker] = heldBatch{ds: ds, size: a.Size}
	var o replay.Observation
	for i := range ds {
		o.Messages = append(o.Messages, *observed(&ds[i].Message, ds[i].Path == actordelivery.PathLeased))
	}
	return o, nil
}

// heldBatch is a worker's fetched batch and the size its fetch asked for.
type heldBatch struct {
	ds   []actordelivery.Delivery
	size int
}

// fetchBatchCopy is Consumer.FetchBatch through the copied eligibility SQL; with a batch of one
// it is the copy's single fetch, as FetchBatch is Fetch.
func (t *StoreTarget) fetchBatchCopy(ctx context.Context, a replay.Args, opts actordelivery.ConsumerOptions) ([]actordelivery.Delivery, error) {
	if a.Size <= 1 {
		d, err := t.fetchCopy(ctx, a)
		if err != nil || d == nil {
			return nil, err
		}
		return []actordelivery.Delivery{*d}, nil
	}
	ms, err := t.elig.FetchBatch(ctx, t.clock.Now(), a.Mailbox, opts.Path, opts.LeaseFor, a.Size)
	if err != nil {
		return nil, err
	}
	ds := make([]actordelivery.Delivery, len(ms))
	for i, m := range ms {
		ds[i] = actordelivery.Delivery{Message: m, Path: opts.Path}
	}
	return ds, nil
}

// handleBatch runs the real consumer's HandleBatch on the worker's batch, each message's handler
// answering with the step's outcome at that message's place in the batch. A worker holding no
// batch handles nothing: no actions, as in the model.
//
// Fault commit_fails ends the handle's context, so HandleBatch writes nothing and every message
// reports commit_failed, as the model's do. When the batch's last message succeeds, its Effects
// end it after writing the effect: the last work of the batch's transaction, so ExecTx finds the
// context done when its function returns and rolls everything back (the store's documented
// failed commit). When the last message fails, the write after its retry decision would meet
// the done context mid-transaction (on PostgreSQL the driver then drops the connection), so its
// handler ends the context instead, before the transaction begins, and the transaction fails at
// its start.
func (t *StoreTarget) handleBatch(ctx context.Context, a replay.Args) (replay.Observation, error) {
	b, held := t.batches[a.Worker]
	ds := b.ds
	if !held {
		return replay.Observation{}, nil
	}
	if len(a.Outcomes) != len(ds) {
		return replay.Observation{}, fmt.Errorf("worker %d holds a batch of %d messages but the step gives %d outcomes", a.Worker, len(ds), len(a.Outcomes))
	}
	delete(t.batches, a.Worker)
	outcomes := make(map[string]string, len(ds))
	reasons := make(map[string]string, len(ds))
	for i := range ds {
		outcomes[ds[i].Message.ID] = a.Outcomes[i]
		if i < len(a.Reasons) {
			reasons[ds[i].Message.ID] = a.Reasons[i]
		}
	}
	failCommit := a.Fault == traces.FaultCommitFails
	last := ds[len(ds)-1].Message.ID
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := func(_ context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		var herr error
		switch outcomes[m.ID] {
		case traces.OutcomeFail:
			herr = errHandlerFails
		case traces.OutcomeFailNoRetry:
			herr = handlerDeclined(reasons[m.ID])
		}
		if herr != nil || t.cfg.handleBatch != nil {
			// A broken batch handle may drop the handler's error or hold its Effects back, so
			// the commit is failed here, before the transaction begins.
			if failCommit && m.ID == last {
				cancel()
			}
		}
		if herr != nil {
			return nil, herr
		}
		mailbox, id := m.Mailbox, m.ID
		return func(ctx context.Context) error {
			if err := appendEffect(ctx, t.st, mailbox, id); err != nil {
				return err
			}
			if failCommit && id == last {
				cancel()
			}
			return nil
		}, nil
	}
	opts, err := t.consumerOptions(a)
	if err != nil {
		return replay.Observation{}, err
	}
	// The worker's consumer: the batch size its fetch had, so that a fetch that found fewer
	// messages than its size is still handled (and recorded) as a batch.
	opts.BatchSize = max(b.size, len(ds))
	opts.Retry = batchRetry(traces.Duration(a.RetryDelay))
	consumer := func(h actordelivery.Handler) (*actordelivery.Consumer, error) {
		return actordelivery.NewConsumer(t.st, h, opts)
	}
	var outs []actordelivery.Outcome
	if t.cfg.handleBatch != nil {
		var owed []brokenstore.Owed
		if outs, owed, err = t.cfg.handleBatch(hctx, consumer, h, ds); err == nil && len(owed) > 0 {
			t.owed[a.Worker] = owed
		}
	} else {
		var c *actordelivery.Consumer
		if c, err = consumer(h); err == nil {
			outs, err = c.HandleBatch(hctx, ds)
		}
	}
	switch {
	case failCommit && err != nil && errors.Is(err, context.Canceled) && ctx.Err() == nil:
		o := replay.Observation{Actions: make([]string, len(ds))}
		for i := range o.Actions {
			o.Actions[i] = traces.ActionCommitFailed
		}
		return o, nil
	case err != nil:
		return replay.Observation{}, err
	case failCommit && !slices.ContainsFunc(outs, func(o actordelivery.Outcome) bool { return o.Action != actordelivery.ActionLeaseLost }):
		// Every message's fence failed, the last one's too, so its Effects never ran to end the
		// transaction. But the transaction wrote nothing: a commit that failed would have left the
		// store exactly as it is, and the batch reports what a failed commit reports.
		o := replay.Observation{Actions: make([]string, len(ds))}
		for i := range o.Actions {
			o.Actions[i] = traces.ActionCommitFailed
		}
		return o, nil
	case failCommit:
		// The last message succeeded but its acknowledgement's fence failed, so its Effects never
		// ran to end the transaction, and the other messages' parts committed.
		return replay.Observation{}, fmt.Errorf("%w: %q with fault %q: the batch's last message lost its lease, so its Effects could not fail the commit, and the batch committed",
			replay.ErrUnsupported, traces.OpConsumerHandleBatch, a.Fault)
	}
	o := replay.Observation{Actions: make([]string, len(outs))}
	for i, out := range outs {
		o.Actions[i] = out.Action
	}
	return o, nil
}

// effectsBatch commits the Effects the worker's batch handle left owed, in a transaction of their
// own (fault commit_fails: one that fails), and lists their messages. The correct store owes
// none, so it commits nothing and lists none.
func (t *StoreTarget) effectsBatch(ctx context.Context, a replay.Args) (replay.Observation, error) {
	owed := t.owed[a.Worker]
	delete(t.owed, a.Worker)
	if len(owed) == 0 {
		return replay.Observation{}, nil
	}
	if err := brokenstore.CommitOwed(ctx, t.st, owed, a.Fault == traces.FaultCommitFails); err != nil {
		return replay.Observation{}, err
	}
	var o replay.Observation
	for _, ow := range owed {
		o.Effects = append(o.Effects, ow.ID)
	}
	return o, nil
}

// batchRetry is a consumer_handle_batch step's retry policy: it declines for the messages whose
// outcome is fail_no_retry and retries the others after the step's retry_delay.
type batchRetry time.Duration

func (r batchRetry) Retry(err error, _ int) (time.Duration, bool) {
	if errors.As(err, new(declinedError)) {
		return 0, false
	}
	return time.Duration(r), true
}

// deliverBatch runs the real publisher's DeliverBatch (ModeFold, a batch of len(a.IDs)) on the
// step's rows under its claim token, with the step's fault injected around the store as deliver
// does.
func (t *StoreTarget) deliverBatch(ctx context.Context, a replay.Args) (replay.Observation, error) {
	stored, err := t.st.ListOutbox(ctx)
	if err != nil {
		return replay.Observation{}, err
	}
	rows := make([]actordelivery.OutboxRow, len(a.IDs))
	for i, id := range a.IDs {
		if k := slices.IndexFunc(stored, func(r actordelivery.OutboxRow) bool { return r.ID == id }); k >= 0 {
			rows[i] = stored[k]
		} else if c, ok := t.claimed[id]; ok {
			rows[i] = c // purged since a claim returned it: the publisher delivers its copy
		} else {
			return replay.Observation{}, fmt.Errorf("outbox row %q does not exist and no claim returned it", id)
		}
		rows[i].ClaimToken = a.Token
	}
	fst, err := NewFaultStore(t.st, a.Fault)
	if err != nil {
		return replay.Observation{}, err
	}
	p, err := actordelivery.NewPublisher(fst, actordelivery.PublisherOptions{
		Mode: actordelivery.ModeFold, DeliverBatch: len(rows), Logger: t.log,
		RetryDelay: traces.Duration(a.RetryDelay), Check: undeliverable(a.Fault),
	})
	if err != nil {
		return replay.Observation{}, err
	}
	res, err := p.DeliverBatch(ctx, rows)
	if err := notInjected(fst, err); err != nil {
		return replay.Observation{}, err
	}
	var o replay.Observation
	for _, r := range res {
		action := r.Action
		if fst.crashed && action == traces.ActionDelivered {
			// The process died after the batch's one commit: a row it delivered is crashed, as
			// a single fold delivery's is; a lost claim or a dead letter says what it did.
			action = traces.ActionCrashed
		}
		o.Actions = append(o.Actions, action)
		o.Duplicates = append(o.Duplicates, r.Duplicate)
	}
	return o, nil
}

// notInjected is err less the faults fst injected: nil when err is nil or every error it joins
// (DeliverBatch joins one per row) is an injected fault.
func notInjected(fst *faultStore, err error) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var rest []error
		for _, e := range j.Unwrap() {
			rest = append(rest, notInjected(fst, e))
		}
		return errors.Join(rest...)
	}
	if fst.Injected(err) {
		return nil
	}
	return err
}
