package bridge

import (
	"strings"
	"testing"

	"github.com/pconform/pconform/traces"
)

func pstep(op traces.Op, at int64, a traces.Args, r traces.Result) traces.Step {
	return traces.Step{Op: op, At: at, Args: a, Result: r}
}

// deadLettered is m1 enqueued, leased by worker 1 and dead-lettered by its handle.
func deadLettered() []traces.Step {
	return []traces.Step{
		pstep(traces.OpEnqueue, 0, traces.Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 1}, traces.Result{}),
		pstep(traces.OpConsumerFetch, 0, traces.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeased, LeaseFor: 2},
			traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}),
		pstep(traces.OpConsumerHandle, 0, traces.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeased, Outcome: traces.OutcomeFail},
			traces.Result{Action: traces.ActionDeadLettered, Attempt: 1}),
	}
}

// TestPDriverEvents: the driver raises the spec events a trace's results state, and none where
// they leave a row's state open.
func TestPDriverEvents(t *testing.T) {
	listM1 := pstep(traces.OpListRedrives, 1, traces.Args{ID: "m1"}, traces.Result{Redrives: []traces.RedriveRecord{
		{ID: "m1", Kind: "message", Mailbox: "inbox", Attempts: 1, DeadReason: traces.ReasonMaxAttempts, Reason: "r", At: 1}}})
	redrive := pstep(traces.OpRedrive, 1, traces.Args{ID: "m1", Reason: "r"}, traces.Result{})
	expired := []traces.Step{
		pstep(traces.OpEnqueue, 0, traces.Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 1}, traces.Result{}),
		pstep(traces.OpConsumerFetch, 0, traces.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeased, LeaseFor: 1},
			traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}),
		pstep(traces.OpExpire, 1, traces.Args{}, traces.Result{Affected: 1}),
	}
	for _, tc := range []struct {
		name      string
		steps     []traces.Step
		want, not []string
	}{
		{"lease", deadLettered()[:2], []string{
			`announce eSpecRow, (at = 0, row = (mailbox = "inbox", id = "m1", key = "", priority = 0, payload = "", row_state = "ready", attempts = 1, max_attempts = 1, available_at = 0, token = 1, lease_until = 2, seqno = 1));`,
			`announce eSpecLeased, (at = 0, mailbox = "inbox", id = "m1");`}, nil},
		{"handle", deadLettered(), []string{
			`announce eSpecHandled, (at = 0, worker = 1, id = "m1", token = 1, action = "dead_lettered");`,
			`announce eSpecDeadLettered, (at = 0, mailbox = "inbox", id = "m1", attempts = 1, max_attempts = 1, reason = "max attempts reached");`}, nil},
		{"stated redrive, listed", append(deadLettered(), redrive, listM1), []string{
			`announce eSpecRedriven, (at = 1, id = "m1", kind = "message", mailbox = "inbox", attempts = 1, dead_reason = "max attempts reached", reason = "r");`,
			`row_state = "unstated"`, `seq_redrives = default(seq[tRedriveRec]); seq_redrives += (0, (id = "m1", kind = "message", mailbox = "inbox", attempts = 1, dead_reason = "max attempts reached", reason = "r", at = 1)); announce eSpecRedrivesListed, (at = 1, id = "m1", redrives = seq_redrives);`}, nil},
		{"expired row: unstated, its redrive not listed", append(expired, redrive, listM1),
			[]string{`row_state = "unstated"`, `kind = "message"`}, []string{"eSpecRedrivesListed"}},
		{"purge under its limit retires", append(deadLettered(), pstep(traces.OpPurge, 2, traces.Args{Limit: 2, Horizon: 3}, traces.Result{Affected: 1})),
			[]string{`announce eSpecPurged, (at = 2, id = "m1", horizon_end = 3);`}, nil},
		{"wake", []traces.Step{
			pstep(traces.OpEnqueue, 0, traces.Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 1}, traces.Result{}),
			pstep(traces.OpWake, 0, traces.Args{Worker: 1, Mailbox: "inbox", ID: "m1", Profile: traces.WakeLocal}, traces.Result{})},
			[]string{`announce eSpecWake, (at = 0, mailbox = "inbox", id = "m1");`,
				`announce eObsWake, (at = 0, worker = 1, mailbox = "inbox", id = "m1", profile = "local", err = "");`}, nil},
		{"wake stated not committed", []traces.Step{
			pstep(traces.OpWake, 0, traces.Args{Worker: 1, Mailbox: "inbox", ID: "m1", Profile: traces.WakeLocal},
				traces.Result{Err: traces.ErrKindNotCommitted})},
			nil, []string{"eSpecWake", "eObsWake"}},
		{"stop, fetch, drain, crash", append(deadLettered()[:1],
			pstep(traces.OpWorkerStop, 0, traces.Args{Worker: 1}, traces.Result{}),
			deadLettered()[1],
			pstep(traces.OpWorkerDrain, 2, traces.Args{Worker: 1, Outcome: traces.OutcomeTimedOut}, traces.Result{}),
			pstep(traces.OpCrash, 3, traces.Args{}, traces.Result{})), []string{
			`announce eObsWorkerStop, (at = 0, worker = 1);`,
			`announce eObsConsumerFetch, (at = 0, worker = 1, mailbox = "inbox", profile = "leased", lease_for = 2, msg_id = "m1", msg_attempts = 1, msg_token = 1, bug = false);`,
			`announce eObsWorkerDrain, (at = 2, worker = 1, outcome = "timed_out");`,
			`announce eObsCrash, (at = 3,);`}, nil},
		{"poll tick", []traces.Step{pstep(traces.OpPollTick, 3, traces.Args{Worker: 2, Mailbox: "inbox"}, traces.Result{})},
			[]string{`announce eObsPollTick, (at = 3, worker = 2, mailbox = "inbox", err = "");`}, nil},
		{"poll tick stated wake_not_fetched", []traces.Step{
			pstep(traces.OpPollTick, 3, traces.Args{Worker: 2, Mailbox: "inbox"}, traces.Result{Err: traces.ErrKindWakeNotFetched})},
			nil, []string{"eObsPollTick"}},
		{"purge at its limit says not which", append(deadLettered(), pstep(traces.OpPurge, 2, traces.Args{Limit: 1, Horizon: 3}, traces.Result{Affected: 1})),
			nil, []string{"eSpecPurged"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := PDriver(&traces.Trace{Name: "x", Steps: tc.steps}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(src, w) {
					t.Errorf("driver lacks %s\n%s", w, src)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(src, n) {
					t.Errorf("driver has %s\n%s", n, src)
				}
			}
		})
	}
}

