package variants

// Kind says what a row of the catalogue is.
type Kind int

const (
	// Correct: implements the rules of docs/semantics.md without a known bug.
	Correct Kind = iota
	// Control: must behave exactly as a correct target, or reproduces a bug a second way; it
	// shows that the broken variants differ only where their rule says so.
	Control
	// Broken: reproduces one known bug.
	Broken
)

func (k Kind) String() string {
	switch k {
	case Correct:
		return "correct"
	case Control:
		return "control"
	case Broken:
		return "broken"
	}
	return "Kind(?)"
}

// Row is one target of the catalogue.
type Row struct {
	// Name is the target's name, as the CLI's --target and a trace's expect.variant spell it.
	Name string
	// Doc says in one line what the target is.
	Doc  string
	Kind Kind
	// PTestCase is the P test case whose counterexample records this variant's bug ("" for none).
	PTestCase string
	// PVariant is the sc.variant string the P scenario passes to the store model ("" when the P
	// model reproduces the bug without one, or has no scenario for it).
	PVariant string
	// Part names the internal/brokenstore part that builds the variant: a Rules field
	// ("Rules.LeaseInclusive"), a consumer handle ("HandleRawAttempts") or a delivery
	// ("DeliverSplitWrite"); "" for the store itself and the model targets.
	Part string
	// OnModel marks a broken variant of the reference model's rule, not of the store's: no
	// brokenstore part can replace the store's code (effect-outside-fold: the store refuses the
	// write).
	OnModel bool
	// NotHunted is why the property tests do not require a hunt to find this broken variant; ""
	// when they do.
	NotHunted string
	// NotObserved is why the observed-run efficacy table leaves this broken variant out; "" when
	// it is in the table.
	NotObserved string
	// GoFunc is the actordelivery function whose rule the variant breaks, as
	// "actordelivery.(*Type).method" or "actordelivery.Func" ("" for none).
	GoFunc string
	// SQL is the name of the actordelivery statement constant the variant copies with one rule
	// changed ("" when the variant replaces Go code, not a statement).
	SQL string
	// Harm is the invariant (a properties check: "no-loss", "no-strand", ...) whose breach is the
	// harm the variant's bug does to a user. A hunt of the variant counts only failures that
	// break it, and shrinks keeping it, so its witness shows the harm and not just an earlier
	// divergence from the model. "" keeps, while shrinking, whatever invariant the hunt's first
	// failure broke.
	Harm string
	// HuntShows says, in Markdown, what the committed hunt of this variant
	// (traces/hunted/hunt-<name>-seed1.json) shows, and HuntRefused where the correct store
	// refuses it; both "" when the variant is not hunted. They make the table of
	// traces/hunted/README.md (internal/gen).
	HuntShows, HuntRefused string
}

// Target names, one per row.
const (
	Store                       = "store"
	Model                       = "model"
	ModelRawAttempts            = "model-raw-attempts"
	EligibilityCopy             = "eligibility-copy"
	SplitWrite                  = "split-write"
	RawAttempts                 = "raw-attempts"
	UnfencedAck                 = "unfenced-ack"
	FetchedAttempts             = "fetched-attempts"
	LeaseBoundary               = "lease-boundary"
	LeaseEarly                  = "lease-early"
	FifoOvertake                = "fifo-overtake"
	OutboxUnbounded             = "outbox-unbounded"
	StaleExtend                 = "stale-extend"
	DedupTTLInverted            = "dedup-ttl-inverted"
	CheckpointReset             = "checkpoint-reset"
	PurgeForgetsIDs             = "purge-forgets-ids"
	RedriveKeepsAttempts        = "redrive-keeps-attempts"
	EarlyDeadLetterUnfenced     = "early-dead-letter-unfenced"
	RedriveRecordsReset         = "redrive-records-reset"
	ExhaustedDeadLetterUnfenced = "exhausted-dead-letter-unfenced"
	BatchAckBeforeEffects       = "batch-ack-before-effects"
	BatchAcksFailed             = "batch-acks-failed"
	BatchSkipsKeyHead           = "batch-skips-key-head"
	EffectOutsideFold           = "effect-outside-fold"
)

