package observe

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/pconform/pconform/traces"
)

// The P oracle's spec events: the one place that says which events of the project's spec
// monitors (models/p/PSpec) an observed history raises, with which payloads, from which observed
// results. Both P drivers use it: PDriver writes the events of a trace into the source of a test
// case, and the streaming driver (PStreamDriver, run by bridge) reads them at run time, one line
// each (AppendSpecLine).

// SpecFieldKind is the P type of a spec event's payload field.
type SpecFieldKind int

const (
	SpecInt SpecFieldKind = iota
	SpecString
	SpecBool
	// SpecTuple is a named tuple whose fields are Sub (a row, as eSpecOutboxRow's).
	SpecTuple
)

// SpecField is one payload field of a spec event, in the order of its P type.
type SpecField struct {
	Name string
	Kind SpecFieldKind
	Sub  []SpecField
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

func fi(name string) SpecField { return SpecField{Name: name, Kind: SpecInt} }
func fs(name string) SpecField { return SpecField{Name: name, Kind: SpecString} }
func fb(name string) SpecField { return SpecField{Name: name, Kind: SpecBool} }

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
	SpecWorkerWake
	SpecConsumerFetch
	SpecPollTick
	SpecCrash
	numSpecKinds
)

// SpecKind names a spec event type: an index into SpecEventTypes.
type SpecKind int

// SpecEventTypes are the spec event types, indexed by SpecKind.
var SpecEventTypes = [numSpecKinds]SpecEventType{
	SpecMsgInserted:     {"eSpecMsgInserted", []SpecField{fi("at"), fs("mailbox"), fs("id")}},
	SpecOutboxEnqueued:  {"eSpecOutboxEnqueued", []SpecField{fi("at"), fs("id"), fs("target")}},
	SpecOutboxCompleted: {"eSpecOutboxCompleted", []SpecField{fi("at"), fs("id"), fs("target")}},
	SpecEffect:          {"eSpecEffect", []SpecField{fi("at"), fs("mailbox"), fs("id")}},
	SpecDeadLettered: {"eSpecDeadLettered", []SpecField{fi("at"), fs("mailbox"), fs("id"), fi("attempts"),
		fi("max_attempts"), fs("reason")}},
	SpecOutboxRow: {"eSpecOutboxRow", []SpecField{fi("at"), {Name: "row", Kind: SpecTuple, Sub: []SpecField{
		fs("id"), fs("target"), fs("key"), fi("priority"), fi("max_attempts"), fs("payload"), fs("row_state"),
		fi("delivery_attempts"), fi("available_at"), fi("token"), fi("claim_until"), fi("seqno"),
		fi("max_delivery_attempts"), fs("dead_reason")}}}},
	SpecMarkProcessed: {"eObsMarkProcessed", []SpecField{fi("at"), fs("consumer"), fs("id"), fi("ttl"),
		fb("duplicate"), fb("bug")}},
	SpecSaveCheckpoint: {"eObsSaveCheckpoint", []SpecField{fi("at"), fs("actor"), fi("expect_version"), fs("payload"),
		fi("version"), fs("err"), fb("bug")}},
	SpecLoadCheckpoint: {"eObsLoadCheckpoint", []SpecField{fi("at"), fs("actor"), fi("version"), fs("err")}},
	SpecWake:           {"eSpecWake", []SpecField{fi("at"), fs("mailbox"), fs("id")}},
	SpecWorkerWake:     {"eObsWake", []SpecField{fi("at"), fi("worker"), fs("mailbox"), fs("id"), fs("profile"), fs("err")}},
	SpecConsumerFetch: {"eObsConsumerFetch", []SpecField{fi("at"), fi("worker"), fs("mailbox"), fs("profile"),
		fi("lease_for"), fs("msg_id"), fi("msg_attempts"), fi("msg_token"), fb("bug")}},
	SpecPollTick: {"eObsPollTick", []SpecField{fi("at"), fi("worker"), fs("mailbox"), fs("err")}},
	SpecCrash:    {"eObsCrash", []SpecField{fi("at")}},
}

// SpecEvent is one spec event: its type and its payload's scalar values in field order (a tuple's
// fields in place), each an int64, string or bool as its field's kind says.
type SpecEvent struct {
	Kind   SpecKind
	Values []any
}

