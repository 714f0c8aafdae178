package bridge

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// The P oracle's spec events: the one place that says which events of the project's spec
// monitors (models/p/PSpec) an observed history raises, with which payloads, from which observed
// results. Both P drivers use it: PDriver writes the events of a trace into the source of a test
// case, and the streaming driver (PStreamDriver, run by Stream) reads them at run time, one line
// each (AppendSpecLine).

// SpecFieldKind is the P type of a spec event's payload field.
type SpecFieldKind int

const (
	SpecInt SpecFieldKind = iota
	SpecString
	SpecBool
	// SpecTuple is a named tuple whose fields are Sub (a row, as eSpecOutboxRow's).
	SpecTuple
	// SpecSeq is a seq (of P type Type) of named tuples whose fields are Sub, or of scalars when
	// Sub is one field without a name: its values are its length, then each element's fields.
	SpecSeq
)

// SpecField is one payload field of a spec event, in the order of its P type.
type SpecField struct {
	Name string
	Kind SpecFieldKind
	Sub  []SpecField
	Type string // a SpecSeq's P type
}

// SpecEventType is a P event the P oracle announces and its payload's fields.
type SpecEventType struct {
	Event  string
	Fields []SpecField
}

// leaves counts the scalar fields of fs, tuples flattened in order.
func leaves(fs []SpecField) int {
	n := 0
	for _, f := range fs {
		if f.Kind == SpecTuple {
			n += leaves(f.Sub)
		} else {
			n++
		}
	}
	return n
}

func fInt(name string) SpecField  { return SpecField{Name: name, Kind: SpecInt} }
func fStr(name string) SpecField  { return SpecField{Name: name, Kind: SpecString} }
func fBool(name string) SpecField { return SpecField{Name: name, Kind: SpecBool} }

// The spec event types, indexed by SpecKind. Their fields are those of the events' P
// declarations (PSrc/Observations.p, PSrc/ObservationEvents_gen.p); the P compiler refuses a
// driver that disagrees.
const (
	SpecMsgInserted SpecKind = iota
	SpecOutboxEnqueued
	SpecOutboxCompleted
	SpecEffect
	SpecDeadLettered
	SpecOutboxRow
	SpecMarkProcessed
	SpecSaveCheckpoint
	SpecLoadCheckpoint
	SpecWake
	SpecRow
	SpecLeased
	SpecHandled
	SpecPurged
	SpecRedriven
	SpecRedrivesListed
	SpecConsumerFetch
	SpecConsumerHandle
	SpecWorkerStop
	SpecWorkerDrain
	SpecCrash
	SpecWorkerWake
	SpecPollTick
	SpecConsumerFetchBatch
	SpecConsumerHandleBatch
	numSpecKinds
)

// SpecKind names a spec event type: an index into SpecEventTypes.
type SpecKind int

