package targets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/brokenstore"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
)

// ErrUnknown is wrapped by New and NewOn for a name it does not know.
var ErrUnknown = errors.New("replay: unknown target")

// Target names.
const (
	Store = "store"
	Model = "model"
	// ModelRawAttempts is the reference model configured with the raw-attempts retry
	// count: a second, independent reproduction of the raw-attempts bug.
	ModelRawAttempts = "model-raw-attempts"
	// EligibilityCopy is the store with its eligibility and expiry SQL run from the copy
	// the rule-changing variants start from, with the store's own rules. It is a control, not a
	// variant: it must behave exactly as the store, which shows that those variants differ from
	// the store only where their rule says so.
	EligibilityCopy = "eligibility-copy"

	// The broken variants, each reproducing one known bug (see ForVariant).
	SplitWrite  = "split-write"
	RawAttempts = "raw-attempts"
	UnfencedAck = "unfenced-ack"
	// FetchedAttempts is the store whose leaseless consumer decides retry or dead letter
	// from the attempt count its fetch saw, not from the row as stored at handle time.
	FetchedAttempts = "fetched-attempts"
	LeaseBoundary   = "lease-boundary"
	LeaseEarly      = "lease-early"
	FifoOvertake    = "fifo-overtake"
	// OutboxUnbounded is the store whose outbox claim ignores max_delivery_attempts.
	OutboxUnbounded = "outbox-unbounded"
	// StaleExtend is the store whose lease extension accepts any token of a leased
	// message, so a stale token extends the newer lease.
	StaleExtend = "stale-extend"
	// DedupTTLInverted is the store whose mark_processed takes a live record for an
	// expired one and the other way round.
	DedupTTLInverted = "dedup-ttl-inverted"
	// CheckpointReset is the store whose first checkpoint save (expected version 0)
	// overwrites an existing checkpoint and resets its version to 1.
	CheckpointReset = "checkpoint-reset"
	// PurgeForgetsIDs is the store whose purge retires no id: a purged acked message or
	// dead letter enqueued again inside its dedup horizon comes back as a fresh message.
	PurgeForgetsIDs = "purge-forgets-ids"
	// RedriveKeepsAttempts is the store whose redrive puts a mailbox dead letter back with
	// the attempts it died with, so an exhausted message is never deliverable again.
	RedriveKeepsAttempts = "redrive-keeps-attempts"
	// EarlyDeadLetterUnfenced is the store whose leased consumer dead-letters a message
	// the retry policy declines to retry without checking that it still holds the lease.
	EarlyDeadLetterUnfenced = "early-dead-letter-unfenced"
	// RedriveRecordsReset is the store whose redrive records the attempt count after its
	// reset (0) instead of the count the dead letter had.
	RedriveRecordsReset = "redrive-records-reset"
	// ExhaustedDeadLetterUnfenced is the store whose leased consumer dead-letters a message
	// at max_attempts without checking that it still holds the lease.
	ExhaustedDeadLetterUnfenced = "exhausted-dead-letter-unfenced"
)

// definition is one entry of the target registry: a name, what it is, and how it is built.
// Every store-backed entry, the correct store and every broken variant alike, is a store target
// with a storeConfig; every model entry is a models.Config.
type definition struct {
	name string
	// doc says in one line what the target is.
	doc string
	// broken marks a known-broken variant: a trace whose expect.variant is name replays to a
	// match against it.
	broken bool
	// model, when set, makes this a model target with that configuration.
	model *models.Config
	// store configures a store target (when model is nil); the zero value is the correct store.
	store storeConfig
}