// SpecDeriver maps an observed history, one step at a time in commit order, to the spec events
// its results state: a message inserted into a mailbox (an enqueue or a delivery that was not a
// duplicate), an outbox row enqueued and completed, a handler effect committed (a consumer_handle
// that acked the message its worker fetched), a dead letter with its attempts, each claimed
// outbox row's delivery attempts against its bound, the store's observations of processed
// marks and checkpoint saves and loads, each consumer's recorded wake and poll tick, and a fetch
// that answers a wake. The events come from the observed results alone, never
// from a model. It keeps, per id, what later steps refer to (an outbox row's target and enqueue,
// a message's max_attempts) and each worker's unhandled fetch.
type SpecDeriver struct {
	outboxTarget map[string]string
	outboxRows   map[string]traces.Args // an outbox row's enqueue, for its claims
	maxAttempts  map[string]int
	fetched      map[int]traces.Message
	fetchedBox   map[int]string
	// woken holds each worker and mailbox with a wake not yet answered by a fetch: only such a
	// fetch is stated to WokenWorkerFetchesBeforeTick, which ignores every other.
	woken map[workerBox]bool
}

// workerBox is a worker and a mailbox it serves.
type workerBox struct {
	worker  int
	mailbox string
}

// NewSpecDeriver returns a deriver at the start of a history.
func NewSpecDeriver() *SpecDeriver {
	return &SpecDeriver{outboxTarget: map[string]string{}, outboxRows: map[string]traces.Args{},
		maxAttempts: map[string]int{}, fetched: map[int]traces.Message{}, fetchedBox: map[int]string{}, woken: map[workerBox]bool{}}
}

