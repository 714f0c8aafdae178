package replay

import (
	"errors"
	"fmt"

	"github.com/pconform/pconform/models"
)

// ErrUnknownTarget is wrapped by NewTarget for a name it does not know.
var ErrUnknownTarget = errors.New("replay: unknown target")

// Target names.
const (
	TargetStore       = "store"
	TargetModel       = "model"
	TargetSplitWrite  = "split-write"
	TargetRawAttempts = "raw-attempts"
	TargetUnfencedAck = "unfenced-ack"
	// TargetFetchedAttempts is the store whose leaseless consumer decides retry or dead letter
	// from the attempt count its fetch saw, not from the row as stored at handle time.
	TargetFetchedAttempts = "fetched-attempts"
	// TargetModelRawAttempts is the reference model configured with the raw-attempts retry
	// count: a second, independent reproduction of the raw-attempts bug.
	TargetModelRawAttempts = "model-raw-attempts"
)

// Targets lists the names NewTarget accepts.
func Targets() []string {
	return []string{TargetStore, TargetModel, TargetSplitWrite, TargetRawAttempts, TargetUnfencedAck, TargetFetchedAttempts, TargetModelRawAttempts}
}

// MissingVariants names the variants a trace may carry (traces.Expect.Variant) that have no
// target here, with the reason.
func MissingVariants() map[string]string {
	return map[string]string{
		"fifo-overtake": "the keyed-order rule lives in the store's lease query; overtaking a blocking predecessor cannot be built from the public API without a store-level hook",
	}
}

// NewTarget returns the named target; a store-backed target keeps its database in dir, which
// must not hold one already. Unknown names give an error wrapping ErrUnknownTarget.
//
//	store         the real store, consumer and publisher
//	model         the pure reference model (dir unused)
//	split-write   store whose split delivery drops the enqueue's commit error
//	raw-attempts  store whose consumers hand the raw stored attempt count to the retry decision
//	unfenced-ack  store whose leased consumers acknowledge by id instead of by token
//	fetched-attempts  store whose leaseless consumer decides a failure from the count its fetch saw
//	model-raw-attempts  the model with the raw-attempts retry count (dir unused)
func NewTarget(name, dir string) (Target, error) { return NewTargetOn(name, StoreDB{Dir: dir}) }

// NewTargetOn is NewTarget with the store-backed targets on db (SQLite in db.Dir, or a schema of
// their own on the PostgreSQL server db.DSN).
func NewTargetOn(name string, db StoreDB) (Target, error) {
	cfg := storeConfig{}
	switch name {
	case TargetModel:
		return NewModelTarget(models.Config{}), nil
	case TargetModelRawAttempts:
		return NewModelTarget(models.Config{Attempts: func(stored int, _ bool) int { return stored }}), nil
	case TargetStore:
	case TargetSplitWrite:
		cfg.deliverSplit = splitWriteDeliver
	case TargetRawAttempts:
		cfg.attempts = rawAttempts
	case TargetUnfencedAck:
		cfg.handleLeasedOK = unfencedAck
	case TargetFetchedAttempts:
		cfg.handleLeaselessFail = fetchedAttempts
	default:
		return nil, fmt.Errorf("%w %q (known: %q)", ErrUnknownTarget, name, Targets())
	}
	return newStoreTarget(db, cfg)
}

// VariantTarget is the target that reproduces a trace's expected variant: "store" for the
// correct store (variant ""), the variant's own name otherwise; ok is false when the variant has
// no target (see MissingVariants).
func VariantTarget(variant string) (name string, ok bool) {
	if variant == "" {
		return TargetStore, true
	}
	for _, n := range Targets() {
		if n == variant && n != TargetModel && n != TargetStore && n != TargetModelRawAttempts {
			return n, true
		}
	}
	return "", false
}
