package observe

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pconform/pconform/actordelivery"
)

// This file is the event line's JSON decoder: encoding/json's reading of the type line (see
// events.go) written out by hand, without reflection and with few allocations, since it is most
// of the cost of checking a long log. It accepts exactly the lines encoding/json accepts with
// DisallowUnknownFields and gives the same values: member names match exactly or else
// case-insensitively, a repeated member decodes into what the first one left, null leaves a value
// as it is (and clears a pointer or a slice), a string's invalid UTF-8 becomes U+FFFD, a number
// meant for an integer must be one. FuzzEventLine checks it against encoding/json on a committed
// seed corpus.

// parsed is one decoded line before its members are checked (parseLine): line, with seq and at
// flagged present instead of being pointers.
type parsed struct {
	seq    int64
	hasSeq bool
	read   bool
	at     time.Time
	hasAt  bool
	op     string
	args   actordelivery.EventArgs
	result actordelivery.EventResult
	msg    string
}

// maxNesting is encoding/json's limit on how deeply arrays and objects nest.
const maxNesting = 10000

// lineParser decodes event lines. It keeps the last time stamp it parsed (a log's events share
// them) and the strings of a few fields whose values repeat (ops, mailboxes, profiles), so a
// line costs few allocations; both caches are bounded.
type lineParser struct {
	b     []byte
	i     int
	depth int
	atRaw []byte
	at    time.Time
	strs  *[internSlots]string
	// scratch holds an unescaped string or member name while it is looked at.
	scratch []byte
	// l is the line being decoded: kept here, not on the stack, since the member table's
	// functions take its address.
	l parsed
}

// internSlots is the size of a lineParser's string cache: a value is kept in the slot its hash
// names, replacing what was there, so the cache is bounded and a lookup is one comparison.
const internSlots = 1024

func newLineParser() *lineParser {
	p := &lineParser{strs: new([internSlots]string)}
	for _, op := range recordedOps {
		p.strs[internSlot([]byte(op))] = op
	}
	return p
}

// internSlot is the cache slot of s (FNV-1a).
func internSlot(s []byte) int {
	h := uint32(2166136261)
	for _, c := range s {
		h = (h ^ uint32(c)) * 16777619
	}
	return int(h % internSlots)
}

// plainString marks the bytes a string holds as they are: not '"', '\\', a control character
// or a byte of a multi-byte UTF-8 sequence.
var plainString = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// errSyntax is a line that is not JSON text.
type errSyntax struct {
	at  int
	msg string
}

func (e *errSyntax) Error() string { return fmt.Sprintf("invalid JSON at byte %d: %s", e.at+1, e.msg) }

func (p *lineParser) syntax(msg string) error { return &errSyntax{at: p.i, msg: msg} }

// mismatch is a JSON value of the wrong kind for its member.
func (p *lineParser) mismatch(name, want string) error {
	return fmt.Errorf("json: %s: want %s, got %s", name, want, p.kind())
}

// kind names the value at p.i.
func (p *lineParser) kind() string {
	if p.i >= len(p.b) {
		return "the end of the line"
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	}
	return "a number"
}

// parse decodes raw, one line.
func (p *lineParser) parse(raw []byte) (parsed, error) {
	p.b, p.i, p.depth = raw, 0, 0
	p.l = parsed{}
	l := &p.l
	p.ws()
	if p.null() {
		// encoding/json decodes a top-level null into the zero line.
	} else {
		if p.i >= len(p.b) {
			return *l, p.syntax("unexpected end of the line")
		}
		if p.b[p.i] != '{' {
			if err := p.skip(); err != nil {
				return *l, err
			}
			return *l, errors.New("json: the line is not a JSON object")
		}
		if err := p.object(&lineMembers, l); err != nil {
			return *l, err
		}
	}
	p.ws()
	if p.i != len(p.b) {
		if err := p.skip(); err != nil {
			return *l, err
		}
		return *l, errors.New("trailing data after the JSON object")
	}
	return *l, nil
}

// member decodes one member of a T from the value at p.i.
type member[T any] struct {
	name string
	set  func(p *lineParser, v *T) error
}

// members is a table of a struct's members, with an index by exact name: slot memberSlot(name)
// lists the members whose names fall in it (cheaper than a map for a few dozen short names).
type members[T any] struct {
	list   []member[T]
	byName [memberSlots][]int
}

const memberSlots = 64

// memberSlot hashes a member name by its length and its first and last bytes.
func memberSlot(name []byte) int {
	if len(name) == 0 {
		return 0
	}
	return (len(name)*31 + int(name[0])*7 + int(name[len(name)-1])) % memberSlots
}

