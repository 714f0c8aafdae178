package rulecopies_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/examples/ledgerstore"
	"github.com/pconform/pconform/internal/brokenstore"
	"github.com/pconform/pconform/internal/modeltarget"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// The consumer decision: what a consumer commits for one fetched delivery. A handler that
// succeeds is acked. A failure is decided on the effective attempt eff (the attempts rule, capped
// at max_attempts): at eff >= max_attempts the message is dead-lettered with the profile's
// reason_max_attempts; below it the retry policy is asked, and a retry is a nack after the
// policy's delay (never negative) while a decline dead-letters the message with the handler's
// error as the reason (ReasonHandlerFailed for an error with no message). A dead letter records
// eff as its attempts.

// Times of every case, in trace seconds: the fetch leases for fetchLease from t=0 and the handle
// commits at handleAt, inside that lease, so no case loses its lease.
const (
	fetchLease = 30
	handleAt   = 10
)

// handlerCase is what the handler and the retry policy answer.
type handlerCase struct {
	name    string
	fails   bool
	retry   bool  // the policy retries (asked only below max_attempts)
	delay   int64 // the delay the policy gives, in seconds
	errText string
}

var handlerCases = []handlerCase{
	{name: "handler succeeds"},
	{name: "fails, policy retries after 7s", fails: true, retry: true, delay: 7, errText: traces.ReasonHandlerFailed},
	{name: "fails, policy retries after -5s", fails: true, retry: true, delay: -5, errText: "disk full"},
	{name: `fails with "handler failed", policy declines`, fails: true, errText: traces.ReasonHandlerFailed},
	{name: "fails with a message-less error, policy declines", fails: true},
	{name: `fails with "disk full", policy declines`, fails: true, errText: "disk full"},
}

// decisionCase is one boundary case: a message with maxAttempts, fetched on path carrying stored
// attempts, and handled as h says.
type decisionCase struct {
	path        actordelivery.Path
	maxAttempts int
	stored      int
	h           handlerCase
}

func (c decisionCase) leaseless() bool { return c.path == actordelivery.PathLeaseless }

func (c decisionCase) String() string {
	return fmt.Sprintf("%s path, stored attempts %d of max_attempts %d, handler %s", c.path, c.stored, c.maxAttempts, c.h.name)
}

// traceable reports whether a trace can state c: a trace's failing handler fails with
// ReasonHandlerFailed, and its retry_delay is never negative. The copies that run traces (the
// model, the spec deriver, the kit's reference steps, a store checked through the kit) are held
// to the traceable cases only.
func (c decisionCase) traceable() bool {
	return !c.h.fails || c.h.errText == traces.ReasonHandlerFailed && c.h.delay >= 0
}

// outcome is c's handler outcome as a trace's consumer_handle states it.
func (c decisionCase) outcome() string {
	switch {
	case !c.h.fails:
		return traces.OutcomeOK
	case c.h.retry:
		return traces.OutcomeFail
	}
	return traces.OutcomeFailNoRetry
}

// retryDelay is c's retry_delay as a trace states it: the policy's delay when it retries.
func (c decisionCase) retryDelay() int64 {
	if c.h.fails && c.h.retry {
		return c.h.delay
	}
	return 0
}

// decisionCases are the boundary cases: both paths, max_attempts 1 and 3, every stored count a
// fetched message can carry (leased: 1 to max_attempts, as the lease counted the delivery;
// leaseless: 0 to max_attempts-1, as an exhausted row is never eligible), every handler case.
func decisionCases() []decisionCase {
	var cs []decisionCase
	for _, path := range []actordelivery.Path{actordelivery.PathLeased, actordelivery.PathLeaseless} {
		for _, maxAttempts := range []int{1, 3} {
			lo, hi := 1, maxAttempts
			if path == actordelivery.PathLeaseless {
				lo, hi = 0, maxAttempts-1
			}
			for stored := lo; stored <= hi; stored++ {
				for _, h := range handlerCases {
					cs = append(cs, decisionCase{path, maxAttempts, stored, h})
				}
			}
		}
	}
	return cs
}

