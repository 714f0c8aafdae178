package targets

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/internal/brokenstore"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// storeConfig is how a store target runs its store, consumers and publisher. The zero value is the
// correct store; each broken variant (registry.go) sets one field to a replacement built outside
// the store, in internal/brokenstore.
type storeConfig struct {
	// rules, when set, runs lease, peek, expire, extend, outbox claim, the consumer's fetch,
	// mark_processed, save_checkpoint, purge and redrive through a copy of the store's statements, in the backend's dialect, with these rules; nil
	// runs the store's own.
	rules *brokenstore.Rules
	// handle replaces the real consumer's Handle; nil runs Consumer.Handle.
	handle func(ctx context.Context, st *actordelivery.Store, consumer brokenstore.Consumer, h actordelivery.Handler,
		retry actordelivery.RetryPolicy, d *actordelivery.Delivery) (actordelivery.Outcome, error)
	// deliverSplit replaces the real publisher's split delivery; nil runs Publisher.Deliver.
	deliverSplit func(ctx context.Context, st brokenstore.OutboxStore, row actordelivery.OutboxRow) (actordelivery.DeliveryResult, error)
	// handleBatch replaces the real consumer's HandleBatch; nil runs Consumer.HandleBatch.
	handleBatch brokenstore.BatchHandle
}

// StoreTarget runs a trace against the real SQLite store: store operations call the store's
// methods, consumer steps run the real actordelivery.Consumer's Fetch and Handle, publisher
// steps the real actordelivery.Publisher's Deliver, with faults injected around the store.
//
// The store's clock is a ManualClock set to [traces.At] of each step's time. A handler records
// its effect in its Effects, which commit with the acknowledgement, as the checkpoint "effects/<mailbox>" (a JSON list
// of message ids), so the snapshot's effects come from the store and roll back with it.
type StoreTarget struct {
	cfg storeConfig
	db  StoreDB
	// target is what actordelivery.OpenBackend opens: the SQLite file, or the DSN of the
	// target's own PostgreSQL schema.
	target string
	// prefix is the target's table prefix on db.Server; "" on SQLite.
	prefix string
	clock  *actordelivery.ManualClock
	log    *slog.Logger
	// st is the open store; nil only after Close.
	st *actordelivery.Store
	// fetched holds each worker's fetched, not yet handled delivery. It survives Reopen (the
	// process did not die) and is cleared by a crash step (it did).
	fetched map[int]*actordelivery.Delivery
	// batches holds each worker's fetched, not yet handled batch, kept and forgotten as fetched.
	batches map[int]heldBatch
	// owed holds the Effects each worker's batch handle left to its consumer_effects_batch (only
	// a cfg.handleBatch that breaks the fold leaves any); a crash forgets them.
	owed map[int][]brokenstore.Owed
	// wakes answers poll_tick from the trace's wakes and fetches; a crash forgets them.
	wakes adapter.Wakes
	// mailboxes are the mailboxes any step named, so the snapshot can read their effect logs.
	mailboxes map[string]bool
	// elig runs the copied eligibility SQL when cfg.rules is set; nil otherwise.
	elig *brokenstore.Eligibility
	// claimed holds the last copy of each outbox row a claim returned: what a publisher holds in
	// memory, so a delivery of a row a purge has since removed delivers that copy (a stale claim).
	claimed map[string]actordelivery.OutboxRow
}

// StoreDB says where a store target keeps its database, and what the store records while the
// target runs. The zero Backend is SQLite; the zero value records nothing.
type StoreDB struct {
	Backend actordelivery.Backend
	// Dir (SQLite) is a directory without a replay.db: the target creates its file there.
	Dir string
	// Server (PostgreSQL) is where the target's tables live, under a table prefix of its own
	// that Close empties and hands back to the server.
	Server *PGServer
	// Template (SQLite, optional) is a migrated empty database the target's file starts as a
	// copy of, instead of migrating a new file; nil migrates.
	Template *SQLiteTemplate
	// Recorder (optional) is the store's actordelivery.Options.Recorder at every open, reopenings
	// included, so one Recorder hears the whole history of the target's database; nil records
	// nothing.
	Recorder actordelivery.Recorder
	// CommitLog opens the store with actordelivery.Options.CommitLog: it also writes its write
	// events into the database's commit log (Store.CommitLog reads them back).
	CommitLog bool
	_         struct{}
}

// NewStoreTarget opens a fresh SQLite store in dir (the file dir/replay.db must not exist yet).
func NewStoreTarget(dir string) (*StoreTarget, error) {
	return newStoreTarget(StoreDB{Dir: dir}, storeConfig{})
}

