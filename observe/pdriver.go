package observe

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pconform/pconform/traces"
)

// ObservedMonitors are the safety monitors of the project (models/p/PSpec) every trace is checked
// against. Their events come from what the trace's steps and results state (see PDriver).
var ObservedMonitors = []string{"OutboxCompletionImpliesDelivery", "OutboxTargetDeliveredAtMostOnce",
	"EffectAppliedAtMostOnce", "AttemptsNeverExceedMax", "OutboxDeliveryBounded", "DedupMarkHonoursTtl",
	"CheckpointVersionsOnlyGrow", "SameKeyClaimsRespectLiveHead", "DeadLetterSparesLiveLeases",
	"PurgedIdsStayDuplicates", "RedriveHistoryKept", "WakeFollowsCommit", "StoppedWorkerStartsNoFetch",
	"WokenWorkerFetchesBeforeTick"}

// LivenessMonitors are the project's liveness monitors: each is hot while something is owed (a
// message unresolved, an outbox row pending, a redriven dead letter not yet deliverable), and a
// monitor still hot where an execution ended is a violation. PDriver asserts them only on the
// traces it is told end where their execution ended.
var LivenessMonitors = []string{"EveryMessageEventuallyResolved", "EveryOutboxRowEventuallyFinal",
	"RedrivenDeadLettersDeliverable"}

// PTestCasePrefix begins the name of every test case PDriver writes.
const PTestCasePrefix = "tcObservedHistory"

// PTestCase names the test case of the k-th trace's driver. The fixed width keeps one name from
// being a prefix of another (p check -tc matches prefixes).
func PTestCase(k int) string { return fmt.Sprintf("%s%04d", PTestCasePrefix, k) }

// pName is what an id, mailbox, key or reason may look like to be written into a P string literal
// as is (no quote, no backslash, no brace: P's format would read one as a placeholder).
var pName = regexp.MustCompile(`^[A-Za-z0-9_.:/ -]*$`)

// unstated is the row_state the driver gives a row whose state the trace no longer states (see
// PDriver). No monitor reads it as ready, pending or final, so a row in it blocks no lease,
// settles no redrive and holds no lease to fence.
const unstated = "unstated"

