package adapter

import (
	"io"
	"time"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// The names below are the ones a store-level adapter needs from replay, traces and profile,
// reached through this package so that an author imports adapter (to write the adapter) and
// conformtest (to run the kit), and nothing else. Each is the same type, value or function as
// the one it names: a value of one passes for the other.

// Target is a store the kit drives step by step ([replay.Target]).
type Target = replay.Target

// Args are a step's arguments with real tokens ([replay.Args]).
type Args = replay.Args

// Observation is what a step reports ([replay.Observation]).
type Observation = replay.Observation

// Message is a message a lease, peek or fetch returns ([replay.Message]).
type Message = replay.Message

// ClaimedRow is one row an outbox_claim returns ([replay.ClaimedRow]).
type ClaimedRow = replay.ClaimedRow

// Snapshot is a store's whole state with real tokens ([replay.Snapshot]).
type Snapshot = replay.Snapshot

// MessageRow is a live mailbox row of a snapshot ([replay.MessageRow]).
type MessageRow = replay.MessageRow

// OutboxRow is an outbox row of a snapshot ([replay.OutboxRow]).
type OutboxRow = replay.OutboxRow

// DeadLetterRow is a dead letter of a snapshot ([traces.DeadLetterRow]).
type DeadLetterRow = traces.DeadLetterRow

// RedriveRecord is one redrive of a snapshot ([traces.RedriveRecord]).
type RedriveRecord = traces.RedriveRecord

// Capabilities declares what a store cannot do or report ([replay.Capabilities]).
type Capabilities = replay.Capabilities

// UnreportedResult names a result field of an operation the store does not report, such as
// purge's affected count ([replay.UnreportedResult]); Run leaves it out of the comparison.
type UnreportedResult = replay.UnreportedResult

// Column names a snapshot column a store may leave unknown ([traces.Column]).
type Column = traces.Column

// Profile is a store's declared semantic profile ([profile.Profile]).
type Profile = profile.Profile

// ReadProfile reads a profile file's JSON ([profile.Read]); an unknown choice or value is refused,
// naming it.
func ReadProfile(r io.Reader) (Profile, error) { return profile.Read(r) }

// At is the store's clock at logical time at, in seconds from the traces' epoch ([traces.At]).
func At(at int64) time.Time { return traces.At(at) }

// Duration is a step's duration argument (lease_for, delay, claim_for, retry_delay) in seconds as
// a time.Duration ([traces.Duration]).
func Duration(seconds int64) time.Duration { return traces.Duration(seconds) }

// Seconds is a time the store reports, in logical seconds; the zero time is 0 ([traces.Seconds]).
func Seconds(t time.Time) int64 { return traces.Seconds(t) }

var (
	// ErrUnsupported is [replay.ErrUnsupported]: a step the store cannot run.
	ErrUnsupported = replay.ErrUnsupported
	// ErrRefused is [replay.ErrRefused]: a step the store refused (a constraint error), compared
	// as the result err "refused".
	ErrRefused = replay.ErrRefused
)

// The states of a snapshot's rows ([traces.StateReady], ...).
const (
	StateReady      = traces.StateReady
	StateAcked      = traces.StateAcked
	StatePending    = traces.StatePending
	StateCompleted  = traces.StateCompleted
	StateDeadLetter = traces.StateDeadLetter
)

// The actions a protocol step may report that a store's own runtime does not decide: a worker
// with nothing to handle, a publisher that died after its first commit.
const (
	ActionIdle    = traces.ActionIdle
	ActionCrashed = traces.ActionCrashed
)

// The faults of a publisher_deliver step (Args.Fault); [Faults] injects them for a runtime run
// through [WithRuntime].
const (
	FaultNone          = traces.FaultNone
	FaultCommitFails   = traces.FaultCommitFails
	FaultCrashBetween  = traces.FaultCrashBetween
	FaultUndeliverable = traces.FaultUndeliverable
)

// The snapshot columns a store may declare unknown in [Capabilities] ([traces.Unknowable]).
const (
	ColMessageKey            = traces.ColMessageKey
	ColMessagePriority       = traces.ColMessagePriority
	ColMessagePayload        = traces.ColMessagePayload
	ColMessageMaxAttempts    = traces.ColMessageMaxAttempts
	ColOutboxKey             = traces.ColOutboxKey
	ColOutboxPriority        = traces.ColOutboxPriority
	ColOutboxPayload         = traces.ColOutboxPayload
	ColOutboxMaxAttempts     = traces.ColOutboxMaxAttempts
	ColOutboxReason          = traces.ColOutboxReason
	ColDeadLetterKey         = traces.ColDeadLetterKey
	ColDeadLetterPriority    = traces.ColDeadLetterPriority
	ColDeadLetterPayload     = traces.ColDeadLetterPayload
	ColDeadLetterMaxAttempts = traces.ColDeadLetterMaxAttempts
	ColDeadLetterDeadAt      = traces.ColDeadLetterDeadAt
)
