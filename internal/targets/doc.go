// Package targets holds the project's replay targets and their one registry: the real store
// ([StoreTarget], SQLite or PostgreSQL), the pure reference model ([ModelTarget]), the control
// eligibility-copy and every known-broken variant.
//
// # Registry
//
// registry.go is the one list of targets: replay's tests, the properties' hunts, the observe
// workload and the CLI's --target all resolve names through [New], [NewOn], [Names],
// [BrokenVariants], [ForVariant] and [Parts]. Every store-backed entry is built the same way: a
// store target whose storeConfig replaces one part (a copy of the store's SQL with one rule
// changed, the consumer's handle, or the split delivery) by its broken counterpart from
// internal/brokenstore. actordelivery never carries a flag or hook for a variant.
//
// # Fixtures
//
// [StoreDB] says where a store target keeps its database: a directory for SQLite (optionally
// copied from a migrated [SQLiteTemplate]) or a schema of its own on a [PGServer]. Fault
// injection for the publisher's steps (faults.go) wraps the store from outside.
//
// # Contract
//
//   - A target implements [replay.Target]: Do returns an error only when a step could not run;
//     every semantic outcome is an observation.
//   - A store target's Close keeps a SQLite file and empties its PostgreSQL tables for the next
//     target; only [PGServer.Close] drops the server's schema.
//   - New names come from the registry alone; an unknown name is an error wrapping [ErrUnknown].
package targets
