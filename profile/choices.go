package profile

// Choice is one rule of docs/semantics.md that a store may settle its own way.
//
// A choice is either a switch between two values (Values[0] is the default, Values[1] the
// alternative; the Profile field is a bool, true for the alternative) or a wording (Values is
// nil; the Profile field is a string, "" for the default wording Default, any other non-empty
// string replacing it).
type Choice struct {
	// Name is the choice's key in a profile file and in a trace's expect.profile.
	Name string
	// Field is the Go field of [Profile] that holds it.
	Field string
	// Values lists a switch's two values, the default first; nil for a wording.
	Values []string
	// Default is a wording's default text ("" for a switch).
	Default string
	// Doc says in one line what the choice decides.
	Doc string
	// Anchor is the section of docs/semantics.md that states the default rule.
	Anchor string
	// P is the name of the P function that returns the choice's value (bool or string).
	P string
}

// Switch reports whether c is a two-valued switch rather than a wording.
func (c Choice) Switch() bool { return c.Values != nil }

// DefaultValue is the value the default profile takes: Values[0] for a switch, Default for a
// wording.
func (c Choice) DefaultValue() string {
	if c.Switch() {
		return c.Values[0]
	}
	return c.Default
}

// Choices is the table of every choice, in the order files, docs and traces list them.
var Choices = []Choice{
	{
		Name: "lease_at_until", Field: "LeaseLiveAtUntil", Values: []string{"expired", "live"},
		Doc:    "A lease or outbox claim whose end time is now has expired (the default) or is still live.",
		Anchor: "mailbox", P: "PrfLeaseLiveAtUntil",
	},
	{
		Name: "ack", Field: "AckDeletes", Values: []string{"keeps", "deletes"},
		Doc:    "An ack (or ack_by_id) keeps the row as acked, so its id stays a duplicate (the default), or deletes it: dedup then covers live rows only.",
		Anchor: "mailbox", P: "PrfAckDeletes",
	},
	{
		Name: "fetch_sweep", Field: "FetchNoSweep", Values: []string{"sweeps", "none"},
		Doc:    "A leased consumer fetch runs expire() before its lease (the default) or only leases.",
		Anchor: "consumer", P: "PrfFetchNoSweep",
	},
	{
		Name: "exhausted_leased_head", Field: "ExhaustedLeasedHeadPasses", Values: []string{"blocks", "passes"},
		Doc:    "A keyed message with no attempts left but a live lease blocks its later same-key messages (the default) or lets them pass.",
		Anchor: "mailbox", P: "PrfExhaustedLeasedHeadPasses",
	},
	{
		Name: "processed_expiry", Field: "ProcessedUntilCleanup", Values: []string{"honoured", "until_cleanup"},
		Doc:    "An expired processed-message record counts as absent (the default) or as live until a purge removes it.",
		Anchor: "processed-messages", P: "PrfProcessedUntilCleanup",
	},
	{
		Name: "nack_by_id", Field: "NackByIDUncapped", Values: []string{"capped", "uncapped"},
		Doc:    "nack_by_id's attempt bump stops at max_attempts (the default) or counts past it.",
		Anchor: "mailbox", P: "PrfNackByIdUncapped",
	},
	{
		Name: "outbox_duplicate", Field: "OutboxDuplicateRefused", Values: []string{"dedup", "refused"},
		Doc:    "An outbox_enqueue of a taken id reports duplicate (the default) or is refused as a constraint error (err refused).",
		Anchor: "outbox", P: "PrfOutboxDuplicateRefused",
	},
	{
		Name: "failed_delivery", Field: "FailedDeliveryLapses", Values: []string{"released", "lapses"},
		Doc:    "After a commit_failed delivery the publisher releases the row (the default) or leaves its claim to run out.",
		Anchor: "publisher", P: "PrfFailedDeliveryLapses",
	},
	{
		Name: "complete_fence", Field: "CompleteFenceSilent", Values: []string{"claim_lost", "silent"},
		Doc:    "An outbox_complete whose claim token does not match reports claim_lost (the default) or nothing; either way it changes nothing.",
		Anchor: "outbox", P: "PrfCompleteFenceSilent",
	},
	{
		Name: "completed_claim", Field: "CompletedClaimKept", Values: []string{"cleared", "kept"},
		Doc:    "An outbox_complete clears the row's claim (the default) or leaves its claim token and claim_until on the completed row.",
		Anchor: "outbox", P: "PrfCompletedClaimKept",
	},
	{
		Name: "outbox_dead_letter_fence", Field: "OutboxDeadLetterFenceSilent", Values: []string{"claim_lost", "silent"},
		Doc:    "An outbox_dead_letter whose claim token does not match reports claim_lost (the default) or nothing; either way it changes nothing.",
		Anchor: "outbox", P: "PrfOutboxDeadLetterFenceSilent",
	},
	{
		Name: "processed_scope", Field: "ProcessedPerID", Values: []string{"consumer", "id"},
		Doc:    "A processed-message record is per consumer and id (the default) or per id alone: a live record of the id written by any consumer makes a duplicate.",
		Anchor: "processed-messages", P: "PrfProcessedPerId",
	},
	{
		Name: "dead_letter_id", Field: "DeadLetterIDFree", Values: []string{"taken", "free"},
		Doc:    "A mailbox dead letter keeps its id taken, so an enqueue of it is a duplicate (the default), or leaves it free: the enqueue inserts a fresh message beside the dead letter.",
		Anchor: "mailbox", P: "PrfDeadLetterIdFree",
	},
	{
		Name: "checkpoint_save", Field: "CheckpointOverwrites", Values: []string{"versioned", "overwrites"},
		Doc:    "A save_checkpoint writes only when the stored version is the expected one (the default) or always, as the stored version plus one, never reporting version_conflict.",
		Anchor: "checkpoints", P: "PrfCheckpointOverwrites",
	},
	{
		Name: "reason_max_attempts", Field: "ReasonMaxAttempts", Default: "max attempts reached",
		Doc:    "The dead-letter reason of a consumer handle that used up the message's attempts.",
		Anchor: "consumer", P: "PrfReasonMaxAttempts",
	},
	{
		Name: "reason_lease_expired", Field: "ReasonLeaseExpired", Default: "lease expired after max attempts",
		Doc:    "The dead-letter reason of expire() for a lease that ran out on the last attempt.",
		Anchor: "mailbox", P: "PrfReasonLeaseExpired",
	},
	{
		Name: "reason_max_delivery_attempts", Field: "ReasonMaxDeliveryAttempts", Default: "max delivery attempts reached",
		Doc:    "The reason of an outbox row dead-lettered after its last delivery attempt.",
		Anchor: "outbox", P: "PrfReasonMaxDeliveryAttempts",
	},
}
