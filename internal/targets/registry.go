package targets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/brokenstore"
	"github.com/pconform/pconform/internal/variants"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// ErrUnknown is wrapped by New and NewOn for a name it does not know.
var ErrUnknown = errors.New("targets: unknown target")

// Target names: the catalogue's (internal/variants), under the names this package's callers use.
const (
	Store                       = variants.Store
	Model                       = variants.Model
	ModelRawAttempts            = variants.ModelRawAttempts
	EligibilityCopy             = variants.EligibilityCopy
	SplitWrite                  = variants.SplitWrite
	RawAttempts                 = variants.RawAttempts
	UnfencedAck                 = variants.UnfencedAck
	FetchedAttempts             = variants.FetchedAttempts
	LeaseBoundary               = variants.LeaseBoundary
	LeaseEarly                  = variants.LeaseEarly
	FifoOvertake                = variants.FifoOvertake
	OutboxUnbounded             = variants.OutboxUnbounded
	StaleExtend                 = variants.StaleExtend
	DedupTTLInverted            = variants.DedupTTLInverted
	CheckpointReset             = variants.CheckpointReset
	PurgeForgetsIDs             = variants.PurgeForgetsIDs
	RedriveKeepsAttempts        = variants.RedriveKeepsAttempts
	EarlyDeadLetterUnfenced     = variants.EarlyDeadLetterUnfenced
	RedriveRecordsReset         = variants.RedriveRecordsReset
	ExhaustedDeadLetterUnfenced = variants.ExhaustedDeadLetterUnfenced
	BatchAckBeforeEffects       = variants.BatchAckBeforeEffects
	BatchAcksFailed             = variants.BatchAcksFailed
	BatchSkipsKeyHead           = variants.BatchSkipsKeyHead
	EffectOutsideFold           = variants.EffectOutsideFold
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

// builds says how each catalogue entry is built: a models.Config for a model target, else a
// storeConfig (the zero value is the correct store). TestBuildsMatchCatalogue keeps it and
// internal/variants in step, each broken entry's part included. A function, so every caller gets
// parts of its own.
func builds() map[string]build {
	return map[string]build{
		Store:                       {},
		Model:                       {model: &models.Config{}},
		ModelRawAttempts:            {model: &models.Config{Attempts: func(stored int, _ bool) int { return stored }}},
		EligibilityCopy:             {store: storeConfig{rules: &brokenstore.Rules{}}},
		SplitWrite:                  {store: storeConfig{deliverSplit: brokenstore.DeliverSplitWrite}},
		RawAttempts:                 {store: storeConfig{handle: brokenstore.HandleRawAttempts}},
		UnfencedAck:                 {store: storeConfig{handle: brokenstore.HandleUnfencedAck}},
		FetchedAttempts:             {store: storeConfig{handle: brokenstore.HandleFetchedAttempts}},
		LeaseBoundary:               {store: storeConfig{rules: &brokenstore.Rules{LeaseInclusive: true}}},
		LeaseEarly:                  {store: storeConfig{rules: &brokenstore.Rules{LeaseSkew: time.Second}}},
		FifoOvertake:                {store: storeConfig{rules: &brokenstore.Rules{HeadBlocksOnlyWhenEligible: true}}},
		OutboxUnbounded:             {store: storeConfig{rules: &brokenstore.Rules{ClaimIgnoresMaxDelivery: true}}},
		StaleExtend:                 {store: storeConfig{rules: &brokenstore.Rules{ExtendIgnoresToken: true}}},
		DedupTTLInverted:            {store: storeConfig{rules: &brokenstore.Rules{ProcessedTTLInverted: true}}},
		CheckpointReset:             {store: storeConfig{rules: &brokenstore.Rules{CheckpointFirstSaveResets: true}}},
		PurgeForgetsIDs:             {store: storeConfig{rules: &brokenstore.Rules{PurgeForgetsIDs: true}}},
		RedriveKeepsAttempts:        {store: storeConfig{rules: &brokenstore.Rules{RedriveKeepsAttempts: true}}},
		EarlyDeadLetterUnfenced:     {store: storeConfig{handle: brokenstore.HandleEarlyDeadLetterUnfenced}},
		RedriveRecordsReset:         {store: storeConfig{rules: &brokenstore.Rules{RedriveRecordsReset: true}}},
		ExhaustedDeadLetterUnfenced: {store: storeConfig{handle: brokenstore.HandleExhaustedDeadLetterUnfenced}},
		BatchAckBeforeEffects:       {store: storeConfig{handleBatch: brokenstore.HandleBatchAckBeforeEffects}},
		BatchAcksFailed:             {store: storeConfig{handleBatch: brokenstore.HandleBatchAcksFailed}},
		BatchSkipsKeyHead:           {store: storeConfig{rules: &brokenstore.Rules{BatchSkipsLeasedHead: true}}},
		// The store refuses a write outside the fold: the variant breaks the model's consumer.
		EffectOutsideFold: {model: &models.Config{EffectOutsideFold: true}},
	}
}

// build is how one target is made.
type build struct {
	// model, when set, makes this a model target with that configuration.
	model *models.Config
	// store configures a store target (when model is nil).
	store storeConfig
}

// definitions is the registry: the catalogue of internal/variants, each entry with how it is
// built, in the catalogue's order.
func definitions() []definition {
	rows, all := variants.All(), builds()
	out := make([]definition, 0, len(rows))
	for _, r := range rows {
		b := all[r.Name]
		out = append(out, definition{name: r.Name, doc: r.Doc, broken: r.Kind == variants.Broken, model: b.model, store: b.store})
	}
	return out
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
// variants that run a copy of the store's statements (those whose Part in internal/variants is
// Rules or a Rules field) copy them in the backend's own dialect.
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
	HandleBatch  brokenstore.BatchHandle
}

// Parts returns the parts of the named store-backed target (the correct store's are all nil); ok
// is false for an unknown name or a model target.
func Parts(name string) (parts StoreParts, ok bool) {
	d, found := lookup(name)
	if !found || d.model != nil {
		return StoreParts{}, false
	}
	return StoreParts{Rules: d.store.rules, Handle: d.store.handle, DeliverSplit: d.store.deliverSplit, HandleBatch: d.store.handleBatch}, true
}

// Unsupported lists the steps the named target cannot run (what its Capabilities declare); nil
// for a target that runs every step, or an unknown name.
func Unsupported(name string) []traces.Op {
	d, ok := lookup(name)
	if !ok || d.model != nil {
		return nil
	}
	return d.store.unsupported()
}

// IsCorrect reports whether target implements the rules without a known bug (the catalogue's
// correct kind: the store and the model).
func IsCorrect(target string) bool {
	r, ok := variants.Lookup(target)
	return ok && r.Kind == variants.Correct
}
