package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pconform/pconform/actordelivery/record"
)

// This file is the event line's JSON decoder: encoding/json's reading of the type line (see
// events.go) written out by hand for that one schema, since it is most of the cost of checking a
// long log. Each object of the schema has its own loop, its members found through a small hash
// table and decoded in a switch, straight into the caller's event: no reflection, no closure per
// member, no copy of the event. It accepts exactly the lines encoding/json accepts with
// DisallowUnknownFields and gives the same values: member names match exactly or else
// case-insensitively, a repeated member decodes into what the first one left, null leaves a value
// as it is (and clears a pointer or a slice), a string's invalid UTF-8 becomes U+FFFD, a number
// meant for an integer must be one. FuzzEventLine checks it against encoding/json on a committed
// seed corpus.

// lineExtra is what a line says besides its event: whether seq and at were there (the event's
// zero values cannot say), and a slog record's msg.
type lineExtra struct {
	hasSeq, hasAt bool
	msg           string
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

// parse decodes raw, one line, into ev, which it clears first.
func (p *lineParser) parse(raw []byte, ev *record.Event) (lineExtra, error) {
	p.b, p.i, p.depth = raw, 0, 0
	*ev = record.Event{}
	var x lineExtra
	p.ws()
	if p.null() {
		// encoding/json decodes a top-level null into the zero line.
	} else {
		if p.i >= len(p.b) {
			return x, p.syntax("unexpected end of the line")
		}
		if p.b[p.i] != '{' {
			if err := p.skip(); err != nil {
				return x, err
			}
			return x, errors.New("json: the line is not a JSON object")
		}
		if err := p.line(ev, &x); err != nil {
			return x, err
		}
	}
	p.ws()
	if p.i != len(p.b) {
		if err := p.skip(); err != nil {
			return x, err
		}
		return x, errors.New("trailing data after the JSON object")
	}
	return x, nil
}

// names is a table of an object's member names, indexed by the member's number, with an index
// by exact name: slot nameSlot(name) holds the member whose name hashes there, or the next free
// slot after it does (open addressing; the table is at most a quarter full).
type names struct {
	list   []string
	byName [nameSlots]int8
}

const nameSlots = 128

// nameSlot hashes a member name by its length and its first, second and last bytes.
func nameSlot(name []byte) int {
	n := len(name)
	if n == 0 {
		return 0
	}
	return (n*31 + int(name[0])*7 + int(name[n/2])*3 + int(name[n-1])) % nameSlots
}

func newNames(list ...string) *names {
	t := &names{list: list}
	for k := range t.byName {
		t.byName[k] = -1
	}
	for i, name := range list {
		k := nameSlot([]byte(name))
		for t.byName[k] >= 0 {
			k = (k + 1) % nameSlots
		}
		t.byName[k] = int8(i)
	}
	return t
}

// find is the number of the member named name: exactly, or else as bytes.EqualFold matches
// (encoding/json's rule: the first in the struct's order); -1 when none.
func (t *names) find(name []byte) int {
	for k := nameSlot(name); t.byName[k] >= 0; k = (k + 1) % nameSlots {
		if i := t.byName[k]; t.list[i] == string(name) {
			return int(i)
		}
	}
	for i, f := range t.list {
		if bytes.EqualFold([]byte(f), name) {
			return i
		}
	}
	return -1
}

// open consumes the '{' at p.i (the caller has seen it) and the '}' of an empty object,
// reporting whether the object is empty.
func (p *lineParser) open() (empty bool, err error) {
	p.i++
	p.depth++
	if p.depth > maxNesting {
		return false, p.syntax("nested too deeply")
	}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		p.depth--
		return true, nil
	}
	return false, nil
}