// PDriver returns the P source of a test case that raises the spec events of trace t, in its
// order, into the project's spec monitors. Every event comes from what the trace's steps and
// results state, never from a model:
//
//   - a message inserted (an enqueue, or a delivery that was not a duplicate) and its row; a lease
//     (a leased fetch or lease that returned the message: its attempts and token, lease_until =
//     at + lease_for) and the row it left; a handle (eSpecHandled, before its changes, and
//     eObsConsumerHandle) and what its action did: an effect and an acked row, a dead letter, a
//     released lease; ack, nack, ack_by_id, extend and dead_letter that succeeded;
//   - an outbox row enqueued, claimed (its delivery attempts against its bound) and completed;
//   - a redrive and a listing of the redrive history, a purge's retired ids, the processed marks
//     and checkpoint saves and loads;
//   - a consumer's wake and poll tick (one whose result states no err);
//   - each consumer fetch and handle as the store's observation, a worker's stop and drain, and
//     a crash (the shutdown rule's events).
//
// Where a step changes a row in a way its result does not state (expire and the fetch's sweep
// clearing a lease that ran out on a row with no attempts left, a leaseless retry or nack_by_id
// counting an attempt, a redrive putting a row back), the driver marks the row "unstated" rather
// than guess: the monitors then miss what they cannot see, and never report what the trace does
// not show. For the same reason a purge retires ids only when it removed fewer rows than its
// limit (it took every row final by its cutoff), and list_redrives is judged only when every
// redrive of the ids it lists was stated.
//
// The test case asserts monitors (ObservedMonitors when nil). A caller names a liveness monitor
// only for a trace that ends where its execution ended. Its verdict needs every row's state at
// that end: the driver announces the trace's final snapshot after the last step (a redriven row
// is also deliverable the moment a fetch or claim takes it with its first attempt). A trace held
// to a liveness monitor must have a final snapshot.
//
// SpecDeriver, the streaming driver's input (PStreamDriver), derives the events of the monitors
// the first P oracle ran (a message inserted, an outbox row enqueued, claimed and completed, an
// effect, a dead letter, the processed marks and checkpoints, a wake) by the same rules; the row copy
// below, and the monitors it feeds, are not in it yet.
//
// Machine, function and test case names are numbered k (PTestCase), so that the drivers of
// several traces compile into one project; bridge.CheckObservedAll compiles and runs them.
//
// Errors: an id, mailbox, key, reason, consumer or actor that cannot be written as a P string
// literal; a monitor that is in neither ObservedMonitors nor LivenessMonitors; a liveness monitor
// without a final snapshot; no monitor at all.
func PDriver(t *traces.Trace, k int, monitors []string) (string, error) {
	if monitors == nil {
		monitors = ObservedMonitors
	}
	if len(monitors) == 0 {
		return "", fmt.Errorf("observe: P driver: trace %q: no monitor to assert", t.Name)
	}
	var liveness []string
	for _, m := range monitors {
		switch {
		case slices.Contains(LivenessMonitors, m):
			liveness = append(liveness, m)
		case !slices.Contains(ObservedMonitors, m):
			return "", fmt.Errorf("observe: P driver: %s is not a monitor the driver raises events for (%s; %s)", m,
				strings.Join(ObservedMonitors, ", "), strings.Join(LivenessMonitors, ", "))
		}
	}
	if len(liveness) > 0 && t.Final == nil {
		return "", fmt.Errorf("observe: P driver: trace %q has no final snapshot to judge %s at its end", t.Name, strings.Join(liveness, ", "))
	}
	d := &driver{rows: map[string]*mrow{}, out: map[string]*orow{}, fetched: map[int]fetch{},
		histUnknown: map[string]bool{}, ackDeletes: t.Expect.Profile.AckDeletes}
	fmt.Fprintf(&d.b, "// Generated by pconform from the trace %q; raises its spec events into the project's monitors.\n", t.Name)
	fmt.Fprintf(&d.b, "machine ObservedHistory%04d {\n  start state Replay {\n    entry {\n      var rs: seq[tRedriveRec];\n", k)
	var at int64
	for i, st := range t.Steps {
		a, r := st.Args, st.Result
		strs := []string{a.ID, a.Mailbox, a.Target, a.Reason, a.Consumer, a.Actor, a.Key}
		if r.Message != nil {
			strs = append(strs, r.Message.ID)
		}
		for _, rec := range r.Redrives {
			strs = append(strs, rec.ID, rec.Kind, rec.Mailbox, rec.DeadReason, rec.Reason)
		}
		for _, s := range strs {
			if !pName.MatchString(s) {
				return "", fmt.Errorf("observe: P driver: trace step %d: %q cannot be written into P", i, s)
			}
		}
		at = st.At
		d.step(st)
	}
	if len(liveness) > 0 {
		if err := d.final(at, t.Final); err != nil {
			return "", err
		}
	}
	d.b.WriteString("    }\n  }\n}\n\n")
	fmt.Fprintf(&d.b, "test %s [main=ObservedHistory%04d]: assert %s in { ObservedHistory%04d };\n", PTestCase(k), k, strings.Join(monitors, ", "), k)
	return d.b.String(), nil
}

// mrow is the driver's copy of a mailbox row, as the trace states it.
type mrow struct {
	mailbox, id, key      string
	priority, maxAttempts int
	state                 string // "ready", "acked", "dead", "purged" or unstated
	attempts, token       int
	availableAt           int64
	leaseUntil            int64
	seq                   int
	finalAt               int64 // when it turned acked or dead, if finalKnown
	finalKnown            bool
	deadAttempts          int    // the dead letter's attempts and reason, if deadKnown
	deadReason            string //
	deadKnown             bool
	awaiting              bool // redriven, not yet seen deliverable
}

// orow is the driver's copy of an outbox row.
type orow struct {
	enq              traces.Args // its outbox_enqueue
	state            string      // "pending", "completed", "dead_letter" or unstated
	deliveryAttempts int
	deadReason       string // if deadKnown
	deadKnown        bool
	awaiting         bool // redriven, not yet seen claimable
}