// Step appends to out the spec events of st, the next step in commit order, and returns it.
func (d *SpecDeriver) Step(st traces.Step, out []SpecEvent) []SpecEvent {
	a, r := st.Args, st.Result
	at := st.At
	add := func(k SpecKind, vs ...any) { out = append(out, SpecEvent{Kind: k, Values: vs}) }
	switch st.Op {
	case traces.OpEnqueue:
		if !r.Duplicate {
			d.maxAttempts[a.ID] = a.MaxAttempts
			add(SpecMsgInserted, at, a.Mailbox, a.ID)
		}
	case traces.OpOutboxEnqueue:
		if !r.Duplicate {
			d.maxAttempts[a.ID] = a.MaxAttempts // the delivered message's too
			d.outboxTarget[a.ID] = a.Target
			if a.MaxDeliveryAttempts > 0 {
				d.outboxRows[a.ID] = a
			}
			add(SpecOutboxEnqueued, at, a.ID, a.Target)
		}
	case traces.OpOutboxClaim:
		// A claim's result states each claimed row's delivery attempts, and the row's
		// outbox_enqueue its bound: all OutboxDeliveryBounded reads of the row. The row is
		// pending and claimed until the claim runs out; the fields no result states (seqno,
		// payload) stay empty, and no monitor that reads them is asserted.
		for _, c := range r.Claimed {
			row, ok := d.outboxRows[c.ID]
			if !ok {
				continue
			}
			add(SpecOutboxRow, at, c.ID, row.Target, row.Key, int64(row.Priority), int64(row.MaxAttempts), "", "pending",
				int64(c.DeliveryAttempts), at, int64(c.Token), at+a.ClaimFor, int64(0), int64(row.MaxDeliveryAttempts), "")
		}
	case traces.OpMarkProcessed:
		add(SpecMarkProcessed, at, a.Consumer, a.ID, a.TTL, r.Duplicate, false)
	case traces.OpSaveCheckpoint:
		add(SpecSaveCheckpoint, at, a.Actor, int64(a.ExpectVersion), "", int64(r.Version), r.Err, false)
	case traces.OpLoadCheckpoint:
		add(SpecLoadCheckpoint, at, a.Actor, int64(r.Version), r.Err)
	case traces.OpOutboxComplete:
		if r.Err == "" {
			add(SpecOutboxCompleted, at, a.ID, d.outboxTarget[a.ID])
		}
	case traces.OpPublisherDeliver:
		// What committed follows from the action and the fault: commit_fails fails the step's
		// first commit (the split path's enqueue, the fold's only one), so its enqueue never
		// committed, whatever the action says; crash_between stops the step right after its
		// first commit (the split path's enqueue; the fold's enqueue and completion).
		target := d.outboxTarget[a.ID]
		// The split path's enqueue commits before its completion is fenced, so a split claim_lost
		// enqueued (PDriver's deliver states the same rule).
		enqueued := (r.Action == traces.ActionDelivered || r.Action == traces.ActionCrashed ||
			r.Action == traces.ActionClaimLost && a.Profile == traces.ProfileSplit) &&
			a.Fault != traces.FaultCommitFails && a.Fault != traces.FaultUndeliverable
		completed := r.Action == traces.ActionDelivered || r.Action == traces.ActionCrashed && a.Profile == traces.ProfileFold
		if enqueued && !r.Duplicate {
			add(SpecMsgInserted, at, target, a.ID)
		}
		if completed {
			add(SpecOutboxCompleted, at, a.ID, target)
		}
	case traces.OpWake:
		if r.Err == "" { // as PDriver: a stated not_committed is the trace's own verdict
			add(SpecWake, at, a.Mailbox, a.ID)
			add(SpecWorkerWake, at, int64(a.Worker), a.Mailbox, a.ID, a.Profile, "")
			d.woken[workerBox{a.Worker, a.Mailbox}] = true
		}
	case traces.OpPollTick:
		if r.Err == "" { // as PDriver: a stated wake_not_fetched is the trace's own verdict
			add(SpecPollTick, at, int64(a.Worker), a.Mailbox, "")
		}
	case traces.OpCrash:
		clear(d.woken)
		add(SpecCrash, at)
	case traces.OpConsumerFetch:
		if k := (workerBox{a.Worker, a.Mailbox}); d.woken[k] {
			delete(d.woken, k)
			var m traces.Message
			if r.Message != nil {
				m = *r.Message
			}
			add(SpecConsumerFetch, at, int64(a.Worker), a.Mailbox, a.Profile, a.LeaseFor, m.ID, int64(m.Attempts), int64(m.Token), false)
		}
		if r.Message != nil {
			d.fetched[a.Worker] = *r.Message
			d.fetchedBox[a.Worker] = a.Mailbox
		}
	case traces.OpConsumerHandle:
		m, ok := d.fetched[a.Worker]
		if !ok {
			break
		}
		delete(d.fetched, a.Worker)
		switch r.Action {
		case traces.ActionAcked:
			add(SpecEffect, at, d.fetchedBox[a.Worker], m.ID)
		case traces.ActionDeadLettered:
			reason := traces.ReasonMaxAttempts
			if a.Outcome == traces.OutcomeFailNoRetry && r.Attempt < d.maxAttempts[m.ID] {
				reason = traces.ReasonHandlerFailed
			}
			add(SpecDeadLettered, at, d.fetchedBox[a.Worker], m.ID, int64(r.Attempt), int64(d.maxAttempts[m.ID]), reason)
		}
	}
	return out
}

// PAnnounce is ev as a P announce statement, its strings written as literals. Errors: a string
// that cannot be written into a P string literal (pName).
func PAnnounce(ev SpecEvent) (string, error) {
	var b strings.Builder
	typ := SpecEventTypes[ev.Kind]
	fmt.Fprintf(&b, "announce %s, ", typ.Event)
	vs := ev.Values
	var err error
	var tuple func(fs []SpecField)
	tuple = func(fs []SpecField) {
		b.WriteByte('(')
		for i, f := range fs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name + " = ")
			if f.Kind == SpecTuple {
				tuple(f.Sub)
				continue
			}
			v := vs[0]
			vs = vs[1:]
			switch v := v.(type) {
			case string:
				if !pName.MatchString(v) && err == nil {
					err = fmt.Errorf("%q cannot be written into P", v)
				}
				b.WriteString(`"` + v + `"`)
			default:
				fmt.Fprint(&b, v)
			}
		}
		if len(fs) == 1 {
			b.WriteByte(',') // a one-field tuple, as P writes it
		}
		b.WriteByte(')')
	}
	tuple(typ.Fields)
	b.WriteByte(';')
	return b.String(), err
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

