// Package ledgerstore is the second worked example of docs/bring-your-own-store.md: a small
// in-memory mailbox and outbox with its own runtime. Unlike examples/memstore, whose protocol
// steps run on the kit's reference consumer and publisher, this store has its own consumer
// (consumer.go: its retry decision and its fenced dead letters) and its own publisher
// (publisher.go: fold or split delivery and the release after a failed commit), and the kit
// checks those.
//
//   - store.go: the store, whose changes run in transactions that commit whole or not at all, and
//     its ledger, per mailbox, of the messages whose handler effects committed.
//   - adapter.go: the store-level adapter (replay.Target) and the store's profile (profile.json:
//     an ack deletes the row).
//   - runtime.go: the glue that lets the kit drive the store's own consumer and publisher
//     (adapter.Consumer, adapter.Publisher), injecting a delivery's faults at its commits.
//
// ledgerstore_test.go runs conformtest under the store's profile, which passes. bugs_test.go
// builds three broken runtimes beside the tests, one bug each in the retry decision, the
// delivery's commit handling and the dead-letter fence, and requires the kit's default run to
// find each one and name its broken variant.
//
// The store is not for production: it keeps everything in memory.
package ledgerstore
