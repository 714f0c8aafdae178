// Package workload runs the real store under real concurrency while it records: leased workers,
// one leaseless worker per leaseless mailbox, a fold and a split publisher, and random enqueues,
// each in its own goroutine with its own random source derived from one seed, against a store
// that writes its history (an actordelivery Recorder) as JSON lines. Time is logical: a ticker
// moves the store's clock one second forward every Config.Tick of real time, so leases and claims
// run out while handlers and deliveries are in flight.
//
// The run is not reproducible from its seed (goroutine scheduling decides the interleaving); the
// recorded history is the evidence, and the observe package checks it.
package workload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/brokenstore"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/traces"
)

// Config configures Run. Zero fields take the defaults named.
type Config struct {
	// Backend and Target say which store to open (actordelivery.OpenBackend): a SQLite file path
	// that does not exist yet, or a PostgreSQL DSN with a fresh TablePrefix. Required: Target.
	Backend     actordelivery.Backend
	Target      string
	TablePrefix string
	// Seed seeds every random choice of the workload (not the scheduling).
	Seed int64
	// Budget is how long the workload runs, in real time; zero means 2s.
	Budget time.Duration
	// Tick is the real time per logical second; zero means 20ms.
	Tick time.Duration
	// LeasedWorkers run on the leased mailboxes; zero means 4.
	LeasedWorkers int
	// Events receives the recorded history as JSON lines; required.
	Events io.Writer
	// Variant is the store target of replay's registry to run: "" or "store" for the correct
	// store, or a known-broken variant (targets.Parts), whose replaced parts run here in place of
	// the store's: its consumer's handle, its split delivery, or its eligibility SQL (SQLite only).
	Variant string
	// Roles names the loops this process runs (see Roles); nil runs every one. A run split over
	// processes (RunProcesses) gives each child one role.
	Roles []string
	// Clock is the store's clock; nil means a logical clock this run moves one second per Tick.
	// The processes of one run share TickClock(start, Tick).
	Clock actordelivery.Clock
	// Incarnation numbers a restarted process of one role: its workers get numbers of their
	// own (Incarnation*100 + n) and its random sources new streams.
	Incarnation int
	// CommitLog makes the store also write its write events into the database's commit log
	// (actordelivery.Options.CommitLog), where a process killed after a commit keeps them.
	CommitLog bool
	// MaxEvents, when positive, ends the run once the recorder has written that many events
	// (the steps in flight then finish, so a few more are written); Budget then defaults to no
	// limit. It makes long histories to measure with, at the rate the store runs.
	MaxEvents int64
	// Batch, above 1, runs some loops batched (docs/semantics.md, "Batches"): every second
	// leased worker, the first leaseless mailbox's worker and the worker group fetch and
	// commit up to Batch messages at a time (ConsumerOptions.BatchSize), and the fold
	// publisher claims and delivers up to Batch rows in one transaction (DeliverBatch). The
	// other loops stay single, so one history holds both. Only the store's own consumer
	// batches: a variant that replaces the fetch or the handle runs it single.
	Batch int
	// GroupCommit is the store's Options.GroupCommit: above 1, concurrent write transactions
	// share one COMMIT (SQLite only), and the history shows whether the recording keeps up.
	GroupCommit int
	_           struct{}
}

// Roles are the loops of a run with cfg.LeasedWorkers leased workers (0: 4), each of which a
// process of its own can run: the enqueuer (messages and outbox rows), each leased worker, each
// leaseless worker, the fold and the split publisher, the actors, the maintainer, and the worker
// group that is stopped and restarted. The store's logical clock is not a role.
func Roles(leasedWorkers int) []string {
	if leasedWorkers == 0 {
		leasedWorkers = 4
	}
	roles := []string{roleEnqueuer}
	for i := range leasedWorkers {
		roles = append(roles, fmt.Sprintf("leased%d", i+1))
	}
	for _, mb := range leaselessMailboxes {
		roles = append(roles, "leaseless-"+mb)
	}
	return append(roles, "fold", "split", roleActors, roleMaintainer, roleGroup, roleWaiter)
}

const (
	roleEnqueuer = "enqueuer"
	// roleActors saves and loads checkpoints; roleMaintainer purges and redrives, as an
	// operator's jobs would.
	roleActors     = "actors"
	roleMaintainer = "maintainer"
	// roleGroup runs a worker group (RunWorkers) that it stops and restarts.
	roleGroup = "group"
	// roleWaiter consumes the wake-driven mailbox (waiter.go).
	roleWaiter = "waiter"
)

