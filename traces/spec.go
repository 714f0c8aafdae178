package traces

// The operations. Adding one means a constant here, its place in Ops and its row in Spec; the
// rest of the format's plumbing is generated or derived from these (see docs/extending.md).

// Store operations: one call on the store each.
const (
	OpEnqueue          Op = "enqueue"
	OpLease            Op = "lease"
	OpPeek             Op = "peek"
	OpAck              Op = "ack"
	OpNack             Op = "nack"
	OpAckByID          Op = "ack_by_id"
	OpNackByID         Op = "nack_by_id"
	OpExtend           Op = "extend"
	OpExpire           Op = "expire"
	OpDeadLetter       Op = "dead_letter"
	OpOutboxEnqueue    Op = "outbox_enqueue"
	OpOutboxClaim      Op = "outbox_claim"
	OpOutboxComplete   Op = "outbox_complete"
	OpOutboxFail       Op = "outbox_fail"
	OpOutboxDeadLetter Op = "outbox_dead_letter"
	OpAdvanceClock     Op = "advance_clock"
	OpPurge            Op = "purge"
	// OpMarkProcessed records that a consumer processed a message id, for ttl seconds.
	OpMarkProcessed Op = "mark_processed"
	// OpSaveCheckpoint writes an actor's checkpoint if its version is still expect_version.
	OpSaveCheckpoint Op = "save_checkpoint"
	// OpLoadCheckpoint reads an actor's checkpoint version.
	OpLoadCheckpoint Op = "load_checkpoint"
	OpRedrive        Op = "redrive"
	// OpListRedrives reads the redrive history: the records of id, or of every id when id is
	// absent, oldest first.
	OpListRedrives Op = "list_redrives"
)

// Protocol steps: one half-iteration of the real consumer, one delivery of the real publisher, a
// crash of the process (the database is closed and reopened; in-flight fetches are forgotten), or a
// worker group's stop and each stopped worker's end (docs/semantics.md, "Shutdown").
const (
	OpConsumerFetch    Op = "consumer_fetch"
	OpConsumerHandle   Op = "consumer_handle"
	OpPublisherDeliver Op = "publisher_deliver"
	OpCrash            Op = "crash"
	// OpWorkerStop: the worker's group was stopped (RunWorkers' context ended). From then on the
	// worker starts no fetch; a fetch already under way may still complete.
	OpWorkerStop Op = "worker_stop"
	// OpWorkerDrain: a stopped worker returned. Outcome drained: it handled every message it had
	// fetched; timed_out: the drain timeout cut off its delivery, whose message stays as stored.
	OpWorkerDrain Op = "worker_drain"
	// OpWake is an observation: a consumer worker was woken for message id of mailbox, by the
	// store's own post-commit signal (profile "local") or by a PostgreSQL NOTIFY (profile
	// "notify"). It changes nothing; the model checks that the message was committed.
	OpWake Op = "wake"
	// OpPollTick is an observation: a consumer worker's idle wait on mailbox ended on its poll
	// interval, not on a wake. It changes nothing; the model checks that the worker was not woken
	// for the mailbox without fetching from it since (docs/semantics.md, "Wake-ups").
	OpPollTick Op = "poll_tick"
)

// Batch steps (docs/semantics.md, "Batches"): a consumer worker's fetch of up to size messages
// and the one commit of all their outcomes, and a publisher's delivery of a claimed batch of
// outbox rows in one folded transaction.
const (
	// OpConsumerFetchBatch: up to size eligible messages of the mailbox, in delivery order, at
	// most one per key (its head). Leased: expire() then one lease per message; leaseless: one
	// read-only peek of them all.
	OpConsumerFetchBatch Op = "consumer_fetch_batch"
	// OpConsumerHandleBatch: one transaction commits every fetched message's outcome, in batch
	// order, each as consumer_handle would; fault commit_fails changes nothing at all.
	OpConsumerHandleBatch Op = "consumer_handle_batch"
	// OpConsumerEffectsBatch: the commit of effects that a worker's batch handle acknowledged
	// without them. Only a broken consumer owes any (one that acks before its effects commit);
	// for a correct one the step commits nothing and reports no effects.
	OpConsumerEffectsBatch Op = "consumer_effects_batch"
	// OpPublisherDeliverBatch: the fold delivery of the claimed rows ids under their claim's one
	// token, every row's enqueue and completion in one transaction.
	OpPublisherDeliverBatch Op = "publisher_deliver_batch"
)

