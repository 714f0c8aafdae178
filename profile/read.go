package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The members of a profile file that are not choices.
const (
	keyName        = "name"
	keyDescription = "description"
)

// Error is a refused profile file: where (the file, when known, and the line) and what.
// It wraps [ErrSyntax], [ErrUnknownChoice] or [ErrUnknownValue].
type Error struct {
	// File is the path given to ReadFile, "" for Read.
	File string
	// Line is the 1-based line of the offending member, 0 when unknown.
	Line int
	Err  error
}

func (e *Error) Error() string {
	var where []string
	if e.File != "" {
		where = append(where, e.File)
	}
	if e.Line > 0 {
		where = append(where, fmt.Sprintf("line %d", e.Line))
	}
	msg := strings.TrimPrefix(e.Err.Error(), "profile: ")
	if len(where) == 0 {
		return "profile: " + msg
	}
	return "profile: " + strings.Join(where, ": ") + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// Read parses a profile file: one JSON object whose members are "name" and "description"
// (optional strings) and any of the choices of [Choices], each with a string value. A choice
// absent from the file takes its default. It refuses, with an [*Error] naming the line, an
// unknown member, a value a choice does not take, a member given twice, a value that is not a
// string, and anything that is not exactly one JSON object.
func Read(r io.Reader) (Profile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Profile{}, fmt.Errorf("profile: read: %w", err)
	}
	return parse(data)
}

// ReadFile is [Read] of the file at path; its errors name the file.
func ReadFile(path string) (Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Profile{}, fmt.Errorf("profile: %w", err)
	}
	p, err := parse(data)
	if e, ok := errors.AsType[*Error](err); ok {
		e.File = path
	}
	return p, err
}

func parse(data []byte) (Profile, error) {
	var p Profile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	fail := func(err error) (Profile, error) {
		return Profile{}, &Error{Line: lineAt(data, dec.InputOffset()), Err: err}
	}
	syntax := func(format string, args ...any) (Profile, error) {
		return fail(fmt.Errorf("%w: %s", ErrSyntax, fmt.Sprintf(format, args...)))
	}
	tok, err := dec.Token()
	if err != nil {
		return syntaxErr(data, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return syntax("a profile is a JSON object, got %s", describe(tok))
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxErr(data, err)
		}
		key := tok.(string) // inside an object the decoder only returns string keys
		if seen[key] {
			return syntax("member %q is given twice", key)
		}
		seen[key] = true
		keyLine := lineAt(data, dec.InputOffset())
		tok, err = dec.Token()
		if err != nil {
			return syntaxErr(data, err)
		}
		value, isString := tok.(string)
		if !isString {
			return Profile{}, &Error{Line: keyLine, Err: fmt.Errorf("%w: member %q must be a string, got %s", ErrSyntax, key, describe(tok))}
		}
		switch key {
		case keyName:
			p.Name = value
		case keyDescription:
			p.Description = value
		default:
			if err := p.Set(key, value); err != nil {
				if errors.Is(err, ErrUnknownChoice) {
					err = fmt.Errorf("%w (or %q, %q)", err, keyName, keyDescription)
				}
				return Profile{}, &Error{Line: keyLine, Err: err}
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return syntaxErr(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return syntaxErr(data, err)
		}
		return syntax("data after the profile's object")
	}
	return p, nil
}

// syntaxErr turns a decoder error into an *Error at its line.
func syntaxErr(data []byte, err error) (Profile, error) {
	var off int64 = -1
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		off = se.Offset
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		off = int64(len(data))
		err = errors.New("unexpected end of the file")
	}
	line := 0
	if off >= 0 {
		line = lineAt(data, off)
	}
	return Profile{}, &Error{Line: line, Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		if v == '[' {
			return "an array"
		}
		return fmt.Sprintf("%q", string(v))
	case json.Number:
		return "number " + v.String()
	case bool:
		return fmt.Sprintf("%t", v)
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", v)
	}
	return fmt.Sprintf("%v", tok)
}

// MarshalJSON writes p as a profile file: its name and description when set, then every choice
// it settles otherwise than the default, in table order. Read gives back a profile equal to p.
func (p Profile) MarshalJSON() ([]byte, error) {
	return p.encode(""), nil
}

// UnmarshalJSON reads p as [Read] does.
func (p *Profile) UnmarshalJSON(data []byte) error {
	q, err := parse(data)
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// Encode writes p to w as an indented profile file, one member per line.
func (p Profile) Encode(w io.Writer) error {
	_, err := w.Write(p.encode("  "))
	return err
}

func (p Profile) encode(indent string) []byte {
	var members [][2]string
	if p.Name != "" {
		members = append(members, [2]string{keyName, p.Name})
	}
	if p.Description != "" {
		members = append(members, [2]string{keyDescription, p.Description})
	}
	for _, s := range p.Changed() {
		members = append(members, [2]string{s.Choice, s.Value})
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
			if indent == "" {
				b.WriteByte(' ')
			}
		}
		if indent != "" {
			b.WriteString("\n" + indent)
		}
		k, _ := json.Marshal(m[0])
		v, _ := json.Marshal(m[1])
		b.Write(k)
		b.WriteString(": ")
		b.Write(v)
	}
	if indent != "" && len(members) > 0 {
		b.WriteByte('\n')
	}
	b.WriteByte('}')
	if indent != "" {
		b.WriteByte('\n')
	}
	return b.Bytes()
}