// NewStoreTargetOn opens a fresh store of the correct store target on db.
func NewStoreTargetOn(db StoreDB) (*StoreTarget, error) { return newStoreTarget(db, storeConfig{}) }

func newStoreTarget(db StoreDB, cfg storeConfig) (*StoreTarget, error) {
	if db.Backend == "" {
		db.Backend = actordelivery.BackendSQLite
	}
	t := &StoreTarget{
		cfg: cfg, db: db, clock: actordelivery.NewManualClock(traces.Epoch),
		log:     slog.New(slog.DiscardHandler),
		fetched: map[int]*actordelivery.Delivery{}, batches: map[int]heldBatch{}, owed: map[int][]brokenstore.Owed{}, mailboxes: map[string]bool{}, claimed: map[string]actordelivery.OutboxRow{},
	}
	switch db.Backend {
	case actordelivery.BackendSQLite:
		path := filepath.Join(db.Dir, "replay.db")
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("targets: store target: %s already exists or cannot be checked (%v); give each target a fresh directory", path, err)
		}
		if db.Template != nil {
			if err := db.Template.writeTo(path); err != nil {
				return nil, err
			}
		}
		t.target = path
	case actordelivery.BackendPostgres:
		if db.Server == nil {
			return nil, errors.New("targets: store target: the postgres backend needs a Server")
		}
		t.prefix = db.Server.take()
	default:
		return nil, fmt.Errorf("targets: store target: unknown backend %q", db.Backend)
	}
	if err := t.open(); err != nil {
		return nil, err
	}
	if cfg.rules != nil {
		var e *brokenstore.Eligibility
		var err error
		if db.Backend == actordelivery.BackendPostgres {
			e, err = brokenstore.OpenEligibilityPostgres(db.Server.db, t.prefix, *cfg.rules)
		} else {
			e, err = brokenstore.OpenEligibility(t.target, *cfg.rules)
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("targets: store target: %w", err), t.Close())
		}
		t.elig = e
	}
	return t, nil
}

func (t *StoreTarget) open() error {
	opts := actordelivery.Options{Clock: t.clock, Logger: t.log, Recorder: t.db.Recorder, CommitLog: t.db.CommitLog}
	var st *actordelivery.Store
	var err error
	if t.db.Backend == actordelivery.BackendPostgres {
		opts.TablePrefix = t.prefix
		st, err = actordelivery.OpenPostgresDB(t.db.Server.db, opts)
	} else {
		st, err = actordelivery.Open(t.target, opts)
	}
	if err != nil {
		return fmt.Errorf("targets: store target: %w", err)
	}
	t.st = st
	return nil
}

// Store returns the open store, for tests that look at it directly.
func (t *StoreTarget) Store() *actordelivery.Store { return t.st }

// Capabilities declares unsupported the batch handle of a variant that replaces Consumer.Handle:
// it has no batch form. The correct store runs every step.
func (t *StoreTarget) Capabilities() replay.Capabilities {
	return replay.Capabilities{Unsupported: t.cfg.unsupported()}
}

// unsupported lists the steps a store target with cfg cannot run.
func (cfg storeConfig) unsupported() []traces.Op {
	if cfg.handle != nil {
		return []traces.Op{traces.OpConsumerHandleBatch}
	}
	return nil
}

// Reopen closes and reopens the database file; fetched deliveries are kept.
func (t *StoreTarget) Reopen(context.Context) error {
	if t.st == nil {
		return errors.New("targets: store target: closed")
	}
	if err := t.st.Close(); err != nil {
		return fmt.Errorf("targets: store target: close: %w", err)
	}
	return t.open()
}

// Close closes the store; a SQLite file stays, PostgreSQL tables are emptied for the next target.
func (t *StoreTarget) Close() error {
	if t.st == nil {
		return nil
	}
	err := t.st.Close()
	t.st = nil
	if t.elig != nil {
		err = errors.Join(err, t.elig.Close())
		t.elig = nil
	}
	if t.prefix != "" {
		err = errors.Join(err, t.db.Server.give(t.prefix))
	}
	return err
}

// Backend is the backend the target's store runs on.
func (t *StoreTarget) Backend() actordelivery.Backend { return t.db.Backend }

// errKind maps the store's sentinels to a result's error kind; any other error is not an
// observation but a failure to run the step.
func errKind(err error) (string, error) {
	switch {
	case err == nil:
		return "", nil
	case errors.Is(err, actordelivery.ErrLeaseLost):
		return traces.ErrKindLeaseLost, nil
	case errors.Is(err, actordelivery.ErrNotFound):
		return traces.ErrKindNotFound, nil
	case errors.Is(err, actordelivery.ErrClaimLost):
		return traces.ErrKindClaimLost, nil
	case errors.Is(err, actordelivery.ErrVersionConflict):
		return traces.ErrKindVersionConflict, nil
	}
	return "", err
}