// verdict is what a decision did, as far as a copy reports it.
type verdict struct {
	action string
	// attempt is the effective attempt the decision reported; 0 on success.
	attempt int
	// reason and deadAttempts are the dead letter's; delay (seconds) is a retry's, the retried
	// row's available_at minus the handle's time.
	reason       string
	deadAttempts int
	delay        int64
}

// seen says which fields of a verdict a copy reports for a case.
type seen uint8

const (
	seesAction seen = 1 << iota
	seesAttempt
	seesDeadLetter // reason and deadAttempts
	seesDelay
	seesAll = seesAction | seesAttempt | seesDeadLetter | seesDelay
)

// only keeps the fields s sees.
func (v verdict) only(s seen) verdict {
	var o verdict
	if s&seesAction != 0 {
		o.action = v.action
	}
	if s&seesAttempt != 0 {
		o.attempt = v.attempt
	}
	if s&seesDeadLetter != 0 {
		o.reason, o.deadAttempts = v.reason, v.deadAttempts
	}
	if s&seesDelay != 0 {
		o.delay = v.delay
	}
	return o
}

func (v verdict) String() string {
	switch v.action {
	case traces.ActionDeadLettered:
		return fmt.Sprintf("%s at attempt %d (dead letter: reason %q, attempts %d)", v.action, v.attempt, v.reason, v.deadAttempts)
	case traces.ActionRetried:
		return fmt.Sprintf("%s at attempt %d after %ds", v.action, v.attempt, v.delay)
	}
	return fmt.Sprintf("%q at attempt %d (reason %q, dead attempts %d, delay %ds)", v.action, v.attempt, v.reason, v.deadAttempts, v.delay)
}

// decide is the rule, as docs/semantics.md ("Consumer") states it, under p.
func decide(p profile.Profile, c decisionCase) verdict {
	if !c.h.fails {
		return verdict{action: traces.ActionAcked}
	}
	eff := c.stored
	if c.leaseless() {
		eff++
	}
	eff = min(eff, c.maxAttempts)
	switch {
	case eff >= c.maxAttempts:
		return verdict{action: traces.ActionDeadLettered, attempt: eff, reason: p.ReasonMaxAttemptsWording(), deadAttempts: eff}
	case c.h.retry:
		return verdict{action: traces.ActionRetried, attempt: eff, delay: max(c.h.delay, 0)}
	case c.h.errText == "":
		return verdict{action: traces.ActionDeadLettered, attempt: eff, reason: traces.ReasonHandlerFailed, deadAttempts: eff}
	}
	return verdict{action: traces.ActionDeadLettered, attempt: eff, reason: c.h.errText, deadAttempts: eff}
}

// decisionCopy is one copy of the decision. run evaluates it through its entry point on one case
// under p and says which fields it reported. applies says whether the copy states the rule for p
// and c at all; differs marks the cases where a deliberately broken copy must disagree.
type decisionCopy struct {
	name    string
	applies func(p profile.Profile, c decisionCase) bool
	differs func(c decisionCase) bool
	run     func(t *testing.T, p profile.Profile, c decisionCase) (verdict, seen)
}

// defaultWording: a copy that writes ReasonMaxAttempts states the default profile's wording only.
func defaultWording(p profile.Profile, _ decisionCase) bool {
	return p.ReasonMaxAttemptsWording() == traces.ReasonMaxAttempts
}

func traceable(_ profile.Profile, c decisionCase) bool { return c.traceable() }

func never(decisionCase) bool { return false }