// TickClock is the clock of a run whose processes share it: traces.Epoch plus one second per
// tick of real time since start, rounded down. The store reads it under its commit lock, so along
// the commit order of every process it never goes back (as long as the machine's clock does not).
func TickClock(start time.Time, tick time.Duration) actordelivery.Clock {
	return tickClock{start: start, tick: tick}
}

type tickClock struct {
	start time.Time
	tick  time.Duration
}

func (c tickClock) Now() time.Time {
	d := time.Since(c.start)
	if d < 0 {
		d = 0
	}
	return traces.Epoch.Add(time.Duration(d/c.tick) * time.Second)
}

// Stats count what a run did.
type Stats struct {
	Enqueued, OutboxEnqueued, Handled, Delivered, InjectedFaults int64
	// Checkpoints counts the actors' saves (refused ones included), Redriven the redrives that
	// found a dead letter.
	Checkpoints, Redriven int64
	// Logical is the logical time the run reached, in seconds.
	Logical int64
	// Woken counts the wake-driven mailbox's messages its consumer handled; Unwoken lists those
	// it left ready past the wake bound when the run ended (waiter.go): each is a wake that did
	// not make its consumer fetch. Both stay zero when the run does not check the bound.
	Woken   int64
	Unwoken []string
	// Commits and Transactions are the store's counters at the end (actordelivery.Stats):
	// with Config.GroupCommit, fewer COMMITs than transactions show that groups formed.
	Commits, Transactions uint64
}

// The mailboxes: leased ones take any number of workers, each leaseless one exactly one.
var (
	leasedMailboxes    = []string{"l1", "l2"}
	leaselessMailboxes = []string{"q1", "q2"}
	// actors are the checkpoints the actor loops save.
	actors = []string{"a1", "a2", "a3"}
)

// Rows that can never be delivered: an outbox row whose target mailbox does not exist (its
// delivery fails until the row runs out of delivery attempts), and one whose payload does not
// decode (the publisher's Check refuses it and it is dead-lettered at once).
const (
	missingTarget = "nowhere"
	undecodable   = "undecodable"
)

var errNoMailbox = errors.New("workload: target mailbox " + missingTarget + " does not exist")

// errHandler is what a failing handler returns; its message is the dead-letter reason the trace
// format gives a declined retry.
var errHandler = errors.New(traces.ReasonHandlerFailed)

