package traces

import (
	"math"
	"time"

	"github.com/pconform/pconform/profile"
)

// Epoch is logical time zero. A step at time t happens at Epoch + t seconds; the store's clock is
// set to exactly that instant before the step runs.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxSeconds bounds a step's "at" and every duration argument (delay, lease_for, claim_for,
// retry_delay): about 31.7 years. Within it, a time plus a duration stays below MaxInstant, and
// both convert to time.Duration (whose range ends near 9.22e9 seconds) without wrapping. The
// reader refuses a larger value and names the field; the store refuses a longer duration
// (actordelivery.MaxDuration, the same bound, which a test cross-checks).
const MaxSeconds = 1_000_000_000

// MaxInstant bounds the times a snapshot row carries (available_at, lease_until, claim_until): a
// step's time plus one duration.
const MaxInstant = 2 * MaxSeconds

// ObservedTicksPerSecond is the number of time units per second of an observed trace (origin
// kind "observed"): its at and its durations count milliseconds, the resolution at which
// actordelivery's clock decides and its recorder records, so that delays, leases and horizons
// meet the model exactly as the store met them (docs/observed.md, "Clock"). Every other trace
// counts whole seconds. The validator's bounds scale with the unit: an observed trace spans the
// same MaxSeconds of real time.
const ObservedTicksPerSecond = 1000

// At converts a logical time in seconds to the wall-clock instant the store sees. It is exact for
// every time a valid trace holds (and far beyond: it never goes through time.Duration, so it
// cannot wrap into the past).
func At(seconds int64) time.Time { return time.Unix(Epoch.Unix()+seconds, 0).UTC() }

// Trace is one execution: where it came from, what happened step by step, and the state it ended in.
type Trace struct {
	// Format is always [Format] in memory; a file may carry any of [Formats] and is upgraded as it
	// is read.
	Format string `json:"format"`
	// Name identifies the trace; for corpus files it is the file name without ".json".
	Name   string `json:"name"`
	Origin Origin `json:"origin"`
	// Expect says which configuration the expected results describe.
	Expect Expect `json:"expect"`
	// Steps run in order. Invariant: At never decreases along Steps.
	Steps []Step `json:"steps"`
	// Final is the state after the last step, compared with go-cmp after a replay. It is nil when the
	// model run stopped before a final state was observed (a checker run cut short by a bug).
	Final *Snapshot `json:"final"`
}

// Origin records how a trace was made, so it can be made again.
type Origin struct {
	// Kind is "p-checker", "property", "hand" or "observed".
	Kind string `json:"kind"`
	// TestCase is the P test case (p-checker) or the property's name (property).
	TestCase string `json:"test_case,omitempty"`
	// Seed is the checker's --seed or the property run's seed.
	Seed int64 `json:"seed,omitempty"`
	// Schedule is the index of the schedule within the checker run (p-checker only).
	Schedule int `json:"schedule,omitempty"`
	// Command reproduces the run that produced the trace.
	Command string `json:"command,omitempty"`
	// Model identifies the model version: a content hash of models/p for p-checker traces.
	Model string `json:"model,omitempty"`
}

// Expect names the configuration whose behaviour the expected results describe.
type Expect struct {
	// Variant is "" for the correct store, or a known broken variant: "split-write", "raw-attempts",
	// or another name a replay target registers. A trace with a Variant reproduces that variant's bug.
	Variant string `json:"variant,omitempty"`
	// DivergesAt is the index of the first step at which the correct store's result differs from
	// the expected one, as the model predicts; -1 when the correct store agrees throughout (always
	// -1 when Variant is "").
	DivergesAt int `json:"diverges_at"`
	// Violates states the property the variant's bug breaks, in the words of whoever found it: the
	// P monitor's assertion message for a checker counterexample, the invariant's message for a
	// hunted trace. "" when unknown; always "" when Variant is "" (the correct store breaks nothing).
	Violates string `json:"violates,omitempty"`
	// Profile is the semantic profile the expected results follow (docs/semantics.md,
	// "Profiles"); the zero Profile, written as no member at all, is the default profile.
	Profile profile.Profile `json:"profile,omitzero"`
}

