package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/brokenstore"
	"github.com/pconform/pconform/internal/targets"
)

// run is what the loops of one Run share: the store, the variant's calls, the end of the run and
// the counters. Each role is a type of its own below; its step is one iteration of its loop.
type run struct {
	cfg   Config
	st    *actordelivery.Store
	parts targets.StoreParts
	calls *storeCalls
	// stop ends the run: every loop checks it between steps, and waits end on it. The store
	// calls themselves run on ctx, which the budget never cancels, so a step in flight when the
	// budget runs out finishes and commits (or fails) for a reason of its own: the run's end
	// cuts no step off half-way.
	stop   context.Context
	cancel context.CancelFunc
	ctx    context.Context
	stats  *Stats
	// ids numbers the enqueued messages and outbox rows.
	ids  atomic.Int64
	wg   sync.WaitGroup
	errs chan error
}

func newRun(ctx context.Context, cfg Config, st *actordelivery.Store, parts targets.StoreParts, calls *storeCalls) *run {
	r := &run{cfg: cfg, st: st, parts: parts, calls: calls, ctx: context.WithoutCancel(ctx), stats: &Stats{}, errs: make(chan error, 64)}
	r.stop, r.cancel = context.WithTimeout(ctx, cfg.Budget)
	if cfg.Incarnation > 0 {
		r.ids.Store(int64(cfg.Incarnation) * 1_000_000) // ids of its own: an enqueue is never a duplicate by accident
	}
	return r
}

// fail records a loop's error and ends the run; an error of the run's own end is none.
func (r *run) fail(who string, err error) {
	if r.stop.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	select {
	case r.errs <- fmt.Errorf("workload: %s: %w", who, err):
	default:
	}
	r.cancel()
}

// rng is the random source of one stream of the run (a new one per incarnation).
func (r *run) rng(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(r.cfg.Seed), stream+10000*uint64(r.cfg.Incarnation)))
}

// loop runs step in a goroutine of its own until the run ends or step fails.
func (r *run) loop(who string, stream uint64, step func(rng *rand.Rand) error) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		rng := r.rng(stream)
		for r.stop.Err() == nil {
			if err := step(rng); err != nil {
				r.fail(who, err)
				return
			}
		}
	}()
}

// sleep waits d, or until the run ends.
func (r *run) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.stop.Done():
	case <-t.C:
	}
}

// pause sleeps a random time up to most.
func (r *run) pause(rng *rand.Rand, most time.Duration) {
	r.sleep(time.Duration(rng.Int64N(int64(most) + 1)))
}

// storeCalls are the store calls a rule-changing variant runs from its copy (recorded like the
// store's own) where its rule changes them: lease extension, processed-message marks, checkpoint
// saves, outbox claims, purges and redrives. The copy runs on a connection of its own, which
// contends with the store's for SQLite's writer lock, so every other call stays on the store.
type storeCalls struct {
	st        *actordelivery.Store
	elig      *brokenstore.Eligibility // nil for a variant that changes no rule
	rules     brokenstore.Rules
	recording brokenstore.Recording
}

func (c *storeCalls) extend(ctx context.Context, id, token string, d time.Duration) error {
	if c.rules.ExtendIgnoresToken {
		return c.elig.ExtendRecorded(ctx, c.recording, id, token, d)
	}
	return c.st.ExtendLease(ctx, id, token, d)
}

func (c *storeCalls) markProcessed(ctx context.Context, consumer, id string, ttl time.Duration) (bool, error) {
	if c.rules.ProcessedTTLInverted {
		return c.elig.MarkProcessedRecorded(ctx, c.recording, consumer, id, ttl)
	}
	return c.st.MarkProcessed(ctx, consumer, id, ttl)
}

func (c *storeCalls) saveCheckpoint(ctx context.Context, actor string, state []byte, expect int64) (int64, error) {
	if c.rules.CheckpointFirstSaveResets {
		return c.elig.SaveCheckpointRecorded(ctx, c.recording, actor, state, expect)
	}
	return c.st.SaveCheckpoint(ctx, actor, state, expect)
}

func (c *storeCalls) purge(ctx context.Context, olderThan, horizon time.Duration, batch int) error {
	var err error
	if c.rules.PurgeForgetsIDs {
		_, err = c.elig.PurgeRecorded(ctx, c.recording, olderThan, horizon, batch)
	} else {
		_, err = c.st.Purge(ctx, olderThan, horizon, batch)
	}
	return err
}