// Do runs one step against the store at logical time at.
func (t *StoreTarget) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	if t.st == nil {
		return replay.Observation{}, errors.New("targets: store target: closed")
	}
	t.clock.Set(traces.At(at))
	for _, mb := range []string{a.Mailbox, a.Target} {
		if mb != "" {
			t.mailboxes[mb] = true
		}
	}
	o, err := t.do(ctx, op, a)
	if err != nil {
		return replay.Observation{}, fmt.Errorf("targets: store target: %s: %w", op, err)
	}
	return o, nil
}

func (t *StoreTarget) do(ctx context.Context, op traces.Op, a replay.Args) (replay.Observation, error) {
	var o replay.Observation
	var err error
	switch op {
	case traces.OpEnqueue:
		o.Duplicate, err = t.st.Enqueue(ctx, actordelivery.NewMessage{
			Mailbox: a.Mailbox, ID: a.ID, Key: a.Key, Priority: a.Priority, MaxAttempts: a.MaxAttempts,
			Delay: traces.Duration(a.Delay), Payload: Payload(a.Payload),
		})
	case traces.OpLease:
		var m *actordelivery.Message
		if t.elig != nil {
			m, err = t.elig.Lease(ctx, t.clock.Now(), a.Mailbox, traces.Duration(a.LeaseFor))
		} else {
			m, err = t.st.Lease(ctx, a.Mailbox, traces.Duration(a.LeaseFor))
		}
		o.Message = observed(m, true)
	case traces.OpPeek:
		var m *actordelivery.Message
		if t.elig != nil {
			m, err = t.elig.Peek(ctx, t.clock.Now(), a.Mailbox)
		} else {
			m, err = t.st.Peek(ctx, a.Mailbox)
		}
		o.Message = observed(m, false)
	case traces.OpAck:
		o.Err, err = errKind(t.st.Ack(ctx, a.ID, a.Token))
	case traces.OpNack:
		o.Err, err = errKind(t.st.Nack(ctx, a.ID, a.Token, traces.Duration(a.Delay)))
	case traces.OpAckByID:
		o.Err, err = errKind(t.st.AckByID(ctx, a.ID))
	case traces.OpNackByID:
		o.Err, err = errKind(t.st.NackByID(ctx, a.ID, traces.Duration(a.Delay)))
	case traces.OpExtend:
		if t.elig != nil {
			o.Err, err = errKind(t.elig.Extend(ctx, t.clock.Now(), a.ID, a.Token, traces.Duration(a.LeaseFor)))
		} else {
			o.Err, err = errKind(t.st.ExtendLease(ctx, a.ID, a.Token, traces.Duration(a.LeaseFor)))
		}
	case traces.OpExpire:
		if t.elig != nil {
			o.Affected, err = t.elig.Expire(ctx, t.clock.Now())
		} else {
			o.Affected, err = t.st.ExpireLeases(ctx)
		}
	case traces.OpDeadLetter:
		o.Err, err = errKind(t.st.DeadLetter(ctx, a.ID, a.Reason))
	case traces.OpOutboxEnqueue:
		o.Duplicate, err = t.st.OutboxEnqueue(ctx, actordelivery.OutboxMessage{
			ID: a.ID, Target: a.Target, Key: a.Key, Priority: a.Priority, MaxAttempts: a.MaxAttempts,
			Payload: Payload(a.Payload), MaxDeliveryAttempts: a.MaxDeliveryAttempts,
		})
	case traces.OpOutboxClaim:
		var rows []actordelivery.OutboxRow
		if t.elig != nil {
			rows, err = t.elig.OutboxClaim(ctx, t.clock.Now(), a.Limit, traces.Duration(a.ClaimFor))
		} else {
			rows, err = t.st.OutboxClaim(ctx, a.Limit, traces.Duration(a.ClaimFor))
		}
		for _, r := range rows {
			o.Claimed = append(o.Claimed, replay.ClaimedRow{ID: r.ID, DeliveryAttempts: r.DeliveryAttempts, Token: r.ClaimToken})
			t.claimed[r.ID] = r
		}
	case traces.OpOutboxComplete:
		o.Err, err = errKind(t.st.OutboxComplete(ctx, a.ID, a.Token))
	case traces.OpOutboxFail:
		o.Err, err = errKind(t.st.OutboxFail(ctx, a.ID, a.Token, traces.Duration(a.Delay)))
	case traces.OpOutboxDeadLetter:
		o.Err, err = errKind(t.st.OutboxDeadLetter(ctx, a.ID, a.Token, a.Reason))
	case traces.OpAdvanceClock:
		// The clock was set above; nothing else happens.
	case traces.OpPurge:
		var r actordelivery.PurgeResult
		if t.elig != nil {
			r, err = t.elig.Purge(ctx, t.clock.Now(), traces.Duration(a.OlderThan), traces.Duration(a.Horizon), a.Limit)
		} else {
			r, err = t.st.Purge(ctx, traces.Duration(a.OlderThan), traces.Duration(a.Horizon), a.Limit)
		}
		o.Affected = r.Total()
	case traces.OpMarkProcessed:
		if t.elig != nil {
			o.Duplicate, err = t.elig.MarkProcessed(ctx, t.clock.Now(), a.Consumer, a.ID, traces.Duration(a.TTL))
		} else {
			o.Duplicate, err = t.st.MarkProcessed(ctx, a.Consumer, a.ID, traces.Duration(a.TTL))
		}
	case traces.OpSaveCheckpoint:
		var v int64
		if t.elig != nil {
			v, err = t.elig.SaveCheckpoint(ctx, t.clock.Now(), a.Actor, []byte(a.Payload), int64(a.ExpectVersion))
		} else {
			v, err = t.st.SaveCheckpoint(ctx, a.Actor, []byte(a.Payload), int64(a.ExpectVersion))
		}
		o.Version = int(v)
		o.Err, err = errKind(err)
	case traces.OpLoadCheckpoint:
		var v int64
		_, v, err = t.st.LoadCheckpoint(ctx, a.Actor)
		o.Version = int(v)
		o.Err, err = errKind(err)
	case traces.OpRedrive:
		if t.elig != nil {
			o.Err, err = errKind(t.elig.Redrive(ctx, t.clock.Now(), a.ID, a.Reason))
		} else {
			o.Err, err = errKind(t.st.Redrive(ctx, a.ID, a.Reason))
		}
	case traces.OpListRedrives:
		var recs []actordelivery.Redrive
		recs, err = t.st.ListRedrives(ctx, a.ID)
		for _, r := range recs {
			o.Redrives = append(o.Redrives, traces.RedriveRecord{
				ID: r.ID, Kind: r.Kind, Mailbox: r.Mailbox, Attempts: r.Attempts, DeadReason: r.DeadReason,
				Reason: r.Reason, At: traces.Seconds(r.At),
			})
		}
	case traces.OpConsumerFetch:
		t.wakes.Fetched(a.Worker, a.Mailbox)
		return t.fetch(ctx, a)
	case traces.OpConsumerHandle:
		return t.handle(ctx, a)
	case traces.OpPublisherDeliver:
		return t.deliver(ctx, a)
	case traces.OpCrash:
		clear(t.fetched)
		clear(t.batches)
		clear(t.owed)
		t.wakes.Crash()
		return replay.Observation{}, t.Reopen(ctx)
	case traces.OpWorkerStop:
		// The stop changes nothing stored. Replay runs the consumer steps the trace names, so
		// whether a stopped worker fetched again is the model's judgement of the trace, not the
		// store's (docs/semantics.md, "Shutdown"). A recording store records the stop as
		// RunWorkers does.
		return replay.Observation{}, t.recordWorker(ctx, op, a.Worker, "")
	case traces.OpWorkerDrain:
		// A delivery the drain timeout cut off is forgotten, as a crash forgets it; its message
		// stays as stored.
		delete(t.fetched, a.Worker)
		delete(t.batches, a.Worker)
		return replay.Observation{}, t.recordWorker(ctx, op, a.Worker, a.Outcome)
	case traces.OpWake:
		// Replay cannot make the store wake anyone; it judges the wake by the store's rows, as
		// the model does (docs/semantics.md, "Wake-ups"): the message must be committed in the
		// mailbox. A purged message's wake reads as not committed here.
		var ok bool
		ok, err = t.committedIn(ctx, a.Mailbox, a.ID)
		if !ok {
			o.Err = traces.ErrKindNotCommitted
		} else if err == nil {
			t.wakes.Woke(a.Worker, a.Mailbox)
		}
	case traces.OpPollTick:
		// Replay cannot make a consumer wait either; the tick is judged from the trace's wakes
		// and fetches, as the model does.
		o.Err = t.wakes.PollTick(a.Worker, a.Mailbox)
	case traces.OpConsumerFetchBatch:
		if o, err = t.fetchBatch(ctx, a); err == nil {
			t.wakes.Fetched(a.Worker, a.Mailbox)
		}
		return o, err
	case traces.OpConsumerHandleBatch:
		if t.cfg.handle != nil {
			return replay.Observation{}, fmt.Errorf("%w: %q: the variant replaces Consumer.Handle and has no batch handle", replay.ErrUnsupported, op)
		}
		return t.handleBatch(ctx, a)
	case traces.OpConsumerEffectsBatch:
		// HandleBatch runs each acknowledged message's Effects in the acknowledgement's
		// transaction, so the store's consumer never owes an effect after its handle: the step
		// commits nothing and lists none (the model's correct consumer, docs/semantics.md,
		// "Batches"). Only a broken batch handle leaves Effects owed, which commit here.
		return t.effectsBatch(ctx, a)
	case traces.OpPublisherDeliverBatch:
		return t.deliverBatch(ctx, a)
	default:
		return replay.Observation{}, fmt.Errorf("%w: %q", replay.ErrUnsupported, op)
	}
	return o, err
}

