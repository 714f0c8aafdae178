// Package brokenstore builds the known-broken variants of the delivery layer that replay's target
// registry offers: each one reproduces exactly one bug the P models and the properties know, so
// that a trace of that bug replays to a match against its variant and diverges from the correct
// store where the model says it must.
//
// Everything here is built from outside the store, on actordelivery's public API (a broken
// consumer's handle, a broken split delivery, a batch handle that runs the real HandleBatch with
// its handler's error dropped or its Effects held back: batch.go), or beside it, on a copy of the store's own
// eligibility, expiry, batch fetch, processed-message, checkpoint, purge and redrive SQL with one rule changed
// (Rules).
// actordelivery carries no flag, option or hook for any of them, and since the package is
// internal, no user of the module can reach it. The SQL is copied in both dialects (OpenEligibility on SQLite, OpenEligibilityPostgres on
// PostgreSQL, the latter with the store's row locking), so every variant exists on both backends.
//
// Enqueuer (wake.go) enqueues as an application does, inside a transaction held open or rolled
// back; with NotifyFirst it is the wake-outside-tx variant, whose wake-up NOTIFY leaves on a pool
// connection before the transaction commits. It is no replay target: TestWakeOutsideTxIsFound
// records a two-store history on PostgreSQL with it and checks that the log checker refuses it.
//
// The package never decides what a trace step means: replay maps steps to these functions.
package brokenstore
