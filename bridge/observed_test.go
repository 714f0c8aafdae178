package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// observedSplitWrite is an observed history of the split-write bug: the enqueue's commit failed,
// the broken publisher completed the row anyway, then a fold delivery of another row.
func observedSplitWrite() *traces.Trace {
	return &traces.Trace{Format: traces.Format, Name: "split-write-observed", Origin: traces.Origin{Kind: traces.OriginObserved},
		Expect: traces.Expect{Variant: "split-write", DivergesAt: -1},
		Steps: []traces.Step{
			{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o1", Target: "inbox", MaxAttempts: 2}},
			{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o2", Target: "inbox", MaxAttempts: 2}},
			{Op: traces.OpOutboxClaim, Args: traces.Args{Limit: 2, ClaimFor: 5}, Result: traces.Result{Claimed: []traces.Claimed{
				{ID: "o1", DeliveryAttempts: 1, Token: 1}, {ID: "o2", DeliveryAttempts: 1, Token: 1}}}},
			{Op: traces.OpPublisherDeliver, At: 1, Args: traces.Args{Publisher: 1, ID: "o2", Token: 1, Profile: "fold", Fault: "none"},
				Result: traces.Result{Action: traces.ActionDelivered}},
			{Op: traces.OpConsumerFetch, At: 1, Args: traces.Args{Worker: 1, Mailbox: "inbox", Profile: "leaseless"},
				Result: traces.Result{Message: &traces.Message{ID: "o2"}}},
			{Op: traces.OpConsumerHandle, At: 2, Args: traces.Args{Worker: 1, Mailbox: "inbox", Profile: "leaseless", Outcome: "ok"},
				Result: traces.Result{Action: traces.ActionAcked}},
			{Op: traces.OpOutboxComplete, At: 2, Args: traces.Args{ID: "o1", Token: 1}},
		}}
}

// TestObservedDriver: the driver announces the spec events the observed results state, in
// order, and asserts the project's monitors.
func TestObservedDriver(t *testing.T) {
	src, err := bridge.PDriver(observedSplitWrite(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`announce eSpecOutboxEnqueued, (at = 0, id = "o1", target = "inbox");`,
		`announce eSpecOutboxEnqueued, (at = 0, id = "o2", target = "inbox");`,
		`announce eSpecMsgInserted, (at = 1, mailbox = "inbox", id = "o2");`,
		`announce eSpecOutboxCompleted, (at = 1, id = "o2", target = "inbox");`,
		`announce eSpecEffect, (at = 2, mailbox = "inbox", id = "o2");`,
		`announce eSpecOutboxCompleted, (at = 2, id = "o1", target = "inbox");`,
		`test tcObservedHistory0000 [main=ObservedHistory0000]: assert ` + strings.Join(bridge.ObservedMonitors, ", ") + ` in { ObservedHistory0000 };`,
	}
	at := 0
	for _, w := range want {
		i := strings.Index(src[at:], w)
		if i < 0 {
			t.Fatalf("driver lacks, in order, %s\n%s", w, src)
		}
		at += i + len(w)
	}
	bad := observedSplitWrite()
	bad.Steps[0].Args.ID = `o"1`
	if _, err := bridge.PDriver(bad, 0, nil); err == nil || !strings.Contains(err.Error(), "cannot be written into P") {
		t.Fatalf("an id with a quote: %v", err)
	}
}

// observedDedupCheckpoint is an observed history of processed-message marks, checkpoint saves
// and loads, and an outbox row's claims, all as the correct store answers them.
func observedDedupCheckpoint() *traces.Trace {
	return &traces.Trace{Format: traces.Format, Name: "dedup-checkpoint-observed", Origin: traces.Origin{Kind: traces.OriginObserved},
		Expect: traces.Expect{DivergesAt: -1},
		Steps: []traces.Step{
			{Op: traces.OpMarkProcessed, Args: traces.Args{Consumer: "g", ID: "m1", TTL: 3}},
			{Op: traces.OpMarkProcessed, At: 2, Args: traces.Args{Consumer: "g", ID: "m1", TTL: 3}, Result: traces.Result{Duplicate: true}},
			{Op: traces.OpSaveCheckpoint, At: 2, Args: traces.Args{Actor: "a1"}, Result: traces.Result{Version: 1}},
			{Op: traces.OpSaveCheckpoint, At: 3, Args: traces.Args{Actor: "a1"}, Result: traces.Result{Err: traces.ErrKindVersionConflict}},
			{Op: traces.OpLoadCheckpoint, At: 3, Args: traces.Args{Actor: "a1"}, Result: traces.Result{Version: 1}},
			{Op: traces.OpOutboxEnqueue, At: 3, Args: traces.Args{ID: "o1", Target: "nowhere", MaxAttempts: 1, MaxDeliveryAttempts: 1}},
			{Op: traces.OpOutboxClaim, At: 4, Args: traces.Args{Limit: 2, ClaimFor: 2}, Result: traces.Result{Claimed: []traces.Claimed{
				{ID: "o1", DeliveryAttempts: 1, Token: 1}}}},
			{Op: traces.OpOutboxDeadLetter, At: 4, Args: traces.Args{ID: "o1", Token: 1, Reason: "max delivery attempts reached"}},
		}}
}

// TestObservedDriverDedupCheckpoint: marks, checkpoint saves and loads go to the dedup and
// checkpoint monitors as the store's observations, and a claim states the claimed row's delivery
// attempts against its bound; a reason with spaces is written as it is.
func TestObservedDriverDedupCheckpoint(t *testing.T) {
	src, err := bridge.PDriver(observedDedupCheckpoint(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`announce eObsMarkProcessed, (at = 0, consumer = "g", id = "m1", ttl = 3, duplicate = false, bug = false);`,
		`announce eObsMarkProcessed, (at = 2, consumer = "g", id = "m1", ttl = 3, duplicate = true, bug = false);`,
		`announce eObsSaveCheckpoint, (at = 2, actor = "a1", expect_version = 0, payload = "", version = 1, err = "", bug = false);`,
		`announce eObsSaveCheckpoint, (at = 3, actor = "a1", expect_version = 0, payload = "", version = 0, err = "version_conflict", bug = false);`,
		`announce eObsLoadCheckpoint, (at = 3, actor = "a1", version = 1, err = "");`,
		`announce eSpecOutboxEnqueued, (at = 3, id = "o1", target = "nowhere");`,
		`row_state = "pending", delivery_attempts = 1, available_at = 4, token = 1, claim_until = 6, seqno = 0, max_delivery_attempts = 1, dead_reason = ""));`,
	}
	at := 0
	for _, w := range want {
		i := strings.Index(src[at:], w)
		if i < 0 {
			t.Fatalf("driver lacks, in order, %s\n%s", w, src)
		}
		at += i + len(w)
	}
}

// observedVariants are observed histories the P monitors judge: the split-write history without
// its failed delivery (fold-only, which holds), and the dedup-ttl-inverted, checkpoint-reset and
// outbox-unbounded bugs made from the dedup-checkpoint history.
func observedVariants() (good, inverted, reset, unbounded *traces.Trace) {
	good = observedSplitWrite()
	good.Name = "fold-only"
	good.Steps = good.Steps[:len(good.Steps)-1]
	inverted, reset, unbounded = observedDedupCheckpoint(), observedDedupCheckpoint(), observedDedupCheckpoint()
	inverted.Steps[1].Result.Duplicate = false
	reset.Steps[3].Result = traces.Result{Version: 1}
	unbounded.Steps[6].Result.Claimed[0].DeliveryAttempts = 2
	return good, inverted, reset, unbounded
}

// TestCheckObservedOnTheChecker compiles the drivers of the split-write history and of the same
// history without the broken completion with the project's own monitors and runs the real P
// checker: the first is refused in the monitor's words, the second holds; so are the other
// monitors' broken histories, a wake before its commit, a fetch after a stop (the Go model's
// TestShutdownRule refuses the same) and a woken worker's poll tick without a fetch (the Go model
// gives wake_not_fetched). -short skips it.
func TestCheckObservedOnTheChecker(t *testing.T) {
	requireP(t)
	if testing.Short() {
		t.Skip("-short: skipping the P compile and checker run")
	}
	good, inverted, reset, unbounded := observedVariants()
	// A consumer's wake after its message's enqueue, and one recorded before it.
	wake := traces.Step{Op: traces.OpWake, Args: traces.Args{Worker: 1, Mailbox: "inbox", ID: "m1", Profile: traces.WakeLocal}}
	enqueue := traces.Step{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 1}}
	wakeAfter := &traces.Trace{Format: traces.Format, Name: "wake-after", Origin: traces.Origin{Kind: traces.OriginObserved},
		Expect: traces.Expect{DivergesAt: -1}, Steps: []traces.Step{enqueue, wake}}
	wakeEarly := &traces.Trace{Format: traces.Format, Name: "wake-early", Origin: traces.Origin{Kind: traces.OriginObserved},
		Expect: traces.Expect{DivergesAt: -1}, Steps: []traces.Step{wake, enqueue}}
	drained, fetchAfterStop := observedStops()
	// A woken worker that fetches before its poll tick, and (broken) one that does not.
	tick := traces.Step{Op: traces.OpPollTick, Args: traces.Args{Worker: 1, Mailbox: "inbox"}}
	fetch := traces.Step{Op: traces.OpConsumerFetch, Args: traces.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeaseless},
		Result: traces.Result{Message: &traces.Message{ID: "m1"}}}
	tickFetched := &traces.Trace{Format: traces.Format, Name: "tick-fetched", Origin: traces.Origin{Kind: traces.OriginObserved},
		Expect: traces.Expect{DivergesAt: -1}, Steps: []traces.Step{enqueue, wake, fetch, tick}}
	tickUnfetched := &traces.Trace{Format: traces.Format, Name: "tick-unfetched", Origin: traces.Origin{Kind: traces.OriginObserved},
		Expect: traces.Expect{DivergesAt: -1}, Steps: []traces.Step{enqueue, wake, tick}}
	rows := rowHistories()
	msgs, err := bridge.CheckObservedAll(context.Background(), bridge.Config{ProjectDir: modelsDir},
		[]*traces.Trace{observedSplitWrite(), good, observedDedupCheckpoint(), inverted, reset, unbounded, wakeAfter, wakeEarly,
			drained, fetchAfterStop, tickFetched, tickUnfetched, rows[0].t, rows[1].t, rows[2].t, rows[3].t})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int]string{
		2:  "",
		3:  "message m1 was applied twice by consumer g: mark_processed at t=2 found no live mark, but the mark written before expires at t=3",
		4:  "save_checkpoint of a1 at t=3 with the stale expected version 0 (stored: 1) was accepted and set version 1",
		5:  "outbox row o1 was claimed 2 times at t=4, above its max_delivery_attempts 1",
		6:  "",
		7:  "a wake of mailbox inbox for message m1 at t=0 came before any committed step put m1 into inbox",
		8:  "",
		9:  "worker 1 started a new fetch at t=0 after its stop",
		10: "",
		11: "worker 1 was woken for a committed message of mailbox inbox and reached its next poll tick there at t=0 without fetching from it",
		12: rows[0].msg, 13: rows[1].msg, 14: rows[2].msg, 15: rows[3].msg,
	} {
		if msgs[i] != want {
			t.Errorf("history %d: %q, want %q", i, msgs[i], want)
		}
	}
	if want := "outbox row o1 completed at t=2 but no message o1 was ever enqueued in mailbox inbox"; msgs[0] != want {
		t.Errorf("split-write history: %q, want %q", msgs[0], want)
	}
	if msgs[1] != "" {
		t.Errorf("the history without the broken completion: %q, want every monitor to hold", msgs[1])
	}
}

// TestAssertedMonitors: a P checker trace is held to its test case's monitors, liveness ones only
// with the final snapshot of its completed scenario; any other trace to every safety monitor.
func TestAssertedMonitors(t *testing.T) {
	final := &traces.Snapshot{}
	for _, tc := range []struct {
		name   string
		origin traces.Origin
		final  *traces.Snapshot
		want   []string
	}{
		{"counterexample with its end", traces.Origin{Kind: traces.OriginPChecker, TestCase: "tcLeaselessRawAttemptsCounterexample"}, final,
			[]string{"EveryMessageEventuallyResolved", "AttemptsNeverExceedMax"}},
		{"stopped before its end", traces.Origin{Kind: traces.OriginPChecker, TestCase: "tcLeaselessRawAttemptsCounterexample"}, nil,
			[]string{"AttemptsNeverExceedMax"}},
		{"a prefix of a test case's name is not it", traces.Origin{Kind: traces.OriginPChecker, TestCase: "tcLeaselessRaw"}, final,
			bridge.ObservedMonitors},
		{"observed", traces.Origin{Kind: traces.OriginObserved}, final, bridge.ObservedMonitors},
	} {
		got := bridge.AssertedMonitors(modelsDir, &traces.Trace{Origin: tc.origin, Final: tc.final})
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// observedStops are a worker stopped while it handles a message: it drains, or (broken) starts a
// new fetch, the step StoppedWorkerStartsNoFetch refuses.
func observedStops() (drained, fetchAfterStop *traces.Trace) {
	stopped := func(name string, steps ...traces.Step) *traces.Trace {
		leased := traces.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeased, LeaseFor: 30}
		handle := leased
		handle.LeaseFor, handle.Outcome = 0, traces.OutcomeOK
		return &traces.Trace{Format: traces.Format, Name: name, Origin: traces.Origin{Kind: traces.OriginObserved},
			Expect: traces.Expect{DivergesAt: -1}, Steps: append([]traces.Step{
				{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 1}},
				{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "inbox", ID: "m2", MaxAttempts: 1}},
				{Op: traces.OpConsumerFetch, Args: leased, Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}},
				{Op: traces.OpWorkerStop, Args: traces.Args{Worker: 1}},
				{Op: traces.OpConsumerHandle, Args: handle, Result: traces.Result{Action: traces.ActionAcked, Attempt: 1}},
			}, steps...)}
	}
	drained = stopped("stop-drained", traces.Step{Op: traces.OpWorkerDrain, Args: traces.Args{Worker: 1, Outcome: traces.OutcomeDrained}})
	fetchAfterStop = stopped("stop-fetch-after", traces.Step{Op: traces.OpConsumerFetch,
		Args:   traces.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeased, LeaseFor: 30},
		Result: traces.Result{Message: &traces.Message{ID: "m2", Attempts: 1, Token: 2}}})
	return drained, fetchAfterStop
}

