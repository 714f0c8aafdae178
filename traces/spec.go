package traces

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
}

// Spec is the table of every operation's fields. The JSON Schema in schema/ and docs/trace-format.md
// state the same table; a test keeps them in step.
var Spec = map[Op]OpSpec{
	OpEnqueue:        {Args: []string{"mailbox", "id", "max_attempts"}, OptionalArgs: []string{"key", "priority", "delay", "payload"}, Results: []string{"duplicate"}},
	OpLease:          {Args: []string{"mailbox", "lease_for"}, Results: []string{"message"}},
	OpPeek:           {Args: []string{"mailbox"}, Results: []string{"message"}},
	OpAck:            {Args: []string{"id", "token"}, Results: []string{"err"}},
	OpNack:           {Args: []string{"id", "token"}, OptionalArgs: []string{"delay"}, Results: []string{"err"}},
	OpAckByID:        {Args: []string{"id"}, Results: []string{"err"}},
	OpNackByID:       {Args: []string{"id"}, OptionalArgs: []string{"delay"}, Results: []string{"err"}},
	OpExtend:         {Args: []string{"id", "token", "lease_for"}, Results: []string{"err"}},
	OpExpire:         {Results: []string{"affected"}},
	OpDeadLetter:     {Args: []string{"id", "reason"}, Results: []string{"err"}},
	OpOutboxEnqueue:  {Args: []string{"id", "target", "max_attempts"}, OptionalArgs: []string{"key", "priority", "payload"}, Results: []string{"duplicate"}},
	OpOutboxClaim:    {Args: []string{"limit", "claim_for"}, Results: []string{"claimed"}},
	OpOutboxComplete: {Args: []string{"id", "token"}, Results: []string{"err"}},
	OpOutboxFail:     {Args: []string{"id", "token"}, OptionalArgs: []string{"delay"}, Results: []string{"err"}},
	OpAdvanceClock:   {},

	OpConsumerFetch:    {Args: []string{"worker", "mailbox", "profile"}, OptionalArgs: []string{"lease_for"}, Results: []string{"message"}, Protocol: true},
	OpConsumerHandle:   {Args: []string{"worker", "mailbox", "profile", "outcome"}, OptionalArgs: []string{"retry_delay"}, Results: []string{"action", "attempt"}, Protocol: true},
	OpPublisherDeliver: {Args: []string{"publisher", "id", "token", "profile", "fault"}, Results: []string{"action", "duplicate"}, Protocol: true},
	OpCrash:            {Protocol: true},
}

// Error kinds a Result.Err may hold.
const (
	ErrKindLeaseLost = "lease_lost"
	ErrKindNotFound  = "not_found"
	ErrKindClaimLost = "claim_lost"
)

// Profiles, outcomes, faults and actions: the closed vocabularies of protocol steps.
const (
	ProfileLeased    = "leased"
	ProfileLeaseless = "leaseless"
	ProfileFold      = "fold"
	ProfileSplit     = "split"

	OutcomeOK   = "ok"
	OutcomeFail = "fail"

	FaultNone         = "none"
	FaultCommitFails  = "commit_fails"
	FaultCrashBetween = "crash_between"

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
)

// Reasons the consumer and expire write into dead letters.
const (
	ReasonMaxAttempts  = "max attempts reached"
	ReasonLeaseExpired = "lease expired after max attempts"
)

// Origin kinds: how a trace was made.
const (
	OriginPChecker = "p-checker"
	OriginProperty = "property"
	OriginHand     = "hand"
)