// All returns the catalogue, in the order the registry lists its targets. Each call returns a
// fresh slice.
func All() []Row {
	return []Row{
		{Name: Store, Kind: Correct, Doc: "the real store, consumer and publisher"},
		{Name: Model, Kind: Correct, Doc: "the pure reference model"},
		{Name: ModelRawAttempts, Kind: Control, Doc: "the reference model with the raw-attempts retry count"},
		{Name: EligibilityCopy, Kind: Control, Part: "Rules",
			Doc: "the store running the variants' copy of its eligibility SQL, rules unchanged (a control)"},
		{Name: SplitWrite, Kind: Broken, Part: "DeliverSplitWrite", PTestCase: "tcOutboxSplitWriteCounterexample",
			GoFunc: "actordelivery.(*Publisher).deliverSplit", Harm: "no-loss",
			Doc:         "a split delivery that drops the enqueue's commit error",
			HuntShows:   "An outbox row is claimed and delivered on the split path, and the enqueue's commit fails. The variant drops the error and completes the row: the row is `completed`, its message is in no mailbox and not among the dead letters (`no-loss`). The correct publisher stops at the failed commit (`commit_failed`) and leaves the row pending for redelivery. The hunt keeps this harm while it shrinks (the catalogue's `Harm`).",
			HuntRefused: "step #2: the variant records `delivered`, the store answers `commit_failed`"},
		{Name: RawAttempts, Kind: Broken, Part: "HandleRawAttempts", PTestCase: "tcLeaselessRawAttemptsCounterexample",
			GoFunc:      "actordelivery.(*Consumer).failed",
			Doc:         "a leaseless consumer that hands the retry decision the raw stored attempt count",
			HuntShows:   "A leaseless worker fetches a message with `max_attempts` 1 and its handler fails. The variant decides on attempt 0, retries, and `nack_by_id` leaves the message ready with attempts 1 of 1: stranded (`no-strand`). The effective attempt is `stored + 1 = 1`, so the correct consumer dead-letters it.",
			HuntRefused: "step #2: the variant records `retried`, the store answers `dead_lettered attempt=1`"},
		{Name: UnfencedAck, Kind: Broken, Part: "HandleUnfencedAck", PTestCase: "tcUnfencedAckCounterexample",
			GoFunc: "actordelivery.(*Consumer).handle", SQL: "qAck",
			Doc:         "a leased consumer that acknowledges by id instead of by token",
			HuntShows:   "Worker 1 leases the message; a raw `nack_by_id` clears its lease. Worker 1's handler then succeeds: the variant acknowledges by id and commits the effect of a delivery it no longer owns. The fenced ack finds the token gone and rolls the effect back.",
			HuntRefused: "step #3: the variant records `acked`, the store answers `lease_lost`"},
		{Name: FetchedAttempts, Kind: Broken, Part: "HandleFetchedAttempts", PTestCase: "tcLeaselessFetchedAttemptsCounterexample",
			GoFunc: "actordelivery.(*Consumer).decide", SQL: "qReadyAttempts",
			Doc:         "a leaseless consumer that decides a failure from the attempt count its fetch saw",
			HuntShows:   "The leaseless worker fetches `m1` (`max_attempts` 2) at attempt 0; a raw `nack_by_id` counts an attempt before its handler fails. The variant decides on the fetched count (effective attempt 1), retries, and leaves `m1` ready at 2 of 2: stranded. The correct consumer reads the row at handle time (effective attempt 2) and dead-letters it.",
			HuntRefused: "step #3: the variant records `retried attempt=1`, the store answers `dead_lettered attempt=2`"},
		{Name: LeaseBoundary, Kind: Broken, Part: "Rules.LeaseInclusive",
			GoFunc: "actordelivery.(*Store).Lease", SQL: "qNextCandidate",
			Doc:         "a lease still live at lease_until == now (<= for <)",
			HuntShows:   "Worker 1 leases the message (lease_for 1, `max_attempts` 1) at 0; worker 2 fetches at 1. The variant still sees the lease as live and leaves the message leased. At `lease_until == now` the lease has expired, so the correct fetch's `expire()` dead-letters the exhausted message.",
			HuntRefused: "the final snapshot: the variant keeps `m1` leased, the store has dead-lettered it"},
		{Name: LeaseEarly, Kind: Broken, Part: "Rules.LeaseSkew",
			GoFunc: "actordelivery.(*Store).Lease", SQL: "qNextCandidate",
			Doc:         "every lease expires a second early",
			HuntShows:   "Worker 1 leases the message (`max_attempts` 1) for 1 second at 0; an `expire` at 0, while the lease is live (`lease_until` 1). The variant already counts it expired and dead-letters the exhausted message under a live lease.",
			HuntRefused: "step #2: the variant records `affected 1`, the store answers `affected 0` (and keeps `m1` leased)"},
		{Name: FifoOvertake, Kind: Broken, Part: "Rules.HeadBlocksOnlyWhenEligible", PTestCase: "tcFifoOvertakeCounterexample", PVariant: FifoOvertake,
			GoFunc: "actordelivery.(*Store).Lease", SQL: "qNextCandidate",
			Doc:         "a keyed head blocks its successors only while it is itself eligible",
			HuntShows:   "`m1` and `m2` share key `k1`; `m1` is enqueued with a delay of 2, so at 0 it is not yet available but still has attempts left. The variant lets the delayed head stop blocking and hands out `m2` first (`fifo`). The store keeps `m2` behind it and the fetch finds nothing.",
			HuntRefused: "step #2: the variant records `m2`, the store answers `message=none`"},
		{Name: OutboxUnbounded, Kind: Broken, Part: "Rules.ClaimIgnoresMaxDelivery", PTestCase: "tcOutboxUnboundedCounterexample", PVariant: OutboxUnbounded,
			GoFunc: "actordelivery.(*Store).OutboxClaim", SQL: "qOutboxClaim",
			Doc:         "an outbox claim that ignores max_delivery_attempts (rows are claimed past it, never dead-lettered)",
			HuntShows:   "An outbox row that may be claimed twice is claimed at 0, its claim runs out, it is claimed a second time at 4 and released (`outbox_fail`). The variant claims it a third time. Out of attempts, the correct claim dead-letters it and claims nothing.",
			HuntRefused: "step #4: the variant records `m1` claimed (delivery_attempts 3), the store answers `claimed=[]`"},
		{Name: StaleExtend, Kind: Broken, Part: "Rules.ExtendIgnoresToken",
			GoFunc: "actordelivery.(*Store).ExtendLease", SQL: "qExtend",
			Doc:         "a lease extension that checks the message is leased, not by which token (a stale token extends the newer lease)",
			HuntShows:   "Worker 2 leases `m1` (token 1). A fencing probe extends `m1` with a token no lease ever issued: the variant extends the live lease of token 1. The fenced extend refuses it. (Made with `pconform hunt`, whose command its `origin.command` names.)",
			HuntRefused: "step #2: the variant records ok, the store answers `lease_lost`"},
		{Name: DedupTTLInverted, Kind: Broken, Part: "Rules.ProcessedTTLInverted", PTestCase: "tcDedupTTLInvertedCounterexample", PVariant: DedupTTLInverted,
			GoFunc: "actordelivery.(*Store).MarkProcessed", SQL: "qMarkProcessed",
			Doc:         "a processed-message mark whose ttl check is inverted (a live mark is renewed, an expired one is a duplicate)",
			HuntShows:   "Consumer `c1` marks `m1` (ttl 1) and marks it again at the same time, while the mark is live. The variant renews the live mark and reports no duplicate. The correct store reports the duplicate.",
			HuntRefused: "step #1: the variant records no duplicate, the store answers `duplicate`"},
		{Name: CheckpointReset, Kind: Broken, Part: "Rules.CheckpointFirstSaveResets", PTestCase: "tcCheckpointResetCounterexample", PVariant: CheckpointReset,
			GoFunc: "actordelivery.(*Store).SaveCheckpoint", SQL: "qInsertCheckpoint",
			Doc:         "a first checkpoint save (expected version 0) that overwrites an existing checkpoint and resets its version to 1",
			HuntShows:   "Actor `x` is saved with expected version 0 twice. The variant accepts the second first save and resets the version to 1. The correct store refuses it.",
			HuntRefused: "step #1: the variant records version 1, the store answers `version_conflict`"},
		{Name: PurgeForgetsIDs, Kind: Broken, Part: "Rules.PurgeForgetsIDs", PTestCase: "tcPurgeForgetsIdsCounterexample", PVariant: PurgeForgetsIDs,
			GoFunc: "actordelivery.(*Store).Purge", SQL: "qPurgedIDInsert",
			NotObserved: "the workload never enqueues an id again, so no purged id is offered back inside its dedup horizon (its purges run the variant's copy, Eligibility.PurgeRecorded)",
			Doc:         "a purge that retires no id (a purged id enqueued again inside its dedup horizon is inserted afresh)",
			HuntShows:   "`m1` is acknowledged by id and purged with a dedup horizon of 2; the same id is enqueued again at once. The variant inserts it as a fresh message. The correct store still retires the id and reports a duplicate.",
			HuntRefused: "step #3: the variant records ok, the store answers `duplicate`"},
		{Name: RedriveKeepsAttempts, Kind: Broken, Part: "Rules.RedriveKeepsAttempts", PTestCase: "tcAttemptsKeptOnRedriveCounterexample", PVariant: RedriveKeepsAttempts,
			GoFunc: "actordelivery.(*Store).Redrive", SQL: "qRedriveMessage",
			Doc:         "a redrive that puts a mailbox dead letter back with the attempts it died with (an exhausted message is never deliverable again)",
			HuntShows:   "`m1` (max_attempts 1) is fetched, fails and is dead-lettered at attempt 1, then redriven. The variant puts it back ready at 1 of 1: exhausted, never deliverable (`no-strand`). The correct redrive resets attempts to 0.",
			HuntRefused: "the final snapshot: the variant has `m1` at attempts 1, the store at 0"},
		{Name: EarlyDeadLetterUnfenced, Kind: Broken, Part: "HandleEarlyDeadLetterUnfenced", PTestCase: "tcEarlyDeadLetterUnfencedCounterexample", PVariant: EarlyDeadLetterUnfenced,
			GoFunc:      "actordelivery.(*Consumer).decide",
			Doc:         "a leased consumer whose early dead-letter (the retry policy declines) skips the token fence (a stale worker dead-letters the message another worker leased)",
			HuntShows:   "Worker 1 leases `m1` (`max_attempts` 3); a raw `nack` with its token puts the message back. Worker 1's handler fails and the retry policy declines (`fail_no_retry`): the variant dead-letters a message it no longer holds. The fenced dead-letter finds the token gone.",
			HuntRefused: "step #3: the variant records `dead_lettered`, the store answers `lease_lost`"},
		{Name: RedriveRecordsReset, Kind: Broken, Part: "Rules.RedriveRecordsReset", PTestCase: "tcRecordTakesResetAttemptsCounterexample", PVariant: RedriveRecordsReset,
			GoFunc: "actordelivery.(*Store).Redrive", SQL: "qRedriveRecordMessage",
			NotObserved: "the workload's maintainer redrives but never reads the redrive history back (list_redrives is a read the recorder does not record), so no observed history shows a record; its redrives do run the variant's copy (Eligibility.RedriveRecorded), and the P counterexample tcRecordTakesResetAttemptsCounterexample, its corpus trace and the hunts catch it",
			Doc:         "a redrive whose history record takes the attempt count after the reset (0), not the dead letter's",
			HuntShows:   "`m1` (max_attempts 1) is fetched, fails and is dead-lettered at attempt 1, then redriven; the generator reads the history back at once. The variant's record says attempts 0. The correct record keeps the count the dead letter had.",
			HuntRefused: "step #4: the variant lists `attempts=0`, the store lists `attempts=1`"},
		{Name: ExhaustedDeadLetterUnfenced, Kind: Broken, Part: "HandleExhaustedDeadLetterUnfenced", PTestCase: "tcExhaustedDeadLetterUnfencedCounterexample", PVariant: ExhaustedDeadLetterUnfenced,
			GoFunc:      "actordelivery.(*Consumer).decide",
			Doc:         "a leased consumer whose dead-letter at max_attempts skips the token fence (a stale exhausted worker dead-letters the redriven message another worker leased)",
			HuntShows:   "Worker 1 leases `m1` (`max_attempts` 1, attempt 1). Its lease runs out; worker 2's fetch expires it, which dead-letters the exhausted message, and finds nothing else; a redrive puts `m1` back ready with attempts 0. Worker 1's handler then fails at attempt 1 = max: the variant dead-letters the redriven message. The fenced dead-letter finds no lease of worker 1's.",
			HuntRefused: "step #4: the variant records `dead_lettered`, the store answers `lease_lost`"},
		// The batch variants run the store's batch code with one rule changed: a batch handle that
		// wraps the real HandleBatch's handler, or the copied batch fetch under a Rules field.
		{Name: BatchAckBeforeEffects, Kind: Broken, Part: "HandleBatchAckBeforeEffects", PTestCase: "tcBatchAckBeforeEffectsCounterexample",
			HuntShows:   "Worker 1 fetches a batch holding `m1` and its handler succeeds. The variant commits the acknowledgement without the handler's Effects, which it leaves to a later commit that never comes: `m1` is `acked` and its effect is missing. The correct batch commits the effect with the acknowledgement.",
			HuntRefused: "the final snapshot: the variant has no effect of `m1`, the store has it",
			NotObserved: "the observe workload's consumers run the store's own batch handle, with no part of the variant's",
			GoFunc:      "actordelivery.(*Consumer).commitFast",
			Doc:         "a batch consumer that commits its acknowledgements before, and apart from, the batch's effects (models.BatchAckBeforeEffects)"},
		{Name: BatchAcksFailed, Kind: Broken, Part: "HandleBatchAcksFailed", PTestCase: "tcBatchAcksFailedCounterexample",
			HuntShows:   "Worker 1 fetches a batch holding `m1` (`max_attempts` 1) and its handler fails (`fail_no_retry`). The variant acknowledges the failed message with the batch: it is neither retried nor dead-lettered, and no effect was written. The correct batch dead-letters it.",
			HuntRefused: "step #2: the variant records `acked`, the store answers `dead_lettered`",
			NotObserved: "the observe workload's consumers run the store's own batch handle, with no part of the variant's",
			GoFunc:      "actordelivery.(*Consumer).commitFast",
			Doc:         "a batch consumer that acknowledges a failed handler's message with the rest of the batch (models.BatchAcksFailed)"},
		{Name: BatchSkipsKeyHead, Kind: Broken, Part: "Rules.BatchSkipsLeasedHead", PTestCase: "tcBatchSkipsKeyHeadCounterexample",
			HuntShows:   "`m1` and `m2` share key `k1`. Worker 1's batch fetch leases `m1`, then, since the variant lets a head under a live lease stop blocking its key, leases `m2` in the same batch (`fifo`). The store's batch takes one message per key: `m1` alone.",
			HuntRefused: "step #2: the variant records `[m1 m2]`, the store answers `[m1]`",
			NotObserved: "the observe workload's consumers fetch single messages through the copied SQL, never a batch",
			GoFunc:      "actordelivery.(*Store).leaseBatch", SQL: "qLeaseBatch", Harm: "fifo",
			Doc: "a batch fetch that passes over a key's head under a live lease and takes the key's next message (models.BatchSkipsLeasedHead)"},
		// The store refuses a write outside the fold (ErrOutsideTransaction), so no store part
		// can commit one: the variant breaks the model's consumer instead.
		{Name: EffectOutsideFold, Kind: Broken, OnModel: true, PTestCase: "tcEffectOutsideFoldCounterexample",
			NotHunted:   "the store refuses a write outside the fold (ErrOutsideTransaction), and the hunts generate no effect step of a single fetch",
			NotObserved: "the store refuses a write outside the fold (ErrOutsideTransaction), so no observed run commits one",
			GoFunc:      "actordelivery.(*Consumer).Handle",
			Doc:         "the reference model with a leased consumer whose handler writes its effect outside the acknowledgement's transaction, in a step of its own before the handle (models.Config.EffectOutsideFold)"},
	}
}