// rowHistory is a history that breaks a monitor that reads the deriver's row copies, the message
// the monitor refuses it with, and the step whose event it refuses.
type rowHistory struct {
	t    *traces.Trace
	msg  string
	step int
}

// rowHistories break, in order, SameKeyClaimsRespectLiveHead (a keyed claim overtakes its live
// head), DeadLetterSparesLiveLeases (a stale worker dead-letters the message another worker
// leased), PurgedIdsStayDuplicates (a purged id inserted afresh inside its horizon) and
// RedriveHistoryKept (a listing whose record lost the dead letter's attempts).
func rowHistories() []rowHistory {
	h := func(name string, steps ...traces.Step) *traces.Trace {
		return &traces.Trace{Format: traces.Format, Name: name, Origin: traces.Origin{Kind: traces.OriginObserved},
			Expect: traces.Expect{DivergesAt: -1}, Steps: steps}
	}
	enq := func(id, key string, maxAttempts int) traces.Step {
		return traces.Step{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "inbox", ID: id, Key: key, MaxAttempts: maxAttempts}}
	}
	fetch := func(at int64, worker int, id string, attempts, token int) traces.Step {
		return traces.Step{Op: traces.OpConsumerFetch, At: at, Args: traces.Args{Worker: worker, Mailbox: "inbox", Profile: traces.ProfileLeased, LeaseFor: 1},
			Result: traces.Result{Message: &traces.Message{ID: id, Attempts: attempts, Token: token}}}
	}
	handle := func(at int64, worker int, outcome, action string, attempt int) traces.Step {
		return traces.Step{Op: traces.OpConsumerHandle, At: at, Args: traces.Args{Worker: worker, Mailbox: "inbox", Profile: traces.ProfileLeased, Outcome: outcome},
			Result: traces.Result{Action: action, Attempt: attempt}}
	}
	return []rowHistory{
		{h("same-key-overtakes", enq("m1", "k", 2), enq("m2", "k", 2), fetch(0, 1, "m2", 1, 1)), "message m2 (key k) leased at t=0 while earlier message m1 was still live (attempts 0/2, token 0, lease_until 0)", 2},
		{h("stale-dead-letter", enq("m1", "", 3), fetch(0, 1, "m1", 1, 1), fetch(2, 2, "m1", 2, 2),
			handle(2, 1, traces.OutcomeFailNoRetry, traces.ActionDeadLettered, 1)), "worker 1 dead-lettered message m1 at t=2 under token 1, while another lease (token 2, until t=3) was live on it", 3},
		{h("purged-id-fresh", enq("m1", "", 1), traces.Step{Op: traces.OpAckByID, Args: traces.Args{ID: "m1"}},
			traces.Step{Op: traces.OpPurge, At: 1, Args: traces.Args{Limit: 10, Horizon: 5}, Result: traces.Result{Affected: 1}},
			traces.Step{Op: traces.OpEnqueue, At: 1, Args: traces.Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 1}}), "message m1 was purged and inserted again at t=1, inside its dedup horizon (until t=5)", 3},
		{h("redrive-record-reset", enq("m1", "", 1), fetch(0, 1, "m1", 1, 1), handle(0, 1, traces.OutcomeFail, traces.ActionDeadLettered, 1),
			traces.Step{Op: traces.OpRedrive, At: 1, Args: traces.Args{ID: "m1", Reason: "r"}},
			traces.Step{Op: traces.OpListRedrives, At: 1, Args: traces.Args{ID: "m1"}, Result: traces.Result{Redrives: []traces.RedriveRecord{
				{ID: "m1", Kind: "message", Mailbox: "inbox", Attempts: 0, DeadReason: traces.ReasonMaxAttempts, Reason: "r", At: 1}}}}), "list_redrives(m1) at 1: record 0 is <id:m1, kind:message, mailbox:inbox, attempts:0, dead_reason:max attempts reached, reason:r, at:1, >, but the redrive made <id:m1, kind:message, mailbox:inbox, attempts:1, dead_reason:max attempts reached, reason:r, at:1, >", 4},
	}
}