// recordWorker records a worker_stop or worker_drain of worker w as RunWorkers records it: one
// protocol step in a transaction of its own (nothing when the store does not record).
func (t *StoreTarget) recordWorker(ctx context.Context, op traces.Op, w int, outcome string) error {
	return t.st.ExecTx(ctx, false, func(ctx context.Context) error {
		actordelivery.RecordStep(ctx, actordelivery.Event{Op: string(op), Args: actordelivery.EventArgs{Worker: w, Outcome: outcome}})
		return nil
	})
}

func Payload(p string) []byte {
	if p == "" {
		return nil
	}
	return []byte(p)
}

// observed is the message a caller sees. withToken is false for peek and the leaseless fetch,
// which report no token even when the row still carries a stale one from an expired lease.
func observed(m *actordelivery.Message, withToken bool) *replay.Message {
	if m == nil {
		return nil
	}
	o := &replay.Message{ID: m.ID, Attempts: m.Attempts}
	if withToken {
		o.Token = m.Token
	}
	return o
}

func consumerPath(profile string) (actordelivery.Path, error) {
	switch profile {
	case traces.ProfileLeased:
		return actordelivery.PathLeased, nil
	case traces.ProfileLeaseless:
		return actordelivery.PathLeaseless, nil
	}
	return 0, fmt.Errorf("consumer profile %q is not %q or %q", profile, traces.ProfileLeased, traces.ProfileLeaseless)
}