// StreamMonitors are the monitors the streaming driver asserts: those whose events SpecDeriver
// states completely. The other ObservedMonitors need the row copies only PDriver keeps.
var StreamMonitors = []string{"OutboxCompletionImpliesDelivery", "OutboxTargetDeliveredAtMostOnce",
	"EffectAppliedAtMostOnce", "AttemptsNeverExceedMax", "OutboxDeliveryBounded", "DedupMarkHonoursTtl",
	"CheckpointVersionsOnlyGrow", "WakeFollowsCommit", "WokenWorkerFetchesBeforeTick"}

// PStreamTestCase is the test case of the streaming driver.
const PStreamTestCase = "tcObservedStream"

// PStreamMachine is the streaming driver's machine.
const PStreamMachine = "ObservedStream"

// PStreamDriver is the P source of the streaming driver: a machine that reads spec events at
// run time through the foreign functions StreamNext (the next line's kind, 0 at the end),
// StreamInt, StreamStr and StreamBool (its i-th value, from 0), announces each into the project's
// spec monitors, and a test case asserting StreamMonitors. The foreign functions are
// bridge's; what they read is AppendSpecLine's output.
func PStreamDriver() string {
	var b strings.Builder
	b.WriteString("// Generated by pconform (observe.PStreamDriver): announces the spec events it reads at run time.\n")
	b.WriteString("fun StreamNext(): int;\nfun StreamInt(i: int): int;\nfun StreamStr(i: int): string;\nfun StreamBool(i: int): bool;\n\n")
	fmt.Fprintf(&b, "machine %s {\n  start state Read {\n    entry {\n      var k: int;\n      k = StreamNext();\n      while (k != 0) {\n", PStreamMachine)
	for k, typ := range SpecEventTypes {
		if k > 0 {
			b.WriteString(" else ")
		} else {
			b.WriteString("        ")
		}
		fmt.Fprintf(&b, "if (k == %d) {\n          announce %s, ", k+1, typ.Event)
		i := 0
		var tuple func(fs []SpecField)
		tuple = func(fs []SpecField) {
			b.WriteByte('(')
			for j, f := range fs {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(f.Name + " = ")
				switch f.Kind {
				case SpecTuple:
					tuple(f.Sub)
					continue
				case SpecInt:
					fmt.Fprintf(&b, "StreamInt(%d)", i)
				case SpecString:
					fmt.Fprintf(&b, "StreamStr(%d)", i)
				case SpecBool:
					fmt.Fprintf(&b, "StreamBool(%d)", i)
				}
				i++
			}
			if len(fs) == 1 {
				b.WriteByte(',') // a one-field tuple, as P writes it
			}
			b.WriteByte(')')
		}
		tuple(typ.Fields)
		b.WriteString(";\n        }")
	}
	fmt.Fprintf(&b, " else {\n          assert false, format(\"%s: unknown spec event kind {0}\", k);\n        }\n", PStreamErrorPrefix)
	b.WriteString("        k = StreamNext();\n      }\n    }\n  }\n}\n\n")
	fmt.Fprintf(&b, "test %s [main=%s]: assert %s in { %s };\n", PStreamTestCase, PStreamMachine, strings.Join(StreamMonitors, ", "), PStreamMachine)
	return b.String()
}

// PStreamErrorPrefix begins an assertion message of the streaming driver itself (bad input),
// which is not a monitor's verdict.
const PStreamErrorPrefix = "pconform stream"

// SpecStep is ev, an event of a log, as the trace step SpecDeriver takes: its time in seconds
// since traces.Epoch, its tokens as numbers (a numeric token as itself, another as a hash; no
// monitor the P oracle asserts compares tokens, so no binding is kept).
func SpecStep(ev *Event) traces.Step {
	return step(ev, int64(ev.At.Sub(traces.Epoch)/time.Second), func(_ traces.TokenSpace, tok string) int {
		if tok == "" {
			return 0
		}
		if n, err := strconv.Atoi(tok); err == nil {
			return n
		}
		h := fnv.New32a()
		h.Write([]byte(tok))
		return int(h.Sum32()&0x7fffffff) + 1
	})
}
