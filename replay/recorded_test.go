package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// TestRecordedHistory is the oracle part that records. It replays every committed trace (the
// corpus, the hunted traces, the hand-written traces and the bridge's golden traces) against the
// SQLite store opened with a Recorder, reads the recorded history back with package observe
// (observe.ReadLog, observe.Convert) and requires:
//
//   - the history is complete: every step the store ran shows as exactly the events the recorder
//     contract (docs/observed.md) gives it, in the order the steps ran, each with the step's
//     arguments and the result the store returned (see checkStepEvents); nothing else is
//     recorded;
//   - the Go model agrees with the history (observe.CheckModel);
//   - each step committed at least as many write transactions (Store.Stats) as it recorded write
//     events, an enqueue or outbox enqueue that inserted a row at least one, and that insert woke
//     the mailbox's or the outbox's subscriber (Store.Subscribe, SubscribeOutbox) by the time the
//     call returned;
//   - for the hand-written and golden traces, whose store also keeps a commit log
//     (Options.CommitLog), the commit log holds exactly the recorder's write events. The corpus
//     and hunted traces record with a Recorder alone, so a store that records only with a commit
//     log is caught.
//
// A trace of a broken variant is replayed up to the step at which the correct store diverges
// from it (the store's results before that step are the trace's). The final snapshot is not
// compared here (TestCorpus does): the snapshot's own reads would add events no step made. SQLite
// only (on PostgreSQL only the commit lock differs; pconform observe --backend postgres records
// there).
//
// One trace: go test ./replay/ -run 'TestRecordedHistory/^<name>$' -v
func TestRecordedHistory(t *testing.T) {
	for _, n := range committedTraces(t) {
		t.Run(n.tr.Name, func(t *testing.T) {
			tr := storePrefix(n.tr)
			if len(tr.Steps) == 0 {
				t.Skipf("the correct store diverges at step 0 of %s: nothing to record", n.path)
			}
			commitLog := n.dir != "../traces/corpus" && n.dir != "../traces/hunted"
			checkRecordedReplay(t, tr, n.path, commitLog)
		})
	}
}

// storePrefix is what the correct store replays of tr to a match, without the final snapshot:
// all of a correct store's trace, the steps before expect.diverges_at of a broken variant's.
func storePrefix(tr *traces.Trace) *traces.Trace {
	c := *tr
	c.Final = nil
	if tr.Expect.Variant != "" && tr.Expect.DivergesAt >= 0 && tr.Expect.DivergesAt < len(tr.Steps) {
		c.Steps = tr.Steps[:tr.Expect.DivergesAt]
	}
	c.Expect = traces.Expect{DivergesAt: -1}
	return &c
}

// countingRecorder hands each event on to a JSON-lines recorder and counts them, so the test
// knows which events each step's calls recorded (replay runs one step at a time, from one
// goroutine, and a Recorder hears a transaction's events before the call returns).
type countingRecorder struct {
	next actordelivery.Recorder
	n    atomic.Int64
}

func (c *countingRecorder) Record(ev actordelivery.Event) {
	// A store's incarnation (its Open, and the id its workers' events carry) is no step of the
	// trace: a crash's reopen would renumber the trace's workers. TestRecordedIncarnation in
	// actordelivery and TestRestartChecksClean in observe check it. So is the snapshot a reopen
	// states of the rows the store held (TestMidLife* in observe check those).
	if ev.Op == "incarnation" || ev.Op == "snapshot" {
		return
	}
	ev.Args.Incarnation = ""
	c.n.Add(1)
	c.next.Record(ev)
}

// recordingTarget is the store target with what the test reads around each step: the events the
// step recorded, the store's commit counter and the wake-ups of the step's enqueue.
type recordingTarget struct {
	*targets.StoreTarget
	rec   *countingRecorder
	steps []stepRecord
}

// stepRecord is what one Do call left: the events it recorded are those numbered [first, end) in
// the order the Recorder heard them.
type stepRecord struct {
	first, end int
	// commits is the number of write transactions the step's store committed (Stats.Commits);
	// not counted for a crash step, which replaces the store.
	commits uint64
	// woken says whether the subscriber of the step's mailbox (enqueue) or of the outbox
	// (outbox_enqueue), subscribed just before the step, was signalled by the time it returned.
	woken bool
}