// TestObservedMonitorsTakeTheProfile runs the project's monitors on histories whose verdict turns
// on the profile's lease_at_until choice, under the default profile and under "live": the
// monitors take the rule from the model's Rules.p, compiled with each trace's own profile.
//
//   - A keyed lease of m2 at t=10, the end time of m1's lease on its last attempt: under the
//     default m1's lease ran out then and it blocks nothing; under "live" it is still live and
//     blocks m2 (SameKeyClaimsRespectLiveHead).
//   - A stale worker dead-letters m1 at t=10, the end time of another worker's lease on it: under
//     the default that lease has run out; under "live" it is live (DeadLetterSparesLiveLeases).
//
// The monitors refuse only what a live lease forbids, so a history they refuse under the default
// they refuse under "live" as well; the other direction of the choice, an ack at t == until that
// only "live" allows, is the model oracle's to refuse (observe's TestOracleLeaseAtUntil).
// It compiles the monitors twice, once per profile; the shipped profiles are held to the same
// rule by internal/rulecopies. -short skips it.
func TestObservedMonitorsTakeTheProfile(t *testing.T) {
	requireP(t)
	if testing.Short() {
		t.Skip("-short: skipping the P compile and checker run")
	}
	live := profile.Profile{Name: "live", LeaseLiveAtUntil: true}
	enq := func(id, key string, maxAttempts int) traces.Step {
		return traces.Step{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "inbox", ID: id, Key: key, MaxAttempts: maxAttempts}}
	}
	fetch := func(at int64, worker int, id string, attempts, token int, leaseFor int64) traces.Step {
		return traces.Step{Op: traces.OpConsumerFetch, At: at, Args: traces.Args{Worker: worker, Mailbox: "inbox", Profile: traces.ProfileLeased, LeaseFor: leaseFor},
			Result: traces.Result{Message: &traces.Message{ID: id, Attempts: attempts, Token: token}}}
	}
	handle := func(at int64, worker int, outcome, action string, attempt int) traces.Step {
		return traces.Step{Op: traces.OpConsumerHandle, At: at, Args: traces.Args{Worker: worker, Mailbox: "inbox", Profile: traces.ProfileLeased, Outcome: outcome},
			Result: traces.Result{Action: action, Attempt: attempt}}
	}
	overtake := []traces.Step{enq("m1", "k", 1), enq("m2", "k", 1), fetch(0, 1, "m1", 1, 1, 10), fetch(10, 2, "m2", 1, 2, 10)}
	stale := []traces.Step{enq("m1", "", 3), fetch(0, 1, "m1", 1, 1, 5), fetch(5, 2, "m1", 2, 2, 5),
		handle(10, 1, traces.OutcomeFailNoRetry, traces.ActionDeadLettered, 1)}
	cases := []struct {
		steps []traces.Step
		prof  profile.Profile
		want  string
	}{
		{overtake, profile.Profile{}, ""},
		{stale, profile.Profile{}, ""},
		{overtake, live, "message m2 (key k) leased at t=10 while earlier message m1 was still live (attempts 1/1, token 1, lease_until 10)"},
		{stale, live, "worker 1 dead-lettered message m1 at t=10 under token 1, while another lease (token 2, until t=10) was live on it"},
	}
	var ts []*traces.Trace
	for i, c := range cases {
		ts = append(ts, &traces.Trace{Format: traces.Format, Name: fmt.Sprintf("profile-%d", i), Origin: traces.Origin{Kind: traces.OriginObserved},
			Expect: traces.Expect{DivergesAt: -1, Profile: c.prof}, Steps: c.steps})
	}
	msgs, err := bridge.CheckObservedAll(context.Background(), bridge.Config{ProjectDir: modelsDir}, ts)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if msgs[i] != c.want {
			t.Errorf("history %d under profile %s: %q, want %q", i, c.prof, msgs[i], c.want)
		}
	}
}
