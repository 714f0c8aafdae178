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
	"sync"
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
	_         struct{}
}

// Roles are the loops of a run with cfg.LeasedWorkers leased workers (0: 4), each of which a
// process of its own can run: the enqueuer (messages and outbox rows), each leased worker, each
// leaseless worker, the fold and the split publisher. The store's logical clock is not a role.
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
	return append(roles, "fold", "split", roleActors, roleMaintainer)
}

const (
	roleEnqueuer = "enqueuer"
	// roleActors saves and loads checkpoints; roleMaintainer purges and redrives, as an
	// operator's jobs would.
	roleActors     = "actors"
	roleMaintainer = "maintainer"
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
	runs0 := len(cfg.Roles) == 0
	runsRole := func(r string) bool { return runs0 || runs[r] }
	var recErr atomic.Value
	events := &countingWriter{w: cfg.Events, limit: cfg.MaxEvents, reached: make(chan struct{})}
	rec := actordelivery.JSONRecorder(events, func(err error) { recErr.CompareAndSwap(nil, err) })
	manual := actordelivery.NewManualClock(traces.Epoch)
	var clock actordelivery.Clock = manual
	if cfg.Clock != nil {
		clock = cfg.Clock
	}
	st, err := actordelivery.OpenBackend(cfg.Backend, cfg.Target, actordelivery.Options{Clock: clock, Recorder: rec,
		TablePrefix: cfg.TablePrefix, Synchronous: "NORMAL", CommitLog: cfg.CommitLog})
	if err != nil {
		return Stats{}, fmt.Errorf("workload: %w", err)
	}
	var elig *brokenstore.Eligibility
	recording := brokenstore.Recording{Clock: clock, Rec: rec, CommitLog: cfg.CommitLog}
	if parts.Rules != nil {
		if elig, err = brokenstore.OpenEligibility(cfg.Target, *parts.Rules); err != nil {
			return Stats{}, errors.Join(fmt.Errorf("workload: %w", err), st.Close())
		}
		defer elig.Close()
		if len(cfg.Roles) > 0 {
			elig.Namespace(fmt.Sprintf("%s.%d", strings.Join(cfg.Roles, "+"), cfg.Incarnation))
		}
	}
	// stop ends the run: every loop checks it between steps, and waits end on it. The store calls
	// themselves run on ctx, which the budget never cancels, so a step in flight when the budget
	// runs out finishes and commits (or fails) for a reason of its own. A commit cut off by a
	// cancelled context can take effect on the server although the call reports an error (on
	// PostgreSQL), and its event would be missing from the history: a gap.
	stop, cancel := context.WithTimeout(ctx, cfg.Budget)
	defer cancel()
	go func() {
		select {
		case <-events.reached:
			cancel()
		case <-stop.Done():
		}
	}()
	ctx = context.WithoutCancel(ctx)

	var stats Stats
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	fail := func(who string, err error) {
		if stop.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		select {
		case errs <- fmt.Errorf("workload: %s: %w", who, err):
		default:
		}
		cancel()
	}
	rngFor := func(stream uint64) *rand.Rand {
		return rand.New(rand.NewPCG(uint64(cfg.Seed), stream+10000*uint64(cfg.Incarnation)))
	}
	goLoop := func(who string, stream uint64, step func(r *rand.Rand) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rngFor(stream)
			for stop.Err() == nil {
				if err := step(r); err != nil {
					fail(who, err)
					return
				}
			}
		}()
	}
	pause := func(r *rand.Rand, most time.Duration) {
		t := time.NewTimer(time.Duration(r.Int64N(int64(most) + 1)))
		defer t.Stop()
		select {
		case <-stop.Done():
		case <-t.C:
		}
	}

	// The clock: one logical second per tick (unless the run's processes share a clock).
	if cfg.Clock == nil {
		goLoop("clock", 1, func(r *rand.Rand) error {
			pause(r, 0)
			t := time.NewTimer(cfg.Tick)
			defer t.Stop()
			select {
			case <-stop.Done():
			case <-t.C:
				manual.Advance(time.Second)
			}
			return nil
		})
	}

	// The store calls a rule-changing variant runs from its copy (recorded like the store's own)
	// where its rule changes them: lease extension, processed-message marks, checkpoint saves,
	// outbox claims, purges and redrives. The copy runs on a connection of its own, which contends with the store's
	// for SQLite's writer lock, so every other call stays on the store.
	var rules brokenstore.Rules
	if parts.Rules != nil {
		rules = *parts.Rules
	}
	extend := func(id, token string, d time.Duration) error {
		if rules.ExtendIgnoresToken {
			return elig.ExtendRecorded(ctx, recording, id, token, d)
		}
		return st.ExtendLease(ctx, id, token, d)
	}
	markProcessed := func(consumer, id string, ttl time.Duration) (bool, error) {
		if rules.ProcessedTTLInverted {
			return elig.MarkProcessedRecorded(ctx, recording, consumer, id, ttl)
		}
		return st.MarkProcessed(ctx, consumer, id, ttl)
	}
	saveCheckpoint := func(actor string, state []byte, expect int64) (int64, error) {
		if rules.CheckpointFirstSaveResets {
			return elig.SaveCheckpointRecorded(ctx, recording, actor, state, expect)
		}
		return st.SaveCheckpoint(ctx, actor, state, expect)
	}
	purge := func(olderThan, horizon time.Duration, batch int) error {
		if rules.PurgeForgetsIDs {
			_, err := elig.PurgeRecorded(ctx, recording, olderThan, horizon, batch)
			return err
		}
		_, err := st.Purge(ctx, olderThan, horizon, batch)
		return err
	}
	redrive := func(id, reason string) error {
		if rules.RedriveKeepsAttempts {
			return elig.RedriveRecorded(ctx, recording, id, reason)
		}
		return st.Redrive(ctx, id, reason)
	}
	var claim func(ctx context.Context, limit int, claimFor time.Duration) ([]actordelivery.OutboxRow, error)
	if rules.ClaimIgnoresMaxDelivery {
		claim = func(ctx context.Context, limit int, claimFor time.Duration) ([]actordelivery.OutboxRow, error) {
			return elig.ClaimRecorded(ctx, recording, limit, claimFor)
		}
	}

	// Enqueues: messages into every mailbox (some keyed, some delayed, some prioritized), and in a
	// loop of its own outbox rows for the publishers, so that the publishers' flow does not
	// depend on how fast the message enqueues commit.
	var ids atomic.Int64
	if cfg.Incarnation > 0 {
		ids.Store(int64(cfg.Incarnation) * 1_000_000) // ids of its own: an enqueue is never a duplicate by accident
	}
	mailboxes := append(append([]string{}, leasedMailboxes...), leaselessMailboxes...)
	enqueuer := runsRole(roleEnqueuer)
	goLoopIf := func(on bool, who string, stream uint64, step func(r *rand.Rand) error) {
		if on {
			goLoop(who, stream, step)
		}
	}
	goLoopIf(enqueuer, "enqueuer", 2, func(r *rand.Rand) error {
		pause(r, cfg.Tick/2)
		n := ids.Add(1)
		_, err := st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: mailboxes[r.IntN(len(mailboxes))], ID: fmt.Sprintf("m%d", n),
			Key: []string{"", "", "k1", "k2"}[r.IntN(4)], Priority: r.IntN(2), MaxAttempts: 1 + r.IntN(3),
			Delay: time.Duration(r.IntN(3)) * time.Second, Payload: []byte("x")})
		if err == nil {
			atomic.AddInt64(&stats.Enqueued, 1)
		}
		return err
	})
	goLoopIf(enqueuer, "outbox enqueuer", 3, func(r *rand.Rand) error {
		pause(r, cfg.Tick/2)
		n := ids.Add(1)
		row := actordelivery.OutboxMessage{ID: fmt.Sprintf("o%d", n), Target: mailboxes[r.IntN(len(mailboxes))],
			Key: []string{"", "", "k1", "k2"}[r.IntN(4)], MaxAttempts: 1 + r.IntN(3), Payload: []byte("x")}
		switch r.IntN(12) {
		case 0, 1, 2: // one row in four can never be delivered: it runs out of delivery attempts
			row.Target, row.MaxDeliveryAttempts = missingTarget, 1+r.IntN(2)
		case 3: // one in twelve does not decode: the publisher dead-letters it at once
			row.Payload = []byte(undecodable)
		}
		_, err := st.OutboxEnqueue(ctx, row)
		if err == nil {
			atomic.AddInt64(&stats.OutboxEnqueued, 1)
		}
		return err
	})

	// Consumers. A handler takes up to three ticks, so a lease of two seconds often runs out
	// while it works; it fails a third of the time.
	worker := func(role, who string, n int, stream uint64, mailbox string, path actordelivery.Path) {
		if !runsRole(role) {
			return
		}
		n += 100 * cfg.Incarnation
		r0 := rngFor(stream + 1000)
		var mu sync.Mutex // the handler and policy run in the worker's goroutine; the lock documents it
		sleep := func(d time.Duration) {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-stop.Done():
			case <-t.C:
			}
		}
		group := "g-" + mailbox // the consumer group whose processed marks the handler keeps
		h := func(ctx context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
			mu.Lock()
			d := time.Duration(r0.Int64N(int64(3 * cfg.Tick)))
			failed := r0.IntN(3) == 0
			ttl := time.Duration(1+r0.IntN(4)) * time.Second
			// A slow leased handler extends its lease part-way, sometimes only after it ran out.
			beats := 0
			if path == actordelivery.PathLeased && r0.IntN(3) == 0 {
				beats = 1 + r0.IntN(3)
				d = time.Duration(r0.Int64N(int64(4 * cfg.Tick)))
			}
			d2 := time.Duration(r0.Int64N(int64(4 * cfg.Tick)))
			mu.Unlock()
			// The handler's idempotency: it marks the message processed before its work and
			// skips a message whose mark is still live (a redelivery it already took on).
			already, err := markProcessed(group, m.ID, ttl)
			if err != nil {
				return nil, err
			}
			if already {
				return nil, nil
			}
			sleep(d)
			// A slow handler's heartbeat: it extends its lease after each part of its work, up
			// to three, and stops extending once an extension reports the lease lost.
			for range beats {
				if err := extend(m.ID, m.Token, 2*time.Second); errors.Is(err, actordelivery.ErrLeaseLost) {
					break
				} else if err != nil {
					return nil, err
				}
				sleep(d2)
			}
			if failed {
				return nil, errHandler
			}
			return nil, nil
		}
		policy := retryFunc(func(error, int) (time.Duration, bool) {
			mu.Lock()
			defer mu.Unlock()
			return time.Duration(r0.IntN(3)) * time.Second, r0.IntN(6) != 0
		})
		opts := actordelivery.ConsumerOptions{Mailbox: mailbox, Path: path, LeaseFor: 2 * time.Second, Retry: policy, Worker: n}
		consumer := func(h actordelivery.Handler) (*actordelivery.Consumer, error) {
			return actordelivery.NewConsumer(st, h, opts)
		}
		c, err := consumer(h)
		if err != nil {
			fail(who, err)
			return
		}
		goLoop(who, stream, func(r *rand.Rand) error {
			var d *actordelivery.Delivery
			if elig != nil {
				m, err := elig.FetchRecorded(ctx, recording, n, mailbox, path, opts.LeaseFor)
				if err != nil {
					return err
				}
				if m != nil {
					d = &actordelivery.Delivery{Message: *m, Path: path}
				}
			} else if d, err = c.Fetch(ctx); err != nil {
				return err
			}
			var out actordelivery.Outcome
			if parts.Handle != nil {
				out, err = parts.Handle(brokenstore.WithWorker(ctx, n), st, consumer, h, policy, d)
			} else {
				out, err = c.Handle(ctx, d)
			}
			if err != nil {
				return err
			}
			if out.Action == actordelivery.ActionIdle {
				pause(r, cfg.Tick/2)
			} else {
				atomic.AddInt64(&stats.Handled, 1)
			}
			return nil
		})
	}
	// Worker numbers: the leased workers 1..LeasedWorkers, then one per leaseless mailbox.
	for i := range cfg.LeasedWorkers {
		worker(fmt.Sprintf("leased%d", i+1), fmt.Sprintf("leased worker %d", i+1), i+1, uint64(10+i), leasedMailboxes[i%len(leasedMailboxes)], actordelivery.PathLeased)
	}
	for i, mb := range leaselessMailboxes {
		worker("leaseless-"+mb, "leaseless worker "+mb, cfg.LeasedWorkers+i+1, uint64(100+i), mb, actordelivery.PathLeaseless)
	}

	// Publishers: one fold, one split, each through a store that fails one of its commits in five
	// (a delivery's, a completion's, a release's; a claim commits on the store itself).
	for i, mode := range []actordelivery.PublishMode{actordelivery.ModeFold, actordelivery.ModeSplit} {
		if !runsRole(mode.String()) {
			continue
		}
		fs := &faultyStore{Store: st, r: rngFor(uint64(200 + i)), faults: &stats.InjectedFaults, claim: claim}
		p, err := actordelivery.NewPublisher(fs, actordelivery.PublisherOptions{Mode: mode, Batch: 2, ClaimFor: 2 * time.Second,
			Check: func(_ context.Context, row actordelivery.OutboxRow) error {
				if string(row.Payload) == undecodable {
					return errors.New(undecodable)
				}
				return nil
			}})
		if err != nil {
			return stats, errors.Join(err, st.Close())
		}
		step := p.Step
		if mode == actordelivery.ModeSplit && parts.DeliverSplit != nil {
			step = func(ctx context.Context) (int, error) { return splitStep(ctx, p, fs, parts.DeliverSplit) }
		}
		goLoop(mode.String()+" publisher", uint64(300+i), func(r *rand.Rand) error {
			n, err := step(ctx)
			atomic.AddInt64(&stats.Delivered, int64(n))
			if err != nil && !errors.Is(err, errInjected) && !errors.Is(err, errNoMailbox) {
				return err
			}
			if n == 0 {
				pause(r, cfg.Tick/2)
			}
			return nil
		})
	}

	// Actors: each loop saves the checkpoints of the actors with the version it expects. A third
	// of the time it loads the checkpoint first; otherwise it trusts the version its last save
	// returned, which the other loop may have moved on since (a stale save, refused), or, for an
	// actor it never saved or whose save was refused, expects no checkpoint at all (version 0: a
	// fresh start, refused when the actor has one).
	versions := [2]map[string]int64{{}, {}} // each loop's own: the version its last save of an actor returned
	for i := range 2 {
		goLoopIf(runsRole(roleActors), fmt.Sprintf("actor loop %d", i+1), uint64(400+i), func(r *rand.Rand) error {
			pause(r, cfg.Tick)
			actor := actors[r.IntN(len(actors))]
			known := versions[i]
			expect := known[actor]
			if r.IntN(3) == 0 {
				_, v, err := st.LoadCheckpoint(ctx, actor)
				if err != nil && !errors.Is(err, actordelivery.ErrNotFound) {
					return err
				}
				expect = v
			}
			pause(r, cfg.Tick)
			v, err := saveCheckpoint(actor, []byte(fmt.Sprintf("state of %s", actor)), expect)
			switch {
			case err == nil:
				known[actor] = v
			case errors.Is(err, actordelivery.ErrVersionConflict):
				delete(known, actor)
			default:
				return err
			}
			atomic.AddInt64(&stats.Checkpoints, 1)
			return nil
		})
	}
	// The maintainer: now and then it purges what became final a while ago, and redrives a dead
	// letter (a message's or an outbox row's) or an id that names none.
	goLoopIf(runsRole(roleMaintainer), "maintainer", 500, func(r *rand.Rand) error {
		pause(r, 8*cfg.Tick)
		if r.IntN(2) == 0 {
			return purge(time.Duration(r.IntN(6))*time.Second, time.Duration(r.IntN(10))*time.Second, 1+r.IntN(5))
		}
		var dead []string
		dls, err := st.ListDeadLetters(ctx)
		if err != nil {
			return err
		}
		for _, d := range dls {
			dead = append(dead, d.ID)
		}
		rows, err := st.ListOutbox(ctx)
		if err != nil {
			return err
		}
		for _, row := range rows {
			if row.State == actordelivery.StateDeadLetter {
				dead = append(dead, row.ID)
			}
		}
		id := "m0" // no such message: the redrive finds nothing
		if len(dead) > 0 && r.IntN(5) != 0 {
			id = dead[r.IntN(len(dead))]
		}
		err = redrive(id, "operator-fix")
		if err == nil {
			atomic.AddInt64(&stats.Redriven, 1)
		}
		if errors.Is(err, actordelivery.ErrNotFound) {
			err = nil
		}
		return err
	})

	wg.Wait()
	stats.Logical = int64(clock.Now().Sub(traces.Epoch) / time.Second)
	err = st.Close()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	if e, ok := recErr.Load().(error); ok {
		err = errors.Join(err, fmt.Errorf("workload: writing events: %w", e))
	}
	return stats, err
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
