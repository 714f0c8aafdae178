package actordelivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"
)

// This file is the consumer's batch path (docs/semantics.md, "Batches"): one fetch takes up to
// BatchSize messages, the handlers run one after another outside any write transaction, and one
// transaction commits every message's outcome.

// leaseBatch leases up to n eligible messages of mailbox in one statement, each with a token of
// its own, and returns them in delivery order. It joins the transaction in ctx. It records no
// event of its own: the consumer records the fetch (consumer_fetch_batch).
func (s *Store) leaseBatch(ctx context.Context, mailbox string, leaseFor time.Duration, n int) ([]Message, error) {
	const op = "LeaseBatch"
	var got []Message
	err := s.write(ctx, op, func(ts *txState, now int64) error {
		got = got[:0]
		rows, err := ts.tx.QueryContext(ctx, qLeaseBatch, named("mailbox", mailbox), named("now", now),
			named("token", newToken()), named("until", now+durMillis(leaseFor)), named("limit", n))
		if err != nil {
			return s.dbErr(op+" "+mailbox, err)
		}
		got, err = scanMessages(rows, got)
		return s.dbErr(op+" "+mailbox, err)
	})
	if err != nil {
		return nil, err
	}
	sortDeliveryOrder(got)
	return got, nil
}

// peekBatch reads up to n eligible messages of mailbox, in delivery order, without changing
// anything (see peek for onWriter).
func (s *Store) peekBatch(ctx context.Context, mailbox string, n int, onWriter bool) ([]Message, error) {
	const op = "PeekBatch"
	pool := s.rdb
	if onWriter {
		pool = s.wdb
	}
	var got []Message
	err := s.readOn(ctx, op, pool, func(q querier, now int64) error {
		got = got[:0]
		rows, err := q.QueryContext(ctx, qPeekBatch, named("mailbox", mailbox), named("now", now), named("limit", n))
		if err != nil {
			return s.dbErr(op+" "+mailbox, err)
		}
		got, err = scanMessages(rows, got)
		return s.dbErr(op+" "+mailbox, err)
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// scanMessages appends every row of rows to out and closes rows.
func scanMessages(rows interface {
	Next() bool
	Err() error
	Close() error
	Scan(...any) error
}, out []Message) ([]Message, error) {
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			_ = rows.Close()
			return out, err
		}
		out = append(out, *m)
	}
	if err := rows.Err(); err != nil {
		_ = rows.Close()
		return out, err
	}
	return out, rows.Close()
}

// sortDeliveryOrder sorts ms by priority (highest first), then available_at, then seq: the order
// of docs/semantics.md, which an UPDATE ... RETURNING does not keep.
func sortDeliveryOrder(ms []Message) {
	slices.SortFunc(ms, func(a, b Message) int {
		switch {
		case a.Priority != b.Priority:
			return b.Priority - a.Priority
		case !a.AvailableAt.Equal(b.AvailableAt):
			return a.AvailableAt.Compare(b.AvailableAt)
		}
		return int(a.Seq - b.Seq)
	})
}

// FetchBatch takes up to BatchSize eligible messages of the mailbox in one statement, in delivery
// order, at most one per key and each its key's head; an empty slice when none is eligible.
// Leased path: one write transaction runs ExpireLeases and one statement that leases them all,
// each with its own token and its attempt counted (the read before it is Fetch's). Leaseless
// path: one read-only peek; nothing changes until HandleBatch.
//
// With a batch of one (BatchSize 0 or 1) it is Fetch. A recording store records it as one
// consumer_fetch_batch step (leaseless: the peek then runs under the commit lock).
//
// Errors: ErrBusy, ErrClosed.
func (c *Consumer) FetchBatch(ctx context.Context) ([]Delivery, error) {
	if c.batch <= 1 {
		d, err := c.Fetch(ctx)
		if err != nil || d == nil {
			return nil, err
		}
		return []Delivery{*d}, nil
	}
	var ms []Message
	var err error
	switch {
	case c.path == PathLeaseless && c.st.rec != nil:
		// Recording: the peek runs under the commit lock and is recorded as this fetch.
		err = c.st.ExecTx(ctx, false, func(ctx context.Context) error {
			var err error
			if ms, err = c.st.peekBatch(ctx, c.mailbox, c.batch, false); err == nil {
				c.recordFetchBatch(ctx, true, ms)
			}
			return err
		})
	case c.path == PathLeaseless:
		ms, err = c.st.peekBatch(ctx, c.mailbox, c.batch, c.busy.Load())
	default:
		ms, err = c.leaseBatch(ctx)
	}
	c.busy.Store(err == nil && len(ms) > 0)
	if err != nil {
		return nil, fmt.Errorf("actordelivery: consumer %q: fetch batch: %w", c.mailbox, err)
	}
	c.partial.Store(len(ms) > 0 && len(ms) < c.batch)
	if len(ms) == 0 {
		return nil, nil
	}
	c.st.metrics.Count(CounterFetched, c.mailbox, int64(len(ms)))
	ds := make([]Delivery, len(ms))
	for i, m := range ms {
		ds[i] = Delivery{Message: m, Path: c.path}
	}
	return ds, nil
}

// recordFetchBatch records the batch fetch that returned ms as the protocol step of the
// transaction in ctx (consumer_fetch_batch), when the store records.
func (c *Consumer) recordFetchBatch(ctx context.Context, read bool, ms []Message) {
	if c.st.rec == nil {
		return
	}
	a := c.stepArgs()
	a.Size = c.batch
	if c.path == PathLeased {
		a.LeaseFor = c.leaseFor
	}
	var r EventResult
	for i := range ms {
		em := eventMessage(&ms[i])
		if c.path == PathLeaseless {
			em = peekedMessage(&ms[i])
		}
		r.Messages = append(r.Messages, *em)
	}
	recordStep(ctx, read, "consumer_fetch_batch", a, r)
	c.place(ctx)
}

// recordHandleBatch records the batch handle whose parts committed as the protocol step of the
// transaction in ctx (consumer_handle_batch), when the store records: each part's outcome (what
// its handler, or its Effects, returned, and whether the retry policy declined) and action, and
// the batch's one retry delay (batchDelay), which every retried message got.
func (c *Consumer) recordHandleBatch(ctx context.Context, parts []batchPart) {
	if c.st.rec == nil {
		return
	}
	a := c.stepArgs()
	a.Fault = "none"
	var r EventResult
	retried, declined := false, false
	for _, p := range parts {
		if p.out.Action == ActionRetried && !retried {
			a.RetryDelay, retried = p.delay, true
		}
		outcome, reason := p.outcome(true), ""
		if outcome == "fail_no_retry" {
			reason = stepReason(p.herr)
			declined = declined || reason != ""
		}
		a.Outcomes = append(a.Outcomes, outcome)
		a.Reasons = append(a.Reasons, reason)
		r.Actions = append(r.Actions, p.out.Action)
	}
	if !declined {
		a.Reasons = nil
	}
	recordStep(ctx, false, "consumer_handle_batch", a, r)
}

// outcome is the part's handler outcome as a batch step states it: ok, fail, or, when decided
// (the part's outcome committed), fail_no_retry for a failure the retry policy dead-lettered
// before the message's last attempt.
func (p *batchPart) outcome(decided bool) string {
	switch {
	case p.herr == nil:
		return "ok"
	case decided && p.out.Action == ActionDeadLettered && p.out.Attempt < p.m.MaxAttempts:
		return "fail_no_retry"
	}
	return "fail"
}

// recordFailedBatch records, when the store records, a batch handle whose transaction did not
// commit: one consumer_handle_batch read step with fault commit_fails and every action
// commit_failed, each outcome what its handler returned. The transaction changed nothing, but the
// worker no longer holds its batch: without the step, the worker's next fetch would read as a
// fetch while it still held one (Consumer.recordFailed).
func (c *Consumer) recordFailedBatch(ctx context.Context, parts []batchPart) {
	if c.st.rec == nil {
		return
	}
	a := c.stepArgs()
	a.Fault = "commit_fails"
	var r EventResult
	for _, p := range parts {
		a.Outcomes = append(a.Outcomes, p.outcome(false))
		r.Actions = append(r.Actions, ActionCommitFailed)
	}
	c.recordFailed(ctx, "consumer_handle_batch", a, r)
}

// leaseBatch is fetchLeased for a batch: the same read first while idle (not while recording:
// every fetch is a recorded step), then expire() and the batch lease in one write transaction.
func (c *Consumer) leaseBatch(ctx context.Context) ([]Message, error) {
	if c.st.rec == nil && !c.busy.Load() {
		expired, candidate, err := c.st.leasedWork(ctx, c.mailbox)
		if err != nil || (!expired && !candidate) {
			return nil, err
		}
	}
	var ms []Message
	err := c.st.ExecTx(ctx, false, func(ctx context.Context) error {
		if _, err := c.st.ExpireLeases(ctx); err != nil {
			return err
		}
		var err error
		if ms, err = c.st.leaseBatch(ctx, c.mailbox, c.leaseFor, c.batch); err == nil {
			c.recordFetchBatch(ctx, false, ms)
		}
		return err
	})
	return ms, err
}

// HandleBatch runs the handler on each delivery of ds, in order, outside any write transaction,
// then commits every message's outcome in one write transaction, in batch order, each as Handle
// would commit it: a success's Effects with its acknowledgement, a failure's retry or dead letter
// (the same fences and the same retry decision, EffectiveAttempts of the row as stored on the
// leaseless path). Each message's part is all or nothing: Effects that fail roll back that
// message's part alone (a savepoint) and count as its handler's failure; a message whose fence
// fails ("lease_lost") writes nothing. The outcomes are in the order of ds. The retry policy
// decides for each failed message whether to retry it; the retried messages of the batch all wait
// one delay, the one the policy gave the first of them (batchDelay).
//
// The commit first tries the fast form: one statement acknowledges every success, then their
// Effects run. When one of the Effects fails, that transaction is rolled back whole and the batch
// commits in the careful form, each message's part under a savepoint; the Effects of the batch
// then run a second time (the first run was rolled back, so only the second is written).
//
// A failed commit writes nothing at all: every message stays as FetchBatch left it (leased until
// its lease runs out, or unchanged for the next peek), and HandleBatch returns the error with no
// outcomes. So no message is ever acknowledged without its Effects, and none is half-handled.
//
// With a batch of one it is Handle.
//
// Errors: as Handle's; ErrInvalidArgument names the delivery at fault, and nothing is handled.
func (c *Consumer) HandleBatch(ctx context.Context, ds []Delivery) ([]Outcome, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	if c.batch <= 1 && len(ds) == 1 {
		out, err := c.Handle(ctx, &ds[0])
		if err != nil {
			return nil, err
		}
		return []Outcome{out}, nil
	}
	if len(ds) > max(c.batch, 1) {
		return nil, invalid("HandleBatch", "%d deliveries, the batch size is %d", len(ds), c.batch)
	}
	keys := make(map[string]bool, len(ds))
	for i := range ds {
		if err := c.checkDelivery(&ds[i]); err != nil {
			return nil, err
		}
		// Two messages of one key in a batch would commit the second's outcome against a state
		// its predecessor's outcome has not reached yet (semantics: one message per key).
		if k := ds[i].Message.Key; k != "" {
			if keys[k] {
				return nil, invalid("HandleBatch", "delivery %q: key %q appears twice in the batch", ds[i].Message.ID, k)
			}
			keys[k] = true
		}
	}
	parts := make([]batchPart, len(ds))
	for i := range ds {
		hm := ds[i].Message
		hm.Payload = append([]byte(nil), ds[i].Message.Payload...)
		parts[i].m = ds[i].Message
		parts[i].effects, parts[i].herr = c.handler(ctx, &hm)
	}
	// First the fast form: one statement acknowledges every success, then their Effects run.
	// If any Effects fail, that transaction rolls back whole and the careful form runs: each
	// message's part under a savepoint of its own, so only the failed part is undone.
	err := c.st.ExecTx(ctx, false, func(ctx context.Context) error {
		var shared batchDelay
		return c.commitFast(ctx, parts, &shared)
	})
	if errors.Is(err, errBatchEffectsFailed) {
		for i := range parts {
			parts[i].out, parts[i].delay = Outcome{}, 0
		}
		err = c.st.ExecTx(ctx, false, func(ctx context.Context) error {
			var shared batchDelay
			ts := c.st.txFrom(ctx)
			for i := range parts {
				if err := c.commitPart(ctx, ts, &parts[i], &shared); err != nil {
					return err
				}
			}
			c.recordHandleBatch(ctx, parts)
			return nil
		})
	}
	if err != nil {
		c.recordFailedBatch(ctx, parts)
		return nil, fmt.Errorf("actordelivery: consumer %q: handle batch of %d: %w", c.mailbox, len(ds), err)
	}
	outs := make([]Outcome, len(parts))
	for i, p := range parts {
		outs[i] = p.out
		c.logPart(ctx, p)
		switch p.out.Action {
		case ActionAcked:
			c.st.metrics.Count(CounterAcked, c.mailbox, 1)
		case ActionRetried:
			c.st.metrics.Count(CounterRetried, c.mailbox, 1)
		case ActionDeadLettered:
			c.st.metrics.Count(CounterDeadLettered, c.mailbox, 1)
		}
	}
	return outs, nil
}

// errBatchEffectsFailed ends commitFast's transaction when an Effects failed: the careful form
// then commits the batch.
var errBatchEffectsFailed = errors.New("an Effects of the batch failed")

// commitFast commits the batch's outcomes in the transaction in ctx: one statement acknowledges
// every message whose handler succeeded (each fenced by its token on the leased path), the
// Effects of each acknowledged one run, in batch order, and each failure's retry or dead letter
// is written as Handle writes it. It returns errBatchEffectsFailed when an Effects fails.
func (c *Consumer) commitFast(ctx context.Context, parts []batchPart, shared *batchDelay) error {
	var ok []*batchPart
	for i := range parts {
		if parts[i].herr == nil {
			ok = append(ok, &parts[i])
		}
	}
	acked, err := c.st.ackBatch(ctx, c.path, ok)
	if err != nil {
		return err
	}
	for i := range parts {
		p := &parts[i]
		switch {
		case p.herr != nil:
			if err := c.commitPart(ctx, nil, p, shared); err != nil {
				return err
			}
		case !acked[p.m.ID]:
			p.out = Outcome{Action: ActionLeaseLost}
		default:
			if p.effects != nil {
				if err := p.effects(ctx); err != nil {
					return errBatchEffectsFailed
				}
			}
			p.out = Outcome{Action: ActionAcked}
		}
	}
	c.recordHandleBatch(ctx, parts)
	return nil
}

// ackBatch acknowledges the messages of parts in one statement, in the transaction in ctx: on the
// leased path each only if it still carries its token, on the leaseless path each if it is still
// ready. It returns the ids it acknowledged.
func (s *Store) ackBatch(ctx context.Context, path Path, parts []*batchPart) (map[string]bool, error) {
	const op = "AckBatch"
	acked := make(map[string]bool, len(parts))
	if len(parts) == 0 {
		return acked, nil
	}
	err := s.write(ctx, op, func(ts *txState, now int64) error {
		var q strings.Builder
		q.WriteString("UPDATE {p}messages SET state = 'acked', token = NULL, lease_until = NULL, acked_at = :now\nWHERE state = 'ready' AND (")
		args := []any{named("now", now)}
		for i, p := range parts {
			if i > 0 {
				q.WriteString(" OR ")
			}
			fmt.Fprintf(&q, "id = :id_%d", i)
			args = append(args, named(fmt.Sprintf("id_%d", i), p.m.ID))
			if path == PathLeased {
				fmt.Fprintf(&q, " AND token = :token_%d", i)
				args = append(args, named(fmt.Sprintf("token_%d", i), p.m.Token))
			}
		}
		q.WriteString(")\nRETURNING id")
		rows, err := ts.tx.QueryContext(ctx, q.String(), args...)
		if err != nil {
			return s.dbErr(op, err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return s.dbErr(op, err)
			}
			acked[id] = true
		}
		if err := rows.Err(); err != nil {
			return s.dbErr(op, err)
		}
		return s.dbErr(op, rows.Close())
	})
	return acked, err
}

// batchDelay is the one retry delay of a batch's retried messages (docs/semantics.md, "Batches"):
// the delay the retry policy gave the first of them, in batch order. The policy still decides,
// message by message, whether to retry; a batch step states one delay (the trace format's
// consumer_handle_batch retry_delay), and so do the models.
type batchDelay struct {
	d   time.Duration
	set bool
}

// of returns the batch's delay, given the policy's delay for this message: the first retried
// message's delay becomes the batch's.
func (b *batchDelay) of(d time.Duration) time.Duration {
	if !b.set {
		b.d, b.set = d, true
	}
	return b.d
}

// batchPart is one message of a batch: what its handler returned and, once its part of the
// transaction ran, its outcome and retry delay.
type batchPart struct {
	m       Message
	effects Effects
	herr    error
	out     Outcome
	delay   time.Duration
}

// checkDelivery is Handle's check of a delivery before its handler runs.
func (c *Consumer) checkDelivery(d *Delivery) error {
	m := &d.Message
	switch {
	case d.Path != c.path:
		return invalid("HandleBatch", "delivery %q was fetched on the %v path, consumer runs %v", m.ID, d.Path, c.path)
	case m.Mailbox != c.mailbox:
		return invalid("HandleBatch", "delivery %q belongs to mailbox %q, consumer serves %q", m.ID, m.Mailbox, c.mailbox)
	case m.ID == "":
		return invalid("HandleBatch", "delivery has an empty message id")
	case c.path == PathLeased && m.Token == "":
		return invalid("HandleBatch", "leased delivery %q has no token", m.ID)
	}
	return nil
}

// commitPart writes one message's outcome inside the batch's transaction ts. A store error other
// than a failed fence is returned and fails the whole batch.
func (c *Consumer) commitPart(ctx context.Context, ts *txState, p *batchPart, shared *batchDelay) error {
	if p.herr == nil {
		acked, err := c.ackPart(ctx, ts, p)
		switch {
		case err != nil:
			return err
		case acked:
			p.out = Outcome{Action: ActionAcked}
			return nil
		case p.herr == nil:
			p.out = Outcome{Action: ActionLeaseLost}
			return nil
		}
		// The Effects failed and were rolled back: a failed delivery.
	}
	eff := min(EffectiveAttempts(p.m.Attempts, c.path), p.m.MaxAttempts)
	var action string
	err := c.decide(ctx, p.m, p.herr, &eff, &action, &p.delay, shared)
	switch {
	case err == nil:
		p.out = Outcome{Action: action, Attempt: eff}
	case lostOrLeft(err):
		p.out = Outcome{Action: ActionLeaseLost, Attempt: eff}
	default:
		return err
	}
	return nil
}

// ackPart acknowledges p's message and runs its Effects in ts. acked is false when the fence
// failed (nothing written) or the Effects failed: then p.herr is their error and their writes,
// acknowledgement included, are rolled back to the savepoint taken before them.
func (c *Consumer) ackPart(ctx context.Context, ts *txState, p *batchPart) (acked bool, err error) {
	ack := func() error {
		if c.path == PathLeased {
			return c.st.Ack(ctx, p.m.ID, p.m.Token)
		}
		return c.st.AckByID(ctx, p.m.ID)
	}
	if p.effects == nil {
		// One single-row update: it changes its row or nothing, so it needs no savepoint.
		if err := ack(); err != nil {
			if lostOrLeft(err) {
				return false, nil
			}
			return false, err
		}
		return true, nil
	}
	if _, err := ts.tx.ExecContext(ctx, "SAVEPOINT batch_part"); err != nil {
		return false, c.st.dbErr("savepoint", err)
	}
	// What a rollback to the savepoint must also undo: the wake-ups the part scheduled.
	woken, after := maps.Clone(ts.woken), len(ts.afterCommit)
	err = ack()
	if err == nil {
		if eerr := p.effects(ctx); eerr != nil {
			p.herr = eerr
			err = errEffectsFailed
		}
	}
	if err == nil {
		if _, err := ts.tx.ExecContext(ctx, "RELEASE SAVEPOINT batch_part"); err != nil {
			return false, c.st.dbErr("release savepoint", err)
		}
		return true, nil
	}
	if _, rerr := ts.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT batch_part"); rerr != nil {
		return false, c.st.dbErr("rollback to savepoint", rerr)
	}
	if _, rerr := ts.tx.ExecContext(ctx, "RELEASE SAVEPOINT batch_part"); rerr != nil {
		return false, c.st.dbErr("release savepoint", rerr)
	}
	ts.woken, ts.afterCommit = woken, ts.afterCommit[:after]
	if errors.Is(err, errEffectsFailed) || lostOrLeft(err) {
		return false, nil
	}
	return false, err
}