// TestPDriverLiveness: a liveness monitor is judged on the final snapshot, announced after the
// last step; without one, or for a monitor the driver does not know, PDriver refuses.
func TestPDriverLiveness(t *testing.T) {
	tr := &traces.Trace{Name: "x", Steps: deadLettered()[:1], Final: &traces.Snapshot{Messages: []traces.MessageRow{
		{Mailbox: "inbox", ID: "m1", State: "ready", Attempts: 1, MaxAttempts: 1}}}}
	src, err := PDriver(tr, 3, []string{"EveryMessageEventuallyResolved"})
	if err != nil {
		t.Fatal(err)
	}
	final := `announce eSpecRow, (at = 0, row = (mailbox = "inbox", id = "m1", key = "", priority = 0, payload = "", row_state = "ready", attempts = 1, max_attempts = 1, available_at = 0, token = 0, lease_until = 0, seqno = 1));`
	if !strings.Contains(src, final) || !strings.Contains(src, "assert EveryMessageEventuallyResolved in { ObservedHistory0003 }") {
		t.Errorf("driver lacks the final row or the assertion:\n%s", src)
	}
	if src, err = PDriver(tr, 3, nil); err != nil || strings.Contains(src, `row_state = "ready", attempts = 1`) {
		t.Errorf("without a liveness monitor the final row is announced (%v):\n%s", err, src)
	}
	tr.Final = nil
	if _, err := PDriver(tr, 0, []string{"EveryMessageEventuallyResolved"}); err == nil || !strings.Contains(err.Error(), "no final snapshot") {
		t.Errorf("liveness without a final snapshot: %v", err)
	}
	if _, err := PDriver(tr, 0, []string{"NoSuchMonitor"}); err == nil || !strings.Contains(err.Error(), "NoSuchMonitor") {
		t.Errorf("an unknown monitor: %v", err)
	}
}