func (o *orow) bound() int {
	if o.enq.MaxDeliveryAttempts > 0 {
		return o.enq.MaxDeliveryAttempts
	}
	return traces.DefaultMaxDeliveryAttempts
}

// fetch is what a worker's last fetch returned.
type fetch struct {
	id, mailbox string
	token       int
}

type driver struct {
	b           strings.Builder
	n, chunk    int
	seq         int
	rows        map[string]*mrow
	out         map[string]*orow
	fetched     map[int]fetch
	histUnknown map[string]bool // ids some redrive of which the trace does not state in full
	ackDeletes  bool
}

// line writes one P statement (or several that must stay in one function), splitting the driver
// into functions of at most 200 lines (the C# compiler slows down on very long methods).
func (d *driver) line(format string, args ...any) {
	if d.n > 0 && d.n%200 == 0 {
		d.chunk++
		fmt.Fprintf(&d.b, "      Part%d();\n    }\n  }\n  fun Part%d() {\n    var rs: seq[tRedriveRec];\n    {\n", d.chunk, d.chunk)
	}
	d.n++
	fmt.Fprintf(&d.b, "      "+format+"\n", args...)
}

func (d *driver) emitRow(at int64, m *mrow) {
	state, token, until := m.state, m.token, m.leaseUntil
	if state == unstated {
		token, until = 0, 0
	}
	d.line(`announce eSpecRow, (at = %d, row = (mailbox = "%s", id = "%s", key = "%s", priority = %d, payload = "", row_state = "%s", attempts = %d, max_attempts = %d, available_at = %d, token = %d, lease_until = %d, seqno = %d));`,
		at, m.mailbox, m.id, m.key, m.priority, state, m.attempts, m.maxAttempts, m.availableAt, token, until, m.seq)
}

func (d *driver) emitOutRow(at int64, o *orow, state string, attempts, token int, claimUntil, availableAt int64, deadReason string) {
	d.line(`announce eSpecOutboxRow, (at = %d, row = (id = "%s", target = "%s", key = "%s", priority = %d, max_attempts = %d, payload = "", row_state = "%s", delivery_attempts = %d, available_at = %d, token = %d, claim_until = %d, seqno = 0, max_delivery_attempts = %d, dead_reason = "%s"));`,
		at, o.enq.ID, o.enq.Target, o.enq.Key, o.enq.Priority, o.enq.MaxAttempts, state, attempts, availableAt, token, claimUntil, o.bound(), deadReason)
}

// insert adds a fresh ready row to the copy and announces it.
func (d *driver) insert(at int64, mailbox, id, key string, priority, maxAttempts int, availableAt int64) {
	d.seq++
	m := &mrow{mailbox: mailbox, id: id, key: key, priority: priority, maxAttempts: maxAttempts, state: "ready",
		availableAt: availableAt, seq: d.seq}
	d.rows[id] = m
	d.line(`announce eSpecMsgInserted, (at = %d, mailbox = "%s", id = "%s");`, at, mailbox, id)
	d.emitRow(at, m)
}

// unstate marks m as a row whose state the trace does not state from here on.
func (d *driver) unstate(at int64, m *mrow) {
	if m.state == unstated {
		return
	}
	m.state, m.finalKnown, m.deadKnown = unstated, false, false
	d.emitRow(at, m)
}

// sweep is expire() as the semantics state it, as far as the copy knows: a ready row whose lease
// ran out loses it; one with no attempts left is dead-lettered then, which no result states, so
// it turns unstated.
func (d *driver) sweep(at int64) {
	for _, m := range d.sorted() {
		if m.state != "ready" || m.token == 0 || m.leaseUntil > at {
			continue
		}
		if m.attempts >= m.maxAttempts {
			d.unstate(at, m)
			continue
		}
		m.token, m.leaseUntil = 0, 0
		d.emitRow(at, m)
	}
}

// sorted is the copy's rows in creation order, so that the driver is deterministic.
func (d *driver) sorted() []*mrow {
	ms := make([]*mrow, 0, len(d.rows))
	for _, m := range d.rows {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *mrow) int { return a.seq - b.seq })
	return ms
}