// TestDecisionCopiesAgree evaluates every Go copy of the consumer decision, each through its own
// entry point, on the decision's boundary cases under every shipped profile, and fails at the
// first copy that disagrees with the rule (decide), naming the copy, the profile and the case.
// A deliberately broken copy (brokenstore's raw-attempts handle) must disagree where its bug
// shows and agree everywhere else.
func TestDecisionCopiesAgree(t *testing.T) {
	copies := []decisionCopy{
		{"models/protocol.go handleDelivery (Go reference model): consumer_fetch, consumer_handle",
			traceable, never, modelDecision(false)},
		{"models/protocol.go handleDelivery (Go reference model): consumer_fetch_batch, consumer_handle_batch",
			traceable, never, modelDecision(true)},
		{"bridge/pspec.go handled (spec deriver): consumer_handle", traceable, never, derivedDecision(false)},
		{"bridge/pspecbatch.go handleBatch (spec deriver): consumer_handle_batch", traceable, never, derivedDecision(true)},
		{"adapter/protocol.go handle (the kit's reference consumer, WithProtocol over the model's store operations)",
			traceable, never, adapterDecision},
		{"examples/ledgerstore/consumer.go fail (a store with its own runtime)",
			func(p profile.Profile, c decisionCase) bool { return defaultWording(p, c) && c.traceable() }, never, ledgerDecision},
	}
	type backend struct {
		name string
		open opener
	}
	backends := []backend{{"sqlite", openSQLite}}
	if os.Getenv("PCONFORM_PG_DSN") != "" {
		backends = append(backends, backend{"postgres", openPostgres})
	} else {
		t.Log("PCONFORM_PG_DSN is not set: the store's copies are not evaluated on PostgreSQL")
	}
	for _, b := range backends {
		f := &storeFixture{open: b.open}
		copies = append(copies,
			decisionCopy{"actordelivery/consumer.go decide on " + b.name + ": Consumer.Fetch, Consumer.Handle",
				defaultWording, never, f.run(storeHandle)},
			decisionCopy{"actordelivery/batch.go (decide) on " + b.name + ": Consumer.FetchBatch, Consumer.HandleBatch",
				defaultWording, never, f.run(storeHandleBatch)},
		)
		for _, v := range brokenHandles {
			copies = append(copies, decisionCopy{v.name + " on " + b.name, defaultWording, v.differs, f.run(brokenHandle(v.handle))})
		}
	}
	for _, p := range shippedProfiles(t) {
		for _, c := range decisionCases() {
			want := decide(p, c)
			for _, cp := range copies {
				if !cp.applies(p, c) {
					continue
				}
				got, s := cp.run(t, p, c)
				agrees := got.only(s) == want.only(s)
				switch {
				case !agrees && !cp.differs(c):
					t.Fatalf("%s disagrees with the consumer decision under profile %s, case %s: got %v, want %v",
						cp.name, p, c, got.only(s), want.only(s))
				case agrees && cp.differs(c):
					t.Fatalf("%s is broken on purpose but agrees with the consumer decision under profile %s, case %s: %v",
						cp.name, p, c, got.only(s))
				}
			}
		}
	}
}

// steps are the trace steps of c up to its handle: the enqueue, the deliveries that count its
// stored attempts (leased: a lease nacked at once per attempt; leaseless: a nack_by_id bump per
// attempt), and the worker's fetch, with the results the rule gives them.
func steps(c decisionCase, batch bool) []traces.Step {
	const mailbox, id = "a", "m1"
	ss := []traces.Step{{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: mailbox, ID: id, MaxAttempts: c.maxAttempts}}}
	fetched := traces.Message{ID: id, Attempts: c.stored}
	if c.leaseless() {
		for range c.stored {
			ss = append(ss, traces.Step{Op: traces.OpNackByID, Args: traces.Args{ID: id}})
		}
	} else {
		for j := 1; j < c.stored; j++ {
			ss = append(ss,
				traces.Step{Op: traces.OpLease, Args: traces.Args{Mailbox: mailbox, LeaseFor: fetchLease},
					Result: traces.Result{Message: &traces.Message{ID: id, Attempts: j, Token: j}}},
				traces.Step{Op: traces.OpNack, Args: traces.Args{ID: id, Token: j}})
		}
		fetched.Token = c.stored
	}
	fetch := traces.Args{Worker: 1, Mailbox: mailbox, Profile: c.path.String(), LeaseFor: fetchLease}
	if batch {
		fetch.Size = 2
		return append(ss, traces.Step{Op: traces.OpConsumerFetchBatch, Args: fetch, Result: traces.Result{Messages: []traces.Message{fetched}}})
	}
	return append(ss, traces.Step{Op: traces.OpConsumerFetch, Args: fetch, Result: traces.Result{Message: &fetched}})
}

