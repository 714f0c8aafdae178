package traces

import (
	"strconv"
	"strings"

	"github.com/pconform/pconform/profile"
)

// field describes one JSON member of a struct T: how to read it from a parsed node, how to write
// it, and whether it holds its zero value. The tables below are the single place that ties a JSON
// name to a Go field; the reader, the writer and the validator all go through them, so the three
// cannot disagree about names.
type field[T any] struct {
	name string
	// optional is the struct tag's omitempty: the member may be absent when read (it then takes
	// its zero value) and is written only when non-zero.
	optional bool
	isZero   func(v *T) bool
	decode   func(d *decoder, n *node, path string, v *T) error
	encode   func(b []byte, v *T) []byte
}

func lookup[T any](fields []field[T], name string) *field[T] {
	for i := range fields {
		if fields[i].name == name {
			return &fields[i]
		}
	}
	return nil
}

func strField[T any](name string, optional bool, ref func(*T) *string) field[T] {
	return field[T]{
		name:     name,
		optional: optional,
		isZero:   func(v *T) bool { return *ref(v) == "" },
		decode: func(d *decoder, n *node, path string, v *T) error {
			if n.kind != kindString {
				return d.errf(path, "must be a string, got %s", n.describe())
			}
			*ref(v) = n.text
			return nil
		},
		encode: func(b []byte, v *T) []byte { return appendString(b, *ref(v)) },
	}
}

func intField[T any](name string, optional bool, ref func(*T) *int) field[T] {
	return field[T]{
		name:     name,
		optional: optional,
		isZero:   func(v *T) bool { return *ref(v) == 0 },
		decode: func(d *decoder, n *node, path string, v *T) error {
			x, err := d.integer(n, path, strconv.IntSize)
			if err != nil {
				return err
			}
			*ref(v) = int(x)
			return nil
		},
		encode: func(b []byte, v *T) []byte { return strconv.AppendInt(b, int64(*ref(v)), 10) },
	}
}

func int64Field[T any](name string, optional bool, ref func(*T) *int64) field[T] {
	return field[T]{
		name:     name,
		optional: optional,
		isZero:   func(v *T) bool { return *ref(v) == 0 },
		decode: func(d *decoder, n *node, path string, v *T) error {
			x, err := d.integer(n, path, 64)
			if err != nil {
				return err
			}
			*ref(v) = x
			return nil
		},
		encode: func(b []byte, v *T) []byte { return strconv.AppendInt(b, *ref(v), 10) },
	}
}

func boolField[T any](name string, optional bool, ref func(*T) *bool) field[T] {
	return field[T]{
		name:     name,
		optional: optional,
		isZero:   func(v *T) bool { return !*ref(v) },
		decode: func(d *decoder, n *node, path string, v *T) error {
			if n.kind != kindBool {
				return d.errf(path, "must be a boolean, got %s", n.describe())
			}
			*ref(v) = n.boolean
			return nil
		},
		encode: func(b []byte, v *T) []byte { return strconv.AppendBool(b, *ref(v)) },
	}
}

// argFields lists every argument any operation takes. Which of them a given operation takes is
// [Spec]'s business; a name missing here is an unknown field for every operation.
var argFields = []field[Args]{
	strField("mailbox", true, func(a *Args) *string { return &a.Mailbox }),
	strField("id", true, func(a *Args) *string { return &a.ID }),
	strField("key", true, func(a *Args) *string { return &a.Key }),
	intField("priority", true, func(a *Args) *int { return &a.Priority }),
	intField("max_attempts", true, func(a *Args) *int { return &a.MaxAttempts }),
	int64Field("delay", true, func(a *Args) *int64 { return &a.Delay }),
	strField("payload", true, func(a *Args) *string { return &a.Payload }),
	intField("max_delivery_attempts", true, func(a *Args) *int { return &a.MaxDeliveryAttempts }),
	int64Field("lease_for", true, func(a *Args) *int64 { return &a.LeaseFor }),
	intField("token", true, func(a *Args) *int { return &a.Token }),
	strField("reason", true, func(a *Args) *string { return &a.Reason }),
	strField("target", true, func(a *Args) *string { return &a.Target }),
	intField("limit", true, func(a *Args) *int { return &a.Limit }),
	int64Field("claim_for", true, func(a *Args) *int64 { return &a.ClaimFor }),
	intField("worker", true, func(a *Args) *int { return &a.Worker }),
	intField("publisher", true, func(a *Args) *int { return &a.Publisher }),
	strField("profile", true, func(a *Args) *string { return &a.Profile }),
	strField("outcome", true, func(a *Args) *string { return &a.Outcome }),
	int64Field("retry_delay", true, func(a *Args) *int64 { return &a.RetryDelay }),
	strField("fault", true, func(a *Args) *string { return &a.Fault }),
	int64Field("older_than", true, func(a *Args) *int64 { return &a.OlderThan }),
	int64Field("horizon", true, func(a *Args) *int64 { return &a.Horizon }),
	strField("consumer", true, func(a *Args) *string { return &a.Consumer }),
	int64Field("ttl", true, func(a *Args) *int64 { return &a.TTL }),
	strField("actor", true, func(a *Args) *string { return &a.Actor }),
	intField("expect_version", true, func(a *Args) *int { return &a.ExpectVersion }),
	intField("size", true, func(a *Args) *int { return &a.Size }),
	listField("outcomes", func(a *Args) *[]string { return &a.Outcomes }, decodeString, appendString),
	listField("ids", func(a *Args) *[]string { return &a.IDs }, decodeString, appendString),
	listField("reasons", func(a *Args) *[]string { return &a.Reasons }, decodeString, appendString),
}