// member reads a member name and the ':' after it, and finds the name in t; it leaves p.i at
// the value.
func (p *lineParser) member(t *names) (int, error) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return 0, p.syntax("want a member name")
	}
	name, err := p.rawString()
	if err != nil {
		return 0, err
	}
	k := t.find(name)
	if k < 0 {
		return 0, fmt.Errorf("json: unknown field %q", name)
	}
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != ':' {
		return 0, p.syntax("want ':' after a member name")
	}
	p.i++
	p.ws()
	return k, nil
}

// more consumes the ',' after a member's value (true: another member follows) or the object's
// '}' (false).
func (p *lineParser) more() (bool, error) {
	p.ws()
	if p.i >= len(p.b) {
		return false, p.syntax("unexpected end of the line in an object")
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return true, nil
	case '}':
		p.i++
		p.depth--
		return false, nil
	}
	return false, p.syntax("want ',' or '}' in an object")
}

// The members of each object, numbered in the order of their struct's fields (the order
// encoding/json tries case-insensitive matches in). TestLineMembersCoverTags keeps the tables in
// step with the structs' json tags.
const (
	lineSeq = iota
	lineRead
	lineAt
	lineOp
	lineArgs
	lineResult
	lineTime
	lineLevel
	lineMsg
	lineRow
)

var lineNames = newNames("seq", "read", "at", "op", "args", "result", "time", "level", "msg", "row")

// line decodes the line's object at p.i into ev and x.
func (p *lineParser) line(ev *record.Event, x *lineExtra) error {
	empty, err := p.open()
	if err != nil || empty {
		return err
	}
	for {
		k, err := p.member(lineNames)
		if err != nil {
			return err
		}
		switch k {
		case lineSeq:
			if p.null() {
				ev.Seq, x.hasSeq = 0, false
				break
			}
			if err = p.int64("seq", &ev.Seq); err == nil {
				x.hasSeq = true
			}
		case lineRead:
			err = p.bool("read", &ev.Read)
		case lineAt:
			err = p.atValue(&ev.At, &x.hasAt)
		case lineOp:
			err = p.str("op", &ev.Op, true)
		case lineArgs:
			if err = p.objectStart("args"); err == nil && !p.null() {
				err = p.args(&ev.Args)
			}
		case lineResult:
			if err = p.objectStart("result"); err == nil && !p.null() {
				err = p.result(&ev.Result)
			}
		case lineTime, lineLevel:
			err = p.skip()
		case lineMsg:
			err = p.str("msg", &x.msg, true)
		case lineRow:
			if err = p.objectStart("row"); err != nil {
				break
			}
			if p.null() {
				ev.Row = nil
				break
			}
			if ev.Row == nil {
				ev.Row = &record.SnapshotRow{}
			}
			err = p.snapRow(ev.Row)
		}
		if err != nil {
			return err
		}
		if more, err := p.more(); !more || err != nil {
			return err
		}
	}
}

// objectStart checks that the value at p.i is an object or null, for the member name.
func (p *lineParser) objectStart(name string) error {
	if p.i < len(p.b) && (p.b[p.i] == '{' || p.b[p.i] == 'n') {
		if p.b[p.i] == 'n' && !p.isNull() {
			return p.literal() // a syntax error
		}
		return nil
	}
	if err := p.skip(); err != nil {
		return err
	}
	return fmt.Errorf("json: %s: want an object", name)
}

const (
	argMailbox = iota
	argID
	argKey
	argPriority
	argMaxAttempts
	argDelay
	argPayload
	argMaxDeliveryAttempts
	argLeaseFor
	argToken
	argReason
	argTarget
	argLimit
	argClaimFor
	argWorker
	argPublisher
	argProfile
	argOutcome
	argRetryDelay
	argFault
	argOlderThan
	argHorizon
	argConsumer
	argTTL
	argActor
	argExpectVersion
	argIncarnation
	argSize
	argOutcomes
	argIDs
	argReasons
)

var argNames = newNames("mailbox", "id", "key", "priority", "max_attempts", "delay", "payload",
	"max_delivery_attempts", "lease_for", "token", "reason", "target", "limit", "claim_for", "worker",
	"publisher", "profile", "outcome", "retry_delay", "fault", "older_than", "horizon", "consumer", "ttl",
	"actor", "expect_version", "incarnation", "size", "outcomes", "ids", "reasons")