// leased records a lease that returned msg: the row it left, announced with the lease. A
// redriven row a lease takes with its first attempt was deliverable just before.
func (d *driver) leased(st traces.Step, msg *traces.Message) {
	m, ok := d.rows[msg.ID]
	if !ok {
		return
	}
	if m.awaiting && msg.Attempts == 1 {
		d.deliverable(st.At, m, 0)
	}
	m.state, m.attempts, m.token, m.leaseUntil = "ready", msg.Attempts, msg.Token, st.At+st.Args.LeaseFor
	m.awaiting = false
	d.emitRow(st.At, m)
	d.line(`announce eSpecLeased, (at = %d, mailbox = "%s", id = "%s");`, st.At, m.mailbox, m.id)
}

// deliverable announces m as the ready, unleased, available row with attempts that a fetch just
// took.
func (d *driver) deliverable(at int64, m *mrow, attempts int) {
	d.line(`announce eSpecRow, (at = %d, row = (mailbox = "%s", id = "%s", key = "%s", priority = %d, payload = "", row_state = "ready", attempts = %d, max_attempts = %d, available_at = %d, token = 0, lease_until = 0, seqno = %d));`,
		at, m.mailbox, m.id, m.key, m.priority, attempts, m.maxAttempts, at, m.seq)
}

