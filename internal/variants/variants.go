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
			GoFunc: "actordelivery.(*Publisher).deliverSplit",
			Doc:    "a split delivery that drops the enqueue's commit error"},
		{Name: RawAttempts, Kind: Broken, Part: "HandleRawAttempts", PTestCase: "tcLeaselessRawAttemptsCounterexample",
			GoFunc: "actordelivery.(*Consumer).failed",
			Doc:    "a leaseless consumer that hands the retry decision the raw stored attempt count"},
		{Name: UnfencedAck, Kind: Broken, Part: "HandleUnfencedAck", PTestCase: "tcUnfencedAckCounterexample",
			GoFunc: "actordelivery.(*Consumer).handle", SQL: "qAck",
			Doc: "a leased consumer that acknowledges by id instead of by token"},
		{Name: FetchedAttempts, Kind: Broken, Part: "HandleFetchedAttempts", PTestCase: "tcLeaselessFetchedAttemptsCounterexample",
			GoFunc: "actordelivery.(*Consumer).decide", SQL: "qReadyAttempts",
			Doc: "a leaseless consumer that decides a failure from the attempt count its fetch saw"},
		{Name: LeaseBoundary, Kind: Broken, Part: "Rules.LeaseInclusive",
			GoFunc: "actordelivery.(*Store).Lease", SQL: "qNextCandidate",
			Doc: "a lease still live at lease_until == now (<= for <)"},
		{Name: LeaseEarly, Kind: Broken, Part: "Rules.LeaseSkew",
			GoFunc: "actordelivery.(*Store).Lease", SQL: "qNextCandidate",
			Doc: "every lease expires a second early"},
		{Name: FifoOvertake, Kind: Broken, Part: "Rules.HeadBlocksOnlyWhenEligible", PTestCase: "tcFifoOvertakeCounterexample", PVariant: FifoOvertake,
			GoFunc: "actordelivery.(*Store).Lease", SQL: "qNextCandidate",
			Doc: "a keyed head blocks its successors only while it is itself eligible"},
		{Name: OutboxUnbounded, Kind: Broken, Part: "Rules.ClaimIgnoresMaxDelivery", PTestCase: "tcOutboxUnboundedCounterexample", PVariant: OutboxUnbounded,
			GoFunc: "actordelivery.(*Store).OutboxClaim", SQL: "qOutboxClaim",
			Doc: "an outbox claim that ignores max_delivery_attempts (rows are claimed past it, never dead-lettered)"},
		{Name: StaleExtend, Kind: Broken, Part: "Rules.ExtendIgnoresToken",
			GoFunc: "actordelivery.(*Store).ExtendLease", SQL: "qExtend",
			Doc: "a lease extension that checks the message is leased, not by which token (a stale token extends the newer lease)"},
		{Name: DedupTTLInverted, Kind: Broken, Part: "Rules.ProcessedTTLInverted", PTestCase: "tcDedupTTLInvertedCounterexample", PVariant: DedupTTLInverted,
			GoFunc: "actordelivery.(*Store).MarkProcessed", SQL: "qMarkProcessed",
			Doc: "a processed-message mark whose ttl check is inverted (a live mark is renewed, an expired one is a duplicate)"},
		{Name: CheckpointReset, Kind: Broken, Part: "Rules.CheckpointFirstSaveResets", PTestCase: "tcCheckpointResetCounterexample", PVariant: CheckpointReset,
			GoFunc: "actordelivery.(*Store).SaveCheckpoint", SQL: "qInsertCheckpoint",
			Doc: "a first checkpoint save (expected version 0) that overwrites an existing checkpoint and resets its version to 1"},
		{Name: PurgeForgetsIDs, Kind: Broken, Part: "Rules.PurgeForgetsIDs", PTestCase: "tcPurgeForgetsIdsCounterexample", PVariant: PurgeForgetsIDs,
			GoFunc: "actordelivery.(*Store).Purge", SQL: "qPurgedIDInsert",
			NotObserved: "the workload never enqueues an id again, so no purged id is offered back inside its dedup horizon (its purges run the variant's copy, Eligibility.PurgeRecorded)",
			Doc:         "a purge that retires no id (a purged id enqueued again inside its dedup horizon is inserted afresh)"},
		{Name: RedriveKeepsAttempts, Kind: Broken, Part: "Rules.RedriveKeepsAttempts", PTestCase: "tcAttemptsKeptOnRedriveCounterexample", PVariant: RedriveKeepsAttempts,
			GoFunc: "actordelivery.(*Store).Redrive", SQL: "qRedriveMessage",
			Doc: "a redrive that puts a mailbox dead letter back with the attempts it died with (an exhausted message is never deliverable again)"},
		{Name: EarlyDeadLetterUnfenced, Kind: Broken, Part: "HandleEarlyDeadLetterUnfenced", PTestCase: "tcEarlyDeadLetterUnfencedCounterexample", PVariant: EarlyDeadLetterUnfenced,
			GoFunc: "actordelivery.(*Consumer).decide",
			Doc:    "a leased consumer whose early dead-letter (the retry policy declines) skips the token fence (a stale worker dead-letters the message another worker leased)"},
		{Name: RedriveRecordsReset, Kind: Broken, Part: "Rules.RedriveRecordsReset", PTestCase: "tcRecordTakesResetAttemptsCounterexample", PVariant: RedriveRecordsReset,
			GoFunc: "actordelivery.(*Store).Redrive", SQL: "qRedriveRecordMessage",
			NotObserved: "the workload's maintainer redrives but never reads the redrive history back (list_redrives is a read the recorder does not record), so no observed history shows a record; its redrives do run the variant's copy (Eligibility.RedriveRecorded), and the P counterexample tcRecordTakesResetAttemptsCounterexample, its corpus trace and the hunts catch it",
			Doc:         "a redrive whose history record takes the attempt count after the reset (0), not the dead letter's"},
		{Name: ExhaustedDeadLetterUnfenced, Kind: Broken, Part: "HandleExhaustedDeadLetterUnfenced", PTestCase: "tcExhaustedDeadLetterUnfencedCounterexample", PVariant: ExhaustedDeadLetterUnfenced,
			GoFunc: "actordelivery.(*Consumer).decide",
			Doc:    "a leased consumer whose dead-letter at max_attempts skips the token fence (a stale exhausted worker dead-letters the redriven message another worker leased)"},
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
