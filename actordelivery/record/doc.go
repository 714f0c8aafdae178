// Package record holds the types of a recorded store history: the events a recording
// actordelivery.Store writes (Event, with its Args and Result) and the rows of the snapshot it
// states when it opens over existing data (SnapshotRow). Their JSON form, one event per line, is
// the event log that `pconform check` and `pconform convert` read; the field names are part of
// that contract.
//
// The package has no behaviour and imports no database driver, so a program that only reads or
// checks logs (package observe, the checker of a service's log) links neither SQLite nor
// PostgreSQL. Package actordelivery names the same types Event, EventArgs, EventResult,
// EventMessage, EventClaimed and SnapshotRow.
package record