func newMembers[T any](list ...member[T]) members[T] {
	m := members[T]{list: list}
	for i, f := range list {
		k := memberSlot([]byte(f.name))
		m.byName[k] = append(m.byName[k], i)
	}
	return m
}

// find is the member named name: exactly, or else as bytes.EqualFold matches (encoding/json's
// rule).
func (m *members[T]) find(name []byte) (member[T], bool) {
	for _, i := range m.byName[memberSlot(name)] {
		if m.list[i].name == string(name) {
			return m.list[i], true
		}
	}
	for _, f := range m.list {
		if bytes.EqualFold([]byte(f.name), name) {
			return f, true
		}
	}
	return member[T]{}, false
}

// object decodes the object at p.i into v, member by member.
func object[T any](p *lineParser, m *members[T], v *T) error {
	p.i++ // '{'
	p.depth++
	if p.depth > maxNesting {
		return p.syntax("nested too deeply")
	}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		p.depth--
		return nil
	}
	for {
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return p.syntax("want a member name")
		}
		name, err := p.rawString()
		if err != nil {
			return err
		}
		f, known := m.find(name)
		if !known {
			return fmt.Errorf("json: unknown field %q", name)
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return p.syntax("want ':' after a member name")
		}
		p.i++
		p.ws()
		if err := f.set(p, v); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) {
			return p.syntax("unexpected end of the line in an object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			p.depth--
			return nil
		default:
			return p.syntax("want ',' or '}' in an object")
		}
	}
}

// object is the generic object decoder as a method, for the line itself.
func (p *lineParser) object(m *members[parsed], v *parsed) error { return object(p, m, v) }

func (p *lineParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// null consumes a null literal at p.i, reporting whether there was one.
func (p *lineParser) null() bool {
	if bytes.HasPrefix(p.b[p.i:], []byte("null")) {
		p.i += 4
		return true
	}
	return false
}

// rawString consumes the string at p.i (a '"') and returns its value; the bytes are valid until
// the next call.
func (p *lineParser) rawString() ([]byte, error) {
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		c := p.b[j]
		if plainString[c] {
			continue
		}
		switch {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], nil
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return p.slowString(start, j)
		}
	}
	p.i = len(p.b)
	return nil, p.syntax("unexpected end of the line in a string")
}