func (d *driver) step(st traces.Step) {
	a, r, at := st.Args, st.Result, st.At
	switch st.Op {
	case traces.OpEnqueue:
		if !r.Duplicate && r.Err == "" {
			d.insert(at, a.Mailbox, a.ID, a.Key, a.Priority, a.MaxAttempts, at+a.Delay)
		}
	case traces.OpLease:
		if r.Message != nil {
			d.leased(st, r.Message)
		}
	case traces.OpWake:
		// A recorded wake states no err; one that states not_committed already names its wake as
		// early, which the trace's own verdict covers.
		if r.Err == "" {
			d.line(`announce eSpecWake, (at = %d, mailbox = "%s", id = "%s");`, at, a.Mailbox, a.ID)
			d.line(`announce eObsWake, (at = %d, worker = %d, mailbox = "%s", id = "%s", profile = "%s", err = "");`,
				at, a.Worker, a.Mailbox, a.ID, a.Profile)
		}
	case traces.OpConsumerFetch:
		var got traces.Message
		if r.Message != nil {
			got = *r.Message
		}
		d.line(`announce eObsConsumerFetch, (at = %d, worker = %d, mailbox = "%s", profile = "%s", lease_for = %d, msg_id = "%s", msg_attempts = %d, msg_token = %d, bug = false);`,
			at, a.Worker, a.Mailbox, a.Profile, a.LeaseFor, got.ID, got.Attempts, got.Token)
		if a.Profile == traces.ProfileLeased {
			d.sweep(at)
		}
		if r.Message == nil {
			break
		}
		d.fetched[a.Worker] = fetch{id: r.Message.ID, mailbox: a.Mailbox, token: r.Message.Token}
		if a.Profile == traces.ProfileLeased {
			d.leased(st, r.Message)
			break
		}
		// The leaseless fetch is a peek: it changes nothing, and states the row's attempts.
		if m, ok := d.rows[r.Message.ID]; ok {
			if m.awaiting && r.Message.Attempts == 0 {
				d.deliverable(at, m, 0)
				m.awaiting = false
			}
			if m.state != "ready" || m.attempts != r.Message.Attempts {
				m.state, m.attempts, m.token, m.leaseUntil = "ready", r.Message.Attempts, 0, 0
				d.emitRow(at, m)
			}
		}
	case traces.OpConsumerHandle:
		d.line(`announce eObsConsumerHandle, (at = %d, worker = %d, mailbox = "%s", profile = "%s", outcome = "%s", retry_delay = %d, action = "%s", attempt = %d, bug = false);`,
			at, a.Worker, a.Mailbox, a.Profile, a.Outcome, a.RetryDelay, r.Action, r.Attempt)
		f, ok := d.fetched[a.Worker]
		if !ok {
			break
		}
		delete(d.fetched, a.Worker)
		d.line(`announce eSpecHandled, (at = %d, worker = %d, id = "%s", token = %d, action = "%s");`, at, a.Worker, f.id, f.token, r.Action)
		m, known := d.rows[f.id]
		switch r.Action {
		case traces.ActionAcked:
			d.line(`announce eSpecEffect, (at = %d, mailbox = "%s", id = "%s");`, at, f.mailbox, f.id)
			if known {
				d.acked(at, m)
			}
		case traces.ActionDeadLettered:
			maxAttempts := 0
			if known {
				maxAttempts = m.maxAttempts
			}
			reason := traces.ReasonMaxAttempts
			if a.Outcome == traces.OutcomeFailNoRetry && r.Attempt < maxAttempts {
				reason = traces.ReasonHandlerFailed
			}
			d.line(`announce eSpecDeadLettered, (at = %d, mailbox = "%s", id = "%s", attempts = %d, max_attempts = %d, reason = "%s");`,
				at, f.mailbox, f.id, r.Attempt, maxAttempts, reason)
			if known {
				m.state, m.finalAt, m.finalKnown = "dead", at, true
				m.deadAttempts, m.deadReason, m.deadKnown = r.Attempt, reason, true
				m.token, m.leaseUntil, m.awaiting = 0, 0, false
			}
		case traces.ActionRetried:
			if !known {
				break
			}
			if a.Profile == traces.ProfileLeaseless {
				d.unstate(at, m) // nack_by_id counted an attempt the result does not state
				break
			}
			m.state, m.token, m.leaseUntil, m.availableAt = "ready", 0, 0, at+a.RetryDelay
			d.emitRow(at, m)
		case traces.ActionLeaseLost, traces.ActionIdle:
		default:
			if known {
				d.unstate(at, m)
			}
		}
	case traces.OpAck, traces.OpAckByID:
		if m, ok := d.rows[a.ID]; ok && r.Err == "" {
			d.acked(at, m)
		}
	case traces.OpNack:
		if m, ok := d.rows[a.ID]; ok && r.Err == "" && m.state == "ready" {
			m.token, m.leaseUntil, m.availableAt = 0, 0, at+a.Delay
			d.emitRow(at, m)
		}
	case traces.OpNackByID:
		if m, ok := d.rows[a.ID]; ok && r.Err == "" {
			d.unstate(at, m) // it counted an attempt the result does not state
		}
	case traces.OpExtend:
		if m, ok := d.rows[a.ID]; ok && r.Err == "" && m.state == "ready" {
			m.leaseUntil = at + a.LeaseFor
			d.emitRow(at, m)
		}
	case traces.OpExpire:
		d.sweep(at)
	case traces.OpDeadLetter:
		m, ok := d.rows[a.ID]
		if !ok || r.Err != "" {
			break
		}
		if m.state == "ready" {
			d.line(`announce eSpecDeadLettered, (at = %d, mailbox = "%s", id = "%s", attempts = %d, max_attempts = %d, reason = "%s");`,
				at, m.mailbox, m.id, m.attempts, m.maxAttempts, a.Reason)
			m.deadAttempts, m.deadReason, m.deadKnown = m.attempts, a.Reason, true
			m.finalAt, m.finalKnown = at, true
		}
		m.state, m.token, m.leaseUntil, m.awaiting = "dead", 0, 0, false
	case traces.OpRedrive:
		if r.Err == "" {
			d.redrive(at, a)
		}
	case traces.OpListRedrives:
		d.listRedrives(at, a.ID, r.Redrives)
	case traces.OpPurge:
		d.purge(at, a, r)
	case traces.OpCrash:
		clear(d.fetched) // every fetched-but-unhandled delivery is forgotten
		d.line(`announce eObsCrash, (at = %d,);`, at)
	case traces.OpWorkerStop:
		d.line(`announce eObsWorkerStop, (at = %d, worker = %d);`, at, a.Worker)
	case traces.OpWorkerDrain:
		delete(d.fetched, a.Worker) // a delivery the drain timeout cut off is forgotten
		d.line(`announce eObsWorkerDrain, (at = %d, worker = %d, outcome = "%s");`, at, a.Worker, a.Outcome)
	case traces.OpPollTick:
		// As a wake: a tick that states wake_not_fetched names itself, the trace's own verdict.
		if r.Err == "" {
			d.line(`announce eObsPollTick, (at = %d, worker = %d, mailbox = "%s", err = "");`, at, a.Worker, a.Mailbox)
		}
	case traces.OpMarkProcessed:
		d.line(`announce eObsMarkProcessed, (at = %d, consumer = "%s", id = "%s", ttl = %d, duplicate = %t, bug = false);`,
			at, a.Consumer, a.ID, a.TTL, r.Duplicate)
	case traces.OpSaveCheckpoint:
		d.line(`announce eObsSaveCheckpoint, (at = %d, actor = "%s", expect_version = %d, payload = "", version = %d, err = "%s", bug = false);`,
			at, a.Actor, a.ExpectVersion, r.Version, r.Err)
	case traces.OpLoadCheckpoint:
		d.line(`announce eObsLoadCheckpoint, (at = %d, actor = "%s", version = %d, err = "%s");`, at, a.Actor, r.Version, r.Err)
	case traces.OpOutboxEnqueue:
		if !r.Duplicate && r.Err == "" {
			o := &orow{enq: a, state: "pending"}
			d.out[a.ID] = o
			d.line(`announce eSpecOutboxEnqueued, (at = %d, id = "%s", target = "%s");`, at, a.ID, a.Target)
			d.emitOutRow(at, o, "pending", 0, 0, 0, at, "")
		}
	case traces.OpOutboxClaim:
		// A claim's result states each claimed row's delivery attempts and token; the row's
		// outbox_enqueue states its bound. A claim also dead-letters a row whose last claim ran
		// out, which no result states: such a row turns unstated.
		claimed := map[string]bool{}
		for _, c := range r.Claimed {
			claimed[c.ID] = true
		}
		for _, id := range d.outIDs() {
			if o := d.out[id]; !claimed[id] && o.state == "pending" && o.deliveryAttempts >= o.bound() {
				o.state = unstated
			}
		}
		for _, c := range r.Claimed {
			o, ok := d.out[c.ID]
			if !ok {
				continue
			}
			if o.awaiting && c.DeliveryAttempts == 1 {
				d.emitOutRow(at, o, "pending", 0, 0, 0, at, "")
			}
			o.state, o.deliveryAttempts, o.awaiting = "pending", c.DeliveryAttempts, false
			d.emitOutRow(at, o, "pending", c.DeliveryAttempts, c.Token, at+a.ClaimFor, at, "")
		}
	case traces.OpOutboxComplete:
		if r.Err == "" {
			target := ""
			if o, ok := d.out[a.ID]; ok {
				target, o.state = o.enq.Target, "completed"
			}
			d.line(`announce eSpecOutboxCompleted, (at = %d, id = "%s", target = "%s");`, at, a.ID, target)
		}
	case traces.OpOutboxFail:
		if o, ok := d.out[a.ID]; ok && r.Err == "" {
			o.state = unstated // dead-lettered on its last attempt, released otherwise
		}
	case traces.OpOutboxDeadLetter:
		if o, ok := d.out[a.ID]; ok && r.Err == "" {
			o.state, o.deadReason, o.deadKnown = "dead_letter", a.Reason, true
		}
	case traces.OpPublisherDeliver:
		d.deliver(st)
	}
}