func (r *recordingTarget) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	st := r.Store()
	before := st.Stats()
	var wake <-chan struct{}
	switch op {
	case traces.OpEnqueue:
		ch, cancel := st.Subscribe(a.Mailbox)
		defer cancel()
		wake = ch
	case traces.OpOutboxEnqueue:
		ch, cancel := st.SubscribeOutbox()
		defer cancel()
		wake = ch
	}
	s := stepRecord{first: int(r.rec.n.Load())}
	o, err := r.StoreTarget.Do(ctx, op, at, a)
	s.end = int(r.rec.n.Load())
	if op != traces.OpCrash {
		s.commits = r.Store().Stats().Commits - before.Commits
	}
	if wake != nil {
		select {
		case <-wake:
			s.woken = true
		default:
		}
	}
	r.steps = append(r.steps, s)
	return o, err
}

// checkRecordedReplay replays tr (which the correct store matches) against a recording store and
// checks the recorded history; path names the trace's file in failures.
func checkRecordedReplay(t *testing.T, tr *traces.Trace, path string, commitLog bool) {
	t.Helper()
	ctx := context.Background()
	var log bytes.Buffer
	rec := &countingRecorder{next: actordelivery.JSONRecorder(&log, func(err error) { t.Errorf("recorder: %v", err) })}
	db := storeDB(t, actordelivery.BackendSQLite)
	db.Recorder, db.CommitLog = rec, commitLog
	st, err := targets.NewStoreTargetOn(db)
	if err != nil {
		t.Fatal(err)
	}
	target := &recordingTarget{StoreTarget: st, rec: rec}
	defer func() {
		if err := target.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	v, err := replay.Run(ctx, tr, target, replay.Options{})
	if err != nil {
		t.Fatalf("replay of %s against the recording store could not run: %v", path, err)
	}
	if v.Outcome != replay.Match {
		t.Fatalf("replay of %s against the recording store: want a match (the store without a recorder matches), got %s", path, v)
	}
	how := fmt.Sprintf("(replay it with: go test ./replay/ -run 'TestRecordedHistory/^%s$' -v)", tr.Name)

	lg, err := observe.ReadLog(bytes.NewReader(log.Bytes()), "recorded events")
	if err != nil {
		t.Fatalf("the recorded history of %s does not read: %v %s", path, err, how)
	}
	if lg.Truncated != 0 || len(lg.Events) != int(rec.n.Load()) {
		t.Fatalf("the recorded history of %s: %d events read (truncated line %d), the recorder heard %d %s", path, len(lg.Events), lg.Truncated, rec.n.Load(), how)
	}
	// The steps ran one after the other, so the commit order must be the order the events were
	// recorded in: the k-th event in commit order is the k-th line.
	for k, ev := range lg.Events {
		if ev.Line != k+1 {
			t.Fatalf("the recorded history of %s: commit order puts line %d (seq %d, %s) in place %d: the sequence numbers do not follow the order the steps ran %s",
				path, ev.Line, ev.Seq, ev.Op, k+1, how)
		}
	}
	observed, err := observe.Convert(lg, observe.Options{Name: tr.Name + "-recorded"})
	if err != nil {
		t.Fatalf("the recorded history of %s does not convert: %v %s", path, err, how)
	}
	inSeconds(observed)
	if len(target.steps) != len(tr.Steps) {
		t.Fatalf("the replay ran %d steps of %d", len(target.steps), len(tr.Steps))
	}
	if target.steps[len(target.steps)-1].end != len(observed.Steps) {
		t.Fatalf("%d events were recorded outside the steps %s", len(observed.Steps)-target.steps[len(target.steps)-1].end, how)
	}

	// (a) complete: each step's events are the ones the recorder contract gives it. The commit
	// counter and the wake-ups are checked first, so that a store that skips its after-commit work
	// shows that too.
	toks := newTokenMatch()
	for i, step := range tr.Steps {
		s := target.steps[i]
		writes := 0
		for _, ev := range lg.Events[s.first:s.end] {
			if !ev.Read {
				writes++
			}
		}
		// Each write event comes from a committed write transaction (a replayed step's
		// transactions record one event each), and an enqueue that inserted a row committed one.
		inserted := (step.Op == traces.OpEnqueue || step.Op == traces.OpOutboxEnqueue) && !step.Result.Duplicate
		least := uint64(writes)
		if inserted {
			least = max(least, 1)
		}
		if step.Op != traces.OpCrash && s.commits < least {
			t.Errorf("step #%d %s: the store counted %d commits (Stats.Commits), want at least %d (%d write events recorded) %s", i, describeStep(step), s.commits, least, writes, how)
		}
		if inserted && !s.woken {
			what := fmt.Sprintf("mailbox %q", step.Args.Mailbox)
			if step.Op == traces.OpOutboxEnqueue {
				what = "the outbox"
			}
			t.Errorf("step #%d %s inserted a row, but the subscriber of %s was not woken after the commit %s", i, describeStep(step), what, how)
		}
		if msg := checkStepEvents(step, observed.Steps[s.first:s.end], toks); msg != "" {
			t.Fatalf("the recorded history of %s, step #%d %s at t=%d: %s\nrecorded for it: %s\n%s", path, i,
				describeStep(step), step.At, msg, showSteps(observed.Steps[s.first:s.end]), how)
		}
	}

	// (b) the model agrees with the history. A crash is no store operation, so no recorder hears
	// it; the replay made it happen, so it goes into the history the model checks where it came
	// (the model lets a worker fetch again only after a handle or a crash).
	checked := *observed
	checked.Steps = nil
	for i, step := range tr.Steps {
		if step.Op == traces.OpCrash {
			checked.Steps = append(checked.Steps, traces.Step{Op: traces.OpCrash, At: step.At})
		}
		checked.Steps = append(checked.Steps, observed.Steps[target.steps[i].first:target.steps[i].end]...)
	}
	f, err := observe.CheckModel(&checked)
	if err != nil {
		t.Fatalf("observe.CheckModel: %v", err)
	}
	if f != nil {
		t.Errorf("the recorded history of %s breaks the model: %s %s", path, f, how)
	}

	if commitLog {
		got, err := target.Store().CommitLog(ctx)
		if err != nil {
			t.Fatalf("commit log: %v", err)
		}
		for i := range got {
			got[i].Args.Incarnation = "" // as the recorder above keeps them
		}
		var want []actordelivery.Event
		for _, ev := range lg.Events {
			if !ev.Read {
				want = append(want, ev.Event)
			}
		}
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("the commit log of %s differs from the recorder's write events (-recorder +commit log):\n%s%s", path, d, how)
		}
	}
}