// retryPolicy is a consumer_handle step's retry policy: it declines for the outcome fail_no_retry
// and otherwise always retries after the step's retry_delay.
func retryPolicy(a replay.Args) actordelivery.RetryPolicy {
	if a.Outcome == traces.OutcomeFailNoRetry {
		return declineRetry{}
	}
	return FixedRetry(traces.Duration(a.RetryDelay))
}

// FixedRetry always retries, after the step's delay.
type FixedRetry time.Duration

func (d FixedRetry) Retry(error, int) (time.Duration, bool) { return time.Duration(d), true }

// declineRetry is the retry policy of a consumer_handle step whose outcome is fail_no_retry.
type declineRetry struct{}

func (declineRetry) Retry(error, int) (time.Duration, bool) { return 0, false }

// errHandlerFails is the error of a trace's failing handler (adapter.ErrHandlerFailed); its message is the dead-letter
// reason a declining retry policy records.
var errHandlerFails = adapter.ErrHandlerFailed

// declinedError is the error of a handler whose failure the step's retry policy declines
// (outcome fail_no_retry): its text is the dead-letter reason the step states.
type declinedError struct{ reason string }

func (e declinedError) Error() string { return e.reason }

// handlerDeclined is the error of a declined failure whose step states reason ("" for
// errHandlerFails' text, as a trace without reasons means).
func handlerDeclined(reason string) error {
	return declinedError{reason: cmp.Or(reason, errHandlerFails.Error())}
}

// consumer builds the real consumer a consumer step runs, with handler h. A new one per step is
// the same code the worker's long-lived consumer runs; the consumer keeps no state between
// iterations that a step could observe.
func (t *StoreTarget) consumer(a replay.Args, h actordelivery.Handler) (*actordelivery.Consumer, error) {
	opts, err := t.consumerOptions(a)
	if err != nil {
		return nil, err
	}
	return actordelivery.NewConsumer(t.st, h, opts)
}