// slowString unescapes a string whose plain ASCII prefix ends at j, as encoding/json does.
func (p *lineParser) slowString(start, j int) ([]byte, error) {
	out := append(p.scratch[:0], p.b[start:j]...)
	for j < len(p.b) {
		c := p.b[j]
		switch {
		case c == '"':
			p.i = j + 1
			p.scratch = out
			return out, nil
		case c < 0x20:
			p.i = j
			return nil, p.syntax("control character in a string")
		case c == '\\':
			if j+1 >= len(p.b) {
				p.i = len(p.b)
				return nil, p.syntax("unexpected end of the line in a string")
			}
			switch e := p.b[j+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
				j += 2
			case 'b':
				out, j = append(out, '\b'), j+2
			case 'f':
				out, j = append(out, '\f'), j+2
			case 'n':
				out, j = append(out, '\n'), j+2
			case 'r':
				out, j = append(out, '\r'), j+2
			case 't':
				out, j = append(out, '\t'), j+2
			case 'u':
				r := hex4(p.b[j+2:])
				if r < 0 {
					p.i = j
					return nil, p.syntax("bad \\u escape in a string")
				}
				j += 6
				if utf16.IsSurrogate(r) {
					if r2 := hex4u(p.b[j:]); r2 >= 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							out = utf8.AppendRune(out, d)
							j += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				p.i = j
				return nil, p.syntax("bad escape in a string")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			j++
		default:
			r, size := utf8.DecodeRune(p.b[j:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, p.b[j:j+size]...)
			}
			j += size
		}
	}
	p.i = len(p.b)
	return nil, p.syntax("unexpected end of the line in a string")
}

// hex4 is the rune of the four hex digits starting b, -1 when they are not.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// hex4u is the rune of a "\uXXXX" escape starting b, -1 when b does not start with one.
func hex4u(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	return hex4(b[2:])
}

// number consumes a JSON number at p.i and returns its text and whether it is an integer
// (no fraction, no exponent).
func (p *lineParser) number() ([]byte, bool, error) {
	start, j := p.i, p.i
	b := p.b
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && '1' <= b[j] && b[j] <= '9':
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
	default:
		p.i = j
		return nil, false, p.syntax("want a value")
	}
	integer := true
	if j < len(b) && b[j] == '.' {
		integer = false
		j++
		k := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == k {
			p.i = j
			return nil, false, p.syntax("want a digit after '.'")
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		integer = false
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == k {
			p.i = j
			return nil, false, p.syntax("want a digit in an exponent")
		}
	}
	p.i = j
	return b[start:j], integer, nil
}

// literal consumes true, false or null at p.i.
func (p *lineParser) literal() error {
	for _, w := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(p.b[p.i:], []byte(w)) {
			p.i += len(w)
			return nil
		}
	}
	return p.syntax("want a value")
}

// skip consumes any JSON value at p.i, checking its syntax.
func (p *lineParser) skip() error {
	if p.i >= len(p.b) {
		return p.syntax("unexpected end of the line")
	}
	switch c := p.b[p.i]; {
	case c == '"':
		_, err := p.rawString()
		return err
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		p.i++
		p.depth++
		if p.depth > maxNesting {
			return p.syntax("nested too deeply")
		}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == end {
			p.i++
			p.depth--
			return nil
		}
		for {
			p.ws()
			if c == '{' {
				if p.i >= len(p.b) || p.b[p.i] != '"' {
					return p.syntax("want a member name")
				}
				if _, err := p.rawString(); err != nil {
					return err
				}
				p.ws()
				if p.i >= len(p.b) || p.b[p.i] != ':' {
					return p.syntax("want ':' after a member name")
				}
				p.i++
				p.ws()
			}
			if err := p.skip(); err != nil {
				return err
			}
			p.ws()
			if p.i >= len(p.b) {
				return p.syntax("unexpected end of the line")
			}
			switch p.b[p.i] {
			case ',':
				p.i++
			case end:
				p.i++
				p.depth--
				return nil
			default:
				return p.syntax("want ',' or the end of an object or array")
			}
		}
	case c == 't' || c == 'f' || c == 'n':
		return p.literal()
	}
	_, _, err := p.number()
	return err
}

// str decodes a string member into *dst; null leaves it. intern keeps repeated values.
func (p *lineParser) str(name string, dst *string, intern bool) error {
	if p.null() {
		return nil
	}
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return p.mismatch(name, "a string")
	}
	s, err := p.rawString()
	if err != nil {
		return err
	}
	if !intern {
		*dst = string(s)
		return nil
	}
	k := internSlot(s)
	if v := p.strs[k]; v == string(s) {
		*dst = v
		return nil
	}
	*dst = string(s)
	p.strs[k] = *dst
	return nil
}

// int64 decodes an integer member into *dst; null leaves it.
func (p *lineParser) int64(name string, dst *int64) error {
	if p.null() {
		return nil
	}
	if p.i >= len(p.b) || p.b[p.i] != '-' && (p.b[p.i] < '0' || p.b[p.i] > '9') {
		if p.i < len(p.b) && p.b[p.i] != '"' && p.b[p.i] != '{' && p.b[p.i] != '[' && p.b[p.i] != 't' && p.b[p.i] != 'f' {
			_, _, err := p.number() // a syntax error
			return err
		}
		return p.mismatch(name, "an integer")
	}
	text, integer, err := p.number()
	if err != nil {
		return err
	}
	if !integer {
		return fmt.Errorf("json: %s: want an integer, got %s", name, text)
	}
	n, err := parseInt(text)
	if err != nil {
		return fmt.Errorf("json: %s: %s does not fit in 64 bits", name, text)
	}
	*dst = n
	return nil
}

// parseInt parses an integer literal of the JSON grammar without allocating.
func parseInt(b []byte) (int64, error) {
	if len(b) < 19 {
		neg := b[0] == '-'
		if neg {
			b = b[1:]
		}
		var n int64
		for _, c := range b {
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return n, nil
	}
	return strconv.ParseInt(string(b), 10, 64)
}

func (p *lineParser) int(name string, dst *int) error {
	v := int64(*dst)
	if err := p.int64(name, &v); err != nil {
		return err
	}
	*dst = int(v)
	return nil
}

func (p *lineParser) dur(name string, dst *time.Duration) error {
	v := int64(*dst)
	if err := p.int64(name, &v); err != nil {
		return err
	}
	*dst = time.Duration(v)
	return nil
}

func (p *lineParser) bool(name string, dst *bool) error {
	switch {
	case p.null():
	case bytes.HasPrefix(p.b[p.i:], []byte("true")):
		p.i += 4
		*dst = true
	case bytes.HasPrefix(p.b[p.i:], []byte("false")):
		p.i += 5
		*dst = false
	default:
		if err := p.skip(); err != nil {
			return err
		}
		return fmt.Errorf("json: %s: want a boolean", name)
	}
	return nil
}

// structValue decodes an object member into *v with m; null leaves it.
func structValue[T any](p *lineParser, name string, m *members[T], v *T) error {
	if p.null() {
		return nil
	}
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		if err := p.skip(); err != nil {
			return err
		}
		return fmt.Errorf("json: %s: want an object", name)
	}
	return object(p, m, v)
}