// resultFields lists every result field any operation reports; see argFields.
var resultFields = []field[Result]{
	strField("err", true, func(r *Result) *string { return &r.Err }),
	boolField("duplicate", true, func(r *Result) *bool { return &r.Duplicate }),
	{
		name:     "message",
		optional: true,
		isZero:   func(r *Result) bool { return r.Message == nil },
		decode: func(d *decoder, n *node, path string, r *Result) error {
			if n.kind == kindNull {
				r.Message = nil
				return nil
			}
			m := new(Message)
			if err := decodeObject(d, n, path, messageFields, m, requireAll(messageFields)); err != nil {
				return err
			}
			r.Message = m
			return nil
		},
		encode: func(b []byte, r *Result) []byte {
			if r.Message == nil {
				return append(b, "null"...)
			}
			return appendObject(b, messageFields, r.Message)
		},
	},
	intField("affected", true, func(r *Result) *int { return &r.Affected }),
	rowsField("claimed", claimedFields, func(r *Result) *[]Claimed { return &r.Claimed }),
	strField("action", true, func(r *Result) *string { return &r.Action }),
	intField("attempt", true, func(r *Result) *int { return &r.Attempt }),
	intField("version", true, func(r *Result) *int { return &r.Version }),
	rowsField("redrives", redriveFields, func(r *Result) *[]RedriveRecord { return &r.Redrives }),
	rowsField("messages", messageFields, func(r *Result) *[]Message { return &r.Messages }),
	listField("actions", func(r *Result) *[]string { return &r.Actions }, decodeString, appendString),
	listField("duplicates", func(r *Result) *[]bool { return &r.Duplicates }, decodeBool, strconv.AppendBool),
	listField("effects", func(r *Result) *[]string { return &r.Effects }, decodeString, appendString),
}

// listField is an optional member holding a list of scalars. An empty list and an absent one
// mean the same; both read as nil so that a written trace reads back equal.
func listField[T, E any](name string, get func(*T) *[]E, dec func(d *decoder, n *node, path string) (E, error),
	enc func(b []byte, e E) []byte) field[T] {
	return field[T]{
		name:     name,
		optional: true,
		isZero:   func(v *T) bool { return len(*get(v)) == 0 },
		decode: func(d *decoder, n *node, path string, v *T) error {
			if n.kind != kindArray {
				return d.errf(path, "must be an array, got %s", n.describe())
			}
			var out []E
			for i, e := range n.items {
				x, err := dec(d, e, index(path, i))
				if err != nil {
					return err
				}
				out = append(out, x)
			}
			*get(v) = out
			return nil
		},
		encode: func(b []byte, v *T) []byte {
			b = append(b, '[')
			for i, e := range *get(v) {
				if i > 0 {
					b = append(b, ", "...)
				}
				b = enc(b, e)
			}
			return append(b, ']')
		},
	}
}

func decodeString(d *decoder, n *node, path string) (string, error) {
	if n.kind != kindString {
		return "", d.errf(path, "must be a string, got %s", n.describe())
	}
	return n.text, nil
}

func decodeBool(d *decoder, n *node, path string) (bool, error) {
	if n.kind != kindBool {
		return false, d.errf(path, "must be a boolean, got %s", n.describe())
	}
	return n.boolean, nil
}