// consumerOptions are the options of a consumer step's consumer, with the single step's retry
// policy.
func (t *StoreTarget) consumerOptions(a replay.Args) (actordelivery.ConsumerOptions, error) {
	path, err := consumerPath(a.Profile)
	if err != nil {
		return actordelivery.ConsumerOptions{}, err
	}
	leaseFor := traces.Duration(a.LeaseFor)
	if leaseFor == 0 {
		// ConsumerOptions reads 0 as its 30s default; the smallest positive duration rounds to
		// a lease that ends at once, which is what lease_for 0 means.
		leaseFor = time.Nanosecond
	}
	return actordelivery.ConsumerOptions{
		Mailbox: a.Mailbox, Path: path, LeaseFor: leaseFor, Retry: retryPolicy(a), Logger: t.log,
		// A recording store names the consumer in its events as the trace names the worker.
		Worker: a.Worker,
	}, nil
}

// handler is the handler of the target's consumers; see EffectHandler.
func (t *StoreTarget) handler(outcome, reason string) actordelivery.Handler {
	return EffectHandler(t.st, outcome, reason)
}

// EffectHandler fails when outcome is "fail" or "fail_no_retry" (with reason as its error text
// for a declined failure, errHandlerFails' when reason is ""); otherwise its effects append the
// message id to the mailbox's effect log (the checkpoint "effects/<mailbox>"), reading and
// writing the log inside the acknowledgement's transaction, so the effect commits exactly when
// the acknowledgement does.
func EffectHandler(st *actordelivery.Store, outcome, reason string) actordelivery.Handler {
	return func(_ context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		switch outcome {
		case traces.OutcomeFail:
			return nil, errHandlerFails
		case traces.OutcomeFailNoRetry:
			return nil, handlerDeclined(reason)
		}
		return func(ctx context.Context) error { return appendEffect(ctx, st, m.Mailbox, m.ID) }, nil
	}
}

// appendEffect appends id to mailbox's effect log in the transaction ctx carries.
func appendEffect(ctx context.Context, st *actordelivery.Store, mailbox, id string) error {
	actor := adapter.EffectsActor(mailbox)
	state, version, err := st.LoadCheckpoint(ctx, actor)
	if err != nil && !errors.Is(err, actordelivery.ErrNotFound) {
		return err
	}
	data, err := adapter.AppendEffect(state, id)
	if err != nil {
		return fmt.Errorf("targets: effect log %q: %w", actor, err)
	}
	_, err = st.SaveCheckpoint(ctx, actor, data, version)
	return err
}

// fetch runs the real consumer's Fetch for the step's worker (or, with copied rules, the same
// fetch through the copy: expire then lease in one transaction, or peek). A worker that fetches
// again without handling drops what it held: the dropped leased delivery's lease runs out, a
// dropped leaseless one changed nothing.
func (t *StoreTarget) fetch(ctx context.Context, a replay.Args) (replay.Observation, error) {
	delete(t.fetched, a.Worker)
	delete(t.batches, a.Worker)
	c, err := t.consumer(a, t.handler(traces.OutcomeOK, ""))
	if err != nil {
		return replay.Observation{}, err
	}
	var d *actordelivery.Delivery
	if t.elig != nil {
		d, err = t.fetchCopy(ctx, a)
	} else {
		d, err = c.Fetch(ctx)
	}
	if err != nil {
		return replay.Observation{}, err
	}
	if d == nil {
		return replay.Observation{}, nil
	}
	t.fetched[a.Worker] = d
	return replay.Observation{Message: observed(&d.Message, d.Path == actordelivery.PathLeased)}, nil
}

// fetchCopy is Consumer.Fetch through the copied eligibility SQL.
func (t *StoreTarget) fetchCopy(ctx context.Context, a replay.Args) (*actordelivery.Delivery, error) {
	path, err := consumerPath(a.Profile)
	if err != nil {
		return nil, err
	}
	var m *actordelivery.Message
	if path == actordelivery.PathLeaseless {
		m, err = t.elig.Peek(ctx, t.clock.Now(), a.Mailbox)
	} else {
		m, err = t.elig.ExpireThenLease(ctx, t.clock.Now(), a.Mailbox, traces.Duration(a.LeaseFor))
	}
	if err != nil || m == nil {
		return nil, err
	}
	return &actordelivery.Delivery{Message: *m, Path: path}, nil
}