func (c *storeCalls) redrive(ctx context.Context, id, reason string) error {
	if c.rules.RedriveKeepsAttempts {
		return c.elig.RedriveRecorded(ctx, c.recording, id, reason)
	}
	return c.st.Redrive(ctx, id, reason)
}

// claim is the variant's outbox claim, nil when the store's own runs.
func (c *storeCalls) claim() func(ctx context.Context, limit int, claimFor time.Duration) ([]actordelivery.OutboxRow, error) {
	if !c.rules.ClaimIgnoresMaxDelivery {
		return nil
	}
	return func(ctx context.Context, limit int, claimFor time.Duration) ([]actordelivery.OutboxRow, error) {
		return c.elig.ClaimRecorded(ctx, c.recording, limit, claimFor)
	}
}

// ticker moves the run's logical clock one second per tick.
type ticker struct {
	r     *run
	clock *actordelivery.ManualClock
}

func (t ticker) step(*rand.Rand) error {
	tm := time.NewTimer(t.r.cfg.Tick)
	defer tm.Stop()
	select {
	case <-t.r.stop.Done():
	case <-tm.C:
		t.clock.Advance(time.Second)
	}
	return nil
}

// enqueuer enqueues messages into every mailbox (some keyed, some delayed, some prioritized) and,
// in a loop of its own, outbox rows for the publishers.
type enqueuer struct{ r *run }

var keys = []string{"", "", "k1", "k2"}

func (e *enqueuer) message(rng *rand.Rand) error {
	r := e.r
	r.pause(rng, r.cfg.Tick/2)
	n := r.ids.Add(1)
	mailboxes := allMailboxes()
	m := actordelivery.NewMessage{Mailbox: mailboxes[rng.IntN(len(mailboxes))], ID: fmt.Sprintf("m%d", n),
		Key: keys[rng.IntN(4)], Priority: rng.IntN(2), MaxAttempts: 1 + rng.IntN(3),
		Delay: time.Duration(rng.IntN(3)) * time.Second, Payload: []byte("x")}
	if m.Mailbox == wakeMailbox {
		m.Delay = 0 // a delayed message's wake comes before it is eligible, and the waiter does not poll
		// As an application does: one enqueue in six inside a transaction held open a moment
		// after it, one in six inside one that then rolls back. A wake sent outside its
		// transaction shows in either: the waiter records a wake before its message's commit,
		// or for a message never committed.
		var hold time.Duration
		switch rng.IntN(6) {
		case 0:
			hold = max(r.cfg.Tick/4, time.Millisecond)
		case 1:
			err := brokenstore.Enqueuer{Store: r.st}.Enqueue(r.ctx, m, time.Millisecond, true)
			if errors.Is(err, brokenstore.ErrRolledBack) {
				return nil
			}
			return err
		}
		if hold > 0 {
			err := brokenstore.Enqueuer{Store: r.st}.Enqueue(r.ctx, m, hold, false)
			if err == nil {
				atomic.AddInt64(&r.stats.Enqueued, 1)
			}
			return err
		}
	}
	_, err := r.st.Enqueue(r.ctx, m)
	if err == nil {
		atomic.AddInt64(&r.stats.Enqueued, 1)
	}
	return err
}

func (e *enqueuer) outboxRow(rng *rand.Rand) error {
	r := e.r
	r.pause(rng, r.cfg.Tick/2)
	n := r.ids.Add(1)
	mailboxes := allMailboxes()
	row := actordelivery.OutboxMessage{ID: fmt.Sprintf("o%d", n), Target: mailboxes[rng.IntN(len(mailboxes))],
		Key: keys[rng.IntN(4)], MaxAttempts: 1 + rng.IntN(3), Payload: []byte("x")}
	switch rng.IntN(12) {
	case 0, 1, 2: // one row in four can never be delivered: it runs out of delivery attempts
		row.Target, row.MaxDeliveryAttempts = missingTarget, 1+rng.IntN(2)
	case 3: // one in twelve does not decode: the publisher dead-letters it at once
		row.Payload = []byte(undecodable)
	}
	_, err := r.st.OutboxEnqueue(r.ctx, row)
	if err == nil {
		atomic.AddInt64(&r.stats.OutboxEnqueued, 1)
	}
	return err
}

func allMailboxes() []string {
	return append(append(append([]string{}, leasedMailboxes...), leaselessMailboxes...), wakeMailbox, tickMailbox)
}