// Lookup returns the row named name; ok is false for an unknown name.
func Lookup(name string) (row Row, ok bool) {
	for _, r := range All() {
		if r.Name == name {
			return r, true
		}
	}
	return Row{}, false
}

// Names lists the rows' names, in catalogue order, of the given kinds (every kind when none is
// given).
func Names(kinds ...Kind) []string {
	var out []string
	for _, r := range All() {
		if len(kinds) == 0 || containsKind(kinds, r.Kind) {
			out = append(out, r.Name)
		}
	}
	return out
}

func containsKind(kinds []Kind, k Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// ByPTestCase maps each P counterexample test case to the variant whose bug it records.
func ByPTestCase() map[string]string {
	out := map[string]string{}
	for _, r := range All() {
		if r.PTestCase != "" {
			out[r.PTestCase] = r.Name
		}
	}
	return out
}

// ModelOnly is a P counterexample that is no target: its broken part is a machine of the P
// model's environment (a worker that breaks the shutdown rule), not the store. No store variant
// behaves differently at any step (the rule it breaks is the caller's, and the Go model refuses
// its history as malformed), so its bug trace can say no step where a correct store diverges, and
// the bridge keeps no corpus trace of it. The models stage still requires it to find its bug,
// which shows the monitor catches the broken behaviour.
type ModelOnly struct {
	// PTestCase is the counterexample test case; Monitor the spec monitor that must fail in it.
	PTestCase, Monitor string
	// Doc says in one line what the broken machine does.
	Doc string
}

// ModelOnlyCounterexamples returns the P counterexamples of broken model machines. Each call
// returns a fresh slice.
func ModelOnlyCounterexamples() []ModelOnly {
	return []ModelOnly{
		{PTestCase: "tcFetchAfterStopCounterexample", Monitor: "StoppedWorkerStartsNoFetch",
			Doc: "a worker that goes on fetching after its group's stop (tConsumerCfg.stop 2)"},
	}
}

// IsModelOnly reports whether testCase is one of ModelOnlyCounterexamples.
func IsModelOnly(testCase string) bool {
	for _, m := range ModelOnlyCounterexamples() {
		if m.PTestCase == testCase {
			return true
		}
	}
	return false
}