// Op names one kind of step.
type Op string

// Step is one operation at one logical time with the result the model expects.
type Step struct {
	Op Op `json:"op"`
	// At is the logical time in seconds at which the step runs.
	At     int64  `json:"at"`
	Args   Args   `json:"args"`
	Result Result `json:"result"`
}

// Args holds an operation's arguments. Which fields an operation takes is fixed by [Spec]; every
// other field must be absent from the file. Durations are whole seconds.
type Args struct {
	Mailbox     string `json:"mailbox,omitempty"`
	ID          string `json:"id,omitempty"`
	Key         string `json:"key,omitempty"`
	Priority    int    `json:"priority,omitempty"`
	MaxAttempts int    `json:"max_attempts,omitempty"`
	Delay       int64  `json:"delay,omitempty"`
	Payload     string `json:"payload,omitempty"`
	// MaxDeliveryAttempts bounds an outbox row's claims; 0 means DefaultMaxDeliveryAttempts.
	MaxDeliveryAttempts int   `json:"max_delivery_attempts,omitempty"`
	LeaseFor            int64 `json:"lease_for,omitempty"`
	// Token is a lease or claim token symbol: a small positive integer bound to the real token the
	// first time it appears in a result.
	Token int `json:"token,omitempty"`
	// Reason is a dead_letter's, an outbox_dead_letter's or a redrive's reason; in a
	// consumer_handle with outcome fail_no_retry, the dead letter's reason (the handler's error
	// text), absent meaning ReasonHandlerFailed.
	Reason   string `json:"reason,omitempty"`
	Target   string `json:"target,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	ClaimFor int64  `json:"claim_for,omitempty"`
	// Worker names a consumer worker (consumer_fetch and consumer_handle pair up by worker).
	Worker int `json:"worker,omitempty"`
	// Publisher names a publisher process.
	Publisher int `json:"publisher,omitempty"`
	// Profile is "leased" or "leaseless" for consumer steps, "fold" or "split" for publisher steps.
	Profile string `json:"profile,omitempty"`
	// Outcome is the handler's outcome in consumer_handle: "ok", "fail", or "fail_no_retry" (it
	// fails and the retry policy declines).
	Outcome string `json:"outcome,omitempty"`
	// RetryDelay is the delay the retry policy returns for a failure that is retried
	// (consumer_handle), or the delay a publisher gives a row whose delivery failed
	// (publisher_deliver).
	RetryDelay int64 `json:"retry_delay,omitempty"`
	// Fault is injected into publisher_deliver: "none", "commit_fails", "crash_between" or
	// "undeliverable"; into the batch steps and (optionally, absent meaning "none")
	// consumer_handle: "none" or "commit_fails".
	Fault string `json:"fault,omitempty"`
	// OlderThan is purge's age: rows final at or before now - older_than are removed.
	OlderThan int64 `json:"older_than,omitempty"`
	// Horizon is purge's dedup horizon: a purged message id stays a duplicate until its final
	// time + horizon.
	Horizon int64 `json:"horizon,omitempty"`
	// Consumer names the consumer a mark_processed records a message for.
	Consumer string `json:"consumer,omitempty"`
	// TTL is how long (seconds, >= 1) a mark_processed record stays live.
	TTL int64 `json:"ttl,omitempty"`
	// Actor names a checkpoint (save_checkpoint, load_checkpoint).
	Actor string `json:"actor,omitempty"`
	// ExpectVersion is the checkpoint version a save_checkpoint expects (0: no checkpoint yet).
	ExpectVersion int `json:"expect_version,omitempty"`
	// Size is the most messages a consumer_fetch_batch takes (>= 1).
	Size int `json:"size,omitempty"`
	// Outcomes are the handlers' outcomes in consumer_handle_batch, one per fetched message in
	// batch order, each as consumer_handle's outcome.
	Outcomes []string `json:"outcomes,omitempty"`
	// IDs are the claimed outbox rows a publisher_deliver_batch delivers, in claim order.
	IDs []string `json:"ids,omitempty"`
	// Reasons are a consumer_handle_batch's dead-letter reasons, one per outcome: a declined
	// failure's (fail_no_retry) handler error text, "" for every other outcome and for
	// ReasonHandlerFailed. Absent: every declined failure's reason is ReasonHandlerFailed.
	Reasons []string `json:"reasons,omitempty"`
}

// Result is what a caller observes from a step. Which fields an operation reports is fixed by [Spec].
type Result struct {
	// Err is "" on success, else one of the error kinds: "lease_lost", "not_found", "claim_lost",
	// "version_conflict".
	Err string `json:"err,omitempty"`
	// Duplicate reports an enqueue (mailbox or outbox) that found the id already present, or a
	// mark_processed that found a live record (the message was processed already).
	Duplicate bool `json:"duplicate,omitempty"`
	// Message is the message returned by lease, peek or consumer_fetch; nil when none was eligible.
	Message *Message `json:"message"`
	// Affected counts the leases cleared by expire.
	Affected int `json:"affected,omitempty"`
	// Claimed lists the rows an outbox_claim returned, in claim order.
	Claimed []Claimed `json:"claimed,omitempty"`
	// Action is what a consumer_handle or publisher_deliver did:
	// consumer_handle: "acked", "retried", "dead_lettered", "lease_lost", "idle" (the worker had nothing),
	// "commit_failed" (fault commit_fails: nothing changed);
	// publisher_deliver: "delivered", "claim_lost", "commit_failed", "crashed", "dead_lettered".
	Action string `json:"action,omitempty"`
	// Attempt is the effective attempt a consumer_handle handed to its retry decision (0 on success).
	Attempt int `json:"attempt,omitempty"`
	// Version is a checkpoint's version: the new one after a save_checkpoint, the stored one
	// from a load_checkpoint (0 with an error).
	Version int `json:"version,omitempty"`
	// Redrives lists the redrive records a list_redrives returned, oldest first.
	Redrives []RedriveRecord `json:"redrives,omitempty"`
	// Messages lists the messages a consumer_fetch_batch returned, in batch order (absent: none).
	Messages []Message `json:"messages,omitempty"`
	// Actions is what a consumer_handle_batch did with each message of the batch, or what a
	// publisher_deliver_batch did with each row, in order; the same words as Action, and
	// "commit_failed" for every message of a batch handle whose commit failed. Absent for a
	// worker with no batch.
	Actions []string `json:"actions,omitempty"`
	// Duplicates reports, per row of a publisher_deliver_batch, whether its enqueue found the id
	// taken (as publisher_deliver's duplicate).
	Duplicates []bool `json:"duplicates,omitempty"`
	// Effects lists the messages whose effects a consumer_effects_batch committed (a broken
	// consumer's second commit; a correct one owes none).
	Effects []string `json:"effects,omitempty"`
}

// Message is a message as a caller sees it from lease, peek or consumer_fetch.
type Message struct {
	ID       string `json:"id"`
	Attempts int    `json:"attempts"`
	// Token is the lease token symbol, 0 when no lease was taken (peek, leaseless fetch).
	Token int `json:"token,omitempty"`
}

// Claimed is one row returned by outbox_claim.
type Claimed struct {
	ID               string `json:"id"`
	DeliveryAttempts int    `json:"delivery_attempts"`
	Token            int    `json:"token"`
}

// RedriveRecord is one record of the redrive history (docs/semantics.md, "Redrive"): a dead
// letter moved back, with what it had when it was moved.
type RedriveRecord struct {
	ID string `json:"id"`
	// Kind is "message" (a mailbox dead letter) or "outbox" (a dead-lettered outbox row).
	Kind string `json:"kind"`
	// Mailbox is the message's mailbox, or the outbox row's target.
	Mailbox string `json:"mailbox"`
	// Attempts is the attempt count (an outbox row's delivery attempts) the dead letter had
	// before the redrive reset it; DeadReason why it had been dead-lettered.
	Attempts   int    `json:"attempts"`
	DeadReason string `json:"dead_reason"`
	// Reason is the redrive's reason; At its logical time.
	Reason string `json:"reason"`
	At     int64  `json:"at"`
}

// Snapshot is the canonical state of a store: every slice sorted by ID (messages by mailbox, then ID).
type Snapshot struct {
	// Unknown lists, sorted and without repeats, the columns this snapshot does not state (see
	// [Column]); each is absent from every row of its table and left out of comparisons. Empty
	// when every column is known.
	Unknown     []Column        `json:"unknown,omitempty"`
	Messages    []MessageRow    `json:"messages"`
	Outbox      []OutboxRow     `json:"outbox"`
	DeadLetters []DeadLetterRow `json:"dead_letters"`
	// Effects maps a mailbox to the ids whose handler effects committed, in commit order.
	Effects map[string][]string `json:"effects"`
}

// MessageRow is a mailbox row in a snapshot.
type MessageRow struct {
	Mailbox     string `json:"mailbox"`
	ID          string `json:"id"`
	Key         string `json:"key,omitempty"`
	Priority    int    `json:"priority,omitempty"`
	Payload     string `json:"payload,omitempty"`
	State       string `json:"state"` // "ready" or "acked"
	Attempts    int    `json:"attempts"`
	MaxAttempts int    `json:"max_attempts"`
	AvailableAt int64  `json:"available_at"`
	// Token is the symbol of the lease token the row carries, 0 for none.
	Token      int   `json:"token,omitempty"`
	LeaseUntil int64 `json:"lease_until,omitempty"`
}

// OutboxRow is an outbox row in a snapshot.
type OutboxRow struct {
	ID               string `json:"id"`
	Target           string `json:"target"`
	Key              string `json:"key,omitempty"`
	Priority         int    `json:"priority,omitempty"`
	MaxAttempts      int    `json:"max_attempts"`
	Payload          string `json:"payload,omitempty"`
	State            string `json:"state"` // "pending", "completed" or "dead_letter"
	DeliveryAttempts int    `json:"delivery_attempts"`
	AvailableAt      int64  `json:"available_at"`
	Token            int    `json:"token,omitempty"`
	ClaimUntil       int64  `json:"claim_until,omitempty"`
	// Reason says why a dead_letter row was dead-lettered; "" on every other row.
	Reason string `json:"reason,omitempty"`
}

// DeadLetterRow is a dead-lettered message in a snapshot: the whole row a caller reads back
// (actordelivery's ListDeadLetters), the message's own fields as they were when it was moved, why
// and when.
type DeadLetterRow struct {
	Mailbox     string `json:"mailbox"`
	ID          string `json:"id"`
	Key         string `json:"key,omitempty"`
	Priority    int    `json:"priority,omitempty"`
	Payload     string `json:"payload,omitempty"`
	Attempts    int    `json:"attempts"`
	MaxAttempts int    `json:"max_attempts"`
	Reason      string `json:"reason"`
	// DeadAt is the logical time of the move to the dead letters.
	DeadAt int64 `json:"dead_at"`
}

// Seconds converts an instant the store reports back to logical seconds: the inverse of [At]. The
// zero time (no lease, no claim) is 0; an instant before Epoch is negative, so a validator refuses
// it instead of reading a wrapped value.
func Seconds(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix() - Epoch.Unix()
}

// Duration converts a trace duration (delay, lease_for, claim_for, retry_delay, ttl) to a
// time.Duration. A valid trace keeps durations within MaxSeconds, far inside time.Duration's
// range; a larger value (a trace built in code and never validated) saturates instead of
// wrapping, so a store refuses it as too long rather than reading a negative or short duration.
func Duration(seconds int64) time.Duration {
	const most = int64(math.MaxInt64 / int64(time.Second))
	switch {
	case seconds > most:
		return math.MaxInt64
	case seconds < -most:
		return math.MinInt64
	}
	return time.Duration(seconds) * time.Second
}