// worker is one consumer of one mailbox. Its handler takes up to three ticks, so a lease of two
// seconds often runs out while it works; it fails a third of the time.
type worker struct {
	r       *run
	n       int // the worker's number in the recorded events
	mailbox string
	path    actordelivery.Path
	opts    actordelivery.ConsumerOptions
	c       *actordelivery.Consumer
	// mu guards hrng: the handler and the policy run in the worker's goroutine; the lock
	// documents it.
	mu   sync.Mutex
	hrng *rand.Rand
}

// startWorker starts the loop of worker n of mailbox on path.
func (r *run) startWorker(who string, n int, stream uint64, mailbox string, path actordelivery.Path) {
	w := &worker{r: r, n: n + 100*r.cfg.Incarnation, mailbox: mailbox, path: path, hrng: r.rng(stream + 1000)}
	w.opts = actordelivery.ConsumerOptions{Mailbox: mailbox, Path: path, LeaseFor: 2 * time.Second, Retry: retryFunc(w.retry), Worker: w.n}
	if r.batched() && (path == actordelivery.PathLeased && n%2 == 0 || mailbox == leaselessMailboxes[0]) {
		w.opts.BatchSize = r.cfg.Batch
	}
	var err error
	if w.c, err = w.consumer(w.handle); err != nil {
		r.fail(who, err)
		return
	}
	r.loop(who, stream, w.step)
}

func (w *worker) consumer(h actordelivery.Handler) (*actordelivery.Consumer, error) {
	return actordelivery.NewConsumer(w.r.st, h, w.opts)
}

func (w *worker) retry(error, int) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Duration(w.hrng.IntN(3)) * time.Second, w.hrng.IntN(6) != 0
}

func (w *worker) handle(_ context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
	r, tick := w.r, w.r.cfg.Tick
	w.mu.Lock()
	d := time.Duration(w.hrng.Int64N(int64(3 * tick)))
	failed := w.hrng.IntN(3) == 0
	ttl := time.Duration(1+w.hrng.IntN(4)) * time.Second
	// A slow leased handler extends its lease part-way, sometimes only after it ran out.
	beats := 0
	if w.path == actordelivery.PathLeased && w.hrng.IntN(3) == 0 {
		beats = 1 + w.hrng.IntN(3)
		d = time.Duration(w.hrng.Int64N(int64(4 * tick)))
	}
	d2 := time.Duration(w.hrng.Int64N(int64(4 * tick)))
	w.mu.Unlock()
	// The handler's idempotency: it marks the message processed before its work and skips a
	// message whose mark is still live (a redelivery it already took on). The group is the
	// consumer group whose processed marks the handler keeps.
	already, err := r.calls.markProcessed(r.ctx, "g-"+w.mailbox, m.ID, ttl)
	if err != nil {
		return nil, err
	}
	if already {
		return nil, nil
	}
	r.sleep(d)
	// A slow handler's heartbeat: it extends its lease after each part of its work, up to
	// three, and stops extending once an extension reports the lease lost.
	for range beats {
		if err := r.calls.extend(r.ctx, m.ID, m.Token, 2*time.Second); errors.Is(err, actordelivery.ErrLeaseLost) {
			break
		} else if err != nil {
			return nil, err
		}
		r.sleep(d2)
	}
	if failed {
		return nil, errHandler
	}
	return nil, nil
}

// batched reports whether the run's store consumers batch (Config.Batch): a variant that replaces
// their fetch or handle runs them single.
func (r *run) batched() bool {
	return r.cfg.Batch > 1 && r.calls.elig == nil && r.parts.Handle == nil
}

// step is one fetch and handle (a batch of them, when the worker batches): the variant's fetch or
// handle where it replaces the store's.
func (w *worker) step(rng *rand.Rand) error {
	r := w.r
	if w.opts.BatchSize > 1 {
		outs, err := w.c.StepBatch(r.ctx)
		if err != nil {
			return err
		}
		if len(outs) == 0 {
			r.pause(rng, r.cfg.Tick/2)
		}
		atomic.AddInt64(&r.stats.Handled, int64(len(outs)))
		return nil
	}
	var d *actordelivery.Delivery
	var err error
	if r.calls.elig != nil {
		m, err := r.calls.elig.FetchRecorded(r.ctx, r.calls.recording, w.n, w.mailbox, w.path, w.opts.LeaseFor)
		if err != nil {
			return err
		}
		if m != nil {
			d = &actordelivery.Delivery{Message: *m, Path: w.path}
		}
	} else if d, err = w.c.Fetch(r.ctx); err != nil {
		return err
	}
	var out actordelivery.Outcome
	if r.parts.Handle != nil {
		out, err = r.parts.Handle(brokenstore.WithWorker(r.ctx, w.n), r.st, w.consumer, w.handle, w.opts.Retry, d)
	} else {
		out, err = w.c.Handle(r.ctx, d)
	}
	if err != nil {
		return err
	}
	if out.Action == actordelivery.ActionIdle {
		r.pause(rng, r.cfg.Tick/2)
	} else {
		atomic.AddInt64(&r.stats.Handled, 1)
	}
	return nil
}

