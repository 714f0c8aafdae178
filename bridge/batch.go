package bridge

import (
	"encoding/json"
	"fmt"

	"github.com/pconform/pconform/traces"
)

// The batch steps' observations (docs/semantics.md, "Batches") carry lists the per-op table of
// observations.go does not derive: the fetched messages as the P model holds them (tFetched),
// the claimed rows of a batch delivery (tClaimed), and one outcome, action or duplicate flag per
// message or row. models/p/PSrc/Observations.p declares them by hand, and each has a decoder of
// its own here, so the payload names stay the model's while the step is the trace format's.

// batchObservation is one hand-declared observation: its op, its payload fields in contract
// order (all of them, `at` and `bug` included), and its decoder.
type batchObservation struct {
	op     traces.Op
	fields []string
	decode func(o *object, step *traces.Step) error
}

var batchObservations = map[string]batchObservation{
	"eObsConsumerFetchBatch": {
		op:     traces.OpConsumerFetchBatch,
		fields: []string{"at", "worker", "mailbox", "profile", "size", "lease_for", "messages", "bug"},
		decode: decodeFetchBatch,
	},
	"eObsConsumerHandleBatch": {
		op:     traces.OpConsumerHandleBatch,
		fields: []string{"at", "worker", "mailbox", "profile", "outcomes", "retry_delay", "fault", "actions", "bug"},
		decode: decodeHandleBatch,
	},
	"eObsConsumerEffectsBatch": {
		op:     traces.OpConsumerEffectsBatch,
		fields: []string{"at", "worker", "mailbox", "fault", "ids", "bug"},
		decode: decodeEffectsBatch,
	},
	"eObsPublisherDeliverBatch": {
		op:     traces.OpPublisherDeliverBatch,
		fields: []string{"at", "publisher", "rows", "fault", "retry_delay", "actions", "duplicates", "bug"},
		decode: decodeDeliverBatch,
	},
}

// HandDeclared reports whether op's observation event is declared by hand in
// models/p/PSrc/Observations.p rather than generated from traces.Spec: the batch steps, whose
// payloads carry lists in the model's own types.
func HandDeclared(op traces.Op) bool {
	for _, b := range batchObservations {
		if b.op == op {
			return true
		}
	}
	return false
}

// decodeBatch reads one batch observation's payload into a step.
func decodeBatch(b batchObservation, payload json.RawMessage) (step traces.Step, bug bool, err error) {
	o, err := decodeObject(payload, "")
	if err != nil {
		return traces.Step{}, false, err
	}
	step.Op = b.op
	if step.At, err = o.int("at"); err != nil {
		return traces.Step{}, false, err
	}
	if err := b.decode(o, &step); err != nil {
		return traces.Step{}, false, err
	}
	if bug, err = o.bool("bug"); err != nil {
		return traces.Step{}, false, err
	}
	if err := o.done(); err != nil {
		return traces.Step{}, false, err
	}
	return step, bug, nil
}

// ints reads the named integer fields into their destinations.
func ints(o *object, dst map[string]*int64) error {
	for name, d := range dst {
		v, err := o.int(name)
		if err != nil {
			return err
		}
		*d = v
	}
	return nil
}

func decodeFetchBatch(o *object, s *traces.Step) error {
	var worker, size int64
	if err := ints(o, map[string]*int64{"worker": &worker, "size": &size, "lease_for": &s.Args.LeaseFor}); err != nil {
		return err
	}
	s.Args.Worker, s.Args.Size = int(worker), int(size)
	var err error
	if s.Args.Mailbox, err = o.str("mailbox"); err != nil {
		return err
	}
	if s.Args.Profile, err = o.str("profile"); err != nil {
		return err
	}
	items, err := o.array("messages")
	if err != nil {
		return err
	}
	for i, item := range items {
		m, err := decodeObject(item, fmt.Sprintf("messages[%d]", i))
		if err != nil {
			return err
		}
		var msg traces.Message
		mailbox, err := m.str("mailbox")
		if err != nil {
			return err
		}
		if mailbox != s.Args.Mailbox {
			return m.errorf("mailbox", "%q, but the batch fetched from mailbox %q", mailbox, s.Args.Mailbox)
		}
		if msg.ID, err = m.str("id"); err != nil {
			return err
		}
		var attempts, token, maxAttempts int64
		if err := ints(m, map[string]*int64{"attempts": &attempts, "token": &token, "max_attempts": &maxAttempts}); err != nil {
			return err
		}
		msg.Attempts, msg.Token = int(attempts), int(token)
		if err := m.done(); err != nil {
			return err
		}
		s.Result.Messages = append(s.Result.Messages, msg)
	}
	return nil
}