// handle runs the real consumer's Handle (or the variant's replacement) on the worker's fetched
// delivery; a worker holding none is idle. Fault commit_fails fails the handle's transaction the
// way a service meets it, by ending the handle's context: a successful handler's Effects end it
// as the last work of the transaction, a failing handler before the transaction begins (and so
// does every handler of a broken consumer, which may hold its Effects back).
func (t *StoreTarget) handle(ctx context.Context, a replay.Args) (replay.Observation, error) {
	d := t.fetched[a.Worker]
	if d == nil {
		return replay.Observation{Action: traces.ActionIdle}, nil
	}
	delete(t.fetched, a.Worker)
	h := t.handler(a.Outcome, a.Reason)
	failCommit := a.Fault == traces.FaultCommitFails
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if failCommit {
		h = failingCommit(h, cancel, t.cfg.handle != nil)
	}
	var out actordelivery.Outcome
	var err error
	if t.cfg.handle != nil {
		consumer := func(h actordelivery.Handler) (*actordelivery.Consumer, error) { return t.consumer(a, h) }
		out, err = t.cfg.handle(hctx, t.st, consumer, h, retryPolicy(a), d)
	} else {
		var c *actordelivery.Consumer
		if c, err = t.consumer(a, h); err == nil {
			out, err = c.Handle(hctx, d)
		}
	}
	switch {
	case failCommit && err != nil && errors.Is(err, context.Canceled) && ctx.Err() == nil:
		return replay.Observation{Action: traces.ActionCommitFailed}, nil
	case err != nil:
		return replay.Observation{}, err
	case failCommit && out.Action == actordelivery.ActionLeaseLost:
		// The acknowledgement's fence failed, so the Effects never ran to end the transaction.
		// But it rolled back and wrote nothing: a commit that failed would have left the store
		// exactly as it is, and the handle reports what a failed commit reports.
		return replay.Observation{Action: traces.ActionCommitFailed}, nil
	case failCommit:
		return replay.Observation{}, fmt.Errorf("targets: %q with fault %q: the handle committed %q although its context ended",
			traces.OpConsumerHandle, a.Fault, out.Action)
	}
	return replay.Observation{Action: out.Action, Attempt: out.Attempt}, nil
}

// failingCommit wraps h so that the handle it runs in does not commit: cancel ends the handle's
// context after a successful handler's Effects ran (the last work of its transaction), or, for a
// failing handler and whenever early is set, before the handler returns.
func failingCommit(h actordelivery.Handler, cancel context.CancelFunc, early bool) actordelivery.Handler {
	return func(ctx context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		effects, err := h(ctx, m)
		if err != nil || effects == nil || early {
			cancel()
			return effects, err
		}
		return func(ctx context.Context) error {
			if err := effects(ctx); err != nil {
				return err
			}
			cancel()
			return nil
		}, nil
	}
}

func publishMode(profile string) (actordelivery.PublishMode, error) {
	switch profile {
	case traces.ProfileFold:
		return actordelivery.ModeFold, nil
	case traces.ProfileSplit:
		return actordelivery.ModeSplit, nil
	}
	return 0, fmt.Errorf("publisher profile %q is not %q or %q", profile, traces.ProfileFold, traces.ProfileSplit)
}

func (t *StoreTarget) deliver(ctx context.Context, a replay.Args) (replay.Observation, error) {
	mode, err := publishMode(a.Profile)
	if err != nil {
		return replay.Observation{}, err
	}
	rows, err := t.st.ListOutbox(ctx)
	if err != nil {
		return replay.Observation{}, err
	}
	var row actordelivery.OutboxRow
	if i := slices.IndexFunc(rows, func(r actordelivery.OutboxRow) bool { return r.ID == a.ID }); i >= 0 {
		row = rows[i]
	} else if c, ok := t.claimed[a.ID]; ok {
		row = c // purged since a claim returned it: the publisher delivers its copy
	} else {
		return replay.Observation{}, fmt.Errorf("outbox row %q does not exist and no claim returned it", a.ID)
	}
	row.ClaimToken = a.Token
	fst, err := NewFaultStore(t.st, a.Fault)
	if err != nil {
		return replay.Observation{}, err
	}
	var res actordelivery.DeliveryResult
	// A replaced split delivery replaces the commits; a row the publisher's check refuses never
	// reaches them, so the real publisher handles it (as the P model's broken profile does).
	if mode == actordelivery.ModeSplit && t.cfg.deliverSplit != nil && a.Fault != traces.FaultUndeliverable {
		res, err = t.cfg.deliverSplit(ctx, fst, row)
	} else {
		var p *actordelivery.Publisher
		p, err = actordelivery.NewPublisher(fst, actordelivery.PublisherOptions{
			Mode: mode, Logger: t.log, RetryDelay: traces.Duration(a.RetryDelay), Check: undeliverable(a.Fault),
		})
		if err != nil {
			return replay.Observation{}, err
		}
		res, err = p.Deliver(ctx, row)
	}
	if err != nil && !fst.Injected(err) {
		return replay.Observation{}, err
	}
	o := replay.Observation{Action: res.Action, Duplicate: res.Duplicate}
	if fst.crashed {
		// The process died after the step's first commit: whatever the publisher went on to
		// report, nobody saw it.
		o.Action = traces.ActionCrashed
	}
	return o, nil
}