// Run runs the workload for cfg.Budget and closes the store. It returns an error when the run
// itself failed (the store would not open, a step failed for a reason other than the end of the
// run); the history written so far is still valid then.
func Run(ctx context.Context, cfg Config) (Stats, error) {
	if cfg.Target == "" || cfg.Events == nil {
		return Stats{}, errors.New("workload: Target and Events are required")
	}
	if cfg.Backend == "" {
		cfg.Backend = actordelivery.BackendSQLite
	}
	if cfg.Budget == 0 && cfg.MaxEvents > 0 {
		cfg.Budget = 1000 * time.Hour
	}
	if cfg.Budget == 0 {
		cfg.Budget = 2 * time.Second
	}
	if cfg.Tick == 0 {
		cfg.Tick = 20 * time.Millisecond
	}
	if cfg.LeasedWorkers == 0 {
		cfg.LeasedWorkers = 4
	}
	if cfg.Variant == "" {
		cfg.Variant = targets.Store
	}
	parts, ok := targets.Parts(cfg.Variant)
	if !ok {
		return Stats{}, fmt.Errorf("workload: %q is not a store target (known: %q)", cfg.Variant, targets.Names())
	}
	if parts.Rules != nil && cfg.Backend != actordelivery.BackendSQLite {
		return Stats{}, fmt.Errorf("workload: variant %s runs a copy of SQLite's eligibility SQL and exists on SQLite only", cfg.Variant)
	}
	all := Roles(cfg.LeasedWorkers)
	runs := map[string]bool{}
	for _, r := range cfg.Roles {
		if !slices.Contains(all, r) {
			return Stats{}, fmt.Errorf("workload: %q is not a role (known: %q)", r, all)
		}
		runs[r] = true
	}
	runsRole := func(r string) bool { return len(cfg.Roles) == 0 || runs[r] }
	var recErr atomic.Value
	events := &countingWriter{w: cfg.Events, limit: cfg.MaxEvents, reached: make(chan struct{})}
	rec := actordelivery.JSONRecorder(events, func(err error) { recErr.CompareAndSwap(nil, err) })
	manual := actordelivery.NewManualClock(traces.Epoch)
	var clock actordelivery.Clock = manual
	if cfg.Clock != nil {
		clock = cfg.Clock
	}
	st, err := actordelivery.OpenBackend(cfg.Backend, cfg.Target, actordelivery.Options{Clock: clock, Recorder: rec,
		TablePrefix: cfg.TablePrefix, Synchronous: "NORMAL", CommitLog: cfg.CommitLog, GroupCommit: cfg.GroupCommit})
	if err != nil {
		return Stats{}, fmt.Errorf("workload: %w", err)
	}
	calls := &storeCalls{st: st, recording: brokenstore.Recording{Clock: clock, Rec: rec, CommitLog: cfg.CommitLog}}
	if parts.Rules != nil {
		calls.rules = *parts.Rules
		if calls.elig, err = brokenstore.OpenEligibility(cfg.Target, *parts.Rules); err != nil {
			return Stats{}, errors.Join(fmt.Errorf("workload: %w", err), st.Close())
		}
		defer calls.elig.Close()
		if len(cfg.Roles) > 0 {
			calls.elig.Namespace(fmt.Sprintf("%s.%d", strings.Join(cfg.Roles, "+"), cfg.Incarnation))
		}
	}
	r := newRun(ctx, cfg, st, parts, calls)
	defer r.cancel()
	go func() {
		select {
		case <-events.reached:
			r.cancel()
		case <-r.stop.Done():
		}
	}()

	if cfg.Clock == nil { // one logical second per tick, unless the run's processes share a clock
		r.loop("clock", 1, ticker{r: r, clock: manual}.step)
	}
	if runsRole(roleEnqueuer) {
		// Messages and outbox rows in loops of their own, so that the publishers' flow does not
		// depend on how fast the message enqueues commit.
		e := &enqueuer{r: r}
		r.loop("enqueuer", 2, e.message)
		r.loop("outbox enqueuer", 3, e.outboxRow)
	}
	// Worker numbers: the leased workers 1..LeasedWorkers, then one per leaseless mailbox.
	for i := range cfg.LeasedWorkers {
		if runsRole(fmt.Sprintf("leased%d", i+1)) {
			r.startWorker(fmt.Sprintf("leased worker %d", i+1), i+1, uint64(10+i), leasedMailboxes[i%len(leasedMailboxes)], actordelivery.PathLeased)
		}
	}
	for i, mb := range leaselessMailboxes {
		if runsRole("leaseless-" + mb) {
			r.startWorker("leaseless worker "+mb, cfg.LeasedWorkers+i+1, uint64(100+i), mb, actordelivery.PathLeaseless)
		}
	}
	for i, mode := range []actordelivery.PublishMode{actordelivery.ModeFold, actordelivery.ModeSplit} {
		if !runsRole(mode.String()) {
			continue
		}
		p, err := newPublisher(r, mode, uint64(200+i))
		if err != nil {
			r.cancel()
			r.wg.Wait()
			return *r.stats, errors.Join(err, st.Close())
		}
		r.loop(mode.String()+" publisher", uint64(300+i), p.step)
	}
	if runsRole(roleActors) {
		for i := range 2 {
			r.loop(fmt.Sprintf("actor loop %d", i+1), uint64(400+i), (&actorLoop{r: r, versions: map[string]int64{}}).step)
		}
	}
	if runsRole(roleMaintainer) {
		r.loop("maintainer", 500, (&maintainer{r: r}).step)
	}
	if runsRole(roleGroup) {
		r.loop("worker group", 600, (&group{r: r, hrng: r.rng(601)}).step)
	}
	var w *waiter
	if runsRole(roleWaiter) {
		if w, err = r.startWaiter(rec, clock); err != nil {
			r.cancel()
			r.wg.Wait()
			return *r.stats, errors.Join(err, st.Close())
		}
	}

	r.wg.Wait()
	r.stats.Logical = int64(clock.Now().Sub(traces.Epoch) / time.Second)
	if w != nil {
		err = w.finish(len(cfg.Roles) == 0)
	}
	ss := st.Stats()
	r.stats.Commits, r.stats.Transactions = ss.Commits, ss.Transactions
	err = errors.Join(err, st.Close())
	close(r.errs)
	for e := range r.errs {
		err = errors.Join(err, e)
	}
	if e, ok := recErr.Load().(error); ok {
		err = errors.Join(err, fmt.Errorf("workload: writing events: %w", e))
	}
	return *r.stats, err
}