// handleStep is c's handle, at handleAt, with result r (for a batch, r's action as its one action).
func handleStep(c decisionCase, batch bool, r traces.Result) traces.Step {
	a := traces.Args{Worker: 1, Mailbox: "a", Profile: c.path.String(), RetryDelay: c.retryDelay(), Fault: traces.FaultNone}
	if batch {
		a.Outcomes = []string{c.outcome()}
		return traces.Step{Op: traces.OpConsumerHandleBatch, At: handleAt, Args: a, Result: traces.Result{Actions: []string{r.Action}}}
	}
	a.Outcome = c.outcome()
	return traces.Step{Op: traces.OpConsumerHandle, At: handleAt, Args: a, Result: r}
}

// fromSnapshot completes v from the row m1 ended in: its dead letter, or its retried row.
func fromSnapshot(v verdict, dead []traces.DeadLetterRow, availableAt func() (int64, bool)) verdict {
	for _, d := range dead {
		if d.ID == "m1" {
			v.reason, v.deadAttempts = d.Reason, d.Attempts
		}
	}
	if at, ok := availableAt(); ok && v.action == traces.ActionRetried {
		v.delay = at - handleAt
	}
	return v
}

// modelDecision: the reference model runs c's trace; the handle's result and the final snapshot
// give the verdict. A batch handle reports no attempt.
func modelDecision(batch bool) func(t *testing.T, p profile.Profile, c decisionCase) (verdict, seen) {
	return func(t *testing.T, p profile.Profile, c decisionCase) (verdict, seen) {
		ss := append(steps(c, batch), handleStep(c, batch, traces.Result{}))
		tr := &traces.Trace{Format: traces.Format, Name: "decision", Expect: traces.Expect{DivergesAt: -1, Profile: p}, Steps: ss}
		results, final, err := models.RunTrace(models.Config{Profile: p}, tr)
		if err != nil {
			t.Fatalf("models: case %s: %v", c, err)
		}
		last := results[len(results)-1]
		v, s := verdict{action: last.Action, attempt: last.Attempt}, seesAll
		if batch {
			v.action, s = last.Actions[0], seesAll&^seesAttempt
		}
		return fromSnapshot(v, final.DeadLetters, func() (int64, bool) {
			for _, m := range final.Messages {
				if m.ID == "m1" {
					return m.AvailableAt, true
				}
			}
			return 0, false
		}), s
	}
}

// derivedDecision: the spec deriver under p sees c's trace with the rule's handle result and
// derives the dead letter it announces (reason and attempts) and, for a leased retry, the row's
// available_at (a leaseless retry counts an attempt no result states: the deriver leaves that
// row unstated). The action and attempt are the trace's, not the deriver's.
func derivedDecision(batch bool) func(t *testing.T, p profile.Profile, c decisionCase) (verdict, seen) {
	return func(t *testing.T, p profile.Profile, c decisionCase) (verdict, seen) {
		want := decide(p, c)
		d := bridge.NewSpecDeriver(p)
		var evs []bridge.SpecEvent
		for _, st := range steps(c, batch) {
			evs = d.Step(st, evs[:0])
		}
		evs = d.Step(handleStep(c, batch, traces.Result{Action: want.action, Attempt: want.attempt}), evs[:0])
		var v verdict
		var s seen
		for _, ev := range evs {
			switch {
			// eSpecDeadLettered's values: at, mailbox, id, attempts, max_attempts, reason.
			case ev.Kind == bridge.SpecDeadLettered && ev.Values[2] == "m1":
				v.deadAttempts, v.reason = int(ev.Values[3].(int64)), ev.Values[5].(string)
				s |= seesDeadLetter
			// eSpecRow's values: at, mailbox, id, key, priority, payload, state, attempts,
			// max_attempts, available_at, token, lease_until, seq.
			case ev.Kind == bridge.SpecRow && ev.Values[2] == "m1" && want.action == traces.ActionRetried && !c.leaseless():
				v.delay = ev.Values[9].(int64) - handleAt
				s |= seesDelay
			}
		}
		if want.action == traces.ActionDeadLettered && s&seesDeadLetter == 0 {
			t.Fatalf("bridge: the spec deriver announced no dead letter of m1 under profile %s, case %s", p, c)
		}
		return v, s
	}
}