// BatchOps lists the batch steps, in the order of Ops.
var BatchOps = []Op{OpConsumerFetchBatch, OpConsumerHandleBatch, OpConsumerEffectsBatch, OpPublisherDeliverBatch}

// Ops lists every operation in a stable order.
var Ops = []Op{
	OpEnqueue, OpLease, OpPeek, OpAck, OpNack, OpAckByID, OpNackByID, OpExtend, OpExpire,
	OpDeadLetter, OpOutboxEnqueue, OpOutboxClaim, OpOutboxComplete, OpOutboxFail, OpOutboxDeadLetter,
	OpAdvanceClock, OpPurge, OpMarkProcessed, OpSaveCheckpoint, OpLoadCheckpoint, OpRedrive,
	OpListRedrives, OpConsumerFetch, OpConsumerHandle, OpPublisherDeliver, OpCrash,
	OpWorkerStop, OpWorkerDrain, OpWake, OpPollTick,
	OpConsumerFetchBatch, OpConsumerHandleBatch, OpConsumerEffectsBatch, OpPublisherDeliverBatch,
}

// OpSpec fixes, for one operation, which argument and result fields a step may carry. A parser
// refuses a step with a field outside Args/OptionalArgs/Results, or without one of Args.
type OpSpec struct {
	// Args must be present.
	Args []string
	// OptionalArgs may be present; when absent they take their zero value.
	OptionalArgs []string
	// Results may be present in the step's result (a result field that is absent takes its zero
	// value; "message" is always written, as null when no message was returned).
	Results []string
	// Protocol is true for protocol steps (consumer, publisher, crash), false for store operations.
	Protocol bool
	// Err is the one error kind the op may report in result.err ("" when it reports none).
	Err string
	// Values closes the vocabulary of a string argument or result of this op: the field's value
	// must be one of the listed strings. A field without an entry takes any string its type allows.
	Values map[string][]string
	// Tokens is the namespace of the op's token argument (the zero value, [LeaseTokens], for ops
	// that take none).
	Tokens TokenSpace
}

// TokenSpace names one of the two namespaces of token symbols. Lease tokens are issued by lease
// and the leased consumer_fetch, taken by ack, nack and extend, and carried by message rows; claim
// tokens are issued by outbox_claim, taken by outbox_complete, outbox_fail and publisher_deliver,
// and carried by outbox rows. Symbol k of one namespace is unrelated to symbol k of the other.
type TokenSpace int

// The two token namespaces.
const (
	LeaseTokens TokenSpace = iota
	ClaimTokens
)

// String names the namespace as the docs do.
func (s TokenSpace) String() string {
	if s == ClaimTokens {
		return "claim"
	}
	return "lease"
}

// Vocabularies shared by several ops in [Spec].
var (
	consumerProfiles = []string{ProfileLeased, ProfileLeaseless}
	handleOutcomes   = []string{OutcomeOK, OutcomeFail, OutcomeFailNoRetry}
)

