package actordelivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// RunWorkers runs n workers that deliver the messages of mailboxes to h, until ctx ends or the
// store is closed. Every worker uses a Consumer built from opts (opts.Mailbox must be empty; the
// rest applies to every mailbox).
//
// Every worker is a worker of its own in a recording store's events: it numbers its Consumers
// opts.Worker + i for worker i (i from 0) when opts.Worker is set, and takes the store's next
// automatic number otherwise.
//
// Which worker serves which mailbox:
//   - PathLeased: every worker serves every mailbox, in turn, starting at a different one (worker
//     i starts at mailbox i mod len(mailboxes)), so n bounds how many handlers run at once and
//     the leases keep two workers from taking the same message.
//   - PathLeaseless: exactly one worker may serve a mailbox, so mailbox j belongs to worker
//     j mod n alone; with more workers than mailboxes, the extra ones are not started.
//
// A worker steps each of its mailboxes once per round (fetch, then handle); after a round in which
// every mailbox was idle, or a step failed, it waits as Consumer.Run does (PollInterval doubling up
// to MaxPollInterval, reset after work) and wakes at once when the store signals an enqueue into
// one of its mailboxes.
//
// When the store has a Metrics (Options.Metrics), RunWorkers also reports each mailbox's
// QueueDepth to it when it starts and then every MaxPollInterval.
//
// Drain: when ctx ends, no worker starts a new fetch; a fetch already under way completes, and
// every message fetched is handled and its outcome committed, for up to opts.DrainTimeout (zero:
// 10s). Until then fetch, the handler, its Effects and the commit run with a context that keeps
// ctx's values but not its cancellation, so cancelling ctx never interrupts a delivery half-way.
// When the drain timeout runs out, that context is cancelled with cause ErrDrainTimeout: a handler
// should return then. A delivery whose commit has not begun commits nothing (no acknowledgement,
// no retry, no Effects); one under way commits whole or not at all, as every commit does.
// Its message stays as stored: on the leased path under its lease, which runs out and is taken
// again (docs/semantics.md, "Consumer"); on the leaseless path unchanged, to be peeked again.
// RunWorkers still waits for such a handler to return: a handler that ignores its context keeps
// RunWorkers from returning. It returns once every worker has stopped: nil after ctx ended,
// ErrClosed (wrapped) when the store was closed under the workers.
//
// A recording store (Options.Recorder) records the stop and the drain (docs/semantics.md,
// "Shutdown"): once ctx ends, one transaction holding a worker_stop event of every worker, whose
// place in the commit order is the stop; and when a worker returns after the stop, its
// worker_drain event, outcome drained, or timed_out when the drain timeout cut off its delivery. A store closed under the workers records no drain.
//
// Errors: ErrInvalidArgument (nil store or handler, n < 1, no mailboxes, an empty or repeated
// mailbox name, opts.Mailbox set, or any error NewConsumer gives for opts), ErrClosed.
func RunWorkers(ctx context.Context, st *Store, mailboxes []string, n int, h Handler, opts ConsumerOptions) error {
	const op = "RunWorkers"
	switch {
	case st == nil:
		return invalid(op, "store is nil")
	case n < 1:
		return invalid(op, "worker count %d is below 1", n)
	case len(mailboxes) == 0:
		return invalid(op, "no mailboxes")
	case opts.Mailbox != "":
		return invalid(op, "ConsumerOptions.Mailbox is %q; the mailboxes are RunWorkers' argument", opts.Mailbox)
	}
	seen := make(map[string]bool, len(mailboxes))
	for _, mb := range mailboxes {
		if seen[mb] {
			return invalid(op, "mailbox %q is listed twice", mb)
		}
		seen[mb] = true
	}
	// Which mailboxes each worker serves, in the order it steps them.
	var groups [][]string
	if opts.Path == PathLeaseless {
		groups = make([][]string, min(n, len(mailboxes)))
		for j, mb := range mailboxes {
			groups[j%len(groups)] = append(groups[j%len(groups)], mb)
		}
	} else {
		groups = make([][]string, n)
		for i := range groups {
			start := i % len(mailboxes)
			groups[i] = append(append([]string(nil), mailboxes[start:]...), mailboxes[:start]...)
		}
	}
	// Every worker has Consumers of its own, one per mailbox it serves, all under one worker
	// number: a recording store then records each worker's fetch and handle as that worker's,
	// never interleaved with another's under the same number.
	workers := make([][]*Consumer, len(groups))
	for i, g := range groups {
		o := opts
		if opts.Worker != 0 {
			o.Worker = opts.Worker + i
		} else {
			o.Worker = int(st.workers.Add(1))
		}
		for _, mb := range g {
			o.Mailbox = mb
			c, err := NewConsumer(st, h, o)
			if err != nil {
				return fmt.Errorf("actordelivery: %s: mailbox %q: %w", op, mb, err)
			}
			workers[i] = append(workers[i], c)
		}
	}
	first := workers[0][0]
	var wg sync.WaitGroup
	if _, nop := st.metrics.(NopMetrics); !nop {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sampleDepths(ctx, st, mailboxes, first.maxPoll)
		}()
	}
	work, stopDrain := drainContext(ctx, first.drain)
	defer stopDrain()
	stopped, stopRecording := recordStop(ctx, st, workers)
	defer stopRecording()
	errs := make([]error, len(workers))
	for i, g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var cut *Consumer
			cut, errs[i] = runWorker(ctx, work, st, g)
			if errs[i] == nil {
				recordDrain(ctx, st, stopped, g, cut != nil)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("actordelivery: %s: %w", op, err)
		}
	}
	return nil
}

