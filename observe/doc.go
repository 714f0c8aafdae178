// Package observe checks what the real store did. It reads the history an actordelivery Recorder
// wrote (JSON lines, or the same events as slog JSON records), puts it in commit order, turns it
// into a trace (traces.Format) of origin kind "observed", and checks that trace against the Go
// reference model, which must agree with every observed result when it steps through the history
// in commit order (CheckModel).
//
// Streaming: Check reads a log of any length as it goes (Decoder, then Ordered, which puts
// events in commit order within a reorder window) and steps a ModelOracle through it, handing each
// event also to a list of Checkers, the seam for rules checked event by event beside the model.
// It keeps only live state (the model's rows, the token bindings rows still carry, each live row's
// events for a finding's window), so memory follows the live rows, not the log. Given the log
// file (CheckOptions.Log), it keeps those events as their positions in it and reads them again
// when a finding needs its window. Given a way to read the log again from its start
// (CheckOptions.Reread, ReadAgain), it keeps no row's events at all: at the first finding it
// checks the log again up to it, keeping them, for the window. A Follower tails a growing log
// for Check. ReadLog and CheckModel are the whole-history forms, for traces.
//
// Mid-life logs: a recording store that opens on a database holding rows states them as
// "snapshot" events after its incarnation event. Check starts the model from the first snapshot
// when it precedes every step, and holds each later one (a restart's) to the state reached; a
// snapshot it cannot trust is an ErrBadLog error naming the line (snapshot.go). A trace starts
// from the empty store, so Convert refuses a log that starts from a non-empty snapshot.
//
// Partitions: CheckJobs checks a log split by key (Router: a mailbox, its rows, the outbox rows
// that target it) in parallel, with the rules that span partitions checked where they join;
// CheckShard checks one share of it, for N machines, and JoinShards joins the shares' results.
// Both give Check's verdict (docs/observed.md, "All cores, and beyond one machine").
//
// Reading ahead: Decoder.Ahead parses a log on other goroutines, ahead of the check (or of
// CheckJobs' router), with the sequential decoder's events and errors.
//
// Contract: reading and checking are pure (an io.Reader in, values out); the package never opens
// a store, and it reads the events' types from actordelivery/record, so it links no database
// driver. A log it cannot trust is refused with an error naming the line (a malformed or unknown
// event, a result its operation cannot report) or the sequence numbers (a gap or a repeat); a
// truncated last line, which a killed writer leaves, is reported in the Log and ignored. A
// disagreement between model and store is a Finding, a value, never an error. Why commit order is
// a linearization, and where reads go in it: docs/observed.md.
//
// The P oracle (the spec deriver, the P drivers, the streaming P oracle as a Checker) is package
// bridge's: this package knows nothing of P.
//
// The command observe/cmd/pconform-efficacy measures how often the oracles catch each broken
// variant over many observed runs (docs/observed.md, "Efficacy"); it is a research harness, not
// part of the CLI or the gate.
package observe
