package bridge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pconform/pconform/traces"
)

// obsSpec is what the bridge expects of one observation event: the op it stands for and the
// payload fields it carries, in contract order.
type obsSpec struct {
	op     traces.Op
	fields []string
}

// opsWithBug are the ops whose observation carries a `bug` flag: the steps a deliberately broken
// profile can change.
var opsWithBug = map[traces.Op]bool{
	traces.OpLease:            true,
	traces.OpConsumerFetch:    true,
	traces.OpConsumerHandle:   true,
	traces.OpPublisherDeliver: true,
}

// The flattened form of Result.Message in a payload.
const (
	fieldMsgID       = "msg_id"
	fieldMsgAttempts = "msg_attempts"
	fieldMsgToken    = "msg_token"
)

// observations maps each observation event to its spec. It is derived from traces.Spec, so the
// payload of eObs<Op> is exactly `at`, the op's Args, OptionalArgs and Results (message
// flattened to msg_id, msg_attempts, msg_token) and, for opsWithBug, `bug`. Read-only after
// initialisation.
var observations = buildObservations()

func buildObservations() map[string]obsSpec {
	table := make(map[string]obsSpec, len(traces.Ops))
	for _, op := range traces.Ops {
		spec, ok := traces.Spec[op]
		if !ok {
			panic(fmt.Sprintf("bridge: traces.Spec has no entry for op %q", op))
		}
		fields := []string{"at"}
		fields = append(fields, spec.Args...)
		fields = append(fields, spec.OptionalArgs...)
		for _, r := range spec.Results {
			if r == "message" {
				fields = append(fields, fieldMsgID, fieldMsgAttempts, fieldMsgToken)
				continue
			}
			fields = append(fields, r)
		}
		if opsWithBug[op] {
			fields = append(fields, "bug")
		}
		for _, f := range fields {
			if _, ok := fieldKinds[f]; !ok {
				panic(fmt.Sprintf("bridge: op %q has field %q the bridge cannot decode", op, f))
			}
		}
		table[EventName(op)] = obsSpec{op: op, fields: fields}
	}
	return table
}