// publisher delivers the outbox through a store that fails one of its commits in five (a
// delivery's, a completion's, a release's; a claim commits on the store itself).
type publisher struct {
	r       *run
	deliver func(ctx context.Context) (int, error)
}

func newPublisher(r *run, mode actordelivery.PublishMode, stream uint64) (*publisher, error) {
	fs := &faultyStore{Store: r.st, r: r.rng(stream), faults: &r.stats.InjectedFaults, claim: r.calls.claim()}
	opts := actordelivery.PublisherOptions{Mode: mode, Batch: 2, ClaimFor: 2 * time.Second,
		Check: func(_ context.Context, row actordelivery.OutboxRow) error {
			if string(row.Payload) == undecodable {
				return errors.New(undecodable)
			}
			return nil
		}}
	if mode == actordelivery.ModeFold && r.cfg.Batch > 1 {
		opts.Batch, opts.DeliverBatch = r.cfg.Batch, r.cfg.Batch
	}
	p, err := actordelivery.NewPublisher(fs, opts)
	if err != nil {
		return nil, err
	}
	pub := &publisher{r: r, deliver: p.Step}
	if mode == actordelivery.ModeSplit && r.parts.DeliverSplit != nil {
		pub.deliver = func(ctx context.Context) (int, error) { return splitStep(ctx, p, fs, r.parts.DeliverSplit) }
	}
	return pub, nil
}

func (p *publisher) step(rng *rand.Rand) error {
	n, err := p.deliver(p.r.ctx)
	atomic.AddInt64(&p.r.stats.Delivered, int64(n))
	if err != nil && !errors.Is(err, errInjected) && !errors.Is(err, errNoMailbox) {
		return err
	}
	if n == 0 {
		p.r.pause(rng, p.r.cfg.Tick/2)
	}
	return nil
}

// actorLoop saves the checkpoints of the actors with the version it expects. A third of the
// time it loads the checkpoint first; otherwise it trusts the version its last save returned,
// which the other loop may have moved on since (a stale save, refused), or, for an actor it never
// saved or whose save was refused, expects no checkpoint at all (version 0: a fresh start,
// refused when the actor has one).
type actorLoop struct {
	r *run
	// versions is this loop's own: the version its last save of an actor returned.
	versions map[string]int64
}

func (a *actorLoop) step(rng *rand.Rand) error {
	r := a.r
	r.pause(rng, r.cfg.Tick)
	actor := actors[rng.IntN(len(actors))]
	expect := a.versions[actor]
	if rng.IntN(3) == 0 {
		_, v, err := r.st.LoadCheckpoint(r.ctx, actor)
		if err != nil && !errors.Is(err, actordelivery.ErrNotFound) {
			return err
		}
		expect = v
	}
	r.pause(rng, r.cfg.Tick)
	v, err := r.calls.saveCheckpoint(r.ctx, actor, []byte(fmt.Sprintf("state of %s", actor)), expect)
	switch {
	case err == nil:
		a.versions[actor] = v
	case errors.Is(err, actordelivery.ErrVersionConflict):
		delete(a.versions, actor)
	default:
		return err
	}
	atomic.AddInt64(&r.stats.Checkpoints, 1)
	return nil
}

// maintainer now and then purges what became final a while ago, and redrives a dead letter (a
// message's or an outbox row's) or an id that names none, as an operator's jobs would.
//
// It picks the dead letter from a list of dead-lettered ids that it makes at its first redrive
// step and again every relistEvery redrive steps. The list reads the dead letters and the
// dead-lettered outbox rows only (ListOutboxDeadLetters), never the completed rows retention keeps:
// listing every outbox row made a long recording slow down as its rows grew. An id the list holds
// may have been purged since; its redrive finds nothing, as the redrive of an id that names none
// does.
type maintainer struct {
	r *run
	// dead is the last list of dead-lettered ids, less those redriven since; steps counts the
	// redrive steps.
	dead  []string
	steps int
}

