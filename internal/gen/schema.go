package gen

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

//go:embed schema_frame.json
var schemaFrame []byte

// Placeholders in schema_frame.json that [Schema] replaces.
const (
	markEnum     = "@OP_ENUM@"
	markDispatch = "@OP_DISPATCH@"
	markDefs     = "@OP_DEFS@"
	// markFormats and markColumns are the format versions a reader reads and the columns a
	// snapshot may declare unknown.
	markFormats = "@FORMATS@"
	markColumns = "@UNKNOWABLE@"
	// markProfile is the schema of a profile object (expect.profile), from profile.Choices.
	markProfile = "@PROFILE@"
)

// fieldSchemas gives, for each argument and result field, the JSON Schema a value of it must
// match in every op that takes it, as the validator's per-field rules say. A field whose op closes
// its vocabulary ([traces.OpSpec].Values) gets an enum instead; "err" is built from the op's
// [traces.OpSpec].Err and "message" from messageSchemas.
var fieldSchemas = map[string]string{
	// Arguments.
	"mailbox":               ref("nonempty"),
	"id":                    ref("nonempty"),
	"key":                   ref("text"),
	"priority":              ref("int"),
	"max_attempts":          ref("positive"),
	"delay":                 ref("seconds"),
	"payload":               ref("text"),
	"lease_for":             ref("positive_seconds"),
	"token":                 ref("token"),
	"reason":                ref("nonempty"),
	"target":                ref("nonempty"),
	"limit":                 ref("positive"),
	"claim_for":             ref("positive_seconds"),
	"worker":                ref("count"),
	"publisher":             ref("count"),
	"retry_delay":           ref("seconds"),
	"max_delivery_attempts": ref("count"),
	"older_than":            ref("seconds"),
	"horizon":               ref("seconds"),
	"consumer":              ref("nonempty"),
	"ttl":                   ref("positive_seconds"),
	"actor":                 ref("nonempty"),
	"expect_version":        ref("count"),
	// Results.
	"duplicate": `{"type": "boolean"}`,
	"affected":  ref("count"),
	"claimed":   `{"type": "array", "items": ` + ref("claimed") + `}`,
	"redrives":  `{"type": "array", "items": ` + ref("redrive") + `}`,
	"attempt":   ref("count"),
	"version":   ref("count"),
	// Batch steps.
	"size":       ref("positive"),
	"ids":        `{"type": "array", "minItems": 1, "uniqueItems": true, "items": ` + ref("nonempty") + `}`,
	"messages":   `{"type": "array", "items": ` + ref("message") + `}`,
	"duplicates": `{"type": "array", "items": {"type": "boolean"}}`,
	"effects":    `{"type": "array", "uniqueItems": true, "items": ` + ref("nonempty") + `}`,
	"reasons":    `{"type": "array", "items": ` + ref("text") + `}`,
}

// listFields are the fields that hold a list of values: a closed vocabulary
// ([traces.OpSpec].Values) constrains each item, not the list.
var listFields = map[string]bool{"outcomes": true, "actions": true}

// messageSchemas is the result.message schema of the ops whose message is always or never
// leased; any other op that returns a message gets message_or_null.
var messageSchemas = map[traces.Op]string{
	traces.OpLease: ref("leased_message_or_null"),
	traces.OpPeek:  ref("unleased_message_or_null"),
}