// args decodes an EventArgs object at p.i into a. Strings that repeat across events are
// interned; ids, keys, tokens and payloads are not.
func (p *lineParser) args(a *record.Args) error {
	empty, err := p.open()
	if err != nil || empty {
		return err
	}
	for {
		k, err := p.member(argNames)
		if err != nil {
			return err
		}
		name := argNames.list[k]
		switch k {
		case argMailbox:
			err = p.str(name, &a.Mailbox, true)
		case argID:
			err = p.str(name, &a.ID, false)
		case argKey:
			err = p.str(name, &a.Key, false)
		case argPriority:
			err = p.int(name, &a.Priority)
		case argMaxAttempts:
			err = p.int(name, &a.MaxAttempts)
		case argDelay:
			err = p.dur(name, &a.Delay)
		case argPayload:
			err = p.str(name, &a.Payload, false)
		case argMaxDeliveryAttempts:
			err = p.int(name, &a.MaxDeliveryAttempts)
		case argLeaseFor:
			err = p.dur(name, &a.LeaseFor)
		case argToken:
			err = p.str(name, &a.Token, false)
		case argReason:
			err = p.str(name, &a.Reason, true)
		case argTarget:
			err = p.str(name, &a.Target, true)
		case argLimit:
			err = p.int(name, &a.Limit)
		case argClaimFor:
			err = p.dur(name, &a.ClaimFor)
		case argWorker:
			err = p.int(name, &a.Worker)
		case argPublisher:
			err = p.int(name, &a.Publisher)
		case argProfile:
			err = p.str(name, &a.Profile, true)
		case argOutcome:
			err = p.str(name, &a.Outcome, true)
		case argRetryDelay:
			err = p.dur(name, &a.RetryDelay)
		case argFault:
			err = p.str(name, &a.Fault, true)
		case argOlderThan:
			err = p.dur(name, &a.OlderThan)
		case argHorizon:
			err = p.dur(name, &a.Horizon)
		case argConsumer:
			err = p.str(name, &a.Consumer, true)
		case argTTL:
			err = p.dur(name, &a.TTL)
		case argActor:
			err = p.str(name, &a.Actor, true)
		case argExpectVersion:
			err = p.int64(name, &a.ExpectVersion)
		case argIncarnation:
			err = p.str(name, &a.Incarnation, true)
		case argSize:
			err = p.int(name, &a.Size)
		case argOutcomes:
			err = p.value(name, &a.Outcomes)
		case argIDs:
			err = p.value(name, &a.IDs)
		case argReasons:
			err = p.value(name, &a.Reasons)
		}
		if err != nil {
			return err
		}
		if more, err := p.more(); !more || err != nil {
			return err
		}
	}
}

const (
	resultErr = iota
	resultDuplicate
	resultMessage
	resultAffected
	resultClaimed
	resultAction
	resultAttempt
	resultVersion
	resultMessages
	resultActions
	resultDuplicates
)

var resultNames = newNames("err", "duplicate", "message", "affected", "claimed", "action", "attempt", "version",
	"messages", "actions", "duplicates")