// logPart logs a committed part as Handle does.
func (c *Consumer) logPart(ctx context.Context, p batchPart) {
	switch p.out.Action {
	case ActionLeaseLost:
		c.log.LogAttrs(ctx, slog.LevelInfo, "actordelivery: acknowledgement lost, handler effects not written",
			attrMailbox(c.mailbox), attrMessageID(p.m.ID), slog.String(logKeyPath, c.path.String()))
	case ActionRetried, ActionDeadLettered:
		lvl := slog.LevelDebug
		if p.out.Action == ActionDeadLettered {
			lvl = slog.LevelWarn
		}
		c.log.LogAttrs(ctx, lvl, "actordelivery: delivery failed", attrMailbox(c.mailbox), attrMessageID(p.m.ID),
			slog.Int(logKeyAttempt, p.out.Attempt), slog.Int(logKeyMaxAttempts, p.m.MaxAttempts), slog.String(logKeyAction, p.out.Action),
			attrDuration(logKeyDelay, p.delay), attrError(p.herr))
	}
}

// StepBatch fetches a batch and handles it; an empty mailbox gives no outcomes. After a partly
// filled batch it first waits BatchWait (or until ctx ends).
func (c *Consumer) StepBatch(ctx context.Context) ([]Outcome, error) {
	if c.batch > 1 && c.batchWait > 0 && c.partial.Load() {
		t := time.NewTimer(c.batchWait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	ds, err := c.FetchBatch(ctx)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	return c.HandleBatch(ctx, ds)
}

// records reports whether the store records its events (Options.Recorder or a commit log).
func (s *Store) records() bool { return s.rec != nil }

// stepBatches delivers claimed rows DeliverBatch at a time (DeliverBatch), and returns how many
// were delivered and the joined errors.
func (p *Publisher) stepBatches(ctx context.Context, rows []OutboxRow) (int, error) {
	n := 0
	var errs []error
	for len(rows) > 0 {
		k := min(len(rows), p.deliverBatch)
		res, err := p.DeliverBatch(ctx, rows[:k])
		rows = rows[k:]
		for _, r := range res {
			if r.Action == ActionDelivered {
				n++
			}
		}
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, ErrClosed) || ctx.Err() != nil {
				break
			}
		}
	}
	return n, errors.Join(errs...)
}