// opExtras holds the rules of an op that span its fields, which no per-field schema states.
// Each entry is JSON members appended to the op's args object, result object or definition.
var opExtras = map[traces.Op]struct{ args, result, def string }{
	traces.OpConsumerFetch: {
		args: `"if": {"required": ["profile"], "properties": {"profile": {"const": "leased"}}},
          "then": {"required": ["lease_for"], "properties": {"lease_for": {"minimum": 1}}},
          "else": {"properties": {"lease_for": {"const": 0}}}`,
		def: `"if": {"required": ["args"], "properties": {"args": {"required": ["profile"], "properties": {"profile": {"const": "leased"}}}}},
      "then": {"properties": {"result": {"properties": {"message": ` + ref("leased_message_or_null") + `}}}},
      "else": {"properties": {"result": {"properties": {"message": ` + ref("unleased_message_or_null") + `}}}}`,
	},
	traces.OpConsumerFetchBatch: {
		args: `"if": {"required": ["profile"], "properties": {"profile": {"const": "leased"}}},
          "then": {"required": ["lease_for"], "properties": {"lease_for": {"minimum": 1}}},
          "else": {"properties": {"lease_for": {"const": 0}}}`,
	},
	traces.OpConsumerHandle: {
		args: `"if": {"required": ["reason"]},
          "then": {"properties": {"outcome": {"const": "fail_no_retry"}}}`,
		result: `"if": {"properties": {"action": {"const": "idle"}}},
          "then": {"properties": {"attempt": {"const": 0}}}`,
	},
}

// opFieldSchemas overrides fieldSchemas for one op's field.
var opFieldSchemas = map[traces.Op]map[string]string{
	// A leaseless fetch takes no lease_for; opExtras requires >= 1 for a leased one.
	traces.OpConsumerFetch:      {"lease_for": ref("count")},
	traces.OpConsumerFetchBatch: {"lease_for": ref("count")},
	// A trace never saves a mailbox's effect log (traces.EffectsActorPrefix).
	traces.OpSaveCheckpoint: {"actor": `{"allOf": [` + ref("nonempty") + `, {"not": {"pattern": "^` + traces.EffectsActorPrefix + `"}}]}`},
}

func ref(def string) string { return `{"$ref": "#/$defs/` + def + `"}` }

// Schema returns the JSON Schema of the trace format: the frame with the op vocabulary, the
// op dispatch and one definition per op generated from [traces.Spec]. It fails when Spec names a
// field this package has no schema for.
func Schema() ([]byte, error) {
	frame := string(schemaFrame)
	for _, m := range []string{markEnum, markDispatch, markDefs, markFormats, markColumns, markProfile} {
		if strings.Count(frame, m) != 1 {
			return nil, fmt.Errorf("gen: schema frame must hold %s exactly once", m)
		}
	}
	names := make([]string, len(traces.Ops))
	for i, op := range traces.Ops {
		names[i] = string(op)
	}

	var dispatch strings.Builder
	dispatch.WriteString("[\n")
	for i, op := range traces.Ops {
		fmt.Fprintf(&dispatch, `        {"if": {"required": ["op"], "properties": {"op": {"const": %q}}}, "then": %s}`, op, ref("op_"+string(op)))
		if i < len(traces.Ops)-1 {
			dispatch.WriteString(",")
		}
		dispatch.WriteString("\n")
	}
	dispatch.WriteString("      ]")

	var defs strings.Builder
	for _, op := range traces.Ops {
		def, err := opSchema(op)
		if err != nil {
			return nil, err
		}
		defs.WriteString(def)
	}

	columns := make([]string, len(traces.Unknowable))
	for i, c := range traces.Unknowable {
		columns[i] = string(c)
	}
	out := strings.Replace(frame, markEnum, list(names), 1)
	out = strings.Replace(out, markFormats, list(traces.Formats), 1)
	out = strings.Replace(out, markColumns, list(columns), 1)
	out = strings.Replace(out, markDispatch, dispatch.String(), 1)
	out = strings.Replace(out, "    "+markDefs+"\n", defs.String(), 1)
	out = strings.Replace(out, markProfile, profileSchema(), 1)
	return []byte(out), nil
}

// profileSchema is the schema of a profile object: name and description, then one member per
// row of profile.Choices (a switch's two values, or any non-empty wording).
func profileSchema() string {
	var b strings.Builder
	b.WriteString(`{
      "description": "A semantic profile (docs/semantics.md, \"Profiles\"): the choices it settles otherwise than the default, as in a profile file.",
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "name": {"$ref": "#/$defs/text"},
        "description": {"$ref": "#/$defs/text"}`)
	for _, c := range profile.Choices {
		v := `{"type": "string", "pattern": "\\S"}`
		if c.Switch() {
			v = fmt.Sprintf(`{"enum": [%q, %q]}`, c.Values[0], c.Values[1])
		}
		fmt.Fprintf(&b, ",\n        %q: %s", c.Name, v)
	}
	b.WriteString("\n      }\n    }")
	return b.String()
}