// splitStep is Publisher.Step with a replaced split delivery.
func splitStep(ctx context.Context, p *actordelivery.Publisher, st brokenstore.OutboxStore,
	deliver func(context.Context, brokenstore.OutboxStore, actordelivery.OutboxRow) (actordelivery.DeliveryResult, error)) (int, error) {
	rows, err := p.Claim(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, row := range rows {
		res, err := deliver(ctx, st, row)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if res.Action == actordelivery.ActionDelivered {
			n++
		}
	}
	return n, errors.Join(errs...)
}

type retryFunc func(error, int) (time.Duration, bool)

func (f retryFunc) Retry(err error, attempt int) (time.Duration, bool) { return f(err, attempt) }

// errInjected is the commit failure faultyStore injects.
var errInjected = errors.New("workload: injected fault: commit failed")

// faultyStore is the store a publisher delivers through, failing one top-level write
// transaction in five after it ran (it rolls back: what a failed commit leaves). Only its
// publisher's goroutine uses it.
type faultyStore struct {
	*actordelivery.Store
	r      *rand.Rand
	faults *int64
	// claim, when set, claims in place of the store's OutboxClaim (a variant's copy).
	claim func(ctx context.Context, limit int, claimFor time.Duration) ([]actordelivery.OutboxRow, error)
}

func (f *faultyStore) OutboxClaim(ctx context.Context, limit int, claimFor time.Duration) ([]actordelivery.OutboxRow, error) {
	if f.claim != nil {
		return f.claim(ctx, limit, claimFor)
	}
	return f.Store.OutboxClaim(ctx, limit, claimFor)
}

// OutboxFail and OutboxDeadLetter, a delivery's release, run in a transaction that can fail like
// any other of the publisher's. A row whose release failed stays claimed until its claim runs
// out; the next claim takes it again, or dead-letters it when it has no delivery attempts left.
func (f *faultyStore) OutboxFail(ctx context.Context, id, token string, delay time.Duration) error {
	return f.ExecTx(ctx, false, func(ctx context.Context) error { return f.Store.OutboxFail(ctx, id, token, delay) })
}

func (f *faultyStore) OutboxDeadLetter(ctx context.Context, id, token, reason string) error {
	return f.ExecTx(ctx, false, func(ctx context.Context) error { return f.Store.OutboxDeadLetter(ctx, id, token, reason) })
}

// Enqueue is the store's, except into the mailbox that does not exist, which fails.
func (f *faultyStore) Enqueue(ctx context.Context, m actordelivery.NewMessage) (bool, error) {
	if m.Mailbox == missingTarget {
		return false, errNoMailbox
	}
	return f.Store.Enqueue(ctx, m)
}

type inFaultyTx struct{}

func (f *faultyStore) ExecTx(ctx context.Context, readOnly bool, fn func(context.Context) error) error {
	if readOnly || ctx.Value(inFaultyTx{}) != nil || f.r.IntN(5) != 0 {
		return f.Store.ExecTx(ctx, readOnly, func(ctx context.Context) error {
			return fn(context.WithValue(ctx, inFaultyTx{}, true))
		})
	}
	atomic.AddInt64(f.faults, 1)
	return f.Store.ExecTx(ctx, false, func(ctx context.Context) error {
		if err := fn(context.WithValue(ctx, inFaultyTx{}, true)); err != nil {
			return err
		}
		return errInjected
	})
}

// countingWriter passes the recorder's lines on and closes reached once limit lines went by
// (never when limit is 0). The recorder writes one event per Write, under its own lock.
type countingWriter struct {
	w       io.Writer
	limit   int64
	lines   int64
	reached chan struct{}
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if c.limit > 0 && c.lines < c.limit {
		c.lines += int64(bytes.Count(p[:n], []byte("\n")))
		if c.lines >= c.limit {
			close(c.reached)
		}
	}
	return n, err
}
