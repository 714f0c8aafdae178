// Package timeline turns a trace, and optionally the verdict of replaying it, into a step-by-step
// timeline a person can read: one row per step (time, operation, arguments, the result the model
// expected, what the target observed), one lane per mailbox and for the outbox, the rows each step
// touched, and the divergence highlighted.
//
// It renders as plain text for a terminal ([WriteText]) and as one self-contained HTML page with no
// external resources ([WriteHTML]). The package is pure: it reads values and writes to an io.Writer;
// it never runs a replay, opens a store or touches the file system.
package timeline