// EventName is the observation event announced for op: "eObs" and the op in CamelCase
// (ack_by_id -> eObsAckById).
func EventName(op traces.Op) string {
	var b strings.Builder
	b.WriteString(ObsPrefix)
	for _, part := range strings.Split(string(op), "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	return b.String()
}

func observationNames() []string {
	names := make([]string, 0, len(observations))
	for n := range observations {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

type fieldKind int

const (
	kindString fieldKind = iota + 1
	kindInt
	kindBool
	kindClaimed
)

// fieldKinds gives the JSON type of every payload field any observation may carry.
var fieldKinds = map[string]fieldKind{
	"at": kindInt,
	// Args.
	"mailbox": kindString, "id": kindString, "key": kindString, "priority": kindInt,
	"max_attempts": kindInt, "delay": kindInt, "payload": kindString, "lease_for": kindInt,
	"token": kindInt, "reason": kindString, "target": kindString, "limit": kindInt,
	"claim_for": kindInt, "worker": kindInt, "publisher": kindInt, "profile": kindString,
	"outcome": kindString, "retry_delay": kindInt, "fault": kindString,
	// Results.
	"err": kindString, "duplicate": kindBool, "affected": kindInt, "claimed": kindClaimed,
	"action": kindString, "attempt": kindInt,
	fieldMsgID: kindString, fieldMsgAttempts: kindInt, fieldMsgToken: kindInt,
	"bug": kindBool,
}

// decodeStep reads one observation's payload into a step; bug is the payload's bug flag (false
// for ops without one).
func decodeStep(spec obsSpec, payload json.RawMessage) (step traces.Step, bug bool, err error) {
	obj, err := decodeObject(payload, "")
	if err != nil {
		return traces.Step{}, false, err
	}
	step.Op = spec.op
	var msg traces.Message
	for _, f := range spec.fields {
		switch fieldKinds[f] {
		case kindString:
			v, err := obj.str(f)
			if err != nil {
				return traces.Step{}, false, err
			}
			switch f {
			case fieldMsgID:
				msg.ID = v
			default:
				setString(&step, f, v)
			}
		case kindInt:
			v, err := obj.int(f)
			if err != nil {
				return traces.Step{}, false, err
			}
			switch f {
			case "at":
				step.At = v
			case fieldMsgAttempts:
				msg.Attempts = int(v)
			case fieldMsgToken:
				msg.Token = int(v)
			default:
				setInt(&step, f, v)
			}
		case kindBool:
			v, err := obj.bool(f)
			if err != nil {
				return traces.Step{}, false, err
			}
			switch f {
			case "bug":
				bug = v
			case "duplicate":
				step.Result.Duplicate = v
			}
		case kindClaimed:
			rows, err := decodeClaimed(obj, f)
			if err != nil {
				return traces.Step{}, false, err
			}
			step.Result.Claimed = rows
		}
	}
	if err := obj.done(); err != nil {
		return traces.Step{}, false, err
	}
	if slices.Contains(spec.fields, fieldMsgID) {
		if msg.ID == "" {
			// No message: the other two fields must hold their "none" values too, or the model
			// announced something the trace cannot say.
			if msg.Attempts != 0 || msg.Token != 0 {
				return traces.Step{}, false, &fieldError{field: fieldMsgID, msg: fmt.Sprintf(
					"empty (no message) but msg_attempts = %d, msg_token = %d", msg.Attempts, msg.Token)}
			}
		} else {
			m := msg
			step.Result.Message = &m
		}
	}
	return step, bug, nil
}

func setString(step *traces.Step, field, v string) {
	a, r := &step.Args, &step.Result
	switch field {
	case "mailbox":
		a.Mailbox = v
	case "id":
		a.ID = v
	case "key":
		a.Key = v
	case "payload":
		a.Payload = v
	case "reason":
		a.Reason = v
	case "target":
		a.Target = v
	case "profile":
		a.Profile = v
	case "outcome":
		a.Outcome = v
	case "fault":
		a.Fault = v
	case "err":
		r.Err = v
	case "action":
		r.Action = v
	default:
		panic("bridge: no string field " + field) // fieldKinds and this switch disagree
	}
}

func setInt(step *traces.Step, field string, v int64) {
	a, r := &step.Args, &step.Result
	switch field {
	case "priority":
		a.Priority = int(v)
	case "max_attempts":
		a.MaxAttempts = int(v)
	case "delay":
		a.Delay = v
	case "lease_for":
		a.LeaseFor = v
	case "token":
		a.Token = int(v)
	case "limit":
		a.Limit = int(v)
	case "claim_for":
		a.ClaimFor = v
	case "worker":
		a.Worker = int(v)
	case "publisher":
		a.Publisher = int(v)
	case "retry_delay":
		a.RetryDelay = v
	case "affected":
		r.Affected = int(v)
	case "attempt":
		r.Attempt = int(v)
	default:
		panic("bridge: no int field " + field) // fieldKinds and this switch disagree
	}
}

func decodeClaimed(obj *object, field string) ([]traces.Claimed, error) {
	items, err := obj.array(field)
	if err != nil {
		return nil, err
	}
	var rows []traces.Claimed
	for i, item := range items {
		row, err := decodeObject(item, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		var c traces.Claimed
		if c.ID, err = row.str("id"); err != nil {
			return nil, err
		}
		n, err := row.int("delivery_attempts")
		if err != nil {
			return nil, err
		}
		c.DeliveryAttempts = int(n)
		if n, err = row.int("token"); err != nil {
			return nil, err
		}
		c.Token = int(n)
		if err := row.done(); err != nil {
			return nil, err
		}
		rows = append(rows, c)
	}
	return rows, nil
}

// ObservationFields returns, for every observation event but eObsFinal, its payload fields in
// contract order. The result is a fresh copy.
func ObservationFields() map[string][]string {
	out := make(map[string][]string, len(observations))
	for ev, spec := range observations {
		out[ev] = slices.Clone(spec.fields)
	}
	return out
}

// ConvertObservation converts one observation's payload into a step; bug is the payload's bug
// flag (false for events without one). It is [Convert] for a single event, without the schedule
// context: errors are [*LogError]s wrapping [ErrBadObservation] that name the event and field.
func ConvertObservation(event string, payload json.RawMessage) (step traces.Step, bug bool, err error) {
	spec, ok := observations[event]
	if !ok {
		return traces.Step{}, false, observationError(0, Event{Entry: -1, Name: event}, fmt.Errorf("unknown observation event"))
	}
	step, bug, err = decodeStep(spec, payload)
	if err != nil {
		return traces.Step{}, false, observationError(0, Event{Entry: -1, Name: event}, err)
	}
	return step, bug, nil
}