// result decodes an EventResult object at p.i into r.
func (p *lineParser) result(r *record.Result) error {
	empty, err := p.open()
	if err != nil || empty {
		return err
	}
	for {
		k, err := p.member(resultNames)
		if err != nil {
			return err
		}
		name := resultNames.list[k]
		switch k {
		case resultErr:
			err = p.str(name, &r.Err, true)
		case resultDuplicate:
			err = p.bool(name, &r.Duplicate)
		case resultMessage:
			if err = p.objectStart(name); err != nil {
				break
			}
			if p.null() {
				r.Message = nil
				break
			}
			if r.Message == nil {
				r.Message = &record.Message{}
			}
			err = p.message(r.Message)
		case resultAffected:
			err = p.int(name, &r.Affected)
		case resultClaimed:
			err = p.claimed(&r.Claimed)
		case resultAction:
			err = p.str(name, &r.Action, true)
		case resultAttempt:
			err = p.int(name, &r.Attempt)
		case resultVersion:
			err = p.int64(name, &r.Version)
		case resultMessages:
			err = p.value(name, &r.Messages)
		case resultActions:
			err = p.value(name, &r.Actions)
		case resultDuplicates:
			err = p.value(name, &r.Duplicates)
		}
		if err != nil {
			return err
		}
		if more, err := p.more(); !more || err != nil {
			return err
		}
	}
}

// The members of a result's message and of a claimed outbox row (id, attempts, token).
const (
	rowID = iota
	rowAttempts
	rowToken
)

var (
	messageNames = newNames("id", "attempts", "token")
	claimedNames = newNames("id", "delivery_attempts", "token")
)

// message decodes an EventMessage object at p.i into m.
func (p *lineParser) message(m *record.Message) error {
	return p.row(messageNames, &m.ID, &m.Attempts, &m.Token)
}

// row decodes a message or claimed row's object at p.i into its three fields.
func (p *lineParser) row(t *names, id *string, attempts *int, token *string) error {
	empty, err := p.open()
	if err != nil || empty {
		return err
	}
	for {
		k, err := p.member(t)
		if err != nil {
			return err
		}
		switch k {
		case rowID:
			err = p.str("id", id, false)
		case rowAttempts:
			err = p.int(t.list[k], attempts)
		case rowToken:
			err = p.str("token", token, false)
		}
		if err != nil {
			return err
		}
		if more, err := p.more(); !more || err != nil {
			return err
		}
	}
}

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

// isNull reports whether a null literal starts at p.i.
func (p *lineParser) isNull() bool {
	b := p.b[p.i:]
	return len(b) >= 4 && b[0] == 'n' && b[1] == 'u' && b[2] == 'l' && b[3] == 'l'
}