// definitions is the registry: the one list of targets that replay, the properties and the CLI
// resolve names against, in the order Names lists them.
func definitions() []definition {
	return []definition{
		{name: Store, doc: "the real store, consumer and publisher"},
		{name: Model, doc: "the pure reference model", model: &models.Config{}},
		{name: ModelRawAttempts, doc: "the reference model with the raw-attempts retry count",
			model: &models.Config{Attempts: func(stored int, _ bool) int { return stored }}},
		{name: EligibilityCopy, doc: "the store running the variants' copy of its eligibility SQL, rules unchanged (a control)",
			store: storeConfig{rules: &brokenstore.Rules{}}},
		{name: SplitWrite, broken: true, doc: "a split delivery that drops the enqueue's commit error",
			store: storeConfig{deliverSplit: brokenstore.DeliverSplitWrite}},
		{name: RawAttempts, broken: true, doc: "a leaseless consumer that hands the retry decision the raw stored attempt count",
			store: storeConfig{handle: brokenstore.HandleRawAttempts}},
		{name: UnfencedAck, broken: true, doc: "a leased consumer that acknowledges by id instead of by token",
			store: storeConfig{handle: brokenstore.HandleUnfencedAck}},
		{name: FetchedAttempts, broken: true, doc: "a leaseless consumer that decides a failure from the attempt count its fetch saw",
			store: storeConfig{handle: brokenstore.HandleFetchedAttempts}},
		{name: LeaseBoundary, broken: true, doc: "a lease still live at lease_until == now (<= for <)",
			store: storeConfig{rules: &brokenstore.Rules{LeaseInclusive: true}}},
		{name: LeaseEarly, broken: true, doc: "every lease expires a second early",
			store: storeConfig{rules: &brokenstore.Rules{LeaseSkew: time.Second}}},
		{name: FifoOvertake, broken: true, doc: "a keyed head blocks its successors only while it is itself eligible",
			store: storeConfig{rules: &brokenstore.Rules{HeadBlocksOnlyWhenEligible: true}}},
		{name: OutboxUnbounded, broken: true, doc: "an outbox claim that ignores max_delivery_attempts (rows are claimed past it, never dead-lettered)",
			store: storeConfig{rules: &brokenstore.Rules{ClaimIgnoresMaxDelivery: true}}},
		{name: StaleExtend, broken: true, doc: "a lease extension that checks the message is leased, not by which token (a stale token extends the newer lease)",
			store: storeConfig{rules: &brokenstore.Rules{ExtendIgnoresToken: true}}},
		{name: DedupTTLInverted, broken: true, doc: "a processed-message mark whose ttl check is inverted (a live mark is renewed, an expired one is a duplicate)",
			store: storeConfig{rules: &brokenstore.Rules{ProcessedTTLInverted: true}}},
		{name: CheckpointReset, broken: true, doc: "a first checkpoint save (expected version 0) that overwrites an existing checkpoint and resets its version to 1",
			store: storeConfig{rules: &brokenstore.Rules{CheckpointFirstSaveResets: true}}},
		{name: PurgeForgetsIDs, broken: true, doc: "a purge that retires no id (a purged id enqueued again inside its dedup horizon is inserted afresh)",
			store: storeConfig{rules: &brokenstore.Rules{PurgeForgetsIDs: true}}},
		{name: RedriveKeepsAttempts, broken: true, doc: "a redrive that puts a mailbox dead letter back with the attempts it died with (an exhausted message is never deliverable again)",
			store: storeConfig{rules: &brokenstore.Rules{RedriveKeepsAttempts: true}}},
		{name: EarlyDeadLetterUnfenced, broken: true, doc: "a leased consumer whose early dead-letter (the retry policy declines) skips the token fence (a stale worker dead-letters the message another worker leased)",
			store: storeConfig{handle: brokenstore.HandleEarlyDeadLetterUnfenced}},
		{name: RedriveRecordsReset, broken: true, doc: "a redrive whose history record takes the attempt count after the reset (0), not the dead letter's",
			store: storeConfig{rules: &brokenstore.Rules{RedriveRecordsReset: true}}},
		{name: ExhaustedDeadLetterUnfenced, broken: true, doc: "a leased consumer whose dead-letter at max_attempts skips the token fence (a stale exhausted worker dead-letters the redriven message another worker leased)",
			store: storeConfig{handle: brokenstore.HandleExhaustedDeadLetterUnfenced}},
	}
}

func lookup(name string) (definition, bool) {
	for _, d := range definitions() {
		if d.name == name {
			return d, true
		}
	}
	return definition{}, false
}

// Names lists the names New accepts.
func Names() []string {
	var names []string
	for _, d := range definitions() {
		names = append(names, d.name)
	}
	return names
}

// BrokenVariants lists the known-broken variants, in a stable order.
func BrokenVariants() []string {
	var names []string
	for _, d := range definitions() {
		if d.broken {
			names = append(names, d.name)
		}
	}
	return names
}

// Describe says in one line what the named target is; "" for an unknown name.
func Describe(name string) string {
	d, _ := lookup(name)
	return d.doc
}

// New returns the named target (see Names and Describe); a store-backed target keeps its
// SQLite database in dir, which must not hold one already. Unknown names give an error wrapping
// ErrUnknown.
func New(name, dir string) (replay.Target, error) { return NewOn(name, StoreDB{Dir: dir}) }

// NewOn is New with the store-backed targets on db (SQLite in db.Dir, or a schema of
// their own on the PostgreSQL server db.Server). Every target exists on both backends: the
// variants that run a copy of the store's statements (lease-boundary, lease-early,
// fifo-overtake, outbox-unbounded, stale-extend, dedup-ttl-inverted, checkpoint-reset,
// purge-forgets-ids, redrive-keeps-attempts, redrive-records-reset, eligibility-copy) copy them in the backend's own
// dialect.
func NewOn(name string, db StoreDB) (replay.Target, error) {
	d, ok := lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %q)", ErrUnknown, name, Names())
	}
	if d.model != nil {
		return NewModelTarget(*d.model), nil
	}
	return newStoreTarget(db, d.store)
}

// ForVariant is the target that reproduces a trace's expected variant: "store" for the
// correct store (variant ""), the variant's own name when it is a known-broken variant; ok is
// false for any other name.
func ForVariant(variant string) (name string, ok bool) {
	if variant == "" {
		return Store, true
	}
	if d, found := lookup(variant); found && d.broken {
		return d.name, true
	}
	return "", false
}

// StoreParts are the parts of the store a store-backed target replaces, for drivers other than
// replay that run the registry's targets (the observe workload): a nil field runs the store's
// own part. See storeConfig for what each one replaces.
type StoreParts struct {
	Rules  *brokenstore.Rules
	Handle func(ctx context.Context, st *actordelivery.Store, consumer brokenstore.Consumer, h actordelivery.Handler,
		retry actordelivery.RetryPolicy, d *actordelivery.Delivery) (actordelivery.Outcome, error)
	DeliverSplit func(ctx context.Context, st brokenstore.OutboxStore, row actordelivery.OutboxRow) (actordelivery.DeliveryResult, error)
}

// Parts returns the parts of the named store-backed target (the correct store's are all nil); ok
// is false for an unknown name or a model target.
func Parts(name string) (parts StoreParts, ok bool) {
	d, found := lookup(name)
	if !found || d.model != nil {
		return StoreParts{}, false
	}
	return StoreParts{Rules: d.store.rules, Handle: d.store.handle, DeliverSplit: d.store.deliverSplit}, true
}

// correctTargets are the targets that implement the delivery rules as docs/semantics.md states
// them; every other target is a broken variant.
var correctTargets = map[string]bool{Store: true, Model: true}

// IsCorrect reports whether target implements the rules without a known bug.
func IsCorrect(target string) bool { return correctTargets[target] }