// SpecEventTypes are the spec event types, indexed by SpecKind.
var SpecEventTypes = [numSpecKinds]SpecEventType{
	SpecMsgInserted:     {"eSpecMsgInserted", []SpecField{fInt("at"), fStr("mailbox"), fStr("id")}},
	SpecOutboxEnqueued:  {"eSpecOutboxEnqueued", []SpecField{fInt("at"), fStr("id"), fStr("target")}},
	SpecOutboxCompleted: {"eSpecOutboxCompleted", []SpecField{fInt("at"), fStr("id"), fStr("target")}},
	SpecEffect:          {"eSpecEffect", []SpecField{fInt("at"), fStr("mailbox"), fStr("id")}},
	SpecDeadLettered: {"eSpecDeadLettered", []SpecField{fInt("at"), fStr("mailbox"), fStr("id"), fInt("attempts"),
		fInt("max_attempts"), fStr("reason")}},
	SpecOutboxRow: {"eSpecOutboxRow", []SpecField{fInt("at"), {Name: "row", Kind: SpecTuple, Sub: []SpecField{
		fStr("id"), fStr("target"), fStr("key"), fInt("priority"), fInt("max_attempts"), fStr("payload"), fStr("row_state"),
		fInt("delivery_attempts"), fInt("available_at"), fInt("token"), fInt("claim_until"), fInt("seqno"),
		fInt("max_delivery_attempts"), fStr("dead_reason")}}}},
	SpecMarkProcessed: {"eObsMarkProcessed", []SpecField{fInt("at"), fStr("consumer"), fStr("id"), fInt("ttl"),
		fBool("duplicate"), fBool("bug")}},
	SpecSaveCheckpoint: {"eObsSaveCheckpoint", []SpecField{fInt("at"), fStr("actor"), fInt("expect_version"), fStr("payload"),
		fInt("version"), fStr("err"), fBool("bug")}},
	SpecLoadCheckpoint: {"eObsLoadCheckpoint", []SpecField{fInt("at"), fStr("actor"), fInt("version"), fStr("err")}},
	SpecWake:           {"eSpecWake", []SpecField{fInt("at"), fStr("mailbox"), fStr("id")}},
	SpecRow: {"eSpecRow", []SpecField{fInt("at"), {Name: "row", Kind: SpecTuple, Sub: []SpecField{
		fStr("mailbox"), fStr("id"), fStr("key"), fInt("priority"), fStr("payload"), fStr("row_state"), fInt("attempts"),
		fInt("max_attempts"), fInt("available_at"), fInt("token"), fInt("lease_until"), fInt("seqno")}}}},
	SpecLeased:  {"eSpecLeased", []SpecField{fInt("at"), fStr("mailbox"), fStr("id")}},
	SpecHandled: {"eSpecHandled", []SpecField{fInt("at"), fInt("worker"), fStr("id"), fInt("token"), fStr("action")}},
	SpecPurged:  {"eSpecPurged", []SpecField{fInt("at"), fStr("id"), fInt("horizon_end")}},
	SpecRedriven: {"eSpecRedriven", []SpecField{fInt("at"), fStr("id"), fStr("kind"), fStr("mailbox"), fInt("attempts"),
		fStr("dead_reason"), fStr("reason")}},
	SpecRedrivesListed: {"eSpecRedrivesListed", []SpecField{fInt("at"), fStr("id"), {Name: "redrives", Kind: SpecSeq,
		Type: "seq[tRedriveRec]", Sub: []SpecField{fStr("id"), fStr("kind"), fStr("mailbox"), fInt("attempts"), fStr("dead_reason"),
			fStr("reason"), fInt("at")}}}},
	SpecConsumerFetch: {"eObsConsumerFetch", []SpecField{fInt("at"), fInt("worker"), fStr("mailbox"), fStr("profile"),
		fInt("lease_for"), fStr("msg_id"), fInt("msg_attempts"), fInt("msg_token"), fBool("bug")}},
	SpecConsumerHandle: {"eObsConsumerHandle", []SpecField{fInt("at"), fInt("worker"), fStr("mailbox"), fStr("profile"),
		fStr("outcome"), fInt("retry_delay"), fStr("fault"), fStr("reason"), fStr("action"), fInt("attempt"), fBool("bug")}},
	SpecWorkerStop:  {"eObsWorkerStop", []SpecField{fInt("at"), fInt("worker")}},
	SpecWorkerDrain: {"eObsWorkerDrain", []SpecField{fInt("at"), fInt("worker"), fStr("outcome")}},
	SpecCrash:       {"eObsCrash", []SpecField{fInt("at")}},
	SpecWorkerWake:  {"eObsWake", []SpecField{fInt("at"), fInt("worker"), fStr("mailbox"), fStr("id"), fStr("profile"), fStr("err")}},
	SpecPollTick:    {"eObsPollTick", []SpecField{fInt("at"), fInt("worker"), fStr("mailbox"), fStr("err")}},
	SpecConsumerFetchBatch: {"eObsConsumerFetchBatch", []SpecField{fInt("at"), fInt("worker"), fStr("mailbox"), fStr("profile"),
		fInt("size"), fInt("lease_for"), {Name: "messages", Kind: SpecSeq, Type: "seq[tFetched]", Sub: []SpecField{fStr("mailbox"),
			fStr("id"), fInt("attempts"), fInt("max_attempts"), fInt("token")}}, fBool("bug")}},
	SpecConsumerHandleBatch: {"eObsConsumerHandleBatch", []SpecField{fInt("at"), fInt("worker"), fStr("mailbox"), fStr("profile"),
		{Name: "outcomes", Kind: SpecSeq, Type: "seq[string]", Sub: []SpecField{fStr("")}}, fInt("retry_delay"), fStr("fault"),
		{Name: "actions", Kind: SpecSeq, Type: "seq[string]", Sub: []SpecField{fStr("")}}, fBool("bug")}},
}

// SpecEvent is one spec event: its type and its payload's scalar values in field order (a tuple's
// fields in place), each an int64, string or bool as its field's kind says.
type SpecEvent struct {
	Kind   SpecKind
	Values []any
}

// SpecDeriver maps an observed history, one step at a time in commit order, to the spec events
// its steps and results state, for both P drivers (PDriver and the streaming one). Every event
// comes from what the trace's steps and results state, never from a model:
//
//   - a message inserted (an enqueue, or a delivery that was not a duplicate) and its row; a lease
//     (a leased fetch or lease that returned the message: its attempts and token, lease_until =
//     at + lease_for) and the row it left; a handle (eObsConsumerHandle, then eSpecHandled before
//     its changes) and what its action did: an effect and an acked row, a dead letter, a released
//     lease; ack, nack, ack_by_id, extend and dead_letter that succeeded;
//   - an outbox row enqueued, claimed (its delivery attempts against its bound) and completed;
//   - a redrive and a listing of the redrive history, a purge's retired ids, the processed marks
//     and checkpoint saves and loads;
//   - a consumer's wake and poll tick (one whose result states no err);
//   - each consumer fetch as the store's observation, a worker's stop and drain, and a crash
//     (the shutdown rule's events).
//
// Where a step changes a row in a way its result does not state (expire and the fetch's sweep
// clearing a lease that ran out on a row with no attempts left, a leaseless retry or nack_by_id
// counting an attempt, a redrive putting a row back), the deriver marks the row "unstated" rather
// than guess: the monitors then miss what they cannot see, and never report what the trace does
// not show. For the same reason a purge retires ids only when it removed fewer rows than its
// limit (it took every row final by its cutoff), and list_redrives is judged only when every
// redrive of the ids it lists was stated.
//
// It keeps a copy of every row the history created (the monitors SameKeyClaimsRespectLiveHead
// and DeadLetterSparesLiveLeases read rows, PurgedIdsStayDuplicates and RedriveHistoryKept need a
// final row's time and a dead letter's values), so its memory grows with the rows, not the steps.
// A step costs O(1) plus the rows it can change: the live leases a sweep looks at, the spent
// outbox rows a claim looks at, the final rows a purge looks at.
type SpecDeriver struct {
	seq         int
	rows        map[string]*mrow
	out         map[string]*orow
	fetched     map[int]fetch
	batches     map[int][]fetch // what each worker's last batch fetch returned, until its handle
	owed        map[int]owed    // effects a worker's batch handle acknowledged, until its next step
	histUnknown map[string]bool // ids some redrive of which the trace does not state in full
	unjudged    map[string]bool // checkpoint actors adopted at a version Adopt did not raise
	prof        profile.Profile // its ack rule says whether an acked row stays; Held, whether a lease is live
	// Candidates, kept lazily (a member may no longer qualify; each use checks and drops it):
	leased map[string]*mrow // rows given a lease token, for the sweep
	spent  map[string]*orow // outbox rows claimed up to their bound, for a claim's dead-lettering
	final  map[string]*mrow // rows whose final time is known, for a purge
	evs    []SpecEvent
}