func decodeHandleBatch(o *object, s *traces.Step) error {
	var worker int64
	if err := ints(o, map[string]*int64{"worker": &worker, "retry_delay": &s.Args.RetryDelay}); err != nil {
		return err
	}
	s.Args.Worker = int(worker)
	var err error
	if s.Args.Mailbox, err = o.str("mailbox"); err != nil {
		return err
	}
	if s.Args.Profile, err = o.str("profile"); err != nil {
		return err
	}
	if s.Args.Fault, err = fault(o); err != nil {
		return err
	}
	if s.Args.Outcomes, err = strs(o, "outcomes"); err != nil {
		return err
	}
	s.Result.Actions, err = strs(o, "actions")
	return err
}

func decodeEffectsBatch(o *object, s *traces.Step) error {
	worker, err := o.int("worker")
	if err != nil {
		return err
	}
	s.Args.Worker = int(worker)
	if s.Args.Mailbox, err = o.str("mailbox"); err != nil {
		return err
	}
	if s.Args.Fault, err = fault(o); err != nil {
		return err
	}
	s.Result.Effects, err = strs(o, "ids")
	return err
}

func decodeDeliverBatch(o *object, s *traces.Step) error {
	var publisher int64
	if err := ints(o, map[string]*int64{"publisher": &publisher, "retry_delay": &s.Args.RetryDelay}); err != nil {
		return err
	}
	s.Args.Publisher = int(publisher)
	var err error
	if s.Args.Fault, err = fault(o); err != nil {
		return err
	}
	rows, err := decodeClaimed(o, "rows")
	if err != nil {
		return err
	}
	// One claim issues one token for its whole batch: the step carries it once.
	for i, r := range rows {
		if r.Token != rows[0].Token {
			return o.errorf(fmt.Sprintf("rows[%d].token", i), "%d, but rows[0] has token %d; a batch is one claim's rows", r.Token, rows[0].Token)
		}
		s.Args.IDs = append(s.Args.IDs, r.ID)
		s.Args.Token = r.Token
	}
	if s.Result.Actions, err = strs(o, "actions"); err != nil {
		return err
	}
	items, err := o.array("duplicates")
	if err != nil {
		return err
	}
	for i, item := range items {
		switch string(item) {
		case "true", "false":
			s.Result.Duplicates = append(s.Result.Duplicates, string(item) == "true")
		default:
			return o.errorf(fmt.Sprintf("duplicates[%d]", i), "want a bool, got %s", describeJSON(item))
		}
	}
	return nil
}

// fault reads a batch step's fault: the model says "" for none, the trace format "none".
func fault(o *object) (string, error) {
	f, err := o.str("fault")
	if f == "" && err == nil {
		f = traces.FaultNone
	}
	return f, err
}

// strs reads a list of strings; an empty list reads as nil, as the trace format reads it.
func strs(o *object, field string) ([]string, error) {
	items, err := o.array(field)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, item := range items {
		var s string
		if len(item) == 0 || item[0] != '"' || json.Unmarshal(item, &s) != nil {
			return nil, o.errorf(fmt.Sprintf("%s[%d]", field, i), "want a string, got %s", describeJSON(item))
		}
		out = append(out, s)
	}
	return out, nil
}
