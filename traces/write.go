package traces

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Marshal returns the canonical encoding of t: fixed key order, two-space indentation, each step,
// snapshot row and effect list on one line of its own (so a diff shows whole steps), only the
// fields [Spec] allows for each op, and a trailing newline. An invalid trace is refused with the
// [Validate] error, so everything Marshal writes reads back: Unmarshal(Marshal(t)) equals t, and
// Marshal(Unmarshal(b)) equals b for every canonical b.
//
// Zero-valued optional fields are left out, except the result's "message", which is written as
// null for every op whose results include it.
func Marshal(t *Trace) ([]byte, error) {
	if err := Validate(t); err != nil {
		return nil, err
	}
	return encodeTrace(nil, t, true), nil
}

// Write writes the canonical encoding of t to w; see [Marshal].
func Write(w io.Writer, t *Trace) error {
	b, err := Marshal(t)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("traces: write: %w", err)
	}
	return nil
}

// WriteFile writes the canonical encoding of t to path. It writes a temporary file beside path and
// renames it, so a reader never sees half a trace.
func WriteFile(path string, t *Trace) error {
	b, err := Marshal(t)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("traces: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := firstErr(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("traces: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("traces: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("traces: %w", err)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Hash returns a content hash of t for deduplication: the hex SHA-256 of t's canonical encoding
// without "name" and "origin". Two traces that expect the same steps, results, final state and
// variant hash equal however they were made and named. An invalid trace is refused as by Marshal.
func Hash(t *Trace) (string, error) {
	if err := Validate(t); err != nil {
		return "", err
	}
	sum := sha256.Sum256(encodeTrace(nil, t, false))
	return hex.EncodeToString(sum[:]), nil
}

// encodeTrace appends the canonical encoding of a valid trace; identity controls whether name and
// origin are included.
func encodeTrace(b []byte, t *Trace, identity bool) []byte {
	b = append(b, "{\n"...)
	b = append(b, `  "format": `...)
	b = appendString(b, t.Format)
	b = append(b, ",\n"...)
	if identity {
		b = append(b, `  "name": `...)
		b = appendString(b, t.Name)
		b = append(b, ",\n"...)
		b = append(b, `  "origin": `...)
		b = appendBlock(b, "  ", originFields, &t.Origin)
		b = append(b, ",\n"...)
	}
	b = append(b, `  "expect": `...)
	b = appendBlock(b, "  ", expectFields, &t.Expect)
	b = append(b, ",\n"...)

	b = append(b, `  "steps": `...)
	b = appendLines(b, "  ", t.Steps, appendStep)
	b = append(b, ",\n"...)

	b = append(b, `  "final": `...)
	if t.Final == nil {
		b = append(b, "null"...)
	} else {
		f := t.Final
		b = append(b, "{\n"...)
		if len(f.Unknown) > 0 {
			b = append(b, `    "unknown": [`...)
			for i, c := range f.Unknown {
				if i > 0 {
					b = append(b, ", "...)
				}
				b = appendString(b, string(c))
			}
			b = append(b, "],\n"...)
		}
		b = append(b, `    "messages": `...)
		b = appendLines(b, "    ", f.Messages, func(b []byte, r *MessageRow) []byte { return appendRow(b, messageRowFields, r, "messages", f.Unknown) })
		b = append(b, ",\n"...)
		b = append(b, `    "outbox": `...)
		b = appendLines(b, "    ", f.Outbox, func(b []byte, r *OutboxRow) []byte { return appendRow(b, outboxRowFields, r, "outbox", f.Unknown) })
		b = append(b, ",\n"...)
		b = append(b, `    "dead_letters": `...)
		b = appendLines(b, "    ", f.DeadLetters, func(b []byte, r *DeadLetterRow) []byte {
			return appendRow(b, deadLetterRowFields, r, "dead_letters", f.Unknown)
		})
		b = append(b, ",\n"...)
		b = append(b, `    "effects": `...)
		b = appendEffects(b, f.Effects)
		b = append(b, "\n  }"...)
	}
	return append(b, "\n}\n"...)
}

// appendLines writes a JSON array with one element per line, indented one level below indent.
func appendLines[T any](b []byte, indent string, items []T, one func([]byte, *T) []byte) []byte {
	if len(items) == 0 {
		return append(b, "[]"...)
	}
	b = append(b, "[\n"...)
	for i := range items {
		b = append(b, indent...)
		b = append(b, "  "...)
		b = one(b, &items[i])
		if i < len(items)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	b = append(b, indent...)
	return append(b, ']')
}

// appendBlock writes an object with one member per line, indented one level below indent,
// leaving out zero optional fields.
func appendBlock[T any](b []byte, indent string, fields []field[T], v *T) []byte {
	b = append(b, "{\n"...)
	first := true
	for i := range fields {
		f := &fields[i]
		if f.optional && f.isZero(v) {
			continue
		}
		if !first {
			b = append(b, ",\n"...)
		}
		first = false
		b = append(b, indent...)
		b = append(b, "  "...)
		b = appendString(b, f.name)
		b = append(b, ": "...)
		b = f.encode(b, v)
	}
	b = append(b, '\n')
	b = append(b, indent...)
	return append(b, '}')
}

// appendRow writes a snapshot row on one line, leaving out zero optional fields and the columns
// of table that the snapshot declares unknown.
func appendRow[T any](b []byte, fields []field[T], v *T, table string, unknown []Column) []byte {
	if len(unknown) == 0 {
		return appendObject(b, fields, v)
	}
	known := make([]field[T], 0, len(fields))
	for _, f := range fields {
		if !unknownIn(unknown, table, f.name) {
			known = append(known, f)
		}
	}
	return appendObject(b, known, v)
}

// appendObject writes an object on one line, leaving out zero optional fields.
func appendObject[T any](b []byte, fields []field[T], v *T) []byte {
	b = append(b, '{')
	first := true
	for i := range fields {
		f := &fields[i]
		if f.optional && f.isZero(v) {
			continue
		}
		if !first {
			b = append(b, ", "...)
		}
		first = false
		b = appendString(b, f.name)
		b = append(b, ": "...)
		b = f.encode(b, v)
	}
	return append(b, '}')
}

func appendStep(b []byte, s *Step) []byte {
	sp := Spec[s.Op]
	b = append(b, `{"op": `...)
	b = appendString(b, string(s.Op))
	b = append(b, `, "at": `...)
	b = strconv.AppendInt(b, s.At, 10)

	// Required arguments are always written, even when zero (token 0, worker 0); optional ones
	// only when set. Both in Spec order.
	b = append(b, `, "args": {`...)
	n := 0
	for _, name := range sp.Args {
		b = appendMember(b, &n, lookup(argFields, name), &s.Args)
	}
	for _, name := range sp.OptionalArgs {
		if f := lookup(argFields, name); !f.isZero(&s.Args) {
			b = appendMember(b, &n, f, &s.Args)
		}
	}
	b = append(b, `}, "result": {`...)
	n = 0
	for _, name := range sp.Results {
		if f := lookup(resultFields, name); name == "message" || !f.isZero(&s.Result) {
			b = appendMember(b, &n, f, &s.Result)
		}
	}
	return append(b, "}}"...)
}

func appendMember[T any](b []byte, n *int, f *field[T], v *T) []byte {
	if *n > 0 {
		b = append(b, ", "...)
	}
	*n++
	b = appendString(b, f.name)
	b = append(b, ": "...)
	return f.encode(b, v)
}

func appendEffects(b []byte, effects map[string][]string) []byte {
	if len(effects) == 0 {
		return append(b, "{}"...)
	}
	mailboxes := make([]string, 0, len(effects))
	for mb := range effects {
		mailboxes = append(mailboxes, mb)
	}
	slices.Sort(mailboxes)
	b = append(b, "{\n"...)
	for i, mb := range mailboxes {
		b = append(b, "      "...)
		b = appendString(b, mb)
		b = append(b, ": ["...)
		for j, id := range effects[mb] {
			if j > 0 {
				b = append(b, ", "...)
			}
			b = appendString(b, id)
		}
		b = append(b, ']')
		if i < len(mailboxes)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	return append(b, "    }"...)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. Only what JSON requires is escaped (quote, backslash,
// control characters) plus U+2028 and U+2029, so ids and payloads stay readable in the file; s is
// valid UTF-8 because Validate ran first.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2028' || r == '\u2029' {
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