// drainContext returns the context RunWorkers' deliveries run with: ctx's values, not cancelled
// when ctx ends but timeout later (real time), with cause ErrDrainTimeout. stop releases it.
func drainContext(ctx context.Context, timeout time.Duration) (work context.Context, stop func()) {
	work, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var mu sync.Mutex
	var timer *time.Timer
	stopAfter := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		timer = time.AfterFunc(timeout, func() { cancel(ErrDrainTimeout) })
	})
	return work, func() {
		stopAfter()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel(context.Canceled)
	}
}

// recordStop makes a recording store record, once ctx ends, a worker_stop of every worker of
// groups (its consumers share its number), in one transaction: its place in the commit order is the group's stop. stopped is
// closed once that record is written (or failed); stop releases it. A store that does not record
// gets a closed channel and no transaction.
func recordStop(ctx context.Context, st *Store, groups [][]*Consumer) (stopped <-chan struct{}, stop func()) {
	done := make(chan struct{})
	if st.rec == nil {
		close(done)
		return done, func() {}
	}
	release := context.AfterFunc(ctx, func() {
		defer close(done)
		var evs []Event
		for _, g := range groups {
			evs = append(evs, Event{Op: "worker_stop", Args: EventArgs{Worker: g[0].worker}})
		}
		recordWorkerEvents(ctx, st, groups[0][0], evs)
	})
	return done, func() {
		if !release() {
			<-done // the record has begun: let it end before RunWorkers returns
		}
	}
}

// recordDrain makes a recording store record the end of a stopped worker, after the group's stop
// is recorded: a worker_drain, outcome timed_out when the drain timeout cut off its delivery (cut
// is true), drained otherwise.
func recordDrain(ctx context.Context, st *Store, stopped <-chan struct{}, cs []*Consumer, cut bool) {
	if st.rec == nil {
		return
	}
	<-stopped
	outcome := "drained"
	if cut {
		outcome = "timed_out"
	}
	recordWorkerEvents(ctx, st, cs[0], []Event{{Op: "worker_drain", Args: EventArgs{Worker: cs[0].worker, Outcome: outcome}}})
}

// recordWorkerEvents commits evs as the protocol steps of one transaction (with ctx's values, not
// its cancellation). A store closed meanwhile records nothing; the failure is logged.
func recordWorkerEvents(ctx context.Context, st *Store, c *Consumer, evs []Event) {
	ctx = context.WithoutCancel(ctx)
	err := st.ExecTx(ctx, false, func(ctx context.Context) error {
		ts, _ := ctx.Value(txKey{}).(*txState)
		if ts == nil || !ts.recording {
			return nil
		}
		ts.step = true
		ts.events = ts.events[:0]
		for _, ev := range evs {
			ts.events = append(ts.events, Event{At: fromMillis(ts.now), Op: ev.Op, Args: st.stamp(ev.Args)})
		}
		return nil
	})
	if err != nil {
		c.log.LogAttrs(ctx, slog.LevelWarn, "actordelivery: recorder: worker stop or drain not recorded", attrError(err))
	}
}

// runWorker serves its consumers' mailboxes round by round until ctx ends (nil) or the store is
// closed (ErrClosed). Its deliveries run with work (see drainContext and RunWorkers' drain rule).
// cut is the consumer whose delivery the drain timeout cut off, if any.
func runWorker(ctx, work context.Context, st *Store, cs []*Consumer) (cut *Consumer, err error) {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.mailbox
	}
	sub, cancel := st.subscribeMailboxes(names)
	defer cancel()
	first := cs[0]
	wait := first.poll
	var ticked []*Consumer // the consumers whose step this round completed (wake.go)
	for {
		busy, failed := false, false
		ticked = ticked[:0]
		for _, c := range cs {
			if ctx.Err() != nil {
				return nil, nil
			}
			out, err := c.Step(work)
			if err == nil {
				ticked = append(ticked, c)
			}
			switch {
			case err != nil && errors.Is(context.Cause(work), ErrDrainTimeout):
				c.log.LogAttrs(ctx, slog.LevelWarn, "actordelivery: drain timeout: delivery abandoned, nothing committed",
					attrMailbox(c.mailbox), attrError(err))
				return c, nil
			case err != nil && errors.Is(err, ErrClosed):
				return nil, err
			case err != nil:
				failed = true
				c.log.LogAttrs(ctx, slog.LevelError, "actordelivery: worker step failed", attrMailbox(c.mailbox), attrError(err), attrRetryIn(wait))
			case out.Action != ActionIdle:
				busy = true
			}
		}
		if busy && !failed {
			wait = first.poll
			continue
		}
		if !waitIdle(ctx, wait, st, sub, cs, ticked) {
			return nil, nil
		}
		if !busy {
			wait = min(2*wait, first.maxPoll)
		}
	}
}

// sampleDepths reports each mailbox's queue depth to the store's Metrics at once and then every
// interval (real time) until ctx ends. A failed read is skipped: the next sample tries again.
func sampleDepths(ctx context.Context, st *Store, mailboxes []string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for _, mb := range mailboxes {
			if n, err := st.QueueDepth(ctx, mb); err == nil {
				st.metrics.QueueDepth(mb, n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
