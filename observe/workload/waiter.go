package workload

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/traces"
)

// The wake-driven mailbox (docs/semantics.md, "Wake-ups"). Its one consumer waits on the store's
// wake-ups with a poll interval longer than any run, so it fetches only when a wake ends its wait
// (and once when it starts): a wake that comes before its commit, or never, leaves the message
// ready until the run ends. The consumer records every wake it receives, and the model checks
// that each followed the commit of its message. On PostgreSQL the consumer has a store of its
// own on the same tables, so its wakes are the enqueuing store's NOTIFYs.
//
// A second consumer, of mailbox w2, is woken the same way but polls every few ticks, so its
// history holds poll ticks beside its wakes: the model then checks the second wake rule at each
// tick (a woken consumer fetches before its next poll tick), where w1's bound checks it only at
// the end of a run.
const (
	wakeMailbox = "w1"
	// tickMailbox is the mailbox of the consumer that polls as well as waits.
	tickMailbox = "w2"
	// wakeBound is how long, in logical seconds, a message of the wake-driven mailbox may stay
	// ready before the run's end without being a missed wake: a woken consumer fetches at once,
	// and the logical clock stops with the process, so the bound leaves room for scheduling only.
	wakeBound = 10
	// wakeAllowance is the least real time the bound allows. The logical clock runs on the wall
	// clock (a second per Config.Tick), and on a loaded 2-core machine a woken consumer can wait
	// most of a second to run: at load 17, 2 of 3 batched PostgreSQL runs left a message ready
	// 18 and 52 logical seconds (0.4 and 1 s) with its consumer woken and starved.
	wakeAllowance = 2 * time.Second
	// waiterPoll is the consumer's poll interval: longer than any run.
	waiterPoll = 1000 * time.Hour
)

// waiter is the wake-driven mailbox's consumer, run by RunWorkers (which records its wakes).
type waiter struct {
	r     *run
	st    *actordelivery.Store // the waiter's own store on PostgreSQL; r.st on SQLite
	own   bool
	clock actordelivery.Clock
}

// startWaiter starts the waiter, with a store of its own on PostgreSQL recording to rec.
func (r *run) startWaiter(rec actordelivery.Recorder, clock actordelivery.Clock) (*waiter, error) {
	w := &waiter{r: r, st: r.st, clock: clock}
	if r.cfg.Backend == actordelivery.BackendPostgres {
		st, err := actordelivery.OpenBackend(r.cfg.Backend, r.cfg.Target, actordelivery.Options{Clock: clock, Recorder: rec,
			TablePrefix: r.cfg.TablePrefix, CommitLog: r.cfg.CommitLog})
		if err != nil {
			return nil, fmt.Errorf("workload: waiter: %w", err)
		}
		w.st, w.own = st, true
	}
	n := r.cfg.LeasedWorkers + len(leaselessMailboxes) + 1 + 100*r.cfg.Incarnation
	h := func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) {
		atomic.AddInt64(&r.stats.Woken, 1)
		return nil, nil
	}
	opts := actordelivery.ConsumerOptions{Path: actordelivery.PathLeaseless, PollInterval: waiterPoll, MaxPollInterval: waiterPoll, Worker: n}
	ticking := actordelivery.ConsumerOptions{Path: actordelivery.PathLeaseless, PollInterval: 2 * r.cfg.Tick,
		MaxPollInterval: 4 * r.cfg.Tick, Worker: n + 1}
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		err := actordelivery.RunWorkers(r.stop, w.st, []string{wakeMailbox}, 1, h, opts)
		if err != nil {
			r.fail("waiter", err)
		}
	}()
	go func() {
		defer r.wg.Done()
		err := actordelivery.RunWorkers(r.stop, w.st, []string{tickMailbox}, 1,
			func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) { return nil, nil }, ticking)
		if err != nil {
			r.fail("waiter", err)
		}
	}()
	return w, nil
}

// finish closes the waiter's own store and, when check is set (a run of every role in one
// process: its enqueues reach the waiter's store as local wakes or NOTIFYs), lists the messages
// of the wake-driven mailbox still ready after they became available for longer than the bound:
// wakeBound logical seconds, and at least wakeAllowance of real time.
func (w *waiter) finish(check bool) error {
	var err error
	if check {
		ms, lerr := w.r.st.ListMessages(w.r.ctx, wakeMailbox)
		if lerr != nil {
			err = fmt.Errorf("workload: waiter: %w", lerr)
		}
		now := w.clock.Now()
		bound := max(wakeBound*time.Second, time.Duration(wakeAllowance/w.r.cfg.Tick)*time.Second)
		for _, m := range ms {
			if m.State == actordelivery.StateReady && now.Sub(m.AvailableAt) > bound {
				w.r.stats.Unwoken = append(w.r.stats.Unwoken, fmt.Sprintf("%s (ready since t=%d, the run ended at t=%d)",
					m.ID, traces.Seconds(m.AvailableAt), traces.Seconds(now)))
			}
		}
	}
	if w.own {
		err = errors.Join(err, w.st.Close())
	}
	return err
}
