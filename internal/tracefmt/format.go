package tracefmt

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pconform/pconform/traces"
)

// History renders a trace's expected history: one line per step, tagged with its index, in the
// same form as replay.Verdict.History, so the two can be diffed line by line.
func History(t *traces.Trace) []string {
	lines := make([]string, len(t.Steps))
	for i, s := range t.Steps {
		lines[i] = Step(i, s.Op, s.At, s.Args, s.Result)
	}
	return lines
}

// Step renders one step as "#i @at op args -> result".
func Step(i int, op traces.Op, at int64, a traces.Args, r traces.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d @%d %s", i, at, op)
	if s := Args(op, a); s != "" {
		b.WriteString(" ")
		b.WriteString(s)
	}
	b.WriteString(" -> ")
	b.WriteString(Result(op, r))
	return b.String()
}

// Args renders arguments as space-separated key=value pairs with the trace's JSON names:
// the operation's required arguments always, every other field when it is not zero.
func Args(op traces.Op, a traces.Args) string {
	required := traces.Spec[op].Args
	var parts []string
	v := reflect.ValueOf(a)
	for i, f := range JSONFields(v.Type()) {
		fv := v.Field(i)
		if fv.IsZero() && !slices.Contains(required, f) {
			continue
		}
		parts = append(parts, f+"="+formatValue(fv))
	}
	return strings.Join(parts, " ")
}

// Result renders a result as key=value pairs of its non-zero fields; "message=none" for an
// operation that returns a message and returned none; "ok" when nothing else is left to say.
func Result(op traces.Op, r traces.Result) string {
	parts := ResultParts(op, r)
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, " ")
}

// ResultParts are Result's key=value pairs.
func ResultParts(op traces.Op, r traces.Result) []string {
	var parts []string
	v := reflect.ValueOf(r)
	for i, f := range JSONFields(v.Type()) {
		fv := v.Field(i)
		if f == "message" && fv.IsNil() {
			if slices.Contains(traces.Spec[op].Results, "message") {
				parts = append(parts, "message=none")
			}
			continue
		}
		if fv.IsZero() {
			if (f == "claimed" || f == "redrives" || f == "messages") && slices.Contains(traces.Spec[op].Results, f) {
				parts = append(parts, f+"=[]")
			}
			continue
		}
		parts = append(parts, f+"="+formatValue(fv))
	}
	return parts
}

// JSONFields lists a struct type's JSON field names in field order ("" for untagged fields).
func JSONFields(t reflect.Type) []string {
	names := make([]string, t.NumField())
	for i := range names {
		tag := t.Field(i).Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = t.Field(i).Name
		}
		names[i] = name
	}
	return names
}

// formatValue renders scalars plainly, strings quoted only when they would not read back as one
// word (a script line also reads a value that starts with "(" as a list), structs as {k=v ...} of their non-zero fields and slices as [a b].
func formatValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "none"
		}
		return formatValue(v.Elem())
	case reflect.String:
		s := v.String()
		if s == "" || strings.ContainsAny(s, " \t\n\"'=[]{}#") || strings.HasPrefix(s, "(") {
			return strconv.Quote(s)
		}
		return s
	case reflect.Struct:
		var parts []string
		for i, f := range JSONFields(v.Type()) {
			fv := v.Field(i)
			if fv.IsZero() && f != "attempts" && f != "delivery_attempts" {
				continue
			}
			parts = append(parts, f+"="+formatValue(fv))
		}
		return "{" + strings.Join(parts, " ") + "}"
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = formatValue(v.Index(i))
		}
		return "[" + strings.Join(parts, " ") + "]"
	default:
		return fmt.Sprint(v.Interface())
	}
}

// SnapshotLines renders a snapshot as one line per row, tokens as symbols.
func SnapshotLines(s traces.Snapshot) []string {
	var lines []string
	for _, m := range s.Messages {
		lines = append(lines, "message "+formatValue(reflect.ValueOf(m)))
	}
	for _, o := range s.Outbox {
		lines = append(lines, "outbox "+formatValue(reflect.ValueOf(o)))
	}
	for _, d := range s.DeadLetters {
		lines = append(lines, "dead_letter "+formatValue(reflect.ValueOf(d)))
	}
	mailboxes := make([]string, 0, len(s.Effects))
	for mb := range s.Effects {
		mailboxes = append(mailboxes, mb)
	}
	slices.Sort(mailboxes)
	for _, mb := range mailboxes {
		lines = append(lines, fmt.Sprintf("effects %s %s", formatValue(reflect.ValueOf(mb)), formatValue(reflect.ValueOf(s.Effects[mb]))))
	}
	return lines
}

// DiffFields compares two lists of lines as sets kept in order: lines both have are dropped,
// the others come out signed ("- " expected only, "+ " observed only), each expected line before
// the observed lines that follow it. Linear in the lengths of the lists.
func DiffFields(expected, observed []string) []string {
	inExp, inObs := make(map[string]bool, len(expected)), make(map[string]bool, len(observed))
	for _, e := range expected {
		inExp[e] = true
	}
	for _, o := range observed {
		inObs[o] = true
	}
	var out []string
	j := 0
	for _, e := range expected {
		if !inObs[e] {
			out = append(out, "- "+e)
			continue
		}
		for ; j < len(observed) && observed[j] != e; j++ {
			if !inExp[observed[j]] {
				out = append(out, "+ "+observed[j])
			}
		}
		if j < len(observed) {
			j++
		}
	}
	for ; j < len(observed); j++ {
		if !inExp[observed[j]] {
			out = append(out, "+ "+observed[j])
		}
	}
	return out
}

// DiffLines compares two histories line by line: equal lines are prefixed with two spaces, a
// differing pair with "- " and "+ ", a line only one side has with its own sign. Histories are
// tagged with step indices, so lines pair up by position.
func DiffLines(expected, observed []string) []string {
	var out []string
	for i := 0; i < max(len(expected), len(observed)); i++ {
		switch {
		case i < len(expected) && i < len(observed) && expected[i] == observed[i]:
			out = append(out, "  "+expected[i])
		default:
			if i < len(expected) {
				out = append(out, "- "+expected[i])
			}
			if i < len(observed) {
				out = append(out, "+ "+observed[i])
			}
		}
	}
	return out
}