// DeliverBatch delivers claimed rows (at most DeliverBatch of them) in one folded transaction:
// every row's Enqueue and OutboxComplete. A row whose claim is lost contributes nothing (its
// enqueue is rolled back to a savepoint) and reports "claim_lost"; the others commit. A row Check
// refuses is dead-lettered first, on its own, as Deliver does. When the transaction fails, nothing
// of it is written: every row reports "commit_failed" and is released as after Deliver's
// "commit_failed" (OutboxFail after RetryDelay, or a dead letter when it was the row's last
// attempt), except a row the transaction found under a lost claim, which reports "claim_lost"
// and is left as it is. The results are in the order of rows.
//
// A publisher that delivers row by row (ModeSplit, DeliverBatch 0 or 1) delivers each row with
// Deliver. A recording store records the batch as one publisher_deliver_batch step; rows of
// several claims (which one Claim never returns) it delivers as one batch per claim.
//
// Errors: ErrInvalidArgument (a row without id or claim token, more rows than DeliverBatch), and
// the store's errors, wrapped.
func (p *Publisher) DeliverBatch(ctx context.Context, rows []OutboxRow) ([]DeliveryResult, error) {
	res := make([]DeliveryResult, len(rows))
	if p.deliverBatch <= 1 {
		var errs []error
		for i, row := range rows {
			var err error
			res[i], err = p.Deliver(ctx, row)
			errs = append(errs, err)
		}
		return res, errors.Join(errs...)
	}
	if len(rows) > p.deliverBatch {
		return nil, invalid("DeliverBatch", "%d rows, the batch size is %d", len(rows), p.deliverBatch)
	}
	for _, row := range rows {
		if row.ID == "" {
			return nil, invalid("DeliverBatch", "outbox row id is empty")
		}
		if row.ClaimToken == "" {
			return nil, invalid("DeliverBatch", "outbox row %q has no claim token", row.ID)
		}
	}
	if k := claimRun(rows); k < len(rows) && p.st.(interface{ records() bool }).records() {
		// A recorded batch step names one claim token (the trace format's
		// publisher_deliver_batch): on a recording store rows of several claims are delivered
		// as one batch per run of rows of one claim.
		var errs []error
		for i := 0; i < len(rows); {
			k := i + claimRun(rows[i:])
			r, err := p.DeliverBatch(ctx, rows[i:k])
			copy(res[i:k], r)
			errs = append(errs, err)
			i = k
		}
		return res, errors.Join(errs...)
	}
	var errs []error
	fold := make([]int, 0, len(rows)) // the rows Check accepted
	for i, row := range rows {
		if p.check != nil {
			if cerr := p.check(ctx, row); cerr != nil {
				var err error
				res[i], err = p.undeliverable(ctx, row, cerr)
				errs = append(errs, err)
				if res[i].Action == ActionDeadLettered || res[i].Action == ActionCommitFailed {
					p.metrics.Count(CounterOutboxFailed, row.Target, 1)
				}
				continue
			}
		}
		fold = append(fold, i)
	}
	if len(fold) == 0 {
		return res, errors.Join(errs...)
	}
	collisions := make([]string, len(rows))
	// ran is set when the transaction's function reached its end: every row's part then ran, and
	// a row it found under a lost claim stays claim_lost even if the commit fails (a lost claim
	// never comes back, so what the transaction read holds; nothing of the row is released).
	ran := false
	err := p.st.ExecTx(ctx, false, func(ctx context.Context) error {
		clear(collisions) // ExecTx may run this function again
		ran = false
		ts, _ := ctx.Value(txKey{}).(*txState)
		if ts == nil {
			return fmt.Errorf("actordelivery: publisher: batch transaction has no store transaction")
		}
		for _, i := range fold {
			var err error
			res[i], err = p.foldPart(ctx, ts, rows[i], &collisions[i])
			if err != nil {
				return err
			}
		}
		p.recordBatch(ctx, rows, fold, res)
		ran = true
		return nil
	})
	if err != nil {
		for _, i := range fold {
			if ran && res[i].Action == ActionClaimLost {
				continue
			}
			res[i].Action = ActionCommitFailed
			errs = append(errs, p.failed(ctx, rows[i], "fold batch delivery", err), p.release(ctx, rows[i]))
			p.metrics.Count(CounterOutboxFailed, rows[i].Target, 1)
		}
		return res, errors.Join(errs...)
	}
	for _, i := range fold {
		switch res[i].Action {
		case ActionDelivered:
			p.woke(rows[i].Target)
			p.metrics.Count(CounterOutboxDelivered, rows[i].Target, 1)
		case ActionDeadLettered:
			res[i] = p.collided(ctx, rows[i], collisions[i])
			p.metrics.Count(CounterOutboxFailed, rows[i].Target, 1)
		case ActionClaimLost:
			p.log.LogAttrs(ctx, slog.LevelInfo, "actordelivery: outbox claim lost, delivery rolled back", p.rowAttrs(rows[i])...)
		}
	}
	return res, errors.Join(errs...)
}