func (d *driver) acked(at int64, m *mrow) {
	m.state, m.token, m.leaseUntil, m.awaiting = "acked", 0, 0, false
	m.finalAt, m.finalKnown = at, true
	d.emitRow(at, m)
}

func (d *driver) outIDs() []string {
	ids := make([]string, 0, len(d.out))
	for id := range d.out {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// deliver raises what a publisher's delivery committed. That follows from the action, the fault
// and the profile: commit_fails fails the step's first commit (the split path's enqueue, the
// fold's only one), so its enqueue never committed, whatever the action says; crash_between stops
// the step right after its first commit (the split path's enqueue; the fold's enqueue and
// completion); the split path's enqueue commits before its completion is fenced, so a split
// claim_lost enqueued, a fold one rolled back; an undeliverable row is never enqueued.
func (d *driver) deliver(st traces.Step) {
	a, r, at := st.Args, st.Result, st.At
	o, known := d.out[a.ID]
	target := ""
	if known {
		target = o.enq.Target
	}
	enqueued := (r.Action == traces.ActionDelivered || r.Action == traces.ActionCrashed ||
		r.Action == traces.ActionClaimLost && a.Profile == traces.ProfileSplit) &&
		a.Fault != traces.FaultCommitFails && a.Fault != traces.FaultUndeliverable
	completed := r.Action == traces.ActionDelivered || r.Action == traces.ActionCrashed && a.Profile == traces.ProfileFold
	if enqueued && !r.Duplicate {
		if known {
			d.insert(at, target, a.ID, o.enq.Key, o.enq.Priority, o.enq.MaxAttempts, at)
		} else {
			d.line(`announce eSpecMsgInserted, (at = %d, mailbox = "%s", id = "%s");`, at, target, a.ID)
		}
	}
	if completed {
		d.line(`announce eSpecOutboxCompleted, (at = %d, id = "%s", target = "%s");`, at, a.ID, target)
	}
	switch {
	case !known:
	case completed:
		o.state = "completed"
	case r.Action == traces.ActionDeadLettered && a.Fault == traces.FaultUndeliverable:
		o.state, o.deadReason, o.deadKnown = "dead_letter", traces.ReasonUndeliverable, true
	case r.Action != traces.ActionClaimLost:
		o.state = unstated // released, failed or dead-lettered: the action does not say which
	}
}

// redrive raises a redrive that succeeded: the dead letter it moved (a mailbox dead letter or a
// dead-lettered outbox row; the trace does not say which, so the driver tells from the rows it
// knows, and raises nothing when both could be one), with what it had before the move.
func (d *driver) redrive(at int64, a traces.Args) {
	m, mok := d.rows[a.ID]
	o, ook := d.out[a.ID]
	mDead := mok && (m.state == "dead" || m.state == unstated)
	oDead := ook && (o.state == "dead_letter" || o.state == unstated)
	switch {
	case mDead && !oDead:
		attempts, reason := m.deadAttempts, m.deadReason
		if !m.deadKnown {
			d.histUnknown[a.ID] = true
		}
		d.line(`announce eSpecRedriven, (at = %d, id = "%s", kind = "message", mailbox = "%s", attempts = %d, dead_reason = "%s", reason = "%s");`,
			at, a.ID, m.mailbox, attempts, reason, a.Reason)
		// Back in its mailbox as a new row; its attempts the result does not state.
		d.seq++
		m.seq, m.awaiting = d.seq, true
		m.state = "dead"
		d.unstate(at, m)
	case oDead && !mDead:
		if !o.deadKnown {
			d.histUnknown[a.ID] = true
		}
		d.line(`announce eSpecRedriven, (at = %d, id = "%s", kind = "outbox", mailbox = "%s", attempts = %d, dead_reason = "%s", reason = "%s");`,
			at, a.ID, o.enq.Target, o.deliveryAttempts, o.deadReason, a.Reason)
		o.state, o.awaiting, o.deadKnown = unstated, true, false
	default:
		d.histUnknown[a.ID] = true
		if mok {
			d.unstate(at, m)
		}
		if ook {
			o.state = unstated
		}
	}
}

// listRedrives raises a list_redrives result, when every redrive of the ids it lists was raised
// with what its dead letter had: the trace created each id (so no redrive of it came before the
// trace) and stated each of its dead letters.
func (d *driver) listRedrives(at int64, id string, recs []traces.RedriveRecord) {
	ids := []string{}
	if id != "" {
		ids = append(ids, id)
	} else {
		for u := range d.histUnknown {
			ids = append(ids, u)
		}
	}
	for _, rec := range recs {
		ids = append(ids, rec.ID)
	}
	for _, x := range ids {
		_, mok := d.rows[x]
		_, ook := d.out[x]
		if d.histUnknown[x] || !mok && !ook {
			return
		}
	}
	var s strings.Builder
	s.WriteString("rs = default(seq[tRedriveRec]);")
	for i, rec := range recs {
		fmt.Fprintf(&s, ` rs += (%d, (id = "%s", kind = "%s", mailbox = "%s", attempts = %d, dead_reason = "%s", reason = "%s", at = %d));`,
			i, rec.ID, rec.Kind, rec.Mailbox, rec.Attempts, rec.DeadReason, rec.Reason, rec.At)
	}
	fmt.Fprintf(&s, ` announce eSpecRedrivesListed, (at = %d, id = "%s", redrives = rs);`, at, id)
	d.line("%s", s.String())
}

// purge raises the message ids a purge retired. Its result counts the rows it removed, not which:
// only a purge that removed fewer rows than its limit of any kind took every row final at or
// before its cutoff, so only then are the rows the trace shows final by the cutoff known to be
// gone, and their ids retired until their final time + horizon.
func (d *driver) purge(at int64, a traces.Args, r traces.Result) {
	if r.Err != "" || r.Affected >= a.Limit {
		return
	}
	cutoff := at - a.OlderThan
	for _, m := range d.sorted() {
		final := m.state == "dead" || m.state == "acked" && !d.ackDeletes
		if !final || !m.finalKnown || m.finalAt > cutoff {
			continue
		}
		d.line(`announce eSpecPurged, (at = %d, id = "%s", horizon_end = %d);`, at, m.id, m.finalAt+a.Horizon)
		m.state = "purged"
	}
}

// final announces the final snapshot's rows after the last step, at its time: every message row,
// every dead letter the steps did not announce, every outbox row.
func (d *driver) final(at int64, f *traces.Snapshot) error {
	for _, fm := range f.Messages {
		for _, s := range []string{fm.Mailbox, fm.ID, fm.Key, fm.State} {
			if !pName.MatchString(s) {
				return fmt.Errorf("observe: P driver: final message %s: %q cannot be written into P", fm.ID, s)
			}
		}
		seq := 0
		if m, ok := d.rows[fm.ID]; ok {
			seq = m.seq
		}
		d.line(`announce eSpecRow, (at = %d, row = (mailbox = "%s", id = "%s", key = "%s", priority = %d, payload = "", row_state = "%s", attempts = %d, max_attempts = %d, available_at = %d, token = %d, lease_until = %d, seqno = %d));`,
			at, fm.Mailbox, fm.ID, fm.Key, fm.Priority, fm.State, fm.Attempts, fm.MaxAttempts, fm.AvailableAt, fm.Token, fm.LeaseUntil, seq)
	}
	for _, dl := range f.DeadLetters {
		for _, s := range []string{dl.Mailbox, dl.ID, dl.Reason} {
			if !pName.MatchString(s) {
				return fmt.Errorf("observe: P driver: final dead letter %s: %q cannot be written into P", dl.ID, s)
			}
		}
		if m, ok := d.rows[dl.ID]; ok && m.state == "dead" && m.deadKnown {
			continue
		}
		d.line(`announce eSpecDeadLettered, (at = %d, mailbox = "%s", id = "%s", attempts = %d, max_attempts = %d, reason = "%s");`,
			at, dl.Mailbox, dl.ID, dl.Attempts, dl.MaxAttempts, dl.Reason)
	}
	for _, fo := range f.Outbox {
		for _, s := range []string{fo.ID, fo.Target, fo.Key, fo.State, fo.Reason} {
			if !pName.MatchString(s) {
				return fmt.Errorf("observe: P driver: final outbox row %s: %q cannot be written into P", fo.ID, s)
			}
		}
		o, ok := d.out[fo.ID]
		if !ok {
			o = &orow{enq: traces.Args{ID: fo.ID, Target: fo.Target, Key: fo.Key, Priority: fo.Priority, MaxAttempts: fo.MaxAttempts}}
		}
		d.emitOutRow(at, o, fo.State, fo.DeliveryAttempts, fo.Token, fo.ClaimUntil, fo.AvailableAt, fo.Reason)
	}
	return nil
}