// relistEvery is how many redrive steps use one list of dead-lettered ids.
const relistEvery = 16

func (m *maintainer) step(rng *rand.Rand) error {
	r := m.r
	r.pause(rng, 8*r.cfg.Tick)
	if rng.IntN(2) == 0 {
		return r.calls.purge(r.ctx, time.Duration(rng.IntN(6))*time.Second, time.Duration(rng.IntN(10))*time.Second, 1+rng.IntN(5))
	}
	if m.steps%relistEvery == 0 {
		if err := m.list(); err != nil {
			return err
		}
	}
	m.steps++
	id, k := "m0", -1 // no such message: the redrive finds nothing
	if len(m.dead) > 0 && rng.IntN(5) != 0 {
		k = rng.IntN(len(m.dead))
		id = m.dead[k]
	}
	err := r.calls.redrive(r.ctx, id, "operator-fix")
	if err == nil {
		atomic.AddInt64(&r.stats.Redriven, 1)
		if k >= 0 { // no longer dead: the next picks are among the others
			last := len(m.dead) - 1
			m.dead[k], m.dead = m.dead[last], m.dead[:last]
		}
	}
	if errors.Is(err, actordelivery.ErrNotFound) {
		err = nil
	}
	return err
}

// list lists the dead-lettered ids again: the dead letters', then the dead-lettered outbox rows'.
func (m *maintainer) list() error {
	m.dead = m.dead[:0]
	dls, err := m.r.st.ListDeadLetters(m.r.ctx)
	if err != nil {
		return err
	}
	for _, d := range dls {
		m.dead = append(m.dead, d.ID)
	}
	rows, err := m.r.st.ListOutboxDeadLetters(m.r.ctx)
	if err != nil {
		return err
	}
	for _, row := range rows {
		m.dead = append(m.dead, row.ID)
	}
	return nil
}

// group is a worker group (actordelivery.RunWorkers) over the leased mailboxes that is stopped and
// restarted again and again: each round runs it for a few ticks, cancels it while its handlers are
// busy, and waits for it to drain. Its drain timeout is two ticks and a handler may take four, so
// some stops time out and leave their message under its lease. Each round's workers get numbers
// of their own (from 10000, per incarnation), since a drained worker takes no step again.
type group struct {
	r     *run
	round int
	mu    sync.Mutex // guards hrng: the group's handlers run in several goroutines
	hrng  *rand.Rand
}

// batch is the group's ConsumerOptions.BatchSize: Config.Batch when the run batches.
func (g *group) batch() int {
	if g.r.batched() {
		return g.r.cfg.Batch
	}
	return 0
}

// groupWorkers is how many workers a round of the group runs.
const groupWorkers = 2

func (g *group) step(rng *rand.Rand) error {
	r := g.r
	g.round++
	// Numbers per round: one per worker, with room to spare.
	base := 10000 + 10000*r.cfg.Incarnation + (g.round-1)*groupWorkers*len(leasedMailboxes) + 1
	ctx, cancel := context.WithCancel(r.stop)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- actordelivery.RunWorkers(ctx, r.st, leasedMailboxes, groupWorkers, g.handle, actordelivery.ConsumerOptions{
			Path: actordelivery.PathLeased, LeaseFor: 2 * time.Second, Worker: base,
			PollInterval: r.cfg.Tick, MaxPollInterval: 2 * r.cfg.Tick, DrainTimeout: 2 * r.cfg.Tick,
			BatchSize: g.batch(),
		})
	}()
	r.sleep(time.Duration(3+rng.IntN(10)) * r.cfg.Tick)
	cancel()
	if err := <-done; err != nil && !errors.Is(err, actordelivery.ErrClosed) {
		return err
	}
	r.pause(rng, r.cfg.Tick)
	return nil
}

// handle works up to four ticks, and returns early when its context ends (the drain timed out);
// it fails one time in four.
func (g *group) handle(ctx context.Context, _ *actordelivery.Message) (actordelivery.Effects, error) {
	g.mu.Lock()
	d := time.Duration(g.hrng.Int64N(int64(4 * g.r.cfg.Tick)))
	failed := g.hrng.IntN(4) == 0
	g.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-t.C:
	}
	atomic.AddInt64(&g.r.stats.Handled, 1)
	if failed {
		return nil, errHandler
	}
	return nil, nil
}
