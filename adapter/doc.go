// Package adapter holds what a [replay.Target] for a store needs and should not have to guess:
// token conversions, the effects convention and the handler error.
//
// Times convert with [traces.At], [traces.Seconds] and [traces.Duration]; tokens with
// [FormatToken] and [ParseToken]. What the target cannot do or report is declared by a
// Capabilities method ([replay.Capabilities]).
//
// The package is pure: no I/O, no clock, no global state.
package adapter