// opSchema is the "op_<name>" definition of op, with its trailing comma and newline.
func opSchema(op traces.Op) (string, error) {
	sp, ok := traces.Spec[op]
	if !ok {
		return "", fmt.Errorf("gen: traces.Spec has no entry for op %q", op)
	}
	extra := opExtras[op]
	var b strings.Builder
	fmt.Fprintf(&b, "    %q: {\n      \"properties\": {\n", "op_"+string(op))

	args := slices.Concat(sp.Args, sp.OptionalArgs)
	if len(args) == 0 {
		fmt.Fprintf(&b, "        \"args\": %s,\n", ref("empty"))
	} else {
		b.WriteString("        \"args\": {\n")
		fmt.Fprintf(&b, "          \"required\": %s,\n", list(sp.Args))
		b.WriteString("          \"additionalProperties\": false,\n")
		if err := properties(&b, op, sp, args); err != nil {
			return "", err
		}
		closeObject(&b, extra.args, ",")
	}

	if len(sp.Results) == 0 {
		fmt.Fprintf(&b, "        \"result\": %s\n", ref("empty"))
	} else {
		b.WriteString("        \"result\": {\n")
		if slices.Contains(sp.Results, "action") {
			// A protocol step always says how it ended.
			b.WriteString("          \"required\": [\"action\"],\n")
		}
		b.WriteString("          \"additionalProperties\": false,\n")
		if err := properties(&b, op, sp, sp.Results); err != nil {
			return "", err
		}
		closeObject(&b, extra.result, "")
	}
	b.WriteString("      }")
	if extra.def != "" {
		b.WriteString(",\n      " + extra.def)
	}
	b.WriteString("\n    },\n")
	return b.String(), nil
}

// closeObject ends an args or result object, after the members in extra (if any), with sep
// after its closing brace.
func closeObject(b *strings.Builder, extra, sep string) {
	if extra != "" {
		b.WriteString(",\n          " + extra)
	}
	b.WriteString("\n        }" + sep + "\n")
}

// properties writes the "properties" member for fields of op, without a newline after it: on
// one line for a single field, one field a line otherwise.
func properties(b *strings.Builder, op traces.Op, sp traces.OpSpec, fields []string) error {
	members := make([]string, len(fields))
	for i, f := range fields {
		s, err := fieldSchema(op, sp, f)
		if err != nil {
			return err
		}
		members[i] = fmt.Sprintf("%q: %s", f, s)
	}
	if len(members) == 1 {
		b.WriteString("          \"properties\": {" + members[0] + "}")
		return nil
	}
	b.WriteString("          \"properties\": {\n            ")
	b.WriteString(strings.Join(members, ",\n            "))
	b.WriteString("\n          }")
	return nil
}

func fieldSchema(op traces.Op, sp traces.OpSpec, f string) (string, error) {
	if s, ok := opFieldSchemas[op][f]; ok {
		return s, nil
	}
	if vals, ok := sp.Values[f]; ok {
		if listFields[f] {
			return `{"type": "array", "items": {"enum": ` + list(vals) + `}}`, nil
		}
		return `{"enum": ` + list(vals) + `}`, nil
	}
	switch f {
	case "err":
		if sp.Err == "" {
			return "", fmt.Errorf("gen: op %q reports err but traces.Spec gives it no Err kind", op)
		}
		return `{"enum": ` + list([]string{"", sp.Err}) + `}`, nil
	case "message":
		if s, ok := messageSchemas[op]; ok {
			return s, nil
		}
		return ref("message_or_null"), nil
	}
	s, ok := fieldSchemas[f]
	if !ok {
		return "", fmt.Errorf("gen: op %q has field %q, which has no schema in internal/gen/schema.go (fieldSchemas)", op, f)
	}
	return s, nil
}

// list writes strings as a one-line JSON array.
func list(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
