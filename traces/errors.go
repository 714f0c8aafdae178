package traces

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels a [*ParseError] wraps, so callers can tell a damaged file from a well-formed file that
// breaks the format's rules without matching message text.
var (
	// ErrSyntax: the input is not one well-formed JSON value in valid UTF-8 (empty, truncated,
	// malformed, or followed by trailing data).
	ErrSyntax = errors.New("not well-formed JSON")
	// ErrInvalid: the input is well-formed JSON but not a valid trace: an unknown or missing field,
	// a mistyped or out-of-range value, a field the operation does not take.
	ErrInvalid = errors.New("not a valid trace")
)

// ParseError is the one error type Read, Unmarshal and Validate return for a bad trace. It names
// where the problem is as precisely as the input allows; a reader's I/O failure is a plain wrapped
// error instead.
type ParseError struct {
	// File is the name the trace was read under; "" for Validate and for Read with an empty name.
	File string
	// Step is the index of the step the problem is in, -1 when it is outside the steps.
	Step int
	// Op is the step's operation when it is known ("" when Step is -1 or the op itself is bad).
	Op Op
	// Field is the dotted path of the offending field, relative to the step when Step >= 0
	// ("args.lease_for", "result.claimed[1].token") and to the top level otherwise
	// ("format", "final.messages[2].attempts"). Empty for syntax errors.
	Field string
	// Msg says what is wrong.
	Msg string
	// Offset is the byte offset of a syntax error (for a truncated input, the input's length); -1
	// for every other error. Line and Col locate the same byte, both 1-based with Col counted in
	// bytes; both are 0 when Offset is -1.
	Offset    int64
	Line, Col int
	// Err is ErrSyntax or ErrInvalid.
	Err error
}

// Error renders the error as one line:
//
//	traces: corpus/x.json: step 3 (lease): args.lease_for: must be >= 1, got 0
//	traces: corpus/y.json:12:7: invalid character '}' looking for beginning of object key string
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("traces: ")
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Col)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d col %d: ", e.Line, e.Col)
	}
	if e.Step >= 0 {
		fmt.Fprintf(&b, "step %d", e.Step)
		if e.Op != "" {
			fmt.Fprintf(&b, " (%s)", e.Op)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrSyntax or ErrInvalid.
func (e *ParseError) Unwrap() error { return e.Err }

// syntaxError locates a syntax problem at byte offset off of data.
func syntaxError(file string, data []byte, off int64, msg string) *ParseError {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return &ParseError{File: file, Step: -1, Msg: msg, Offset: off, Line: line, Col: col, Err: ErrSyntax}
}

// errCtx is where a rule is being checked: the file, and the step when inside one.
type errCtx struct {
	file string
	step int
	op   Op
}

func (c errCtx) errf(field, format string, args ...any) *ParseError {
	return &ParseError{
		File: c.file, Step: c.step, Op: c.op, Field: field,
		Msg: fmt.Sprintf(format, args...), Offset: -1, Err: ErrInvalid,
	}
}