// adapterDecision: the kit's reference consumer (adapter.WithProtocol) over the reference model's
// store-level operations runs c's steps; the handle's observation and the final snapshot give the
// verdict.
func adapterDecision(t *testing.T, p profile.Profile, c decisionCase) (verdict, seen) {
	ctx := context.Background()
	target := adapter.WithProtocol(modeltarget.NewStoreOnly(models.Config{Profile: p}), p)
	tokens := map[int]string{}
	var o replay.Observation
	for _, st := range append(steps(c, false), handleStep(c, false, traces.Result{})) {
		var err error
		o, err = target.Do(ctx, st.Op, st.At, replay.TargetArgs(st.Args, tokens[st.Args.Token]))
		if err != nil {
			t.Fatalf("adapter: case %s: %s: %v", c, st.Op, err)
		}
		if st.Result.Message != nil && o.Message != nil {
			tokens[st.Result.Message.Token] = o.Message.Token
		}
	}
	snap, err := target.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fromSnapshot(verdict{action: o.Action, attempt: o.Attempt}, snap.DeadLetters, func() (int64, bool) {
		for _, m := range snap.Messages {
			if m.ID == "m1" {
				return m.AvailableAt, true
			}
		}
		return 0, false
	}), seesAll
}

// ledgerDecision: the example store's own consumer fetches and handles c's message; its result
// and its durable state give the verdict.
func ledgerDecision(t *testing.T, _ profile.Profile, c decisionCase) (verdict, seen) {
	now := traces.At(0)
	st, err := ledgerstore.Open(nil, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	update := func(fn func(tx *ledgerstore.Tx) error) {
		if err := st.Update(fn); err != nil {
			t.Fatalf("ledgerstore: case %s: %v", c, err)
		}
	}
	update(func(tx *ledgerstore.Tx) error {
		tx.Enqueue(ledgerstore.Message{Mailbox: "a", ID: "m1", Max: c.maxAttempts}, 0)
		return nil
	})
	for j := 1; j <= c.stored; j++ {
		if !c.leaseless() && j == c.stored {
			break // the consumer's fetch leases the last attempt
		}
		update(func(tx *ledgerstore.Tx) error {
			if c.leaseless() {
				return tx.NackByID("m1", 0)
			}
			m, ok := tx.Lease("a", fetchLease*time.Second)
			if !ok {
				return errors.New("nothing to lease")
			}
			return tx.Nack(m.ID, m.Token, 0)
		})
	}
	cons := &ledgerstore.Consumer{Store: st, Mailbox: "a", Leaseless: c.leaseless(), LeaseFor: fetchLease * time.Second,
		Handler: func(ledgerstore.Message) error {
			if c.h.fails {
				return errors.New(c.h.errText)
			}
			return nil
		},
		Retry: func(error, int) (time.Duration, bool) { return time.Duration(c.h.delay) * time.Second, c.h.retry },
	}
	d, err := cons.Fetch()
	if err != nil || d == nil || d.Attempts != c.stored {
		t.Fatalf("ledgerstore: case %s: the fetch gave %+v, %v; want m1 with %d attempts", c, d, err, c.stored)
	}
	now = traces.At(handleAt)
	r, err := cons.Handle(d)
	if err != nil {
		t.Fatalf("ledgerstore: case %s: %v", c, err)
	}
	disk, err := st.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The store's durable state is its only full view of a dead letter.
	var state struct {
		Messages map[string]ledgerstore.Message
		Dead     map[string]ledgerstore.Dead
	}
	if err := json.Unmarshal(disk, &state); err != nil {
		t.Fatal(err)
	}
	v := verdict{action: r.Action, attempt: r.Attempt}
	if dl, ok := state.Dead["m1"]; ok {
		v.reason, v.deadAttempts = dl.Reason, dl.Attempts
	}
	if m, ok := state.Messages["m1"]; ok && v.action == traces.ActionRetried {
		v.delay = traces.Seconds(m.AvailableAt) - handleAt
	}
	return v, seesAll
}

// storeFixture is one store, opened on first use, shared by every case of the store's copies on
// one backend: each case has a mailbox and a message id of its own, and the clock stays at
// handleAt, so no case's lease runs out under another's fetch.
type storeFixture struct {
	open opener
	st   *actordelivery.Store
	n    int
}

// storeCase is one case's message on the fixture's store, fetched by handle.
type storeCase struct {
	st      *actordelivery.Store
	mailbox string
	opts    actordelivery.ConsumerOptions
	handler actordelivery.Handler
	retry   actordelivery.RetryPolicy
}

// fixedPolicy answers every failure the same way.
type fixedPolicy struct {
	delay time.Duration
	retry bool
}

func (p fixedPolicy) Retry(error, int) (time.Duration, bool) { return p.delay, p.retry }

// storeHandler fetches and handles sc's message, returning the delivery's outcome.
type storeHandler func(t *testing.T, sc storeCase, c decisionCase) actordelivery.Outcome

// run evaluates one case with handle on the fixture's store: it enqueues the case's message and
// counts its stored attempts through the store's own operations (leased: a lease nacked at once
// per attempt, the consumer's fetch leasing the last; leaseless: a NackByID per attempt), then
// reads the verdict from the outcome and the rows the message ended in.
func (f *storeFixture) run(handle storeHandler) func(t *testing.T, p profile.Profile, c decisionCase) (verdict, seen) {
	return func(t *testing.T, _ profile.Profile, c decisionCase) (verdict, seen) {
		ctx := context.Background()
		if f.st == nil {
			f.st, _ = f.open(t, actordelivery.NewManualClock(traces.At(handleAt)))
		}
		f.n++
		mailbox, id := fmt.Sprintf("a%d", f.n), fmt.Sprintf("m%d", f.n)
		if _, err := f.st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: mailbox, ID: id, MaxAttempts: c.maxAttempts}); err != nil {
			t.Fatal(err)
		}
		for j := 1; j <= c.stored; j++ {
			if c.leaseless() {
				if err := f.st.NackByID(ctx, id, 0); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if j == c.stored {
				break
			}
			m, err := f.st.Lease(ctx, mailbox, fetchLease*time.Second)
			if err != nil || m == nil {
				t.Fatalf("setting up case %s: the lease gave %+v, %v", c, m, err)
			}
			if err := f.st.Nack(ctx, id, m.Token, 0); err != nil {
				t.Fatal(err)
			}
		}
		sc := storeCase{
			st: f.st, mailbox: mailbox,
			opts: actordelivery.ConsumerOptions{Mailbox: mailbox, Path: c.path, LeaseFor: fetchLease * time.Second,
				Retry: fixedPolicy{time.Duration(c.h.delay) * time.Second, c.h.retry}},
			handler: func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) {
				if c.h.fails {
					return nil, errors.New(c.h.errText)
				}
				return nil, nil
			},
		}
		sc.retry = sc.opts.Retry
		out := handle(t, sc, c)
		v := verdict{action: out.Action, attempt: out.Attempt}
		dead, err := f.st.ListDeadLetters(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dead {
			if d.ID == id {
				v.reason, v.deadAttempts = d.Reason, d.Attempts
			}
		}
		if v.action == traces.ActionRetried {
			m, err := f.st.GetMessage(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			v.delay = traces.Seconds(m.AvailableAt) - handleAt
		}
		return v, seesAll
	}
}

// fetch takes sc's message with the real consumer and checks it carries the case's attempts.
func fetch(t *testing.T, sc storeCase, c decisionCase) (*actordelivery.Consumer, *actordelivery.Delivery) {
	ctx := context.Background()
	cons, err := actordelivery.NewConsumer(sc.st, sc.handler, sc.opts)
	if err != nil {
		t.Fatal(err)
	}
	d, err := cons.Fetch(ctx)
	if err != nil || d == nil || d.Message.Attempts != c.stored {
		t.Fatalf("case %s: the fetch gave %+v, %v; want a message with %d attempts", c, d, err, c.stored)
	}
	return cons, d
}

func storeHandle(t *testing.T, sc storeCase, c decisionCase) actordelivery.Outcome {
	cons, d := fetch(t, sc, c)
	out, err := cons.Handle(context.Background(), d)
	if err != nil {
		t.Fatalf("case %s: %v", c, err)
	}
	return out
}

// storeHandleBatch runs the batch path (a batch size of 2) on a batch of one.
func storeHandleBatch(t *testing.T, sc storeCase, c decisionCase) actordelivery.Outcome {
	ctx := context.Background()
	sc.opts.BatchSize = 2
	cons, err := actordelivery.NewConsumer(sc.st, sc.handler, sc.opts)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := cons.FetchBatch(ctx)
	if err != nil || len(ds) != 1 || ds[0].Message.Attempts != c.stored {
		t.Fatalf("case %s: the batch fetch gave %+v, %v; want one message with %d attempts", c, ds, err, c.stored)
	}
	outs, err := cons.HandleBatch(ctx, ds)
	if err != nil || len(outs) != 1 {
		t.Fatalf("case %s: the batch handle gave %+v, %v", c, outs, err)
	}
	return outs[0]
}

// brokenHandles are brokenstore's handles, each of which decides some failures itself. Outside
// its bug each must be the rule; the bugs of all but raw-attempts need a lease or row lost
// between the fetch and the handle, which no boundary case has, so only raw-attempts differs here.
var brokenHandles = []struct {
	name    string
	handle  brokenHandleFunc
	differs func(decisionCase) bool
}{
	// The raw stored count instead of the effective attempt: every leaseless failure reports
	// (and decides on) one attempt too few.
	{"internal/brokenstore/consumer.go HandleRawAttempts (broken on purpose)", brokenstore.HandleRawAttempts,
		func(c decisionCase) bool { return c.leaseless() && c.h.fails }},
	{"internal/brokenstore/consumer.go HandleFetchedAttempts", brokenstore.HandleFetchedAttempts, never},
	{"internal/brokenstore/consumer.go HandleEarlyDeadLetterUnfenced", brokenstore.HandleEarlyDeadLetterUnfenced, never},
	{"internal/brokenstore/consumer.go HandleExhaustedDeadLetterUnfenced", brokenstore.HandleExhaustedDeadLetterUnfenced, never},
	{"internal/brokenstore/consumer.go HandleUnfencedAck", brokenstore.HandleUnfencedAck, never},
}

type brokenHandleFunc func(ctx context.Context, st *actordelivery.Store, consumer brokenstore.Consumer, h actordelivery.Handler,
	retry actordelivery.RetryPolicy, d *actordelivery.Delivery) (actordelivery.Outcome, error)

// brokenHandle fetches with the real consumer and hands the delivery to handle, as the registry's
// broken targets do.
func brokenHandle(handle brokenHandleFunc) storeHandler {
	return func(t *testing.T, sc storeCase, c decisionCase) actordelivery.Outcome {
		_, d := fetch(t, sc, c)
		consumer := func(h actordelivery.Handler) (*actordelivery.Consumer, error) {
			return actordelivery.NewConsumer(sc.st, h, sc.opts)
		}
		out, err := handle(context.Background(), sc.st, consumer, sc.handler, sc.retry, d)
		if err != nil {
			t.Fatalf("case %s: %v", c, err)
		}
		return out
	}
}
