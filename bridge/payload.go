package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// fieldError is a defect in one payload field; Convert turns it into a [*LogError].
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string { return "field " + e.field + ": " + e.msg }

// object reads a JSON object field by field, exactly (no case folding), and reports the fields
// nobody asked for: the contract fixes every payload's field set.
type object struct {
	path   string // "" at the payload's top level, else e.g. "claimed[2]"
	fields map[string]json.RawMessage
	used   map[string]bool
}

func decodeObject(raw json.RawMessage, path string) (*object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, &fieldError{field: orTop(path), msg: "want an object, got " + describeJSON(raw)}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, &fieldError{field: orTop(path), msg: err.Error()}
	}
	return &object{path: path, fields: fields, used: map[string]bool{}}, nil
}

func orTop(path string) string {
	if path == "" {
		return "payload"
	}
	return path
}

func (o *object) name(field string) string {
	if o.path == "" {
		return field
	}
	return o.path + "." + field
}

func (o *object) errorf(field, format string, args ...any) error {
	return &fieldError{field: o.name(field), msg: fmt.Sprintf(format, args...)}
}

func (o *object) get(field string) (json.RawMessage, error) {
	raw, ok := o.fields[field]
	if !ok {
		return nil, o.errorf(field, "missing")
	}
	o.used[field] = true
	return bytes.TrimSpace(raw), nil
}

func (o *object) str(field string) (string, error) {
	raw, err := o.get(field)
	if err != nil {
		return "", err
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", o.errorf(field, "want a string, got %s", describeJSON(raw))
	}
	return s, nil
}

// strAlias reads the first of names present; the rest must be absent. It exists for field names
// that the P language reserves (see stateFieldNames).
func (o *object) strAlias(names ...string) (string, error) {
	var found []string
	for _, n := range names {
		if _, ok := o.fields[n]; ok {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return "", o.errorf(names[0], "missing (also accepted: %s)", strings.Join(names[1:], ", "))
	case 1:
		return o.str(found[0])
	default:
		return "", o.errorf(names[0], "given twice, as %s", strings.Join(found, " and "))
	}
}

func (o *object) int(field string) (int64, error) {
	raw, err := o.get(field)
	if err != nil {
		return 0, err
	}
	return parseInt(raw, func(format string, args ...any) error { return o.errorf(field, format, args...) })
}

// parseInt accepts a JSON integer (no fraction, no exponent) that fits in an int32, the range of
// every count, time and symbol the models use; anything wider is a model defect worth reporting.
func parseInt(raw json.RawMessage, fail func(string, ...any) error) (int64, error) {
	s := string(raw)
	if len(s) == 0 || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) || strings.ContainsAny(s, ".eE") {
		return 0, fail("want an integer, got %s", describeJSON(raw))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, fail("integer %s out of range", truncate(s))
	}
	return n, nil
}

func (o *object) bool(field string) (bool, error) {
	raw, err := o.get(field)
	if err != nil {
		return false, err
	}
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, o.errorf(field, "want a bool, got %s", describeJSON(raw))
}

func (o *object) array(field string) ([]json.RawMessage, error) {
	raw, err := o.get(field)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, o.errorf(field, "want an array, got %s", describeJSON(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, o.errorf(field, "%v", err)
	}
	return items, nil
}

func (o *object) objectField(field string) (*object, error) {
	raw, err := o.get(field)
	if err != nil {
		return nil, err
	}
	return decodeObject(raw, o.name(field))
}

// done reports the first field (in sorted order, for a stable message) that was never read.
func (o *object) done() error {
	var extra []string
	for k := range o.fields {
		if !o.used[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return o.errorf(extra[0], "not part of the contract for this event")
}
