package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Read parses one trace from r. name is used only in error messages (typically the file's path).
//
// Parsing is strict: any input that is not exactly one valid trace is refused with a [*ParseError]
// wrapping [ErrSyntax] or [ErrInvalid]; see docs/trace-format.md for the rules. A failure to read r
// is returned wrapped, not as a ParseError. Read never panics.
func Read(r io.Reader, name string) (*Trace, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		if name == "" {
			return nil, fmt.Errorf("traces: read: %w", err)
		}
		return nil, fmt.Errorf("traces: %s: read: %w", name, err)
	}
	return Unmarshal(data, name)
}

// ReadFile reads and parses the trace file at path; errors name the path as given.
func ReadFile(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// Unmarshal parses one trace from data, exactly as [Read] does.
func Unmarshal(data []byte, name string) (*Trace, error) {
	if err := checkSyntax(data, name); err != nil {
		return nil, err
	}
	root, err := buildTree(data)
	if err != nil {
		// checkSyntax accepted the input, so the tokenizer cannot fail; if it does anyway, the
		// input is still refused rather than half-read.
		return nil, syntaxError(name, data, 0, err.Error())
	}
	d := &decoder{errCtx: errCtx{file: name, step: -1}}
	return d.trace(root)
}

// checkSyntax refuses anything that is not one well-formed JSON value in valid UTF-8, locating the
// first offending byte. encoding/json would silently replace invalid UTF-8, so it is checked first.
func checkSyntax(data []byte, name string) error {
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 {
			return syntaxError(name, data, int64(off), "invalid UTF-8")
		}
		off += size
	}
	if len(bytes.Trim(data, " \t\r\n")) == 0 {
		return syntaxError(name, data, int64(len(data)), "empty input; want a JSON object")
	}
	if json.Valid(data) {
		return nil
	}
	// Only encoding/json's decoder says where the problem is.
	var raw json.RawMessage
	err := json.Unmarshal(data, &raw)
	if err == nil {
		return syntaxError(name, data, 0, "not valid JSON")
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return syntaxError(name, data, 0, err.Error())
	}
	msg := se.Error()
	off := se.Offset
	// For a bad character encoding/json reports the offset just past it.
	if strings.HasPrefix(msg, "invalid character") && off > 0 {
		off--
	}
	if strings.HasSuffix(msg, "after top-level value") {
		msg = "trailing data after the JSON value: " + msg
	}
	return syntaxError(name, data, off, msg)
}

type nodeKind uint8