// at decodes the time stamp: time.Time's UnmarshalJSON on the value's text, null clearing it.
func (p *lineParser) atValue(l *parsed) error {
	if p.null() {
		l.at, l.hasAt = time.Time{}, false
		return nil
	}
	start := p.i
	if err := p.skip(); err != nil {
		return err
	}
	raw := p.b[start:p.i]
	if p.atRaw == nil || !bytes.Equal(raw, p.atRaw) {
		var t time.Time
		if err := t.UnmarshalJSON(raw); err != nil {
			return fmt.Errorf("json: at: %w", err)
		}
		p.atRaw, p.at = append(p.atRaw[:0], raw...), t
	}
	l.at, l.hasAt = p.at, true
	return nil
}

// claimed decodes an outbox claim's rows as encoding/json decodes into a slice: element i into
// what the slice already holds there, the slice cut to the elements read, an empty array an
// empty (not nil) slice, null a nil one.
func (p *lineParser) claimed(dst *[]actordelivery.EventClaimed) error {
	if p.null() {
		*dst = nil
		return nil
	}
	if p.i >= len(p.b) || p.b[p.i] != '[' {
		if err := p.skip(); err != nil {
			return err
		}
		return errors.New("json: claimed: want an array")
	}
	p.i++
	p.depth++
	if p.depth > maxNesting {
		return p.syntax("nested too deeply")
	}
	v := *dst
	i := 0
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
	} else {
		for {
			p.ws()
			switch {
			case i >= cap(v):
				v = append(v, actordelivery.EventClaimed{})
			case i >= len(v):
				v = v[:i+1]
			}
			if err := structValue(p, "claimed", &claimedMembers, &v[i]); err != nil {
				return err
			}
			i++
			p.ws()
			if p.i >= len(p.b) {
				return p.syntax("unexpected end of the line in an array")
			}
			if p.b[p.i] == ']' {
				p.i++
				break
			}
			if p.b[p.i] != ',' {
				return p.syntax("want ',' or ']' in an array")
			}
			p.i++
		}
	}
	p.depth--
	if i < len(v) {
		v = v[:i]
	}
	if i == 0 {
		v = []actordelivery.EventClaimed{}
	}
	*dst = v
	return nil
}

// The member tables: each JSON member of line and the types it holds, as their json tags name
// them. TestLineMembersCoverTags keeps them in step with the structs.
var (
	lineMembers = newMembers(
		member[parsed]{"seq", func(p *lineParser, l *parsed) error {
			if p.null() {
				l.seq, l.hasSeq = 0, false
				return nil
			}
			if err := p.int64("seq", &l.seq); err != nil {
				return err
			}
			l.hasSeq = true
			return nil
		}},
		member[parsed]{"read", func(p *lineParser, l *parsed) error { return p.bool("read", &l.read) }},
		member[parsed]{"at", (*lineParser).atValue},
		member[parsed]{"op", func(p *lineParser, l *parsed) error { return p.str("op", &l.op, true) }},
		member[parsed]{"args", func(p *lineParser, l *parsed) error { return structValue(p, "args", &argMembers, &l.args) }},
		member[parsed]{"result", func(p *lineParser, l *parsed) error {
			return structValue(p, "result", &resultMembers, &l.result)
		}},
		member[parsed]{"time", func(p *lineParser, _ *parsed) error { return p.skip() }},
		member[parsed]{"level", func(p *lineParser, _ *parsed) error { return p.skip() }},
		member[parsed]{"msg", func(p *lineParser, l *parsed) error { return p.str("msg", &l.msg, true) }},
	)
	argMembers     = newMembers(argMemberList()...)
	resultMembers  = newMembers(resultMemberList()...)
	messageMembers = newMembers(
		member[actordelivery.EventMessage]{"id", func(p *lineParser, m *actordelivery.EventMessage) error { return p.str("id", &m.ID, false) }},
		member[actordelivery.EventMessage]{"attempts", func(p *lineParser, m *actordelivery.EventMessage) error {
			return p.int("attempts", &m.Attempts)
		}},
		member[actordelivery.EventMessage]{"token", func(p *lineParser, m *actordelivery.EventMessage) error {
			return p.str("token", &m.Token, false)
		}},
	)
	claimedMembers = newMembers(
		member[actordelivery.EventClaimed]{"id", func(p *lineParser, c *actordelivery.EventClaimed) error { return p.str("id", &c.ID, false) }},
		member[actordelivery.EventClaimed]{"delivery_attempts", func(p *lineParser, c *actordelivery.EventClaimed) error {
			return p.int("delivery_attempts", &c.DeliveryAttempts)
		}},
		member[actordelivery.EventClaimed]{"token", func(p *lineParser, c *actordelivery.EventClaimed) error {
			return p.str("token", &c.Token, false)
		}},
	)
)