// checkStepEvents checks the events one trace step recorded (as steps of the observed trace) and
// returns what is wrong, "" when they are right:
//
//   - advance_clock, crash, list_redrives, wake and poll_tick (replay judges them from the rows
//     and the trace; only a waiting consumer records one) and an idle consumer_handle make no
//     store call that records: no event;
//   - a fold publisher_deliver without a fault is one publisher_deliver event. Any other delivery
//     is recorded as the commits it made (a split delivery's enqueue and outbox_complete, a
//     failed delivery's outbox_fail or outbox_dead_letter, none for a commit that failed): each
//     names the row's id; their results are the model's to judge (observe.CheckModel);
//   - batches: a consumer_handle_batch of a worker with no batch and a consumer_effects_batch (a
//     correct consumer owes no effects) record nothing. A publisher_deliver_batch with a fault
//     records the commits it made, each of rows of its ids, as a faulted single delivery does;
//     without one it is one event of its op, as a consumer_fetch_batch and a
//     consumer_handle_batch are (one whose commit failed as a read event, each handler's outcome
//     ok or fail: the retry policy's decision was never made). A batch of one is its single op;
//   - a consumer_handle with fault commit_fails is one consumer_handle event, recorded as a read
//     after the failure: fault commit_fails, action commit_failed, the handler's outcome ok or
//     fail (its retry policy's decision was never committed); or, where its fence failed first,
//     the lease_lost read event of that handle;
//   - every other step is one event of its own op, time, arguments and result.
//
// An event and the step it stands for are compared with their tokens matched (tm), and without
// the fields the store states differently by contract: a publisher's number (the store numbers
// its publishers itself, the trace names a model process) and the retry delay of a delivery or
// handle that did not retry (the recorder states a retry delay only for a failed handle).
func checkStepEvents(step traces.Step, got []traces.Step, tm *tokenMatch) string {
	switch {
	case step.Op == traces.OpAdvanceClock || step.Op == traces.OpCrash || step.Op == traces.OpListRedrives || step.Op == traces.OpWake || step.Op == traces.OpPollTick,
		step.Op == traces.OpConsumerHandle && step.Result.Action == traces.ActionIdle,
		step.Op == traces.OpConsumerHandleBatch && len(step.Result.Actions) == 0,
		step.Op == traces.OpConsumerEffectsBatch:
		if len(got) != 0 {
			return fmt.Sprintf("want no event, got %d", len(got))
		}
		return ""
	case step.Op == traces.OpPublisherDeliverBatch && step.Args.Fault != traces.FaultNone:
		for _, ev := range got {
			switch ev.Op {
			case traces.OpEnqueue, traces.OpOutboxComplete, traces.OpOutboxFail, traces.OpOutboxDeadLetter, traces.OpPublisherDeliverBatch, traces.OpPublisherDeliver:
			default:
				return fmt.Sprintf("a batch delivery recorded a %s", ev.Op)
			}
			ids := ev.Args.IDs
			if ev.Op != traces.OpPublisherDeliverBatch {
				ids = []string{ev.Args.ID}
			}
			for _, id := range ids {
				if !slices.Contains(step.Args.IDs, id) {
					return fmt.Sprintf("the batch delivery of %q recorded a %s of %q", step.Args.IDs, ev.Op, id)
				}
			}
		}
		return ""
	case step.Op == traces.OpPublisherDeliver && !(step.Args.Profile == traces.ProfileFold && step.Args.Fault == traces.FaultNone):
		for _, ev := range got {
			switch ev.Op {
			case traces.OpEnqueue, traces.OpOutboxComplete, traces.OpOutboxFail, traces.OpOutboxDeadLetter, traces.OpPublisherDeliver:
			default:
				return fmt.Sprintf("a delivery recorded a %s", ev.Op)
			}
			if ev.Args.ID != step.Args.ID {
				return fmt.Sprintf("the delivery of %q recorded a %s of %q", step.Args.ID, ev.Op, ev.Args.ID)
			}
		}
		return ""
	}
	if len(got) != 1 {
		return fmt.Sprintf("want exactly one %s event, got %d", step.Op, len(got))
	}
	if single, ok := singleOfBatch(step); ok && got[0].Op == single {
		// A batch of one is the single call (Consumer.FetchBatch, HandleBatch and
		// Publisher.DeliverBatch with a batch size of one), recorded as its own op. Its
		// result is the model's to judge (observe.CheckModel).
		if got[0].Args.Mailbox != step.Args.Mailbox || got[0].Args.Worker != step.Args.Worker {
			return fmt.Sprintf("the batch of one recorded a %s of worker %d on mailbox %q", single, got[0].Args.Worker, got[0].Args.Mailbox)
		}
		if single == traces.OpPublisherDeliver && got[0].Args.ID != step.Args.IDs[0] {
			return fmt.Sprintf("the batch delivery of %q recorded a %s of %q", step.Args.IDs, single, got[0].Args.ID)
		}
		return ""
	}
	if step.Op == traces.OpConsumerHandle && step.Args.Fault == traces.FaultCommitFails && got[0].Op == traces.OpConsumerHandle &&
		got[0].Result.Action == traces.ActionLeaseLost && got[0].Args.Worker == step.Args.Worker && got[0].Args.Mailbox == step.Args.Mailbox {
		// The handle's fence failed inside its transaction, which rolled back before its commit
		// could fail (the store target fails it from the Effects, which then never ran): the store
		// recorded the lease_lost it met. Nothing changed either way.
		return ""
	}
	want, ev := normalizeEvent(step), normalizeEvent(got[0])
	if want.Op == traces.OpConsumerHandleBatch && len(want.Args.Outcomes) == len(ev.Args.Outcomes) && len(want.Result.Actions) == len(want.Args.Outcomes) {
		// A declined retry at the message's last attempt dead-letters as the exhausted attempts
		// do, and the recorder states the decline only where it changed the action (as for
		// consumer_handle): the event says fail. So it does where the commit failed.
		want.Args.Outcomes = slices.Clone(want.Args.Outcomes)
		for k, o := range want.Args.Outcomes {
			if o == traces.OutcomeFailNoRetry && ev.Args.Outcomes[k] == traces.OutcomeFail &&
				(want.Result.Actions[k] == traces.ActionDeadLettered || want.Args.Fault == traces.FaultCommitFails) {
				want.Args.Outcomes[k] = traces.OutcomeFail
			}
		}
	}
	if want.Op == traces.OpConsumerHandle && want.Args.Fault == traces.FaultCommitFails &&
		want.Args.Outcome == traces.OutcomeFailNoRetry && ev.Args.Outcome == traces.OutcomeFail {
		// A handle whose commit failed never committed the retry policy's decision: as in a
		// batch, the event says fail.
		want.Args.Outcome = traces.OutcomeFail
	}
	if want.Op != ev.Op || want.At != ev.At {
		return fmt.Sprintf("want a %s event at t=%d, got %s at t=%d", want.Op, want.At, ev.Op, ev.At)
	}
	if slices.Contains(traces.Spec[want.Op].Args, "token") {
		// An argument token is always sent: symbol 0, like any symbol no result bound yet, as
		// a forged token that matches nothing, which the event records as a token of its own.
		if msg := tm.match(traces.Spec[want.Op].Tokens, "args.token", true, want.Args.Token, ev.Args.Token); msg != "" {
			return msg
		}
	}
	want.Args.Token, ev.Args.Token = 0, 0
	if want.Result.Message != nil && ev.Result.Message != nil {
		if msg := tm.match(traces.LeaseTokens, "result.message.token", false, want.Result.Message.Token, ev.Result.Message.Token); msg != "" {
			return msg
		}
		wm, em := *want.Result.Message, *ev.Result.Message
		wm.Token, em.Token = 0, 0
		want.Result.Message, ev.Result.Message = &wm, &em
	}
	if len(want.Result.Messages) == len(ev.Result.Messages) {
		wm := append([]traces.Message(nil), want.Result.Messages...)
		em := append([]traces.Message(nil), ev.Result.Messages...)
		for k := range wm {
			if msg := tm.match(traces.LeaseTokens, fmt.Sprintf("result.messages[%d].token", k), false, wm[k].Token, em[k].Token); msg != "" {
				return msg
			}
			wm[k].Token, em[k].Token = 0, 0
		}
		want.Result.Messages, ev.Result.Messages = wm, em
	}
	if len(want.Result.Claimed) == len(ev.Result.Claimed) {
		wc := append([]traces.Claimed(nil), want.Result.Claimed...)
		ec := append([]traces.Claimed(nil), ev.Result.Claimed...)
		for k := range wc {
			if msg := tm.match(traces.ClaimTokens, fmt.Sprintf("result.claimed[%d].token", k), false, wc[k].Token, ec[k].Token); msg != "" {
				return msg
			}
			wc[k].Token, ec[k].Token = 0, 0
		}
		want.Result.Claimed, ev.Result.Claimed = wc, ec
	}
	if d := cmp.Diff(want.Args, ev.Args, cmpopts.EquateEmpty()); d != "" {
		return "the arguments differ (-step +event):\n" + d
	}
	if d := cmp.Diff(want.Result, ev.Result, cmpopts.EquateEmpty()); d != "" {
		return "the result differs (-store +event):\n" + d
	}
	return ""
}

