// Package adstore is the conformance kit's adapter for pconform's own store, actordelivery, on
// either backend. It is written as any user's adapter would be: it uses only the public APIs of
// actordelivery and adapter, nothing of pconform's internal packages.
//
// Unlike examples/memstore, whose store has only store-level operations, actordelivery has its
// own consumer and publisher, so the adapter runs the protocol steps on them (a real
// actordelivery.Consumer's Fetch and Handle, a real Publisher's Deliver) in methods of its own
// (ConsumerFetch, ConsumerHandle, PublisherDeliver, ...) instead of wrapping itself with
// adapter.WithProtocol. Every step is a method; adapter.Adapt makes the kit's Target of it.
// Publisher faults (commit_fails, crash_between) are injected by a thin actordelivery.OutboxStore
// around the store (faults.go). A handle's commit_fails ends the handle's context from its
// handler or its Effects, so its transaction does not commit.
//
// # Usage
//
//	tg, err := adstore.New(func(o actordelivery.Options) (*actordelivery.Store, error) {
//		return actordelivery.Open(filepath.Join(dir, "store.db"), o)
//	})
//	target := adapter.Adapt(tg)
//
// open is called once by New and again at every Reopen, after the previous store closed; it must
// open the same database each time with the options it is given (they carry the adapter's
// manual clock). conformtest's TestActordelivery runs the kit on it, on SQLite and PostgreSQL.
//
// # Contract
//
//   - Times: the store's clock is set to adapter.At of each step's time before the step runs.
//   - Effects: a handler's effect appends the message id to the checkpoint
//     adapter.EffectsActor(mailbox) inside the acknowledgement's transaction, so effects commit
//     and roll back with it; the snapshot reads them back from the store.
//   - Each worker's fetched delivery survives Reopen (the process lives on) and not a crash step.
package adstore