// NewSpecDeriver returns a deriver at the start of a history recorded under profile p: its ack
// rule says whether an acked row stays for a purge to retire, its lease rule (profile.Held)
// whether a sweep finds a lease run out.
func NewSpecDeriver(p profile.Profile) *SpecDeriver {
	return &SpecDeriver{rows: map[string]*mrow{}, out: map[string]*orow{}, fetched: map[int]fetch{},
		batches: map[int][]fetch{}, owed: map[int]owed{}, histUnknown: map[string]bool{}, unjudged: map[string]bool{}, prof: p,
		leased: map[string]*mrow{}, spent: map[string]*orow{}, final: map[string]*mrow{}}
}

// unstated is the row_state the deriver gives a row whose state the trace no longer states. No
// monitor reads it as ready, pending or final, so a row in it blocks no lease, settles no redrive
// and holds no lease to fence.
const unstated = "unstated"

// mrow is the deriver's copy of a mailbox row, as the trace states it.
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

// orow is the deriver's copy of an outbox row.
type orow struct {
	enq              outboxEnqueue // what its outbox_enqueue stated
	state            string        // "pending", "completed", "dead_letter" or unstated
	deliveryAttempts int
	deadReason       string // if deadKnown
	deadKnown        bool
	awaiting         bool // redriven, not yet seen claimable
	// adoptedUndelivered: adopted from a snapshot that held no message of its id in its target,
	// so whether a delivery before the snapshot inserted one (a message since purged) is not
	// known; its completion is raised only after the history shows the insert.
	adoptedUndelivered bool
}

// outboxEnqueue is what the deriver keeps of a row's outbox_enqueue: the fields its spec events
// carry, not the whole step (a payload, every other op's fields), since it keeps one for every
// live outbox row.
type outboxEnqueue struct {
	id, target, key                            string
	priority, maxAttempts, maxDeliveryAttempts int
}

// enqueueOf is what the deriver keeps of the outbox_enqueue a.
func enqueueOf(a traces.Args) outboxEnqueue {
	return outboxEnqueue{id: a.ID, target: a.Target, key: a.Key, priority: a.Priority, maxAttempts: a.MaxAttempts,
		maxDeliveryAttempts: a.MaxDeliveryAttempts}
}

func (o *orow) bound() int {
	if o.enq.maxDeliveryAttempts > 0 {
		return o.enq.maxDeliveryAttempts
	}
	return traces.DefaultMaxDeliveryAttempts
}

// fetch is what a worker's last fetch returned.
type fetch struct {
	id, mailbox     string
	token, attempts int
}

// add appends an event of kind k; ints are stored as int64.
func (d *SpecDeriver) add(k SpecKind, vs ...any) {
	for i, v := range vs {
		if n, ok := v.(int); ok {
			vs[i] = int64(n)
		}
	}
	d.evs = append(d.evs, SpecEvent{Kind: k, Values: vs})
}

func (d *SpecDeriver) row(at int64, m *mrow, state string, attempts int, availableAt int64, token int, until int64) {
	d.add(SpecRow, at, m.mailbox, m.id, m.key, m.priority, "", state, attempts, m.maxAttempts, availableAt, token, until, m.seq)
}

func (d *SpecDeriver) emitRow(at int64, m *mrow) {
	token, until := m.token, m.leaseUntil
	if m.state == unstated {
		token, until = 0, 0
	}
	d.row(at, m, m.state, m.attempts, m.availableAt, token, until)
}

func (d *SpecDeriver) emitOutRow(at int64, o *orow, state string, attempts, token int, claimUntil, availableAt int64, deadReason string) {
	d.add(SpecOutboxRow, at, o.enq.id, o.enq.target, o.enq.key, o.enq.priority, o.enq.maxAttempts, "", state, attempts,
		availableAt, token, claimUntil, 0, o.bound(), deadReason)
}

// insert adds a fresh ready row to the copy and announces it.
func (d *SpecDeriver) insert(at int64, mailbox, id, key string, priority, maxAttempts int, availableAt int64) {
	d.seq++
	m := &mrow{mailbox: mailbox, id: id, key: key, priority: priority, maxAttempts: maxAttempts, state: "ready",
		availableAt: availableAt, seq: d.seq}
	d.rows[id] = m
	delete(d.final, id)
	delete(d.leased, id)
	if o, ok := d.out[id]; ok && o.enq.target == mailbox {
		o.adoptedUndelivered = false
	}
	d.add(SpecMsgInserted, at, mailbox, id)
	d.emitRow(at, m)
}