const (
	kindNull nodeKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// node is a parsed JSON value that, unlike map[string]any, keeps member order and repeated keys,
// so the decoder can refuse duplicates and report problems in file order.
type node struct {
	kind    nodeKind
	text    string // a string's value or a number's literal
	boolean bool
	items   []*node
	members []member
}

type member struct {
	key   string
	value *node
}

func (n *node) get(key string) *node {
	for _, m := range n.members {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

func (n *node) describe() string {
	switch n.kind {
	case kindNull:
		return "null"
	case kindBool:
		return "boolean " + strconv.FormatBool(n.boolean)
	case kindNumber:
		return "number " + n.text
	case kindString:
		s := n.text
		if utf8.RuneCountInString(s) > 40 {
			s = string([]rune(s)[:40]) + "..."
		}
		return "string " + strconv.Quote(s)
	case kindArray:
		return "an array"
	default:
		return "an object"
	}
}

// buildTree turns input that checkSyntax accepted into a node tree. It relies on that check for
// the grammar, which keeps it short, but still bounds-checks every access: a disagreement between
// the two is an error, never a panic.
func buildTree(data []byte) (*node, error) {
	p := &treeParser{data: data}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.skipSpace(); p.pos != len(p.data) {
		return nil, p.fail("data after the value")
	}
	return n, nil
}

type treeParser struct {
	data []byte
	pos  int
}

func (p *treeParser) fail(what string) error {
	return fmt.Errorf("traces: internal: %s at offset %d", what, p.pos)
}

func (p *treeParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// next skips whitespace and returns the next byte without consuming it, 0 at the end.
func (p *treeParser) next() byte {
	p.skipSpace()
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

func (p *treeParser) value() (*node, error) {
	switch c := p.next(); {
	case c == '{':
		p.pos++
		n := &node{kind: kindObject}
		if p.next() == '}' {
			p.pos++
			return n, nil
		}
		for {
			if p.next() != '"' {
				return nil, p.fail("want an object key")
			}
			key, err := p.str()
			if err != nil {
				return nil, err
			}
			if p.next() != ':' {
				return nil, p.fail("want ':'")
			}
			p.pos++
			val, err := p.value()
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, member{key, val})
			switch p.next() {
			case ',':
				p.pos++
			case '}':
				p.pos++
				return n, nil
			default:
				return nil, p.fail("want ',' or '}'")
			}
		}
	case c == '[':
		p.pos++
		n := &node{kind: kindArray}
		if p.next() == ']' {
			p.pos++
			return n, nil
		}
		for {
			val, err := p.value()
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, val)
			switch p.next() {
			case ',':
				p.pos++
			case ']':
				p.pos++
				return n, nil
			default:
				return nil, p.fail("want ',' or ']'")
			}
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &node{kind: kindString, text: s}, nil
	case c == 't':
		return p.literal("true", &node{kind: kindBool, boolean: true})
	case c == 'f':
		return p.literal("false", &node{kind: kindBool})
	case c == 'n':
		return p.literal("null", &node{kind: kindNull})
	case c == '-' || c >= '0' && c <= '9':
		start := p.pos
		for p.pos < len(p.data) && strings.IndexByte("+-.eE0123456789", p.data[p.pos]) >= 0 {
			p.pos++
		}
		return &node{kind: kindNumber, text: string(p.data[start:p.pos])}, nil
	default:
		return nil, p.fail("want a value")
	}
}

func (p *treeParser) literal(word string, n *node) (*node, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return nil, p.fail("want " + word)
	}
	p.pos += len(word)
	return n, nil
}

// str consumes a string literal starting at p.pos. Escapes are rare in traces, so only a literal
// holding one goes through encoding/json.
func (p *treeParser) str() (string, error) {
	start := p.pos
	escaped := false
	for i := start + 1; i < len(p.data); i++ {
		switch p.data[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			p.pos = i + 1
			lit := p.data[start:p.pos]
			if !escaped {
				return string(lit[1 : len(lit)-1]), nil
			}
			var s string
			if err := json.Unmarshal(lit, &s); err != nil {
				return "", p.fail("bad string: " + err.Error())
			}
			return s, nil
		}
	}
	return "", p.fail("unterminated string")
}

// decoder turns a node tree into a Trace, checking each step's fields against Spec and handing
// every decoded part to the validator as soon as it is complete, so errors come in file order.
type decoder struct {
	errCtx
	v validator
	// version is the file's format version, one of Formats.
	version string
}

// presenceCheck inspects which members an object has before any value is decoded.
type presenceCheck func(d *decoder, n *node, present map[string]*node, path string) error

// members checks that n is an object without repeated or unknown keys and indexes its members.
func (d *decoder) members(n *node, path string, known func(string) bool) (map[string]*node, error) {
	if n.kind != kindObject {
		return nil, d.errf(path, "must be an object, got %s", n.describe())
	}
	present := make(map[string]*node, len(n.members))
	for _, m := range n.members {
		if _, dup := present[m.key]; dup {
			return nil, d.errf(join(path, m.key), "duplicate field")
		}
		if !known(m.key) {
			return nil, d.errf(join(path, m.key), "unknown field")
		}
		present[m.key] = m.value
	}
	return present, nil
}

func decodeObject[T any](d *decoder, n *node, path string, fields []field[T], v *T, check presenceCheck) error {
	present, err := d.members(n, path, func(k string) bool { return lookup(fields, k) != nil })
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(d, n, present, path); err != nil {
			return err
		}
	}
	for _, m := range n.members {
		if err := lookup(fields, m.key).decode(d, m.value, join(path, m.key), v); err != nil {
			return err
		}
	}
	return nil
}

// requireAll demands every non-optional field.
func requireAll[T any](fields []field[T]) presenceCheck {
	return func(d *decoder, _ *node, present map[string]*node, path string) error {
		for _, f := range fields {
			if _, ok := present[f.name]; !ok && !f.optional {
				return d.errf(join(path, f.name), "missing")
			}
		}
		return nil
	}
}

// requireNames demands the given members of an object decoded by hand.
func (d *decoder) requireNames(present map[string]*node, path string, names ...string) error {
	for _, name := range names {
		if _, ok := present[name]; !ok {
			return d.errf(join(path, name), "missing")
		}
	}
	return nil
}

func (d *decoder) integer(n *node, path string, bits int) (int64, error) {
	if n.kind != kindNumber {
		return 0, d.errf(path, "must be an integer, got %s", n.describe())
	}
	x, err := strconv.ParseInt(n.text, 10, bits)
	if err != nil {
		if isIntegerLiteral(n.text) {
			return 0, d.errf(path, "integer %s is out of range", n.text)
		}
		return 0, d.errf(path, "must be an integer, got number %s", n.text)
	}
	return x, nil
}

func isIntegerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (d *decoder) str(n *node, path string) (string, error) {
	if n.kind != kindString {
		return "", d.errf(path, "must be a string, got %s", n.describe())
	}
	return n.text, nil
}

var topLevel = []string{"format", "name", "origin", "expect", "steps", "final"}

func (d *decoder) trace(root *node) (*Trace, error) {
	if root.kind != kindObject {
		return nil, d.errf("", "the top level must be a JSON object, got %s", root.describe())
	}
	// The format is checked before anything else, so a file of another format version is named as
	// such instead of failing on some field that version introduced.
	if f := root.get("format"); f != nil && f.kind == kindString && !knownFormat(f.text) {
		return nil, d.errf("format", "unknown format version %q; this reader reads %s", f.text, describeFormats())
	}
	present, err := d.members(root, "", func(k string) bool { return contains(topLevel, k) })
	if err != nil {
		return nil, err
	}
	if err := d.requireNames(present, "", topLevel...); err != nil {
		return nil, err
	}
	t := new(Trace)
	if d.version, err = d.str(present["format"], "format"); err != nil {
		return nil, err
	}
	// Every version this reader knows is upgraded in memory to the current one as it is decoded.
	t.Format = Format
	if t.Name, err = d.str(present["name"], "name"); err != nil {
		return nil, err
	}
	if err := decodeObject(d, present["origin"], "origin", originFields, &t.Origin, requireAll(originFields)); err != nil {
		return nil, err
	}
	if err := decodeObject(d, present["expect"], "expect", expectFields, &t.Expect, requireAll(expectFields)); err != nil {
		return nil, err
	}
	d.v = newValidator(d.file)
	if err := d.v.header(t); err != nil {
		return nil, err
	}

	steps := present["steps"]
	if steps.kind != kindArray {
		return nil, d.errf("steps", "must be an array, got %s", steps.describe())
	}
	t.Steps = make([]Step, 0, len(steps.items))
	for i, sn := range steps.items {
		s, err := d.decodeStep(i, sn)
		if err != nil {
			return nil, err
		}
		if err := d.v.step(i, &s); err != nil {
			return nil, err
		}
		t.Steps = append(t.Steps, s)
	}
	d.errCtx.step, d.errCtx.op = -1, ""

	if t.Final, err = d.snapshot(present["final"]); err != nil {
		return nil, err
	}
	if err := d.v.final(t.Final); err != nil {
		return nil, err
	}
	if err := d.v.divergence(t); err != nil {
		return nil, err
	}
	return t, nil
}

var stepMembers = []string{"op", "at", "args", "result"}

func (d *decoder) decodeStep(i int, n *node) (Step, error) {
	d.errCtx.step, d.errCtx.op = i, ""
	var s Step
	// Name the op in errors about the step's other members whenever the op itself is sound.
	if n.kind == kindObject {
		if o := n.get("op"); o != nil && o.kind == kindString {
			if _, ok := Spec[Op(o.text)]; ok {
				d.errCtx.op = Op(o.text)
			}
		}
	}
	present, err := d.members(n, "", func(k string) bool { return contains(stepMembers, k) })
	if err != nil {
		return s, err
	}
	if err := d.requireNames(present, "", stepMembers...); err != nil {
		return s, err
	}
	op, err := d.str(present["op"], "op")
	if err != nil {
		return s, err
	}
	sp, ok := Spec[Op(op)]
	if !ok {
		return s, d.errf("op", "unknown operation %q", op)
	}
	s.Op = Op(op)
	if s.At, err = d.integer(present["at"], "at", 64); err != nil {
		return s, err
	}
	if err := decodeObject(d, present["args"], "args", argFields, &s.Args, specCheck(s.Op, sp.Args, sp.OptionalArgs)); err != nil {
		return s, err
	}
	if s.Op == OpConsumerFetch && s.Args.Profile == ProfileLeased && present["args"].get("lease_for") == nil {
		return s, d.errf("args.lease_for", "missing (a leased consumer_fetch takes lease_for)")
	}
	if err := decodeObject(d, present["result"], "result", resultFields, &s.Result, specCheck(s.Op, nil, sp.Results)); err != nil {
		return s, err
	}
	if (s.Op == OpConsumerHandle || s.Op == OpPublisherDeliver) && present["result"].get("action") == nil {
		return s, d.errf("result.action", "missing (%s always reports an action)", s.Op)
	}
	return s, nil
}

// specCheck refuses members the op does not take (in file order), then missing required ones (in
// Spec order). path is "args" or "result".
func specCheck(op Op, required, optional []string) presenceCheck {
	return func(d *decoder, n *node, present map[string]*node, path string) error {
		for _, m := range n.members {
			if !contains(required, m.key) && !contains(optional, m.key) {
				if path == "args" {
					return d.errf(join(path, m.key), "not an argument of %s (%s)", op, describeArgs(op))
				}
				return d.errf(join(path, m.key), "not a result of %s (%s)", op, describeResults(op))
			}
		}
		for _, name := range required {
			if _, ok := present[name]; !ok {
				return d.errf(join(path, name), "missing (%s)", describeArgs(op))
			}
		}
		return nil
	}
}

var snapshotMembers = []string{"messages", "outbox", "dead_letters", "effects"}

func (d *decoder) snapshot(n *node) (*Snapshot, error) {
	if n.kind == kindNull {
		return nil, nil
	}
	present, err := d.members(n, "final", func(k string) bool { return k == "unknown" || contains(snapshotMembers, k) })
	if err != nil {
		return nil, err
	}
	if err := d.requireNames(present, "final", snapshotMembers...); err != nil {
		return nil, err
	}
	s := new(Snapshot)
	// The declaration is read first, whatever its place in the file: it says which row fields
	// must be absent.
	if u := present["unknown"]; u != nil {
		if d.version == FormatV1 {
			return nil, d.errf("final.unknown", "not part of %s (it came with %s)", FormatV1, FormatV2)
		}
		if s.Unknown, err = d.columns(u, "final.unknown"); err != nil {
			return nil, err
		}
	}
	if s.Messages, err = decodeRows(d, present["messages"], "final.messages", messageRowFields, s.Unknown); err != nil {
		return nil, err
	}
	if s.Outbox, err = decodeRows(d, present["outbox"], "final.outbox", outboxRowFields, s.Unknown); err != nil {
		return nil, err
	}
	if d.version == FormatV1 {
		if s.DeadLetters, err = d.deadLettersV1(present["dead_letters"], s); err != nil {
			return nil, err
		}
	} else if s.DeadLetters, err = decodeRows(d, present["dead_letters"], "final.dead_letters", deadLetterRowFields, s.Unknown); err != nil {
		return nil, err
	}
	eff := present["effects"]
	if _, err := d.members(eff, "final.effects", func(string) bool { return true }); err != nil {
		return nil, err
	}
	s.Effects = make(map[string][]string, len(eff.members))
	for _, m := range eff.members {
		path := mapKey("final.effects", m.key)
		if m.value.kind != kindArray {
			return nil, d.errf(path, "must be an array of ids, got %s", m.value.describe())
		}
		ids := make([]string, 0, len(m.value.items))
		for i, item := range m.value.items {
			id, err := d.str(item, index(path, i))
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		s.Effects[m.key] = ids
	}
	return s, nil
}

// decodeRows reads a snapshot table; an empty table reads as an empty, non-nil slice. A column
// listed in unknown must be absent from every row; every other required field must be present.
func decodeRows[T any](d *decoder, n *node, path string, fields []field[T], unknown []Column) ([]T, error) {
	if n.kind != kindArray {
		return nil, d.errf(path, "must be an array, got %s", n.describe())
	}
	table := strings.TrimPrefix(path, "final.")
	rows := make([]T, len(n.items))
	for i, item := range n.items {
		if err := decodeObject(d, item, index(path, i), fields, &rows[i], requireKnown(fields, table, unknown)); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// requireKnown demands every non-optional field of a row whose column is known, and refuses any
// field whose column the snapshot declared unknown.
func requireKnown[T any](fields []field[T], table string, unknown []Column) presenceCheck {
	return func(d *decoder, _ *node, present map[string]*node, path string) error {
		for _, f := range fields {
			_, ok := present[f.name]
			switch {
			case ok && unknownIn(unknown, table, f.name):
				return d.errf(join(path, f.name), "present, but final.unknown declares %s unknown; an unknown column is absent from every row", table+"."+f.name)
			case !ok && !f.optional && !unknownIn(unknown, table, f.name):
				return d.errf(join(path, f.name), "missing")
			}
		}
		return nil
	}
}

// deadLettersV1 reads the dead letters of a FormatV1 file, in either of its shapes (see
// FormatV1). Rows in the first shape make the fields it lacked unknown for the whole table; one
// file holds one shape.
func (d *decoder) deadLettersV1(n *node, s *Snapshot) ([]DeadLetterRow, error) {
	const path = "final.dead_letters"
	if n.kind != kindArray {
		return nil, d.errf(path, "must be an array, got %s", n.describe())
	}
	oldShape := -1 // index of the first row in the first shape
	newShape := -1
	for i, item := range n.items {
		if item.kind != kindObject {
			continue // decodeRows names it
		}
		old := true
		for _, name := range v1OldDeadLetter {
			if item.get(name) != nil {
				old = false
			}
		}
		if old && oldShape < 0 {
			oldShape = i
		}
		if !old && newShape < 0 {
			newShape = i
		}
	}
	if oldShape >= 0 && newShape >= 0 {
		return nil, d.errf(index(path, max(oldShape, newShape)), "mixes the two shapes of %s dead letters: row %d has none of %s, row %d has some", FormatV1, oldShape, strings.Join(v1OldDeadLetter, ", "), newShape)
	}
	if oldShape >= 0 {
		for _, name := range v1OldDeadLetter {
			s.Unknown = append(s.Unknown, Column("dead_letters."+name))
		}
		slices.Sort(s.Unknown)
	}
	return decodeRows(d, n, path, deadLetterRowFields, s.Unknown)
}

// columns reads final.unknown: a sorted list of distinct columns from Unknowable.
func (d *decoder) columns(n *node, path string) ([]Column, error) {
	if n.kind != kindArray {
		return nil, d.errf(path, "must be an array of column names, got %s", n.describe())
	}
	var out []Column
	for i, item := range n.items {
		name, err := d.str(item, index(path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, Column(name))
	}
	if err := checkColumns(d.errCtx, out); err != nil {
		return nil, err
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// join appends a member name to a field path, quoting names that are not plain identifiers so
// that a path stays unambiguous whatever the input's keys are.
func join(path, key string) string {
	if !plainName(key) {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func mapKey(path, key string) string { return path + "[" + strconv.Quote(key) + "]" }

func plainName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func describeArgs(op Op) string {
	sp := Spec[op]
	switch {
	case len(sp.Args) == 0 && len(sp.OptionalArgs) == 0:
		return fmt.Sprintf("%s takes no arguments", op)
	case len(sp.OptionalArgs) == 0:
		return fmt.Sprintf("%s takes %s", op, strings.Join(sp.Args, ", "))
	case len(sp.Args) == 0:
		return fmt.Sprintf("%s takes optionally %s", op, strings.Join(sp.OptionalArgs, ", "))
	default:
		return fmt.Sprintf("%s takes %s; optionally %s", op, strings.Join(sp.Args, ", "), strings.Join(sp.OptionalArgs, ", "))
	}
}

func describeResults(op Op) string {
	sp := Spec[op]
	if len(sp.Results) == 0 {
		return fmt.Sprintf("%s reports nothing", op)
	}
	return fmt.Sprintf("%s reports %s", op, strings.Join(sp.Results, ", "))
}