// Spec is the table of every operation's fields. The JSON Schema in schema/ and docs/trace-format.md
// state the same table; a test keeps them in step.
var Spec = map[Op]OpSpec{
	OpEnqueue:          {Args: []string{"mailbox", "id", "max_attempts"}, OptionalArgs: []string{"key", "priority", "delay", "payload"}, Results: []string{"duplicate"}},
	OpLease:            {Args: []string{"mailbox", "lease_for"}, Results: []string{"message"}},
	OpPeek:             {Args: []string{"mailbox"}, Results: []string{"message"}},
	OpAck:              {Args: []string{"id", "token"}, Results: []string{"err"}, Err: ErrKindLeaseLost},
	OpNack:             {Args: []string{"id", "token"}, OptionalArgs: []string{"delay"}, Results: []string{"err"}, Err: ErrKindLeaseLost},
	OpAckByID:          {Args: []string{"id"}, Results: []string{"err"}, Err: ErrKindNotFound},
	OpNackByID:         {Args: []string{"id"}, OptionalArgs: []string{"delay"}, Results: []string{"err"}, Err: ErrKindNotFound},
	OpExtend:           {Args: []string{"id", "token", "lease_for"}, Results: []string{"err"}, Err: ErrKindLeaseLost},
	OpExpire:           {Results: []string{"affected"}},
	OpDeadLetter:       {Args: []string{"id", "reason"}, Results: []string{"err"}, Err: ErrKindNotFound},
	OpOutboxEnqueue:    {Args: []string{"id", "target", "max_attempts"}, OptionalArgs: []string{"key", "priority", "payload", "max_delivery_attempts"}, Results: []string{"duplicate", "err"}, Err: ErrKindRefused},
	OpOutboxClaim:      {Args: []string{"limit", "claim_for"}, Results: []string{"claimed"}},
	OpOutboxComplete:   {Args: []string{"id", "token"}, Results: []string{"err"}, Err: ErrKindClaimLost, Tokens: ClaimTokens},
	OpOutboxFail:       {Args: []string{"id", "token"}, OptionalArgs: []string{"delay"}, Results: []string{"err"}, Err: ErrKindClaimLost, Tokens: ClaimTokens},
	OpOutboxDeadLetter: {Args: []string{"id", "token", "reason"}, Results: []string{"err"}, Err: ErrKindClaimLost, Tokens: ClaimTokens},
	OpAdvanceClock:     {},
	OpPurge:            {Args: []string{"limit"}, OptionalArgs: []string{"older_than", "horizon"}, Results: []string{"affected"}},
	OpMarkProcessed:    {Args: []string{"consumer", "id", "ttl"}, Results: []string{"duplicate"}},
	OpSaveCheckpoint:   {Args: []string{"actor"}, OptionalArgs: []string{"expect_version", "payload"}, Results: []string{"version", "err"}, Err: ErrKindVersionConflict},
	OpLoadCheckpoint:   {Args: []string{"actor"}, Results: []string{"version", "err"}, Err: ErrKindNotFound},
	OpRedrive:          {Args: []string{"id", "reason"}, Results: []string{"err"}, Err: ErrKindNotFound},
	OpListRedrives:     {OptionalArgs: []string{"id"}, Results: []string{"redrives"}},

	OpConsumerFetch: {
		Args: []string{"worker", "mailbox", "profile"}, OptionalArgs: []string{"lease_for"}, Results: []string{"message"}, Protocol: true,
		Values: map[string][]string{"profile": consumerProfiles},
	},
	OpConsumerHandle: {
		Args: []string{"worker", "mailbox", "profile", "outcome"}, OptionalArgs: []string{"retry_delay", "fault", "reason"}, Results: []string{"action", "attempt"}, Protocol: true,
		Values: map[string][]string{
			"profile": consumerProfiles, "outcome": handleOutcomes, "fault": {FaultNone, FaultCommitFails},
			"action": {ActionAcked, ActionRetried, ActionDeadLettered, ActionLeaseLost, ActionIdle, ActionCommitFailed},
		},
	},
	OpPublisherDeliver: {
		Args: []string{"publisher", "id", "token", "profile", "fault"}, OptionalArgs: []string{"retry_delay"}, Results: []string{"action", "duplicate"}, Protocol: true, Tokens: ClaimTokens,
		Values: map[string][]string{
			"profile": {ProfileFold, ProfileSplit},
			"fault":   {FaultNone, FaultCommitFails, FaultCrashBetween, FaultUndeliverable},
			"action":  {ActionDelivered, ActionClaimLost, ActionCommitFailed, ActionCrashed, ActionDeadLettered},
		},
	},
	OpCrash:      {Protocol: true},
	OpWorkerStop: {Args: []string{"worker"}, Protocol: true},
	OpWorkerDrain: {
		Args: []string{"worker", "outcome"}, Protocol: true,
		Values: map[string][]string{"outcome": {OutcomeDrained, OutcomeTimedOut}},
	},
	OpWake: {
		Args: []string{"worker", "mailbox", "id", "profile"}, Results: []string{"err"}, Protocol: true, Err: ErrKindNotCommitted,
		Values: map[string][]string{"profile": {WakeLocal, WakeNotify}},
	},
	OpPollTick: {Args: []string{"worker", "mailbox"}, Results: []string{"err"}, Protocol: true, Err: ErrKindWakeNotFetched},

	OpConsumerFetchBatch: {
		Args: []string{"worker", "mailbox", "profile", "size"}, OptionalArgs: []string{"lease_for"}, Results: []string{"messages"}, Protocol: true,
		Values: map[string][]string{"profile": consumerProfiles},
	},
	OpConsumerHandleBatch: {
		Args: []string{"worker", "mailbox", "profile", "outcomes", "fault"}, OptionalArgs: []string{"retry_delay", "reasons"}, Results: []string{"actions"}, Protocol: true,
		Values: map[string][]string{
			"profile":  consumerProfiles,
			"outcomes": handleOutcomes,
			"fault":    {FaultNone, FaultCommitFails},
			"actions":  {ActionAcked, ActionRetried, ActionDeadLettered, ActionLeaseLost, ActionCommitFailed},
		},
	},
	OpConsumerEffectsBatch: {
		Args: []string{"worker", "mailbox", "fault"}, Results: []string{"effects"}, Protocol: true,
		Values: map[string][]string{"fault": {FaultNone, FaultCommitFails}},
	},
	OpPublisherDeliverBatch: {
		Args: []string{"publisher", "ids", "token", "fault"}, OptionalArgs: []string{"retry_delay"}, Results: []string{"actions", "duplicates"}, Protocol: true, Tokens: ClaimTokens,
		Values: map[string][]string{
			"fault":   {FaultNone, FaultCommitFails, FaultCrashBetween},
			"actions": {ActionDelivered, ActionClaimLost, ActionCommitFailed, ActionCrashed, ActionDeadLettered},
		},
	},
}