// rowsField is an optional result field holding a list of objects with the given fields. An
// empty list and an absent one mean the same; both read as nil so that a written trace reads
// back equal.
func rowsField[T any](name string, fields []field[T], get func(*Result) *[]T) field[Result] {
	return field[Result]{
		name:     name,
		optional: true,
		isZero:   func(r *Result) bool { return len(*get(r)) == 0 },
		decode: func(d *decoder, n *node, path string, r *Result) error {
			if n.kind != kindArray {
				return d.errf(path, "must be an array, got %s", n.describe())
			}
			var rows []T
			for i, e := range n.items {
				var row T
				if err := decodeObject(d, e, index(path, i), fields, &row, requireAll(fields)); err != nil {
					return err
				}
				rows = append(rows, row)
			}
			*get(r) = rows
			return nil
		},
		encode: func(b []byte, r *Result) []byte {
			rows := *get(r)
			b = append(b, '[')
			for i := range rows {
				if i > 0 {
					b = append(b, ", "...)
				}
				b = appendObject(b, fields, &rows[i])
			}
			return append(b, ']')
		},
	}
}

var messageFields = []field[Message]{
	strField("id", false, func(m *Message) *string { return &m.ID }),
	intField("attempts", false, func(m *Message) *int { return &m.Attempts }),
	intField("token", true, func(m *Message) *int { return &m.Token }),
}

var redriveFields = []field[RedriveRecord]{
	strField("id", false, func(r *RedriveRecord) *string { return &r.ID }),
	strField("kind", false, func(r *RedriveRecord) *string { return &r.Kind }),
	strField("mailbox", false, func(r *RedriveRecord) *string { return &r.Mailbox }),
	intField("attempts", false, func(r *RedriveRecord) *int { return &r.Attempts }),
	strField("dead_reason", false, func(r *RedriveRecord) *string { return &r.DeadReason }),
	strField("reason", false, func(r *RedriveRecord) *string { return &r.Reason }),
	int64Field("at", false, func(r *RedriveRecord) *int64 { return &r.At }),
}

var claimedFields = []field[Claimed]{
	strField("id", false, func(c *Claimed) *string { return &c.ID }),
	intField("delivery_attempts", false, func(c *Claimed) *int { return &c.DeliveryAttempts }),
	intField("token", false, func(c *Claimed) *int { return &c.Token }),
}

var originFields = []field[Origin]{
	strField("kind", false, func(o *Origin) *string { return &o.Kind }),
	strField("test_case", true, func(o *Origin) *string { return &o.TestCase }),
	int64Field("seed", true, func(o *Origin) *int64 { return &o.Seed }),
	intField("schedule", true, func(o *Origin) *int { return &o.Schedule }),
	strField("command", true, func(o *Origin) *string { return &o.Command }),
	strField("model", true, func(o *Origin) *string { return &o.Model }),
}

var expectFields = []field[Expect]{
	strField("variant", true, func(e *Expect) *string { return &e.Variant }),
	intField("diverges_at", false, func(e *Expect) *int { return &e.DivergesAt }),
	strField("violates", true, func(e *Expect) *string { return &e.Violates }),
	profileField("profile", func(e *Expect) *profile.Profile { return &e.Profile }),
}

// profileField is an optional profile member: an object of string members that
// [profile.Profile.Set] takes (besides "name" and "description"), the zero Profile when absent.
func profileField[T any](name string, ref func(*T) *profile.Profile) field[T] {
	return field[T]{
		name:     name,
		optional: true,
		isZero:   func(v *T) bool { return *ref(v) == profile.Profile{} },
		decode: func(d *decoder, n *node, path string, v *T) error {
			if n.kind != kindObject {
				return d.errf(path, "must be an object, got %s", n.describe())
			}
			var p profile.Profile
			seen := map[string]bool{}
			for _, m := range n.members {
				at := join(path, m.key)
				if seen[m.key] {
					return d.errf(at, "is given twice")
				}
				seen[m.key] = true
				if m.value.kind != kindString {
					return d.errf(at, "must be a string, got %s", m.value.describe())
				}
				switch m.key {
				case "name":
					p.Name = m.value.text
				case "description":
					p.Description = m.value.text
				default:
					if err := p.Set(m.key, m.value.text); err != nil {
						return d.errf(at, "%s", strings.TrimPrefix(err.Error(), "profile: "))
					}
				}
			}
			*ref(v) = p
			return nil
		},
		encode: func(b []byte, v *T) []byte {
			j, _ := ref(v).MarshalJSON()
			return append(b, j...)
		},
	}
}

var messageRowFields = []field[MessageRow]{
	strField("mailbox", false, func(r *MessageRow) *string { return &r.Mailbox }),
	strField("id", false, func(r *MessageRow) *string { return &r.ID }),
	strField("key", true, func(r *MessageRow) *string { return &r.Key }),
	intField("priority", true, func(r *MessageRow) *int { return &r.Priority }),
	strField("payload", true, func(r *MessageRow) *string { return &r.Payload }),
	strField("state", false, func(r *MessageRow) *string { return &r.State }),
	intField("attempts", false, func(r *MessageRow) *int { return &r.Attempts }),
	intField("max_attempts", false, func(r *MessageRow) *int { return &r.MaxAttempts }),
	int64Field("available_at", false, func(r *MessageRow) *int64 { return &r.AvailableAt }),
	intField("token", true, func(r *MessageRow) *int { return &r.Token }),
	int64Field("lease_until", true, func(r *MessageRow) *int64 { return &r.LeaseUntil }),
}

