package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// TypeAnnounce is the log entry type of an `announce` statement; only these entries carry
// observations.
const TypeAnnounce = "Announce"

// TypeAssertionFailure is the entry type of a failed assertion, a monitor's included.
const TypeAssertionFailure = "AssertionFailure"

// Event is one entry of a P checker JSON log, reduced to what the bridge reads.
type Event struct {
	// Entry is the entry's index within its schedule (the JSON array position, from 0), so errors
	// about the event can point back into the log.
	Entry int
	// Type is the entry's "type": "Announce", "SendEvent", "AssertionFailure", ...
	Type string
	// Name is details.event, "" when the entry has none. Always set for an Announce entry.
	Name string
	// Machine is details.id, the machine that logged the entry as "Name(N)"; "" when the entry has
	// none. Always set for an Announce entry.
	Machine string
	// Payload is details.payload exactly as logged: for an Announce, the announced value (a named
	// tuple is a JSON object); for other entries, whatever the checker wrote (often a string). nil
	// when the entry has no payload.
	Payload json.RawMessage
	// Error is details.error, the checker's message for a failure entry (AssertionFailure): the
	// P monitor's assertion message, "Assertion Failed: " and the source position first. "" when
	// the entry has none.
	Error string
}

// LogShape says which of the checker's two JSON log layouts a log has.
type LogShape int

const (
	// ShapeVerbose is the `-v` log `<Project>_0_verbose.trace.json`: an array holding one array of
	// entries per explored schedule.
	ShapeVerbose LogShape = iota + 1
	// ShapeBug is the bug log `BugFinding/<Project>_0_0.trace.json`: the entries of the one
	// schedule that found the bug, as a flat array.
	ShapeBug
)

func (s LogShape) String() string {
	switch s {
	case ShapeVerbose:
		return "verbose"
	case ShapeBug:
		return "bug"
	}
	return fmt.Sprintf("LogShape(%d)", int(s))
}

// LogError locates a defect in a checker log or in one of its observations. Schedule counts from
// 1 as the checker numbers schedules ("Schedule #N"), 0 when the defect is not inside a schedule;
// Entry is the JSON array index of the entry within its schedule, -1 when the defect is not inside
// an entry. Err wraps [ErrMalformedLog] or [ErrBadObservation].
type LogError struct {
	Schedule int
	Entry    int
	// Event is the announced event's name when known.
	Event string
	// Field is the offending payload field when the defect is in one, e.g. "claimed[1].token".
	Field string
	Err   error
}

func (e *LogError) Error() string {
	var loc []string
	if e.Schedule > 0 {
		loc = append(loc, fmt.Sprintf("schedule %d", e.Schedule))
	}
	if e.Entry >= 0 {
		loc = append(loc, fmt.Sprintf("entry %d", e.Entry))
	}
	var b strings.Builder
	b.WriteString("bridge: ")
	b.WriteString(strings.Join(loc, ", "))
	if e.Event != "" {
		if len(loc) > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "(%s)", e.Event)
	}
	if len(loc) > 0 || e.Event != "" {
		b.WriteString(": ")
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *LogError) Unwrap() error { return e.Err }

// Sentinel errors; every error the readers and the converter return wraps one of them.
var (
	// ErrMalformedLog reports input that is not a checker JSON log of the expected shape: not
	// JSON, truncated, trailing data, or an entry without a string "type" and an object "details".
	ErrMalformedLog = errors.New("malformed checker log")
	// ErrBadObservation reports an announced observation that breaks the bridge contract: an
	// unknown eObs event, a missing, unexpected or mistyped payload field, or a trace that does not
	// validate.
	ErrBadObservation = errors.New("observation breaks the bridge contract")
)

func malformed(schedule, entry int, format string, args ...any) error {
	return &LogError{Schedule: schedule, Entry: entry, Err: fmt.Errorf("%w: %s", ErrMalformedLog, fmt.Sprintf(format, args...))}
}

// ReadVerboseLog reads a `-v` log: one slice of events per schedule, in the checker's order.
// Errors wrap [ErrMalformedLog] (as a [*LogError] naming the schedule and entry) or the reader's
// own error.
func ReadVerboseLog(r io.Reader) ([][]Event, error) {
	schedules, shape, err := ReadLog(r)
	if err != nil {
		return nil, err
	}
	if shape != ShapeVerbose {
		return nil, malformed(0, -1, "want a verbose log (an array of schedules), got a bug log (a flat array of entries)")
	}
	return schedules, nil
}

