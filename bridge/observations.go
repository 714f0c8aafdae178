package bridge

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pconform/pconform/traces"
)

// obsSpec is what the bridge expects of one observation event: the op it stands for and the
// payload fields it carries, in contract order.
type obsSpec struct {
	op     traces.Op
	fields []string
	// batch, when set, decodes the payload instead of the derived rules (see batch.go).
	batch *batchObservation
}

// opsWithBug are the ops whose observation carries a `bug` flag: the steps a deliberately broken
// profile can change.
var opsWithBug = map[traces.Op]bool{
	traces.OpEnqueue:          true,
	traces.OpLease:            true,
	traces.OpOutboxClaim:      true,
	traces.OpConsumerFetch:    true,
	traces.OpConsumerHandle:   true,
	traces.OpPublisherDeliver: true,
	traces.OpMarkProcessed:    true,
	traces.OpSaveCheckpoint:   true,
	traces.OpListRedrives:     true,
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
	for ev, b := range batchObservations {
		table[ev] = obsSpec{op: b.op, fields: b.fields, batch: &b}
	}
	for _, op := range traces.Ops {
		if HandDeclared(op) {
			continue
		}
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
	kindRedrives
)

// fieldKinds gives the JSON type of every payload field any observation may carry: the scalar
// fields of traces.Args and traces.Result under their JSON names, and the bridge's own fields.
// Read-only after initialisation.
var fieldKinds = buildFieldKinds()

// stepFields locates each scalar field of traces.Args and traces.Result by its JSON name, so
// the bridge sets a decoded value without a switch of its own. Read-only after initialisation.
var stepFields = buildStepFields()

// stepField is one scalar field of a step: in the step's Args or Result, at index.
type stepField struct {
	inResult bool
	index    int
	kind     fieldKind
}

func buildStepFields() map[string]stepField {
	out := map[string]stepField{}
	add := func(t reflect.Type, inResult bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			var k fieldKind
			switch f.Type.Kind() {
			case reflect.String:
				k = kindString
			case reflect.Int, reflect.Int64:
				k = kindInt
			case reflect.Bool:
				k = kindBool
			default:
				continue // message, claimed and redrives: decoded by the bridge's own rules
			}
			out[name] = stepField{inResult: inResult, index: i, kind: k}
		}
	}
	add(reflect.TypeFor[traces.Args](), false)
	add(reflect.TypeFor[traces.Result](), true)
	return out
}

func buildFieldKinds() map[string]fieldKind {
	kinds := map[string]fieldKind{
		"at":       kindInt,
		"bug":      kindBool,
		"claimed":  kindClaimed,
		"redrives": kindRedrives,
		fieldMsgID: kindString, fieldMsgAttempts: kindInt, fieldMsgToken: kindInt,
	}
	for name, f := range stepFields {
		kinds[name] = f.kind
	}
	return kinds
}

// decodeStep reads one observation's payload into a step; bug is the payload's bug flag (false
// for ops without one).
func decodeStep(spec obsSpec, payload json.RawMessage) (step traces.Step, bug bool, err error) {
	if spec.batch != nil {
		return decodeBatch(*spec.batch, payload)
	}
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
				setField(&step, f, v)
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
				setField(&step, f, v)
			}
		case kindBool:
			v, err := obj.bool(f)
			if err != nil {
				return traces.Step{}, false, err
			}
			switch f {
			case "bug":
				bug = v
			default:
				setField(&step, f, v)
			}
		case kindClaimed:
			rows, err := decodeClaimed(obj, f)
			if err != nil {
				return traces.Step{}, false, err
			}
			step.Result.Claimed = rows
		case kindRedrives:
			rows, err := decodeRedrives(obj, f)
			if err != nil {
				return traces.Step{}, false, err
			}
			step.Result.Redrives = rows
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

// setField sets the scalar step field named field to v (a string, int64 or bool, as its kind).
func setField(step *traces.Step, field string, v any) {
	f, ok := stepFields[field]
	if !ok {
		panic("bridge: no step field " + field) // fieldKinds and stepFields disagree
	}
	target := reflect.ValueOf(&step.Args).Elem()
	if f.inResult {
		target = reflect.ValueOf(&step.Result).Elem()
	}
	dst := target.Field(f.index)
	switch x := v.(type) {
	case string:
		dst.SetString(x)
	case int64:
		dst.SetInt(x)
	case bool:
		dst.SetBool(x)
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

// decodeRedrives reads a seq[tRedriveRec]: each record's members are the trace format's names.
func decodeRedrives(obj *object, field string) ([]traces.RedriveRecord, error) {
	items, err := obj.array(field)
	if err != nil {
		return nil, err
	}
	var rows []traces.RedriveRecord
	for i, item := range items {
		row, err := decodeObject(item, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		var r traces.RedriveRecord
		for _, s := range []struct {
			name string
			dst  *string
		}{{"id", &r.ID}, {"kind", &r.Kind}, {"mailbox", &r.Mailbox}, {"dead_reason", &r.DeadReason}, {"reason", &r.Reason}} {
			if *s.dst, err = row.str(s.name); err != nil {
				return nil, err
			}
		}
		n, err := row.int("attempts")
		if err != nil {
			return nil, err
		}
		r.Attempts = int(n)
		if r.At, err = row.int("at"); err != nil {
			return nil, err
		}
		if err := row.done(); err != nil {
			return nil, err
		}
		rows = append(rows, r)
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
