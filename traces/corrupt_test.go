package traces

import (
	"bytes"
	"errors"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestReadRefusesCorruptedSteps takes random valid traces, breaks one step's line in the canonical
// encoding in one of several ways, and checks that Read refuses it naming that step and field.
// Earlier steps are untouched, so the error must be about the broken one.
func TestReadRefusesCorruptedSteps(t *testing.T) {
	seed := *seedFlag
	rng := rand.New(rand.NewSource(seed))
	tried := 0
	for i := 0; tried < 500; i++ {
		tr := randomTrace(rng, i)
		if len(tr.Steps) == 0 {
			continue
		}
		tried++
		b, err := Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		k := rng.Intn(len(tr.Steps))
		sp := Spec[tr.Steps[k].Op]
		var notTaken []string
		for _, f := range argFields {
			if !slices.Contains(sp.Args, f.name) && !slices.Contains(sp.OptionalArgs, f.name) {
				notTaken = append(notTaken, f.name)
			}
		}
		type corruption struct {
			edit      func(line string) string
			field, in string
		}
		cases := []corruption{
			{func(l string) string { return addArg(l, `"bogus": 1`) }, "args.bogus", "unknown field"},
			{func(l string) string { return strings.Replace(l, `"op": "`, `"op": "x`, 1) }, "op", "unknown operation"},
			{func(l string) string { return strings.Replace(l, `, "at": `, `, "at": -1`, 1) }, "at", ""},
		}
		if len(notTaken) > 0 {
			name := notTaken[rng.Intn(len(notTaken))]
			cases = append(cases, corruption{func(l string) string { return addArg(l, `"`+name+`": 1`) }, "args." + name, "not an argument of"})
		}
		if len(sp.Args) > 0 {
			name := sp.Args[rng.Intn(len(sp.Args))]
			cases = append(cases, corruption{func(l string) string { return dropArg(l, name) }, "args." + name, "missing"})
		}
		c := cases[rng.Intn(len(cases))]
		broken, line := editStep(b, k, c.edit)
		_, err = Unmarshal(broken, "broken")
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("seed %d trace #%d: step %d edited to\n%s\nread: %v, want a ParseError", seed, i, k, line, err)
		}
		if pe.Step != k || pe.Field != c.field || !strings.Contains(pe.Msg, c.in) {
			t.Fatalf("seed %d trace #%d: step %d edited to\n%s\ngot %v; want step %d field %s containing %q",
				seed, i, k, line, err, k, c.field, c.in)
		}
	}
}

// editStep rewrites the k-th step line of a canonical encoding.
func editStep(b []byte, k int, edit func(string) string) ([]byte, string) {
	lines := strings.Split(string(b), "\n")
	n := -1
	for i, l := range lines {
		if strings.HasPrefix(l, `    {"op": `) {
			if n++; n == k {
				lines[i] = edit(l)
				return []byte(strings.Join(lines, "\n")), lines[i]
			}
		}
	}
	panic("step line not found")
}

// addArg inserts a member at the front of the step's args; the first `"args": {` on a step line is
// the real one, since only the op name and a number precede it.
func addArg(line, m string) string {
	if strings.Contains(line, `"args": {}`) && strings.Index(line, `"args": {}`) == strings.Index(line, `"args": {`) {
		return strings.Replace(line, `"args": {}`, `"args": {`+m+`}`, 1)
	}
	return strings.Replace(line, `"args": {`, `"args": {`+m+`, `, 1)
}

// dropArg removes a required argument from the step line by re-encoding the step without it.
func dropArg(line, name string) string {
	trimmed := strings.TrimSuffix(strings.TrimSpace(line), ",")
	n, err := buildTree([]byte(trimmed))
	if err != nil {
		panic(err)
	}
	args := n.get("args")
	args.members = slices.DeleteFunc(args.members, func(m member) bool { return m.key == name })
	var buf bytes.Buffer
	buf.WriteString("    ")
	writeNode(&buf, n)
	if strings.HasSuffix(line, ",") {
		buf.WriteByte(',')
	}
	return buf.String()
}

// writeNode encodes a node tree compactly (test helper).
func writeNode(buf *bytes.Buffer, n *node) {
	switch n.kind {
	case kindNull:
		buf.WriteString("null")
	case kindBool:
		if n.boolean {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case kindNumber:
		buf.WriteString(n.text)
	case kindString:
		buf.Write(appendString(nil, n.text))
	case kindArray:
		buf.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				buf.WriteString(", ")
			}
			writeNode(buf, it)
		}
		buf.WriteByte(']')
	case kindObject:
		buf.WriteByte('{')
		for i, m := range n.members {
			if i > 0 {
				buf.WriteString(", ")
			}
			buf.Write(appendString(nil, m.key))
			buf.WriteString(": ")
			writeNode(buf, m.value)
		}
		buf.WriteByte('}')
	}
}