// ReadBugLog reads a bug log: the events of the one buggy schedule. Errors wrap
// [ErrMalformedLog] (as a [*LogError] naming the entry) or the reader's own error.
func ReadBugLog(r io.Reader) ([]Event, error) {
	schedules, shape, err := ReadLog(r)
	if err != nil {
		return nil, err
	}
	if shape != ShapeBug {
		return nil, malformed(0, -1, "want a bug log (a flat array of entries), got a verbose log (an array of schedules)")
	}
	return schedules[0], nil
}

// ReadLog reads either layout, telling them apart by the first element: an array starts a
// verbose log, an object a bug log. A bug log comes back as a single schedule. An empty top-level
// array is refused, since the checker never writes one and it cannot be told apart.
func ReadLog(r io.Reader) ([][]Event, LogShape, error) {
	schedules, _, shape, err := readLog(r, -1)
	return schedules, shape, err
}

// ReadVerboseLogPrefix reads a `-v` log as [ReadVerboseLog] does but turns only its first n
// schedules into events: the later ones are only checked to be JSON arrays and counted. total is
// the number of schedules in the whole log; n < 0 reads them all. A checker run of many schedules
// feeds several consumers this way (the verdict needs them all, a corpus only the first few)
// without decoding every entry. Errors are ReadVerboseLog's.
func ReadVerboseLogPrefix(r io.Reader, n int) (schedules [][]Event, total int, err error) {
	schedules, total, shape, err := readLog(r, n)
	if err != nil {
		return nil, 0, err
	}
	if shape != ShapeVerbose {
		return nil, 0, malformed(0, -1, "want a verbose log (an array of schedules), got a bug log (a flat array of entries)")
	}
	return schedules, total, nil
}

// readLog reads a log of either layout; a verbose log's schedules after the first limit (all of
// them when limit < 0) are only checked and counted. total counts every schedule.
func readLog(r io.Reader, limit int) ([][]Event, int, LogShape, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("bridge: reading checker log: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := expectDelim(dec, '['); err != nil {
		return nil, 0, 0, malformed(0, -1, "top level: %v", err)
	}
	var shape LogShape
	switch next := peekByte(data, dec.InputOffset()); next {
	case '[':
		shape = ShapeVerbose
	case '{':
		shape = ShapeBug
	case ']':
		return nil, 0, 0, malformed(0, -1, "top level: empty array")
	case 0:
		return nil, 0, 0, malformed(0, -1, "top level: unexpected end of input")
	default:
		return nil, 0, 0, malformed(0, -1, "top level: want an array of schedules or of entries, found %q", next)
	}

	var schedules [][]Event
	total := 0
	if shape == ShapeBug {
		events, err := readEntries(dec, 0)
		if err != nil {
			return nil, 0, 0, err
		}
		schedules = append(schedules, events)
		total = 1
	} else {
		for i := 1; dec.More(); i++ {
			if limit >= 0 && i > limit {
				// The rest is only checked and counted, without a decoder: a 1000-schedule log
				// is hundreds of megabytes.
				rest, err := countSchedules(data[dec.InputOffset():], i)
				if err != nil {
					return nil, 0, 0, err
				}
				return schedules, total + rest, shape, nil
			}
			total = i
			if err := expectDelim(dec, '['); err != nil {
				return nil, 0, 0, malformed(i, -1, "%v", err)
			}
			events, err := readEntries(dec, i)
			if err != nil {
				return nil, 0, 0, err
			}
			schedules = append(schedules, events)
		}
		if err := expectDelim(dec, ']'); err != nil {
			return nil, 0, 0, malformed(0, -1, "end of log: %v", err)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, 0, 0, malformed(0, -1, "trailing data after the log")
	}
	return schedules, total, shape, nil
}

// countSchedules counts the schedules in the rest of a verbose log, which starts just after the
// outer array's opening bracket (first == 1) or after a schedule, and must end with the outer
// array's closing bracket and nothing but white space. Every schedule must be a valid JSON array.
// first is the number of the first schedule it counts.
func countSchedules(rest []byte, first int) (int, error) {
	n, depth, start := 0, 0, -1
	inString, escaped := false, false
	wantComma := first > 1 // a comma (or the end) after a schedule, a schedule after a comma
	for i, c := range rest {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if depth > 0 {
			switch c {
			case '"':
				inString = true
			case '[', '{':
				depth++
			case ']', '}':
				depth--
				if depth == 0 {
					if !json.Valid(rest[start : i+1]) {
						return 0, malformed(first+n, -1, "not valid JSON")
					}
					n++
					wantComma = true
				}
			}
			continue
		}
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case c == ',' && wantComma:
			wantComma = false
		case c == '[' && !wantComma:
			depth, start = 1, i
		case c == ']' && wantComma:
			if len(bytes.TrimSpace(rest[i+1:])) != 0 {
				return 0, malformed(0, -1, "trailing data after the log")
			}
			return n, nil
		case wantComma:
			return 0, malformed(first+n-1, -1, "want a comma or the end of the log after the schedule, found %q", c)
		default:
			return 0, malformed(first+n, -1, "want an array of entries, found %q", c)
		}
	}
	return 0, malformed(first+n, -1, "unexpected end of input")
}

