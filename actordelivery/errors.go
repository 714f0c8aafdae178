package actordelivery

import "errors"

// Sentinel errors. Every error the package returns that a caller may branch on wraps exactly one of
// these (test with errors.Is); the message around it names the operation and the argument or row.
var (
	// ErrLeaseLost: the message does not exist, is not ready, or does not carry the given lease
	// token (it was cleared by a nack, an expiry or an ack, or replaced by a newer lease). Nothing
	// changed.
	ErrLeaseLost = errors.New("lease lost")
	// ErrClaimLost: the outbox row does not exist, is not pending, or does not carry the given claim
	// token. Nothing changed.
	ErrClaimLost = errors.New("claim lost")
	// ErrNotFound: no row in the state the operation needs (a ready message, a checkpoint).
	ErrNotFound = errors.New("not found")
	// ErrInvalidArgument: the call itself is wrong (an empty id, a negative duration or one above
	// MaxDuration, ...). The
	// message names the argument. Nothing was written.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
	// ErrBusy: SQLite reported the database busy or locked for longer than the busy timeout, or
	// PostgreSQL reported a serialization failure, a deadlock, a lock timeout or too many
	// connections. The driver's error is wrapped as well. Nothing was written; retrying later may
	// succeed.
	ErrBusy = errors.New("database busy")
	// ErrVersionConflict: a checkpoint write expected a version the stored checkpoint no longer has.
	ErrVersionConflict = errors.New("version conflict")
	// ErrNoTransaction: Tx was called with a context that carries no store transaction, or a
	// handle from Tx was used after its transaction ended. Nothing ran.
	ErrNoTransaction = errors.New("no transaction")
	// ErrOutsideTransaction: a store call was made inside an ExecTx callback (or a Handler's
	// Effects), on the callback's goroutine, with a context that does not carry the callback's
	// transaction (usually the outer context instead of the one the callback received). Nothing
	// ran: the call neither wrote outside the transaction nor waited for it. Pass the callback's
	// context.
	ErrOutsideTransaction = errors.New("store call outside the running transaction")
	// ErrAuthFailed: OpenPostgres's server refused the role or its credentials (SQLSTATE 28000
	// or 28P01). The server's error is wrapped as well.
	ErrAuthFailed = errors.New("authentication failed")
	// ErrNoDatabase: OpenPostgres's server has no database of the DSN's name (SQLSTATE 3D000).
	ErrNoDatabase = errors.New("database does not exist")
	// ErrUnreachable: OpenPostgres got no answer from the server within Options.ConnectTimeout
	// (nothing listens on the port, no route, a timeout). The network error is wrapped as well.
	ErrUnreachable = errors.New("server unreachable")
	// ErrDrainTimeout is the cause (context.Cause) with which RunWorkers cancels a handler's
	// context when its drain timeout ran out (ConsumerOptions.DrainTimeout). The delivery
	// commits nothing: its message stays as stored, for the lease or peek rules to find again.
	ErrDrainTimeout = errors.New("drain timeout")
)