// unstate marks m as a row whose state the trace does not state from here on.
func (d *SpecDeriver) unstate(at int64, m *mrow) {
	if m.state == unstated {
		return
	}
	m.state, m.finalKnown, m.deadKnown = unstated, false, false
	d.emitRow(at, m)
}

// bySeq is rows in creation order, so that the deriver is deterministic.
func bySeq(rows map[string]*mrow) []*mrow {
	ms := make([]*mrow, 0, len(rows))
	for _, m := range rows {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *mrow) int { return a.seq - b.seq })
	return ms
}

// sweep is expire() as the semantics state it, as far as the copy knows: a ready row whose lease
// ran out (is no longer held by the profile's rule, profile.Held) loses it; one with no attempts left is dead-lettered then, which no result states, so
// it turns unstated.
func (d *SpecDeriver) sweep(at int64) {
	for _, m := range bySeq(d.leased) {
		if m.state != "ready" || m.token == 0 {
			delete(d.leased, m.id)
			continue
		}
		if d.prof.Held(m.token, m.leaseUntil, at) {
			continue
		}
		delete(d.leased, m.id)
		if m.attempts >= m.maxAttempts {
			d.unstate(at, m)
			continue
		}
		m.token, m.leaseUntil = 0, 0
		d.emitRow(at, m)
	}
}

// leased records a lease that returned msg: the row it left, announced with the lease. A
// redriven row a lease takes with its first attempt was deliverable just before.
func (d *SpecDeriver) leasedBy(st traces.Step, msg *traces.Message) {
	m, ok := d.rows[msg.ID]
	if !ok {
		return
	}
	if m.awaiting && msg.Attempts == 1 {
		d.row(st.At, m, "ready", 0, st.At, 0, 0) // deliverable just before the lease took it
	}
	m.state, m.attempts, m.token, m.leaseUntil = "ready", msg.Attempts, msg.Token, st.At+st.Args.LeaseFor
	m.awaiting = false
	if m.token != 0 {
		d.leased[m.id] = m
	}
	d.emitRow(st.At, m)
	d.add(SpecLeased, st.At, m.mailbox, m.id)
}

// peeked records a leaseless fetch that returned msg: a peek changes nothing, and states the
// row's attempts.
func (d *SpecDeriver) peeked(at int64, msg *traces.Message) {
	m, ok := d.rows[msg.ID]
	if !ok {
		return
	}
	if m.awaiting && msg.Attempts == 0 {
		d.row(at, m, "ready", 0, at, 0, 0)
		m.awaiting = false
	}
	if m.state != "ready" || m.attempts != msg.Attempts {
		m.state, m.attempts, m.token, m.leaseUntil = "ready", msg.Attempts, 0, 0
		d.emitRow(at, m)
	}
}

func (d *SpecDeriver) finalised(at int64, m *mrow, state string) {
	m.state, m.token, m.leaseUntil, m.awaiting = state, 0, 0, false
	m.finalAt, m.finalKnown = at, true
	d.final[m.id] = m
}

func (d *SpecDeriver) acked(at int64, m *mrow) {
	d.finalised(at, m, "acked")
	d.emitRow(at, m)
}

// Step appends to out the spec events of st, the next step in commit order, and returns it.
func (d *SpecDeriver) Step(st traces.Step, out []SpecEvent) []SpecEvent {
	d.evs = out
	if len(d.owed) > 0 {
		d.settleOwed(st)
	}
	d.step(st)
	out, d.evs = d.evs, nil
	return out
}