// singleOfBatch is the single op that a batch step of one message or row is recorded as; ok is
// false for any other step.
func singleOfBatch(step traces.Step) (traces.Op, bool) {
	switch {
	case step.Op == traces.OpConsumerFetchBatch && step.Args.Size <= 1:
		return traces.OpConsumerFetch, true
	case step.Op == traces.OpConsumerHandleBatch && len(step.Args.Outcomes) == 1:
		return traces.OpConsumerHandle, true
	case step.Op == traces.OpPublisherDeliverBatch && len(step.Args.IDs) == 1:
		return traces.OpPublisherDeliver, true
	}
	return "", false
}

// normalizeEvent drops from a step what checkStepEvents does not compare, and fills in the
// outbox row's delivery bound the event states as stored (0 in a step means the default).
func normalizeEvent(s traces.Step) traces.Step {
	switch s.Op {
	case traces.OpOutboxEnqueue:
		if s.Args.MaxDeliveryAttempts == 0 {
			s.Args.MaxDeliveryAttempts = actordelivery.DefaultMaxDeliveryAttempts
		}
	case traces.OpPublisherDeliver, traces.OpPublisherDeliverBatch:
		s.Args.Publisher, s.Args.RetryDelay = 0, 0
	case traces.OpConsumerHandle:
		if s.Result.Action != traces.ActionRetried {
			s.Args.RetryDelay = 0
		}
		if s.Args.Fault == traces.FaultNone {
			s.Args.Fault = "" // optional: absent is none
		}
	case traces.OpConsumerHandleBatch:
		if !slices.Contains(s.Result.Actions, traces.ActionRetried) {
			s.Args.RetryDelay = 0
		}
	}
	return s
}