// readEntries reads entries up to and including the closing bracket of the current array.
// schedule only labels errors (0 for a bug log, which is not divided into schedules).
func readEntries(dec *json.Decoder, schedule int) ([]Event, error) {
	var events []Event
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, malformed(schedule, i, "%v", err)
		}
		ev, err := decodeEntry(raw)
		if err != nil {
			return nil, malformed(schedule, i, "%v", err)
		}
		ev.Entry = i
		events = append(events, ev)
	}
	if err := expectDelim(dec, ']'); err != nil {
		return nil, malformed(schedule, len(events), "%v", err)
	}
	return events, nil
}

// decodeEntry checks one entry's shape. Keys are matched exactly (encoding/json alone would
// accept "Type" for "type").
func decodeEntry(raw json.RawMessage) (Event, error) {
	var entry map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entry); err != nil || entry == nil {
		return Event{}, fmt.Errorf("want an object {\"type\", \"details\"}, got %s", describeJSON(raw))
	}
	for k := range entry {
		if k != "type" && k != "details" {
			return Event{}, fmt.Errorf("unexpected key %q", k)
		}
	}
	var ev Event
	typ, ok := entry["type"]
	if !ok {
		return Event{}, errors.New(`missing "type"`)
	}
	if err := json.Unmarshal(typ, &ev.Type); err != nil || typ[0] != '"' {
		return Event{}, fmt.Errorf(`"type": want a string, got %s`, describeJSON(typ))
	}
	if ev.Type == "" {
		return Event{}, errors.New(`"type" is empty`)
	}
	detailsRaw, ok := entry["details"]
	if !ok {
		return Event{}, errors.New(`missing "details"`)
	}
	var details map[string]json.RawMessage
	if err := json.Unmarshal(detailsRaw, &details); err != nil || details == nil {
		return Event{}, fmt.Errorf(`"details": want an object, got %s`, describeJSON(detailsRaw))
	}
	announce := ev.Type == TypeAnnounce
	var err error
	if ev.Name, err = detailString(details, "event", announce); err != nil {
		return Event{}, err
	}
	if ev.Machine, err = detailString(details, "id", announce); err != nil {
		return Event{}, err
	}
	if ev.Error, err = detailString(details, "error", false); err != nil {
		return Event{}, err
	}
	if p, ok := details["payload"]; ok {
		ev.Payload = p
	} else if announce {
		return Event{}, errors.New(`announce entry: missing "details.payload"`)
	}
	return ev, nil
}

// detailString returns details[key] when it is a string. For an Announce the key is required
// and must be a non-empty string; other entry types carry free-form details the bridge does not
// read, so a missing or non-string value there is just left out.
func detailString(details map[string]json.RawMessage, key string, required bool) (string, error) {
	raw, ok := details[key]
	if !ok {
		if required {
			return "", fmt.Errorf(`announce entry: missing "details.%s"`, key)
		}
		return "", nil
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		if required {
			return "", fmt.Errorf(`announce entry: "details.%s": want a string, got %s`, key, describeJSON(raw))
		}
		return "", nil
	}
	if required && s == "" {
		return "", fmt.Errorf(`announce entry: "details.%s" is empty`, key)
	}
	return s, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err == io.EOF {
		return fmt.Errorf("unexpected end of input, want %q", want)
	}
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, found %s", want, describeToken(tok))
	}
	return nil
}

// peekByte returns the first non-space byte at or after off, 0 at the end of data.
func peekByte(data []byte, off int64) byte {
	for i := off; i < int64(len(data)); i++ {
		switch c := data[i]; c {
		case ' ', '\t', '\r', '\n':
			continue
		default:
			return c
		}
	}
	return 0
}

func describeToken(tok any) string {
	switch t := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", rune(t))
	case string:
		return "string " + truncate(fmt.Sprintf("%q", t))
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T %v", t, t)
	}
}

// describeJSON names a JSON value's kind and shows a bounded prefix of it for error messages.
func describeJSON(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	kind := "number"
	switch raw[0] {
	case '{':
		kind = "object"
	case '[':
		kind = "array"
	case '"':
		kind = "string"
	case 't', 'f':
		kind = "bool"
	case 'n':
		return "null"
	}
	return kind + " " + truncate(string(raw))
}

func truncate(s string) string {
	const limit = 60
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}