var outboxRowFields = []field[OutboxRow]{
	strField("id", false, func(r *OutboxRow) *string { return &r.ID }),
	strField("target", false, func(r *OutboxRow) *string { return &r.Target }),
	strField("key", true, func(r *OutboxRow) *string { return &r.Key }),
	intField("priority", true, func(r *OutboxRow) *int { return &r.Priority }),
	intField("max_attempts", false, func(r *OutboxRow) *int { return &r.MaxAttempts }),
	strField("payload", true, func(r *OutboxRow) *string { return &r.Payload }),
	strField("state", false, func(r *OutboxRow) *string { return &r.State }),
	intField("delivery_attempts", false, func(r *OutboxRow) *int { return &r.DeliveryAttempts }),
	int64Field("available_at", false, func(r *OutboxRow) *int64 { return &r.AvailableAt }),
	intField("token", true, func(r *OutboxRow) *int { return &r.Token }),
	int64Field("claim_until", true, func(r *OutboxRow) *int64 { return &r.ClaimUntil }),
	strField("reason", true, func(r *OutboxRow) *string { return &r.Reason }),
}

var deadLetterRowFields = []field[DeadLetterRow]{
	strField("mailbox", false, func(r *DeadLetterRow) *string { return &r.Mailbox }),
	strField("id", false, func(r *DeadLetterRow) *string { return &r.ID }),
	strField("key", true, func(r *DeadLetterRow) *string { return &r.Key }),
	intField("priority", true, func(r *DeadLetterRow) *int { return &r.Priority }),
	strField("payload", true, func(r *DeadLetterRow) *string { return &r.Payload }),
	intField("attempts", false, func(r *DeadLetterRow) *int { return &r.Attempts }),
	intField("max_attempts", false, func(r *DeadLetterRow) *int { return &r.MaxAttempts }),
	strField("reason", false, func(r *DeadLetterRow) *string { return &r.Reason }),
	int64Field("dead_at", false, func(r *DeadLetterRow) *int64 { return &r.DeadAt }),
}

// argsSet returns the mask of a's non-zero fields, bit j for argFields[j]: what calling every
// isZero says, in one pass with no call per field (the validator checks it on every step).
// TestFieldSetsMatchIsZero holds it to the table.
func argsSet(a *Args) uint64 {
	return bit(a.Mailbox != "", 0) | bit(a.ID != "", 1) | bit(a.Key != "", 2) |
		bit(a.Priority != 0, 3) | bit(a.MaxAttempts != 0, 4) | bit(a.Delay != 0, 5) |
		bit(a.Payload != "", 6) | bit(a.MaxDeliveryAttempts != 0, 7) | bit(a.LeaseFor != 0, 8) |
		bit(a.Token != 0, 9) | bit(a.Reason != "", 10) | bit(a.Target != "", 11) |
		bit(a.Limit != 0, 12) | bit(a.ClaimFor != 0, 13) | bit(a.Worker != 0, 14) |
		bit(a.Publisher != 0, 15) | bit(a.Profile != "", 16) | bit(a.Outcome != "", 17) |
		bit(a.RetryDelay != 0, 18) | bit(a.Fault != "", 19) | bit(a.OlderThan != 0, 20) |
		bit(a.Horizon != 0, 21) | bit(a.Consumer != "", 22) | bit(a.TTL != 0, 23) |
		bit(a.Actor != "", 24) | bit(a.ExpectVersion != 0, 25) | bit(a.Size != 0, 26) |
		bit(len(a.Outcomes) != 0, 27) | bit(len(a.IDs) != 0, 28) | bit(len(a.Reasons) != 0, 29)
}

// resultSet is argsSet for a result and resultFields.
func resultSet(r *Result) uint64 {
	return bit(r.Err != "", 0) | bit(r.Duplicate, 1) | bit(r.Message != nil, 2) |
		bit(r.Affected != 0, 3) | bit(len(r.Claimed) != 0, 4) | bit(r.Action != "", 5) |
		bit(r.Attempt != 0, 6) | bit(r.Version != 0, 7) | bit(len(r.Redrives) != 0, 8) |
		bit(len(r.Messages) != 0, 9) | bit(len(r.Actions) != 0, 10) | bit(len(r.Duplicates) != 0, 11) |
		bit(len(r.Effects) != 0, 12)
}

func bit(set bool, j int) uint64 {
	if set {
		return 1 << j
	}
	return 0
}
