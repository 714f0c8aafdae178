package replay

import (
	"context"
	"errors"

	"github.com/pconform/pconform/traces"
)

// Target is what the engine drives: a store (real or modelled) that runs one trace step at a
// time with real values. Tokens are opaque strings chosen by the target; the engine maps them to
// and from the trace's symbols.
type Target interface {
	// Do runs one step at logical time at (seconds from [traces.Epoch]). It returns an error only
	// when the step could not run at all (a broken database, a malformed step); every semantic
	// outcome, a lost lease included, is reported in the Observation. An operation the target
	// does not implement returns an error wrapping [ErrUnsupported].
	Do(ctx context.Context, op traces.Op, at int64, args Args) (Observation, error)
	// Snapshot returns the target's whole state with real tokens and logical-second times.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Reopen closes and reopens the target's database, keeping the deliveries its workers have
	// fetched and not yet handled: a durability check that must not change any later result.
	Reopen(ctx context.Context) error
	// Close releases the target. It does not delete the target's files.
	Close() error
}

// ErrUnsupported is wrapped by a Target's Do for an operation it cannot run; [Run] turns it into
// an Inconclusive verdict rather than an error.
var ErrUnsupported = errors.New("replay: operation not supported by target")

// Args and Observation, the step arguments and results a target receives and reports, are
// generated from traces.Args and traces.Result into args_gen.go; the records an Observation and
// a Snapshot carry (Message, ClaimedRow, MessageRow, OutboxRow), from the traces records into
// rows_gen.go (see internal/gen), so that each has one shape: the trace's, with a real token.

// Claimed is the old name of ClaimedRow, kept so adapters written against it still compile.
//
// Deprecated: use ClaimedRow.
type Claimed = ClaimedRow

// Snapshot is a target's state with real tokens and times in logical seconds. Its slices need not
// be sorted; the engine canonicalizes after mapping tokens to symbols.
type Snapshot struct {
	// Unknown lists the columns the target does not report, as [traces.Snapshot.Unknown] does;
	// nil for a target that reports every column (the project's store and model).
	Unknown     []traces.Column
	Messages    []MessageRow
	Outbox      []OutboxRow
	DeadLetters []traces.DeadLetterRow
	// Effects maps a mailbox to the ids whose handler effects committed, in commit order.
	Effects map[string][]string
}