// claimRun is the number of rows at the start of rows that carry the first row's claim token.
func claimRun(rows []OutboxRow) int {
	for i, row := range rows {
		if row.ClaimToken != rows[0].ClaimToken {
			return i
		}
	}
	return len(rows)
}

// recordBatch records the folded delivery of rows[fold] (results res) as the protocol step of the
// transaction in ctx (publisher_deliver_batch), when the store records. The rows of one claim
// share its token, and the step names it once.
func (p *Publisher) recordBatch(ctx context.Context, rows []OutboxRow, fold []int, res []DeliveryResult) {
	s := recordingStore(ctx)
	if s == nil {
		return
	}
	if p.id.Load() == 0 {
		p.id.CompareAndSwap(0, s.publishers.Add(1))
	}
	a := EventArgs{Publisher: int(p.id.Load()), Token: rows[fold[0]].ClaimToken, Fault: "none"}
	var r EventResult
	for _, i := range fold {
		a.IDs = append(a.IDs, rows[i].ID)
		r.Actions = append(r.Actions, res[i].Action)
		r.Duplicates = append(r.Duplicates, res[i].Duplicate)
	}
	recordStep(ctx, false, "publisher_deliver_batch", a, r)
}

// foldPart is one row of a folded batch in ts: the enqueue and the completion (or, for an id that
// collides with another mailbox's message, the dead letter, and *collision names that mailbox),
// or nothing when the claim is lost (rolled back to the savepoint taken before the enqueue).
func (p *Publisher) foldPart(ctx context.Context, ts *txState, row OutboxRow, collision *string) (DeliveryResult, error) {
	s := ts.store
	if _, err := ts.tx.ExecContext(ctx, "SAVEPOINT batch_part"); err != nil {
		return DeliveryResult{}, s.dbErr("savepoint", err)
	}
	woken, after := maps.Clone(ts.woken), len(ts.afterCommit)
	dup, err := p.st.Enqueue(ctx, rowMessage(row))
	if err != nil {
		return DeliveryResult{Duplicate: dup}, err
	}
	// As a single fold delivery: a duplicate id that is another mailbox's message dead-letters
	// the row instead of completing it.
	other, err := p.finish(ctx, row, dup)
	switch {
	case err == nil:
		if _, err := ts.tx.ExecContext(ctx, "RELEASE SAVEPOINT batch_part"); err != nil {
			return DeliveryResult{}, s.dbErr("release savepoint", err)
		}
		if other != "" {
			*collision = other
			return DeliveryResult{Action: ActionDeadLettered, Duplicate: true}, nil
		}
		return DeliveryResult{Action: ActionDelivered, Duplicate: dup}, nil
	case errors.Is(err, ErrClaimLost):
		if _, err := ts.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT batch_part"); err != nil {
			return DeliveryResult{}, s.dbErr("rollback to savepoint", err)
		}
		if _, err := ts.tx.ExecContext(ctx, "RELEASE SAVEPOINT batch_part"); err != nil {
			return DeliveryResult{}, s.dbErr("release savepoint", err)
		}
		ts.woken, ts.afterCommit = woken, ts.afterCommit[:after]
		return DeliveryResult{Action: ActionClaimLost, Duplicate: dup}, nil
	}
	return DeliveryResult{Duplicate: dup}, err
}