// The kinds of a redrive record (RedriveRecord.Kind).
const (
	// RedriveKindMessage: a mailbox dead letter went back into its mailbox.
	RedriveKindMessage = "message"
	// RedriveKindOutbox: a dead-lettered outbox row became pending again.
	RedriveKindOutbox = "outbox"
)

// RedriveKinds lists the kinds a redrive record may have.
var RedriveKinds = []string{RedriveKindMessage, RedriveKindOutbox}

// Error kinds a Result.Err may hold.
const (
	ErrKindLeaseLost = "lease_lost"
	ErrKindNotFound  = "not_found"
	ErrKindClaimLost = "claim_lost"
	// ErrKindVersionConflict: a checkpoint save expected a version the checkpoint no longer has.
	ErrKindVersionConflict = "version_conflict"
	// ErrKindRefused: the store refused the step as a constraint error and changed nothing (an
	// outbox_enqueue of a taken id under a profile whose outbox_duplicate is "refused").
	ErrKindRefused = "refused"
	// ErrKindNotCommitted: a wake for a message that no committed step had put into its mailbox
	// (the wake came before the commit that caused it, or for one that rolled back). Only the
	// model gives it; a recorded wake carries no error.
	ErrKindNotCommitted = "not_committed"
	// ErrKindWakeNotFetched: a poll tick of a worker that was woken for the mailbox and has not
	// fetched from it since (a woken consumer fetches before its next poll tick). Only the model
	// gives it; a recorded poll tick carries no error.
	ErrKindWakeNotFetched = "wake_not_fetched"
)

