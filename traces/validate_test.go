package traces

import (
	"errors"
	"fmt"
	"testing"
)

// baseTrace is a small valid trace touching the mailbox, the outbox and a consumer, which each
// TestValidate case breaks in one place.
func baseTrace() *Trace {
	return &Trace{
		Format: Format,
		Name:   "base",
		Origin: Origin{Kind: OriginProperty, TestCase: "TestX", Seed: 7},
		Expect: Expect{DivergesAt: -1},
		Steps: []Step{
			{Op: OpEnqueue, At: 0, Args: Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 2}},
			{Op: OpLease, At: 1, Args: Args{Mailbox: "inbox", LeaseFor: 10}, Result: Result{Message: &Message{ID: "m1", Attempts: 1, Token: 1}}},
			{Op: OpAck, At: 2, Args: Args{ID: "m1", Token: 1}},
			{Op: OpOutboxEnqueue, At: 2, Args: Args{ID: "e1", Target: "inbox", MaxAttempts: 1}},
			{Op: OpOutboxClaim, At: 3, Args: Args{Limit: 2, ClaimFor: 5}, Result: Result{Claimed: []Claimed{{ID: "e1", DeliveryAttempts: 1, Token: 1}}}},
			{Op: OpConsumerFetch, At: 4, Args: Args{Worker: 1, Mailbox: "inbox", Profile: ProfileLeaseless}},
			{Op: OpConsumerHandle, At: 4, Args: Args{Worker: 1, Mailbox: "inbox", Profile: ProfileLeaseless, Outcome: OutcomeOK}, Result: Result{Action: ActionIdle}},
		},
		Final: &Snapshot{
			Messages:    []MessageRow{{Mailbox: "inbox", ID: "m1", State: StateAcked, Attempts: 1, MaxAttempts: 2}},
			Outbox:      []OutboxRow{{ID: "e1", Target: "inbox", MaxAttempts: 1, State: StatePending, DeliveryAttempts: 1, AvailableAt: 2, Token: 1, ClaimUntil: 8}},
			DeadLetters: []DeadLetterRow{},
			Effects:     map[string][]string{},
		},
	}
}

