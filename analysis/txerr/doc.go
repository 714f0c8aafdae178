// Package txerr defines an Analyzer that reports transaction outcomes that are dropped: the error
// result of a call that runs or commits a transaction, discarded, assigned to the blank
// identifier, or stored in a variable that is never returned, logged or checked.
//
// # Analyzer txerr
//
// txerr: report dropped transaction and commit errors
//
// A transaction's error is its outcome. When a caller drops it, a failed commit looks like a
// success and nothing is logged; in pconform's seed design this made a split publisher complete
// an outbox row whose message never arrived.
//
// Transaction calls are
//   - methods named ExecTx of the shape (context.Context, bool, func(context.Context) error) error,
//     on any receiver: (*actordelivery.Store).ExecTx, an interface the store satisfies,
//     wrappers that inject faults; the store's own ExecTx is recognised even if its shape drifts,
//   - (*database/sql.Tx).Commit,
//   - functions, methods and interface methods whose doc comment carries //pconform:txcommit
//     (the mark is exported as a fact, so callers in other packages see it).
//
// The error result (the last result) is handled when, along straight-line flow from the call,
// it is returned (possibly wrapped by fmt.Errorf, errors.Join or inside a composite value),
// passed to a log/slog, log or testing logging call, to panic, or to any other function (a
// hand-off the analyzer does not follow), stored outside the function's locals, sent on a
// channel, or tested in an if or switch condition whose branch returns, panics or logs and
// which every error can enter: a test for one particular error (errors.Is, errors.As, == with a
// sentinel, a case naming one error) handles that error only, so the others must be handled by
// another use.
// Printing with fmt.Print* or fmt.Fprint* does not count: the project logs with log/slog, and a
// message on a terminal is not an outcome anyone acts on.
//
// A suggested fix rewrites a bare call or `_ = call` of a single-error-result transaction call,
// in a function whose last result is error, into
//
//	if err := call; err != nil {
//		return <zero values>, err
//	}
//
// A transaction whose callback fails on every path (each return yields a new error, a sentinel,
// or a variable just tested non-nil; or it panics) never commits: dropping its error is a
// deliberate rollback and is not reported.
//
// The analyzer never follows values into other functions, through struct fields or across
// goroutines; docs/analyzers.md lists the resulting false negatives. A finding made on purpose
// is silenced with //pconform:ignore txerr <reason>.
package txerr