// null consumes a null literal at p.i, reporting whether there was one.
func (p *lineParser) null() bool {
	if p.i < len(p.b) && p.b[p.i] == 'n' && p.isNull() {
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
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		if p.null() {
			return nil
		}
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
	b, i := p.b, p.i
	// The common case: a short non-negative integer, then a delimiter.
	n, j := int64(0), i
	for j < len(b) && j-i < 18 && '0' <= b[j] && b[j] <= '9' {
		n = n*10 + int64(b[j]-'0')
		j++
	}
	if j > i && (b[i] != '0' || j == i+1) && (j == len(b) || b[j] == ',' || b[j] == '}' || b[j] == ']' || b[j] == ' ') {
		p.i = j
		*dst = n
		return nil
	}
	if p.null() {
		return nil
	}
	if i >= len(b) || b[i] != '-' && (b[i] < '0' || b[i] > '9') {
		if i < len(b) && b[i] != '"' && b[i] != '{' && b[i] != '[' && b[i] != 't' && b[i] != 'f' {
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
	v, err := parseInt(text)
	if err != nil {
		return fmt.Errorf("json: %s: %s does not fit in 64 bits", name, text)
	}
	*dst = v
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

// atValue decodes the time stamp: time.Time's UnmarshalJSON on the value's text, null clearing
// it.
func (p *lineParser) atValue(at *time.Time, has *bool) error {
	if p.null() {
		*at, *has = time.Time{}, false
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
	*at, *has = p.at, true
	return nil
}

// value decodes the value at p.i into dst with encoding/json: the batch steps' lists, rare
// enough that the hand-written fast path is not worth their code. Like the decoder of a whole
// line, it refuses a member its type does not have (a message's, in messages).
func (p *lineParser) value(name string, dst any) error {
	start := p.i
	if err := p.skip(); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(p.b[start:p.i]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("json: %s: %w", name, err)
	}
	return nil
}

// claimed decodes an outbox claim's rows as encoding/json decodes into a slice: element i into
// what the slice already holds there, the slice cut to the elements read, an empty array an
// empty (not nil) slice, null a nil one.
func (p *lineParser) claimed(dst *[]record.Claimed) error {
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
				v = append(v, record.Claimed{})
			case i >= len(v):
				v = v[:i+1]
			}
			if err := p.objectStart("claimed"); err != nil {
				return err
			}
			if !p.null() {
				c := &v[i]
				if err := p.row(claimedNames, &c.ID, &c.DeliveryAttempts, &c.Token); err != nil {
					return err
				}
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
		v = []record.Claimed{}
	}
	*dst = v
	return nil
}

// The members of a snapshot row (record.SnapshotRow).
const (
	snapTable = iota
	snapMailbox
	snapID
	snapKey
	snapPriority
	snapPayload
	snapState
	snapAttempts
	snapMaxAttempts
	snapTarget
	snapMaxDeliveryAttempts
	snapToken
	snapUntil
	snapAvailableAt
	snapFinalAt
	snapExpiresAt
	snapReason
	snapConsumer
	snapActor
	snapVersion
	snapRows
)

var snapNames = newNames("table", "mailbox", "id", "key", "priority", "payload", "state", "attempts",
	"max_attempts", "target", "max_delivery_attempts", "token", "until", "available_at", "final_at",
	"expires_at", "reason", "consumer", "actor", "version", "rows")

// snapRow decodes a snapshot row's object at p.i into r.
func (p *lineParser) snapRow(r *record.SnapshotRow) error {
	empty, err := p.open()
	if err != nil || empty {
		return err
	}
	for {
		k, err := p.member(snapNames)
		if err != nil {
			return err
		}
		name := snapNames.list[k]
		switch k {
		case snapTable:
			err = p.str(name, &r.Table, true)
		case snapMailbox:
			err = p.str(name, &r.Mailbox, true)
		case snapID:
			err = p.str(name, &r.ID, false)
		case snapKey:
			err = p.str(name, &r.Key, false)
		case snapPriority:
			err = p.int(name, &r.Priority)
		case snapPayload:
			err = p.str(name, &r.Payload, false)
		case snapState:
			err = p.str(name, &r.State, true)
		case snapAttempts:
			err = p.int(name, &r.Attempts)
		case snapMaxAttempts:
			err = p.int(name, &r.MaxAttempts)
		case snapTarget:
			err = p.str(name, &r.Target, true)
		case snapMaxDeliveryAttempts:
			err = p.int(name, &r.MaxDeliveryAttempts)
		case snapToken:
			err = p.str(name, &r.Token, false)
		case snapUntil:
			err = p.timeValue(name, &r.Until)
		case snapAvailableAt:
			err = p.timeValue(name, &r.AvailableAt)
		case snapFinalAt:
			err = p.timeValue(name, &r.FinalAt)
		case snapExpiresAt:
			err = p.timeValue(name, &r.ExpiresAt)
		case snapReason:
			err = p.str(name, &r.Reason, true)
		case snapConsumer:
			err = p.str(name, &r.Consumer, true)
		case snapActor:
			err = p.str(name, &r.Actor, true)
		case snapVersion:
			err = p.int64(name, &r.Version)
		case snapRows:
			err = p.int64(name, &r.Rows)
		}
		if err != nil {
			return err
		}
		if more, err := p.more(); !more || err != nil {
			return err
		}
	}
}

// timeValue decodes a time member other than the event's at: time.Time's UnmarshalJSON on the
// value's text (which leaves the time as it is for null).
func (p *lineParser) timeValue(name string, dst *time.Time) error {
	start := p.i
	if err := p.skip(); err != nil {
		return err
	}
	if err := dst.UnmarshalJSON(p.b[start:p.i]); err != nil {
		return fmt.Errorf("json: %s: %w", name, err)
	}
	return nil
}