// TestValidate covers the in-memory rules, in particular those a file cannot express: presence
// is zero-ness here, and strings can hold invalid UTF-8.
func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Trace)
		want   string // "" for valid
	}{
		{"base", func(*Trace) {}, ""},
		{"nil final", func(t *Trace) { t.Final = nil }, ""},
		{"nil tables count as empty", func(t *Trace) {
			t.Final.Messages, t.Final.Outbox, t.Final.Effects = nil, nil, nil
		}, ""},
		{"nil steps", func(t *Trace) { t.Steps, t.Final = nil, nil }, ""},
		{"wrong format", func(t *Trace) { t.Format = "v0" }, `traces: format: unknown format version "v0"; want "pconform.trace/v2"`},
		{"empty name", func(t *Trace) { t.Name = "" }, `traces: name: must be non-empty`},
		{"invalid utf-8", func(t *Trace) { t.Steps[0].Args.Payload = "\xff" }, `traces: step 0 (enqueue): args.payload: must be valid UTF-8`},
		{"origin kind", func(t *Trace) { t.Origin.Kind = "" }, `traces: origin.kind: must be one of "p-checker", "property", "hand", "observed"; got ""`},
		{"negative schedule", func(t *Trace) { t.Origin.Schedule = -1 }, `traces: origin.schedule: must be >= 0, got -1`},
		{"variant without divergence is fine", func(t *Trace) { t.Expect.Variant = "split-write" }, ""},
		{"variant diverging at the last step", func(t *Trace) { t.Expect = Expect{Variant: "raw-attempts", DivergesAt: 6} }, ""},
		{"diverges past the end", func(t *Trace) { t.Expect = Expect{Variant: "raw-attempts", DivergesAt: 7} },
			`traces: expect.diverges_at: must be -1 or a step index in [0, 7), got 7`},
		{"diverges below -1", func(t *Trace) { t.Expect = Expect{Variant: "raw-attempts", DivergesAt: -2} },
			`traces: expect.diverges_at: must be -1 or a step index in [0, 7), got -2`},
		{"diverges with no steps", func(t *Trace) {
			t.Steps, t.Final = nil, nil
			t.Expect = Expect{Variant: "raw-attempts", DivergesAt: 0}
		}, `traces: expect.diverges_at: must be -1 (the trace has no steps), got 0`},
		{"zero-value diverges_at without variant", func(t *Trace) { t.Expect.DivergesAt = 0 },
			`traces: expect.diverges_at: must be -1 when expect.variant is empty, got 0`},
		{"unknown op", func(t *Trace) { t.Steps[2].Op = "ack_all" }, `traces: step 2: op: unknown operation "ack_all"`},
		{"arg the op does not take", func(t *Trace) { t.Steps[2].Args.Delay = 3 },
			`traces: step 2 (ack): args.delay: not an argument of ack (ack takes id, token)`},
		{"result the op does not report", func(t *Trace) { t.Steps[2].Result.Affected = 1 },
			`traces: step 2 (ack): result.affected: not a result of ack (ack reports err)`},
		{"required string left empty", func(t *Trace) { t.Steps[3].Args.Target = "" },
			`traces: step 3 (outbox_enqueue): args.target: must be non-empty`},
		{"lease_for zero", func(t *Trace) { t.Steps[1].Args.LeaseFor = 0 },
			`traces: step 1 (lease): args.lease_for: must be >= 1, got 0`},
		{"negative at", func(t *Trace) { t.Steps[0].At = -5 }, `traces: step 0 (enqueue): at: must be >= 0, got -5`},
		{"time going back", func(t *Trace) { t.Steps[3].At = 1 },
			`traces: step 3 (outbox_enqueue): at: 1 is before the previous step's 2; time never decreases`},
		{"token reused by a later lease", func(t *Trace) {
			t.Steps[5].Args = Args{Worker: 1, Mailbox: "inbox", Profile: ProfileLeased, LeaseFor: 3}
			t.Steps[5].Result.Message = &Message{ID: "m1", Attempts: 2, Token: 1}
		}, `traces: step 5 (consumer_fetch): result.message.token: symbol 1 was already used at step 1; every lease issues a fresh token`},
		{"lease tokens and claim tokens are separate", func(t *Trace) {
			t.Steps[4].Result.Claimed[0].Token = 1 // lease symbol 1 exists; claim symbol 1 is fresh
		}, ""},
		{"a symbol first named by an argument cannot be issued later", func(t *Trace) {
			t.Steps[2].Args.Token = 4
			t.Steps[5].Args = Args{Worker: 1, Mailbox: "inbox", Profile: ProfileLeased, LeaseFor: 3}
			t.Steps[5].Result.Message = &Message{ID: "m1", Attempts: 2, Token: 4}
		}, `traces: step 5 (consumer_fetch): result.message.token: symbol 4 was already used at step 2; every lease issues a fresh token`},
		{"leaseless fetch with lease_for", func(t *Trace) { t.Steps[5].Args.LeaseFor = 5 },
			`traces: step 5 (consumer_fetch): args.lease_for: a leaseless consumer_fetch takes no lease (it peeks), so lease_for must be absent; got 5`},
		{"leaseless fetch with a token", func(t *Trace) { t.Steps[5].Result.Message = &Message{ID: "m1", Token: 2} },
			`traces: step 5 (consumer_fetch): result.message.token: a leaseless consumer_fetch takes no lease, so it must be absent, got 2`},
		{"handle with a publisher profile", func(t *Trace) { t.Steps[6].Args.Profile = ProfileSplit },
			`traces: step 6 (consumer_handle): args.profile: must be one of "leased", "leaseless"; got "split"`},
		{"action missing in memory", func(t *Trace) { t.Steps[6].Result.Action = "" },
			`traces: step 6 (consumer_handle): result.action: must be one of "acked", "retried", "dead_lettered", "lease_lost", "idle", "commit_failed"; got ""`},
		{"commit failed without the fault", func(t *Trace) { t.Steps[6].Result.Action = ActionCommitFailed },
			`traces: step 6 (consumer_handle): result.action: only a handle whose commit fails (fault "commit_fails") ends "commit_failed"`},
		{"commit fails but acked", func(t *Trace) {
			t.Steps[6].Args.Fault, t.Steps[6].Result.Action = FaultCommitFails, ActionAcked
		},
			`traces: step 6 (consumer_handle): result.action: a handle whose commit fails changes nothing: it ends "commit_failed" (or "idle" for a worker that holds nothing), got "acked"`},
		{"a declined failure's reason", func(t *Trace) {
			t.Steps[6].Args.Outcome, t.Steps[6].Args.Reason = OutcomeFailNoRetry, "disk full"
		}, ""},
		{"a reason without a declined failure", func(t *Trace) { t.Steps[6].Args.Reason = "disk full" },
			`traces: step 6 (consumer_handle): args.reason: only a failure the retry policy declines (outcome "fail_no_retry") has a dead-letter reason; the outcome is "ok"`},
		{"a reason of invalid utf-8", func(t *Trace) {
			t.Steps[6].Args.Outcome, t.Steps[6].Args.Reason = OutcomeFailNoRetry, "\xff"
		}, `traces: step 6 (consumer_handle): args.reason: must be valid UTF-8`},
		{"handle fault unknown", func(t *Trace) { t.Steps[6].Args.Fault = FaultCrashBetween },
			`traces: step 6 (consumer_handle): args.fault: must be one of "none", "commit_fails"; got "crash_between"`},
		{"commit failed with an attempt", func(t *Trace) {
			t.Steps[6].Args.Outcome, t.Steps[6].Args.Fault = OutcomeFail, FaultCommitFails
			t.Steps[6].Result = Result{Action: ActionCommitFailed, Attempt: 1}
		}, `traces: step 6 (consumer_handle): result.attempt: must be 0 for a handle whose commit failed (no retry decision was committed), got 1`},
		{"attempt on success", func(t *Trace) { t.Steps[6].Result = Result{Action: ActionAcked, Attempt: 1} },
			`traces: step 6 (consumer_handle): result.attempt: must be 0 when the handler succeeded (no retry decision was made), got 1`},
		{"attempt while idle", func(t *Trace) {
			t.Steps[6].Args.Outcome = OutcomeFail
			t.Steps[6].Result.Attempt = 2
		}, `traces: step 6 (consumer_handle): result.attempt: must be 0 for an idle worker, got 2`},
		{"failed handler acked", func(t *Trace) {
			t.Steps[6].Args.Outcome = OutcomeFail
			t.Steps[6].Result.Action = ActionAcked
		}, `traces: step 6 (consumer_handle): result.action: a handler that failed cannot end "acked"`},
		{"claimed twice", func(t *Trace) {
			t.Steps[4].Result.Claimed = append(t.Steps[4].Result.Claimed, Claimed{ID: "e1", DeliveryAttempts: 1, Token: 1})
		}, `traces: step 4 (outbox_claim): result.claimed[1].id: "e1" is claimed twice in one batch`},
		{"claimed twice in a batch past shortBatch", func(t *Trace) {
			t.Steps[4].Args.Limit = shortBatch + 4
			for i := 2; i <= shortBatch+2; i++ {
				t.Steps[4].Result.Claimed = append(t.Steps[4].Result.Claimed, Claimed{ID: fmt.Sprintf("e%d", i), DeliveryAttempts: 1, Token: 1})
			}
			t.Steps[4].Result.Claimed = append(t.Steps[4].Result.Claimed, Claimed{ID: "e7", DeliveryAttempts: 1, Token: 1})
		}, fmt.Sprintf(`traces: step 4 (outbox_claim): result.claimed[%d].id: "e7" is claimed twice in one batch`, shortBatch+2)},
		{"claimed row without an id", func(t *Trace) {
			t.Steps[4].Result.Claimed = append(t.Steps[4].Result.Claimed, Claimed{DeliveryAttempts: 1, Token: 1})
		}, `traces: step 4 (outbox_claim): result.claimed[1].id: must be non-empty`},
		{"claimed id not UTF-8", func(t *Trace) {
			t.Steps[4].Result.Claimed = append(t.Steps[4].Result.Claimed, Claimed{ID: "e\xff", DeliveryAttempts: 1, Token: 1})
		}, `traces: step 4 (outbox_claim): result.claimed[1].id: must be valid UTF-8`},
		{"claimed without a delivery attempt", func(t *Trace) { t.Steps[4].Result.Claimed[0].DeliveryAttempts = 0 },
			`traces: step 4 (outbox_claim): result.claimed[0].delivery_attempts: must be >= 1, got 0`},
		{"empty claim list is no claim", func(t *Trace) {
			t.Steps[4].Result.Claimed = []Claimed{}
			t.Final.Outbox[0] = OutboxRow{ID: "e1", Target: "inbox", MaxAttempts: 1, State: StatePending, AvailableAt: 2}
		}, ""},
		{"row token never issued", func(t *Trace) { t.Final.Outbox[0].Token = 2 },
			`traces: final.outbox[0].token: symbol 2 was never issued by a step's result`},
		{"claim_until without a token", func(t *Trace) { t.Final.Outbox[0].Token = 0 },
			`traces: final.outbox[0].claim_until: must be absent when the row holds no token, got 8`},
		{"outbox state", func(t *Trace) { t.Final.Outbox[0].State = StateReady },
			`traces: final.outbox[0].state: must be one of "pending", "completed", "dead_letter"; got "ready"`},
		{"repeated message row", func(t *Trace) { t.Final.Messages = append(t.Final.Messages, t.Final.Messages[0]) },
			`traces: final.messages[1]: ("inbox", "m1") does not sort after the row before it, ("inbox", "m1"); rows are ordered by mailbox, then id, without repeats (see Canonicalize)`},
		{"unsorted dead letters", func(t *Trace) {
			t.Final.DeadLetters = []DeadLetterRow{{Mailbox: "a", ID: "z", MaxAttempts: 1, Reason: "r"}, {Mailbox: "b", ID: "y", MaxAttempts: 1, Reason: "r"}}
		}, `traces: final.dead_letters[1]: id "y" does not sort after the row before it, "z"; rows are ordered by id, without repeats (see Canonicalize)`},
		{"empty effect list", func(t *Trace) { t.Final.Effects["inbox"] = nil },
			`traces: final.effects["inbox"]: empty list; a mailbox without effects is left out (Canonicalize drops it)`},
		{"empty effect id", func(t *Trace) { t.Final.Effects["inbox"] = []string{"m1", ""} },
			`traces: final.effects["inbox"][1]: must be non-empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := baseTrace()
			tt.mutate(tr)
			err := Validate(tr)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %s", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not wrap ErrInvalid", err)
			}
			if _, merr := Marshal(tr); merr == nil || merr.Error() != err.Error() {
				t.Errorf("Marshal: got %v, want the Validate error", merr)
			}
		})
	}
}

func TestValidateNil(t *testing.T) {
	if err := Validate(nil); err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("Validate(nil) = %v, want ErrInvalid", err)
	}
	if _, err := Marshal(nil); err == nil {
		t.Error("Marshal(nil) succeeded")
	}
	if _, err := Hash(nil); err == nil {
		t.Error("Hash(nil) succeeded")
	}
}

// TestValidateBatchReasons: a consumer_handle_batch's reasons are one per outcome, and only a
// declined failure's may be set.
func TestValidateBatchReasons(t *testing.T) {
	batch := func(reasons ...string) *Trace {
		return &Trace{Format: Format, Name: "batch", Origin: Origin{Kind: OriginHand}, Expect: Expect{DivergesAt: -1},
			Steps: []Step{
				{Op: OpEnqueue, At: 0, Args: Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 3}},
				{Op: OpEnqueue, At: 0, Args: Args{Mailbox: "inbox", ID: "m2", MaxAttempts: 3}},
				{Op: OpConsumerFetchBatch, At: 1, Args: Args{Worker: 1, Mailbox: "inbox", Profile: ProfileLeaseless, Size: 2},
					Result: Result{Messages: []Message{{ID: "m1"}, {ID: "m2"}}}},
				{Op: OpConsumerHandleBatch, At: 1, Args: Args{Worker: 1, Mailbox: "inbox", Profile: ProfileLeaseless,
					Outcomes: []string{OutcomeOK, OutcomeFailNoRetry}, Fault: FaultNone, Reasons: reasons},
					Result: Result{Actions: []string{ActionAcked, ActionDeadLettered}}},
			}}
	}
	tests := []struct {
		name    string
		reasons []string
		want    string
	}{
		{"absent", nil, ""},
		{"the declined part's", []string{"", "disk full"}, ""},
		{"one short", []string{""}, `traces: step 3 (consumer_handle_batch): args.reasons: holds 1 reasons for 2 outcomes; one each, or none`},
		{"on a part that succeeded", []string{"disk full", ""}, `traces: step 3 (consumer_handle_batch): args.reasons[0]: only a failure the retry policy declines (outcome "fail_no_retry") has a dead-letter reason; the outcome is "ok"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(batch(tc.reasons...))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