func (d *SpecDeriver) step(st traces.Step) {
	a, r, at := st.Args, st.Result, st.At
	switch st.Op {
	case traces.OpEnqueue:
		if !r.Duplicate && r.Err == "" {
			d.insert(at, a.Mailbox, a.ID, a.Key, a.Priority, a.MaxAttempts, at+a.Delay)
		}
	case traces.OpLease:
		if r.Message != nil {
			d.leasedBy(st, r.Message)
		}
	case traces.OpWake:
		// A recorded wake states no err; one that states not_committed already names its wake as
		// early, which the trace's own verdict covers.
		if r.Err == "" {
			d.add(SpecWake, at, a.Mailbox, a.ID)
			d.add(SpecWorkerWake, at, a.Worker, a.Mailbox, a.ID, string(a.Profile), "")
		}
	case traces.OpPollTick:
		// As a wake: a tick that states wake_not_fetched names itself, the trace's own verdict.
		if r.Err == "" {
			d.add(SpecPollTick, at, a.Worker, a.Mailbox, "")
		}
	case traces.OpConsumerFetch:
		var got traces.Message
		if r.Message != nil {
			got = *r.Message
		}
		d.add(SpecConsumerFetch, at, a.Worker, a.Mailbox, string(a.Profile), a.LeaseFor, got.ID, got.Attempts, got.Token, false)
		if a.Profile == traces.ProfileLeased && !d.prof.FetchNoSweep { // fetch_sweep "none": it only leases
			d.sweep(at)
		}
		if r.Message == nil {
			break
		}
		d.fetched[a.Worker] = fetch{id: r.Message.ID, mailbox: a.Mailbox, token: r.Message.Token, attempts: r.Message.Attempts}
		if a.Profile == traces.ProfileLeased {
			d.leasedBy(st, r.Message)
			break
		}
		d.peeked(at, r.Message)
	case traces.OpConsumerHandle:
		d.add(SpecConsumerHandle, at, a.Worker, a.Mailbox, string(a.Profile), string(a.Outcome), a.RetryDelay, a.Fault, a.Reason, string(r.Action), r.Attempt, false)
		f, ok := d.fetched[a.Worker]
		if !ok {
			break
		}
		delete(d.fetched, a.Worker)
		if r.Action == traces.ActionCommitFailed {
			break // it changed nothing, as a batch handle whose commit failed (handleBatch)
		}
		d.add(SpecHandled, at, a.Worker, f.id, f.token, string(r.Action))
		d.handled(st, f)
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
			d.add(SpecDeadLettered, at, m.mailbox, m.id, m.attempts, m.maxAttempts, a.Reason)
			m.deadAttempts, m.deadReason, m.deadKnown = m.attempts, a.Reason, true
			d.finalised(at, m, "dead")
			break
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
		clear(d.batches)
		d.add(SpecCrash, at)
	case traces.OpWorkerStop:
		d.add(SpecWorkerStop, at, a.Worker)
	case traces.OpWorkerDrain:
		delete(d.fetched, a.Worker) // a delivery the drain timeout cut off is forgotten
		delete(d.batches, a.Worker)
		d.add(SpecWorkerDrain, at, a.Worker, string(a.Outcome))
	case traces.OpMarkProcessed:
		d.add(SpecMarkProcessed, at, a.Consumer, a.ID, a.TTL, r.Duplicate, false)
	case traces.OpSaveCheckpoint:
		if d.unjudged[a.Actor] {
			break
		}
		d.add(SpecSaveCheckpoint, at, a.Actor, a.ExpectVersion, "", r.Version, string(r.Err), false)
	case traces.OpLoadCheckpoint:
		if d.unjudged[a.Actor] {
			break
		}
		d.add(SpecLoadCheckpoint, at, a.Actor, r.Version, string(r.Err))
	case traces.OpOutboxEnqueue:
		if !r.Duplicate && r.Err == "" {
			o := &orow{enq: enqueueOf(a), state: "pending"}
			d.out[a.ID] = o
			d.add(SpecOutboxEnqueued, at, a.ID, a.Target)
			d.emitOutRow(at, o, "pending", 0, 0, 0, at, "")
		}
	case traces.OpOutboxClaim:
		d.claim(st)
	case traces.OpOutboxComplete:
		if r.Err == "" {
			target := ""
			o, ok := d.out[a.ID]
			if ok {
				target, o.state = o.enq.target, "completed"
			}
			if !ok || !o.adoptedUndelivered {
				d.add(SpecOutboxCompleted, at, a.ID, target)
			}
		}
	case traces.OpOutboxFail:
		if o, ok := d.out[a.ID]; ok && r.Err == "" {
			o.state = unstated // dead-lettered on its last attempt, released otherwise
		}
	case traces.OpOutboxDeadLetter:
		switch o, ok := d.out[a.ID]; {
		case !ok || r.Err != "":
		case d.prof.OutboxDeadLetterFenceSilent:
			// outbox_dead_letter_fence "silent": no error does not say the fence held.
			o.state = unstated
		default:
			o.state, o.deadReason, o.deadKnown = "dead_letter", a.Reason, true
		}
	case traces.OpPublisherDeliver:
		d.deliver(st)
	case traces.OpConsumerFetchBatch:
		d.fetchBatch(st)
	case traces.OpConsumerHandleBatch:
		d.handleBatch(st)
	case traces.OpConsumerEffectsBatch:
		d.effectsBatch(st)
	case traces.OpPublisherDeliverBatch:
		d.deliverBatch(st)
	}
}