// EffectsActorPrefix begins the actor name of a mailbox's effect log: a trace's consumer handler
// keeps the ids whose effects committed in the checkpoint EffectsActorPrefix + mailbox, saved in
// the acknowledgement's transaction. A trace may load such a checkpoint but never saves one.
const EffectsActorPrefix = "effects/"

// Profiles, outcomes, faults and actions: the closed vocabularies of protocol steps.
const (
	ProfileLeased    = "leased"
	ProfileLeaseless = "leaseless"
	ProfileFold      = "fold"
	ProfileSplit     = "split"
	// WakeLocal and WakeNotify are a wake's profile: the store's own post-commit signal, or a
	// PostgreSQL NOTIFY from another store on the same database.
	WakeLocal  = "local"
	WakeNotify = "notify"

	OutcomeOK   = "ok"
	OutcomeFail = "fail"
	// OutcomeFailNoRetry: the handler fails and the retry policy declines to retry it.
	OutcomeFailNoRetry = "fail_no_retry"
	// OutcomeDrained: a stopped worker handled every message it had fetched (worker_drain).
	OutcomeDrained = "drained"
	// OutcomeTimedOut: the drain timeout cut off a stopped worker's delivery (worker_drain).
	OutcomeTimedOut = "timed_out"

	FaultNone         = "none"
	FaultCommitFails  = "commit_fails"
	FaultCrashBetween = "crash_between"
	// FaultUndeliverable: the publisher's check refuses the row (its payload does not decode, its
	// target does not exist), so the delivery dead-letters it with ReasonUndeliverable.
	FaultUndeliverable = "undeliverable"

	ActionAcked        = "acked"
	ActionRetried      = "retried"
	ActionDeadLettered = "dead_lettered"
	ActionLeaseLost    = "lease_lost"
	ActionIdle         = "idle"
	ActionDelivered    = "delivered"
	ActionClaimLost    = "claim_lost"
	ActionCommitFailed = "commit_failed"
	ActionCrashed      = "crashed"

	StateReady     = "ready"
	StateAcked     = "acked"
	StatePending   = "pending"
	StateCompleted = "completed"
	// StateDeadLetter is an outbox row that will never be delivered.
	StateDeadLetter = "dead_letter"
)

// Reasons the consumer and expire write into dead letters.
const (
	ReasonMaxAttempts  = "max attempts reached"
	ReasonLeaseExpired = "lease expired after max attempts"
	// ReasonHandlerFailed is the error message of a trace's failing handler, and so the reason a
	// consumer records when its retry policy declines (the reason is the handler's error message).
	ReasonHandlerFailed = "handler failed"
	// ReasonMaxDeliveryAttempts is the reason an outbox row is dead-lettered with when its
	// delivery attempts ran out.
	ReasonMaxDeliveryAttempts = "max delivery attempts reached"
	// ReasonUndeliverable is the reason a publisher dead-letters an outbox row its check refuses
	// (in traces, the error message of the fault undeliverable).
	ReasonUndeliverable = "undeliverable"
	// DefaultMaxDeliveryAttempts is an outbox row's max_delivery_attempts when its outbox_enqueue
	// gives none (or 0).
	DefaultMaxDeliveryAttempts = 10
)

// ReasonIDCollisionPrefix begins the reason of an outbox row dead-lettered because its id is
// already a message (or mailbox dead letter) of another mailbox than its target; the mailbox's
// name follows. See ReasonIDCollision.
const ReasonIDCollisionPrefix = "id collides with a message in mailbox "

// ReasonIDCollision is the dead-letter reason of a publisher_deliver whose row's id collides with
// a message of mailbox (docs/semantics.md, "Id collisions"). The delivery's action is
// dead_lettered with no fault, and its duplicate flag is set.
func ReasonIDCollision(mailbox string) string { return ReasonIDCollisionPrefix + mailbox }

// Origin kinds: how a trace was made.
const (
	OriginPChecker = "p-checker"
	OriginProperty = "property"
	OriginHand     = "hand"
	// OriginObserved: recorded from a run of the real store (an actordelivery Recorder's events,
	// converted in commit order); see docs/observed.md.
	OriginObserved = "observed"
)