type argMember = member[actordelivery.EventArgs]

// argMemberList is EventArgs' members. Strings that repeat across events are interned; ids,
// tokens and payloads are not.
func argMemberList() []argMember {
	type A = actordelivery.EventArgs
	str := func(name string, intern bool, f func(*A) *string) argMember {
		return argMember{name, func(p *lineParser, a *A) error { return p.str(name, f(a), intern) }}
	}
	num := func(name string, f func(*A) *int) argMember {
		return argMember{name, func(p *lineParser, a *A) error { return p.int(name, f(a)) }}
	}
	dur := func(name string, f func(*A) *time.Duration) argMember {
		return argMember{name, func(p *lineParser, a *A) error { return p.dur(name, f(a)) }}
	}
	return []argMember{
		str("mailbox", true, func(a *A) *string { return &a.Mailbox }),
		str("id", false, func(a *A) *string { return &a.ID }),
		str("key", false, func(a *A) *string { return &a.Key }),
		num("priority", func(a *A) *int { return &a.Priority }),
		num("max_attempts", func(a *A) *int { return &a.MaxAttempts }),
		dur("delay", func(a *A) *time.Duration { return &a.Delay }),
		str("payload", false, func(a *A) *string { return &a.Payload }),
		num("max_delivery_attempts", func(a *A) *int { return &a.MaxDeliveryAttempts }),
		dur("lease_for", func(a *A) *time.Duration { return &a.LeaseFor }),
		str("token", false, func(a *A) *string { return &a.Token }),
		str("reason", true, func(a *A) *string { return &a.Reason }),
		str("target", true, func(a *A) *string { return &a.Target }),
		num("limit", func(a *A) *int { return &a.Limit }),
		dur("claim_for", func(a *A) *time.Duration { return &a.ClaimFor }),
		num("worker", func(a *A) *int { return &a.Worker }),
		num("publisher", func(a *A) *int { return &a.Publisher }),
		str("profile", true, func(a *A) *string { return &a.Profile }),
		str("outcome", true, func(a *A) *string { return &a.Outcome }),
		dur("retry_delay", func(a *A) *time.Duration { return &a.RetryDelay }),
		str("fault", true, func(a *A) *string { return &a.Fault }),
		dur("older_than", func(a *A) *time.Duration { return &a.OlderThan }),
		dur("horizon", func(a *A) *time.Duration { return &a.Horizon }),
		str("consumer", true, func(a *A) *string { return &a.Consumer }),
		dur("ttl", func(a *A) *time.Duration { return &a.TTL }),
		str("actor", true, func(a *A) *string { return &a.Actor }),
		{"expect_version", func(p *lineParser, a *A) error { return p.int64("expect_version", &a.ExpectVersion) }},
	}
}

type resultMember = member[actordelivery.EventResult]

func resultMemberList() []resultMember {
	type R = actordelivery.EventResult
	return []resultMember{
		{"err", func(p *lineParser, r *R) error { return p.str("err", &r.Err, true) }},
		{"duplicate", func(p *lineParser, r *R) error { return p.bool("duplicate", &r.Duplicate) }},
		{"message", func(p *lineParser, r *R) error {
			if p.null() {
				r.Message = nil
				return nil
			}
			if r.Message == nil {
				if p.i < len(p.b) && p.b[p.i] != '{' {
					if err := p.skip(); err != nil {
						return err
					}
					return errors.New("json: message: want an object")
				}
				r.Message = &actordelivery.EventMessage{}
			}
			return structValue(p, "message", &messageMembers, r.Message)
		}},
		{"affected", func(p *lineParser, r *R) error { return p.int("affected", &r.Affected) }},
		{"claimed", func(p *lineParser, r *R) error { return p.claimed(&r.Claimed) }},
		{"action", func(p *lineParser, r *R) error { return p.str("action", &r.Action, true) }},
		{"attempt", func(p *lineParser, r *R) error { return p.int("attempt", &r.Attempt) }},
		{"version", func(p *lineParser, r *R) error { return p.int64("version", &r.Version) }},
	}
}