// handled raises what a handle's action did to the row its worker fetched.
func (d *SpecDeriver) handled(st traces.Step, f fetch) {
	a, r, at := st.Args, st.Result, st.At
	m, known := d.rows[f.id]
	switch r.Action {
	case traces.ActionAcked:
		d.add(SpecEffect, at, f.mailbox, f.id)
		if known {
			d.acked(at, m)
		}
	case traces.ActionDeadLettered:
		maxAttempts := 0
		if known {
			maxAttempts = m.maxAttempts
		}
		// The profile's reason_max_attempts, as the store writes it.
		reason := d.prof.ReasonMaxAttemptsWording()
		if a.Outcome == traces.OutcomeFailNoRetry && r.Attempt < maxAttempts {
			reason = cmp.Or(a.Reason, traces.ReasonHandlerFailed) // the handler's error text
		}
		d.add(SpecDeadLettered, at, f.mailbox, f.id, r.Attempt, maxAttempts, reason)
		if known {
			m.deadAttempts, m.deadReason, m.deadKnown = r.Attempt, reason, true
			d.finalised(at, m, "dead")
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
}

// claim raises an outbox claim. Its result states each claimed row's delivery attempts and
// token; the row's outbox_enqueue states its bound. A claim also dead-letters a row whose last
// claim ran out, which no result states: such a row turns unstated.
func (d *SpecDeriver) claim(st traces.Step) {
	a, r, at := st.Args, st.Result, st.At
	claimed := map[string]bool{}
	for _, c := range r.Claimed {
		claimed[c.ID] = true
	}
	ids := make([]string, 0, len(d.spent))
	for id := range d.spent {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		o := d.spent[id]
		if o.state != "pending" || o.deliveryAttempts < o.bound() {
			delete(d.spent, id)
			continue
		}
		if !claimed[id] {
			o.state = unstated
			delete(d.spent, id)
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
		if o.deliveryAttempts >= o.bound() {
			d.spent[c.ID] = o
		}
		d.emitOutRow(at, o, "pending", c.DeliveryAttempts, c.Token, at+a.ClaimFor, at, "")
	}
}

// deliver raises what a publisher's delivery committed. That follows from the action, the fault
// and the profile: commit_fails fails the step's first commit (the split path's enqueue, the
// fold's only one), so its enqueue never committed, whatever the action says; crash_between stops
// the step right after its first commit (the split path's enqueue; the fold's enqueue and
// completion); the split path's enqueue commits before its completion is fenced, so a split
// claim_lost enqueued, a fold one rolled back; an undeliverable row is never enqueued.
func (d *SpecDeriver) deliver(st traces.Step) {
	a, r, at := st.Args, st.Result, st.At
	o, known := d.out[a.ID]
	target := ""
	if known {
		target = o.enq.target
	}
	enqueued := (r.Action == traces.ActionDelivered || r.Action == traces.ActionCrashed ||
		r.Action == traces.ActionClaimLost && a.Profile == traces.ProfileSplit) &&
		a.Fault != traces.FaultCommitFails && a.Fault != traces.FaultUndeliverable
	completed := r.Action == traces.ActionDelivered || r.Action == traces.ActionCrashed && a.Profile == traces.ProfileFold
	if enqueued && !r.Duplicate {
		if known {
			d.insert(at, target, a.ID, o.enq.key, o.enq.priority, o.enq.maxAttempts, at)
		} else {
			d.add(SpecMsgInserted, at, target, a.ID)
		}
	}
	if completed && (!known || !o.adoptedUndelivered) {
		d.add(SpecOutboxCompleted, at, a.ID, target)
	}
	switch {
	case !known:
	case completed:
		o.state = "completed"
	case r.Action == traces.ActionDeadLettered && a.Fault == traces.FaultUndeliverable && !d.prof.OutboxDeadLetterFenceSilent:
		o.state, o.deadReason, o.deadKnown = "dead_letter", traces.ReasonUndeliverable, true
	case r.Action != traces.ActionClaimLost:
		o.state = unstated // released, failed or dead-lettered: the action does not say which
	}
}

// redrive raises a redrive that succeeded: the dead letter it moved (a mailbox dead letter or a
// dead-lettered outbox row; the trace does not say which, so the deriver tells from the rows it
// knows, and raises nothing when both could be one), with what it had before the move.
func (d *SpecDeriver) redrive(at int64, a traces.Args) {
	m, mok := d.rows[a.ID]
	o, ook := d.out[a.ID]
	mDead := mok && (m.state == "dead" || m.state == unstated)
	oDead := ook && (o.state == "dead_letter" || o.state == unstated)
	switch {
	case mDead && !oDead:
		if !m.deadKnown {
			d.histUnknown[a.ID] = true
		}
		d.add(SpecRedriven, at, a.ID, "message", m.mailbox, m.deadAttempts, m.deadReason, a.Reason)
		// Back in its mailbox as a new row; its attempts the result does not state.
		d.seq++
		m.seq, m.awaiting = d.seq, true
		m.state = "dead"
		d.unstate(at, m)
	case oDead && !mDead:
		if !o.deadKnown {
			d.histUnknown[a.ID] = true
		}
		d.add(SpecRedriven, at, a.ID, "outbox", o.enq.target, o.deliveryAttempts, o.deadReason, a.Reason)
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
// trace) and stated each of its dead letters. The records go as a count, then each record's
// fields (SpecSeq).
func (d *SpecDeriver) listRedrives(at int64, id string, recs []traces.RedriveRecord) {
	if id != "" && !d.known(id) || id == "" && len(d.histUnknown) > 0 {
		return
	}
	for _, rec := range recs {
		if !d.known(rec.ID) {
			return
		}
	}
	vs := []any{at, id, len(recs)}
	for _, rec := range recs {
		vs = append(vs, rec.ID, rec.Kind, rec.Mailbox, rec.Attempts, rec.DeadReason, rec.Reason, rec.At)
	}
	d.add(SpecRedrivesListed, vs...)
}

// known reports whether every redrive of id was stated: the trace created it and stated each of
// its dead letters.
func (d *SpecDeriver) known(id string) bool {
	_, mok := d.rows[id]
	_, ook := d.out[id]
	return !d.histUnknown[id] && (mok || ook)
}

// purge raises the message ids a purge retired. Its result counts the rows it removed, not which:
// only a purge that removed fewer rows than its limit of any kind took every row final at or
// before its cutoff, so only then are the rows the trace shows final by the cutoff known to be
// gone, and their ids retired until their final time + horizon.
func (d *SpecDeriver) purge(at int64, a traces.Args, r traces.Result) {
	if r.Err != "" || r.Affected >= a.Limit {
		return
	}
	cutoff := at - a.OlderThan
	for _, m := range bySeq(d.final) {
		final := m.state == "dead" || m.state == "acked" && !d.prof.AckDeletes
		if !final || !m.finalKnown {
			delete(d.final, m.id)
			continue
		}
		if m.finalAt > cutoff {
			continue
		}
		d.add(SpecPurged, at, m.id, m.finalAt+a.Horizon)
		m.state = "purged"
		delete(d.final, m.id)
	}
}

// PAnnounce is ev as a P announce statement, its strings written as literals; an event with a
// seq field first fills that field's variable (pSeqVars declares them). Errors: a string that
// cannot be written into a P string literal (pName).
func PAnnounce(ev SpecEvent) (string, error) {
	var pre, b strings.Builder
	typ := SpecEventTypes[ev.Kind]
	fmt.Fprintf(&b, "announce %s, ", typ.Event)
	vs := ev.Values
	var err error
	next := func(w *strings.Builder) {
		v := vs[0]
		vs = vs[1:]
		switch v := v.(type) {
		case string:
			if !pName.MatchString(v) && err == nil {
				err = fmt.Errorf("%q cannot be written into P", v)
			}
			w.WriteString(`"` + v + `"`)
		default:
			fmt.Fprint(w, v)
		}
	}
	var tuple func(w *strings.Builder, fs []SpecField)
	tuple = func(w *strings.Builder, fs []SpecField) {
		w.WriteByte('(')
		for i, f := range fs {
			if i > 0 {
				w.WriteString(", ")
			}
			w.WriteString(f.Name + " = ")
			switch f.Kind {
			case SpecTuple:
				tuple(w, f.Sub)
			case SpecSeq:
				n := vs[0].(int64)
				vs = vs[1:]
				fmt.Fprintf(&pre, "%s = default(%s); ", seqVar(f), f.Type)
				for j := range n {
					fmt.Fprintf(&pre, "%s += (%d, ", seqVar(f), j)
					if scalarSeq(f) {
						next(&pre)
					} else {
						tuple(&pre, f.Sub)
					}
					pre.WriteString("); ")
				}
				w.WriteString(seqVar(f))
			default:
				next(w)
			}
		}
		if len(fs) == 1 {
			w.WriteByte(',') // P's one-field tuple
		}
		w.WriteByte(')')
	}
	tuple(&b, typ.Fields)
	b.WriteByte(';')
	return pre.String() + b.String(), err
}

// seqVar is the P variable a driver fills for the seq field f.
func seqVar(f SpecField) string { return "seq_" + f.Name }

// scalarSeq reports whether the seq field f holds scalars (its one Sub field has no name), not
// named tuples.
func scalarSeq(f SpecField) bool { return len(f.Sub) == 1 && f.Sub[0].Name == "" }

// seqsOf counts the seq fields of typ.
func seqsOf(typ SpecEventType) int {
	n := 0
	for _, f := range typ.Fields {
		if f.Kind == SpecSeq {
			n++
		}
	}
	return n
}

// pSeqVars declares the variables of every seq field of the spec event types.
func pSeqVars() string {
	declared := map[string]bool{}
	var b strings.Builder
	for _, typ := range SpecEventTypes {
		for _, f := range typ.Fields {
			if f.Kind == SpecSeq && !declared[seqVar(f)] {
				declared[seqVar(f)] = true // fields of one name share their P type (TestSpecSeqVars)
				fmt.Fprintf(&b, "var %s: %s; ", seqVar(f), f.Type)
			}
		}
	}
	return b.String()
}

// AppendSpecLine appends ev as one line of the streaming driver's input: the kind's number (from
// 1), the tag (where the event came from, given back with a verdict), then the values, separated
// by tabs, ended by a newline. An int is decimal, a bool 1 or 0, a string has its backslashes,
// tabs and newlines escaped (\\, \t, \n). The tag must hold no tab or newline.
func AppendSpecLine(b []byte, ev SpecEvent, tag string) []byte {
	b = strconv.AppendInt(b, int64(ev.Kind)+1, 10)
	b = append(b, '\t')
	b = append(b, tag...)
	for _, v := range ev.Values {
		b = append(b, '\t')
		switch v := v.(type) {
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case bool:
			if v {
				b = append(b, '1')
			} else {
				b = append(b, '0')
			}
		case string:
			for i := 0; i < len(v); i++ {
				switch c := v[i]; c {
				case '\\':
					b = append(b, '\\', '\\')
				case '\t':
					b = append(b, '\\', 't')
				case '\n':
					b = append(b, '\\', 'n')
				default:
					b = append(b, c)
				}
			}
		}
	}
	return append(b, '\n')
}

// StreamMonitors are the monitors the streaming driver asserts: every one of ObservedMonitors,
// since both drivers raise SpecDeriver's events.
var StreamMonitors = ObservedMonitors

// PStreamTestCase is the test case of the streaming driver.
const PStreamTestCase = "tcObservedStream"

// PStreamMachine is the streaming driver's machine.
const PStreamMachine = "ObservedStream"

// PStreamDriver is the P source of the streaming driver: a machine that reads spec events at
// run time through the foreign functions StreamNext (the next line's kind, 0 at the end),
// StreamInt, StreamStr and StreamBool (its i-th value, from 0), hands each to the project's spec
// monitors, and a test case asserting StreamMonitors. The foreign functions are in
// pstream/StreamReader.cs; what they read is AppendSpecLine's output.
//
// An event goes to the monitors through the foreign StreamAnnounce when StreamDirect said at the
// start that it can (it dispatches as the runtime's announce does, to the same monitors in the
// same order, without formatting the event for the run's text and JSON logs: most of the
// checker's time per event), and through P's announce otherwise. Both statements are compiled,
// so P checks each payload against its event's declaration either way.
func PStreamDriver() string {
	var b strings.Builder
	b.WriteString("// Generated by pconform (bridge.PStreamDriver): hands the spec events it reads at run time to the monitors.\n")
	b.WriteString("fun StreamNext(): int;\nfun StreamInt(i: int): int;\nfun StreamStr(i: int): string;\nfun StreamBool(i: int): bool;\n")
	b.WriteString("fun StreamDirect(): bool;\nfun StreamAnnounce(e: event, payload: any);\n\n")
	fmt.Fprintf(&b, "machine %s {\n  start state Read {\n    entry {\n      var k: int;\n      var n: int;\n      var j: int;\n      var direct: bool;\n%s      %s\n      direct = StreamDirect();\n      k = StreamNext();\n      while (k != 0) {\n",
		PStreamMachine, offsetVars(), strings.TrimSpace(pSeqVars()))
	for k, typ := range SpecEventTypes {
		if k > 0 {
			b.WriteString(" else ")
		} else {
			b.WriteString("        ")
		}
		fmt.Fprintf(&b, "if (k == %d) {\n", k+1)
		var pre, ann strings.Builder
		i, seqs, base := 0, 0, ""
		// idx is the leaf index c after base (a P expression): the fields after a seq field are
		// counted from the end of its elements.
		idx := func(c int) string {
			if base == "" {
				return strconv.Itoa(c)
			}
			return fmt.Sprintf("%s + %d", base, c)
		}
		// read is the value at leaf index idx (a P expression) of a field of kind f.
		read := func(w *strings.Builder, f SpecField, idx string) {
			switch f.Kind {
			case SpecInt:
				fmt.Fprintf(w, "StreamInt(%s)", idx)
			case SpecString:
				fmt.Fprintf(w, "StreamStr(%s)", idx)
			case SpecBool:
				fmt.Fprintf(w, "StreamBool(%s)", idx)
			}
		}
		var tuple func(w *strings.Builder, fs []SpecField)
		tuple = func(w *strings.Builder, fs []SpecField) {
			w.WriteByte('(')
			for j, f := range fs {
				if j > 0 {
					w.WriteString(", ")
				}
				w.WriteString(f.Name + " = ")
				switch f.Kind {
				case SpecTuple:
					tuple(w, f.Sub)
					continue
				case SpecSeq:
					// The count at idx(i), then each element's leaves; the fields after it start
					// where its last element ends, which the run's count says: o<s> holds that.
					v, stride, at := seqVar(f), leaves(f.Sub), idx(i)
					fmt.Fprintf(&pre, "          %s = default(%s);\n          n = StreamInt(%s);\n          j = 0;\n          while (j < n) {\n            %s += (j, ", v, f.Type, at, v)
					if scalarSeq(f) {
						read(&pre, f.Sub[0], fmt.Sprintf("%s + 1 + j * %d", at, stride))
					} else {
						pre.WriteByte('(')
						for e, sf := range f.Sub {
							if e > 0 {
								pre.WriteString(", ")
							}
							pre.WriteString(sf.Name + " = ")
							read(&pre, sf, fmt.Sprintf("%s + %d + j * %d", at, 1+e, stride))
						}
						pre.WriteByte(')')
					}
					seqs++
					fmt.Fprintf(&pre, ");\n            j = j + 1;\n          }\n          o%d = %s + 1 + n * %d;\n", seqs, at, stride)
					w.WriteString(v)
					base, i = fmt.Sprintf("o%d", seqs), 0
					continue
				default:
					read(w, f, idx(i))
				}
				i++
			}
			if len(fs) == 1 {
				w.WriteByte(',') // P's one-field tuple
			}
			w.WriteByte(')')
		}
		tuple(&ann, typ.Fields)
		fmt.Fprintf(&b, "%s          if (direct) {\n            StreamAnnounce(%s, %s);\n          } else {\n            announce %s, %s;\n          }\n        }",
			pre.String(), typ.Event, ann.String(), typ.Event, ann.String())
	}
	fmt.Fprintf(&b, " else {\n          assert false, format(\"%s: unknown spec event kind {0}\", k);\n        }\n", PStreamErrorPrefix)
	b.WriteString("        k = StreamNext();\n      }\n    }\n  }\n}\n\n")
	fmt.Fprintf(&b, "test %s [main=%s]: assert %s in { %s };\n", PStreamTestCase, PStreamMachine, strings.Join(StreamMonitors, ", "), PStreamMachine)
	return b.String()
}

// offsetVars declares o1, o2, ...: one for each seq field an event type can have, the leaf
// index just past that field's elements.
func offsetVars() string {
	n := 0
	for _, typ := range SpecEventTypes {
		n = max(n, seqsOf(typ))
	}
	var b strings.Builder
	for s := 1; s <= n; s++ {
		fmt.Fprintf(&b, "      var o%d: int;\n", s)
	}
	return b.String()
}

// PStreamErrorPrefix begins an assertion message of the streaming driver itself (bad input),
// which is not a monitor's verdict.
const PStreamErrorPrefix = "pconform stream"

// SpecStep is ev, an event of a log, as the trace step SpecDeriver takes: its time in seconds
// since traces.Epoch, its tokens as numbers (a numeric token as itself, another as a hash; no
// monitor the P oracle asserts compares tokens, so no binding is kept).
func SpecStep(ev *observe.Event) traces.Step {
	return observe.StepAt(ev, func(_ traces.TokenSpace, tok string) int { return specToken(tok) })
}

// specToken is a token as a number: a numeric token as itself, another as a hash, 0 for none.
func specToken(tok string) int {
	if tok == "" {
		return 0
	}
	if n, err := strconv.Atoi(tok); err == nil {
		return n
	}
	h := fnv.New32a()
	h.Write([]byte(tok))
	return int(h.Sum32()&0x7fffffff) + 1
}