// tokenMatch matches the token symbols of a trace with those of the observed trace, one to one
// in each namespace: a trace's symbol stands for one real token, and Convert gives each real
// token one symbol.
type tokenMatch struct {
	fwd, back [2]map[int]int
}

func newTokenMatch() *tokenMatch {
	m := &tokenMatch{}
	for i := range m.fwd {
		m.fwd[i], m.back[i] = map[int]int{}, map[int]int{}
	}
	return m
}

// match records that the trace's symbol want and the event's symbol got stand for the same
// token, or says why they cannot. In a result symbol 0 is no token; an argument's is a symbol
// like any other (arg).
func (m *tokenMatch) match(space traces.TokenSpace, field string, arg bool, want, got int) string {
	if !arg && (want == 0) != (got == 0) {
		return fmt.Sprintf("%s: the step has token symbol %d, the event %d (one of them no token)", field, want, got)
	}
	if !arg && want == 0 {
		return ""
	}
	fwd, back := m.fwd[space], m.back[space]
	if g, ok := fwd[want]; ok && g != got {
		return fmt.Sprintf("%s: the step's %s token %d was recorded as token %d before, now as %d", field, space, want, g, got)
	}
	if w, ok := back[got]; ok && w != want {
		return fmt.Sprintf("%s: the recorded %s token %d stood for the step's token %d before, now for %d", field, space, got, w, want)
	}
	fwd[want], back[got] = got, want
	return ""
}

func describeStep(s traces.Step) string { return models.DescribeOp(s.Op, s.Args) }

func showSteps(ss []traces.Step) string {
	if len(ss) == 0 {
		return "nothing"
	}
	b, err := json.Marshal(ss)
	if err != nil {
		return fmt.Sprintf("%+v", ss)
	}
	return string(b)
}

// inSeconds rescales an observed trace, which counts milliseconds (traces.ObservedTicksPerSecond),
// to the whole seconds of the replayed trace: the replay set the store's clock to whole seconds,
// so the division is exact, and the events compare with the steps as they are.
func inSeconds(t *traces.Trace) {
	const k = traces.ObservedTicksPerSecond
	for i := range t.Steps {
		s := &t.Steps[i]
		s.At /= k
		a := &s.Args
		for _, d := range []*int64{&a.Delay, &a.LeaseFor, &a.ClaimFor, &a.RetryDelay, &a.OlderThan, &a.Horizon, &a.TTL} {
			*d /= k
		}
	}
}