// undeliverable is the publisher's row check for a step with fault: the undeliverable fault
// refuses the row with the trace's reason, every other fault accepts it.
func undeliverable(fault string) func(context.Context, actordelivery.OutboxRow) error {
	if fault != traces.FaultUndeliverable {
		return nil
	}
	return func(context.Context, actordelivery.OutboxRow) error { return errUndeliverable }
}

// committedIn reports whether the store holds message id in mailbox, as a row or a dead letter.
func (t *StoreTarget) committedIn(ctx context.Context, mailbox, id string) (bool, error) {
	m, err := t.st.GetMessage(ctx, id)
	if err == nil {
		return m.Mailbox == mailbox, nil
	}
	if !errors.Is(err, actordelivery.ErrNotFound) {
		return false, err
	}
	dead, err := t.st.ListDeadLetters(ctx)
	if err != nil {
		return false, err
	}
	for _, d := range dead {
		if d.ID == id {
			return d.Mailbox == mailbox, nil
		}
	}
	return false, nil
}

// Snapshot reads every message, dead letter and outbox row, and the effect log of every mailbox.
func (t *StoreTarget) Snapshot(ctx context.Context) (replay.Snapshot, error) {
	if t.st == nil {
		return replay.Snapshot{}, errors.New("targets: store target: closed")
	}
	msgs, err := t.st.ListMessages(ctx, "")
	if err != nil {
		return replay.Snapshot{}, fmt.Errorf("targets: store target: snapshot: %w", err)
	}
	dead, err := t.st.ListDeadLetters(ctx)
	if err != nil {
		return replay.Snapshot{}, fmt.Errorf("targets: store target: snapshot: %w", err)
	}
	outbox, err := t.st.ListOutbox(ctx)
	if err != nil {
		return replay.Snapshot{}, fmt.Errorf("targets: store target: snapshot: %w", err)
	}
	s := replay.Snapshot{Effects: map[string][]string{}}
	mailboxes := map[string]bool{}
	for mb := range t.mailboxes {
		mailboxes[mb] = true
	}
	for _, m := range msgs {
		mailboxes[m.Mailbox] = true
		s.Messages = append(s.Messages, replay.MessageRow{
			Mailbox: m.Mailbox, ID: m.ID, Key: m.Key, Priority: m.Priority, Payload: string(m.Payload),
			State: m.State, Attempts: m.Attempts, MaxAttempts: m.MaxAttempts, AvailableAt: traces.Seconds(m.AvailableAt),
			Token: m.Token, LeaseUntil: traces.Seconds(m.LeaseUntil),
		})
	}
	for _, d := range dead {
		mailboxes[d.Mailbox] = true
		s.DeadLetters = append(s.DeadLetters, traces.DeadLetterRow{
			Mailbox: d.Mailbox, ID: d.ID, Key: d.Key, Priority: d.Priority, Payload: string(d.Payload),
			Attempts: d.Attempts, MaxAttempts: d.MaxAttempts, Reason: d.Reason, DeadAt: traces.Seconds(d.DeadAt),
		})
	}
	for _, r := range outbox {
		s.Outbox = append(s.Outbox, replay.OutboxRow{
			ID: r.ID, Target: r.Target, Key: r.Key, Priority: r.Priority, MaxAttempts: r.MaxAttempts,
			Payload: string(r.Payload), State: r.State, DeliveryAttempts: r.DeliveryAttempts,
			AvailableAt: traces.Seconds(r.AvailableAt), Token: r.ClaimToken, ClaimUntil: traces.Seconds(r.ClaimUntil),
			Reason: r.DeadReason,
		})
	}
	for mb := range mailboxes {
		state, _, err := t.st.LoadCheckpoint(ctx, adapter.EffectsActor(mb))
		if errors.Is(err, actordelivery.ErrNotFound) {
			continue
		}
		if err != nil {
			return replay.Snapshot{}, fmt.Errorf("targets: store target: snapshot: %w", err)
		}
		ids, err := adapter.ReadEffects(state)
		if err != nil {
			return replay.Snapshot{}, fmt.Errorf("targets: store target: snapshot: effect log of %q: %w", mb, err)
		}
		if len(ids) > 0 {
			s.Effects[mb] = ids
		}
	}
	return s, nil
}
