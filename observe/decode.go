package observe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes bounds one line of an event log. A recorded event is a few hundred bytes; a longer
// line is not an event, and reading it whole would let one bad file take any amount of memory.
const MaxLineBytes = 1 << 20

// Decoder reads an event log one line at a time, in file order (not commit order: see Ordered).
// It holds one line at a time, so reading costs memory independent of the log's length.
type Decoder struct {
	r    *bufio.Reader
	name string
	line int
	// Truncated is the number of an incomplete last line that was ignored (a writer killed
	// mid-line), 0 while none was found.
	Truncated int
	// Bytes counts the bytes read so far, for progress.
	Bytes int64
	// partial holds the start of a line whose end has not been read yet (Follow mode).
	partial []byte
	// Follow makes an incomplete last line wait for more data instead of ending the log: Next
	// returns io.EOF with the partial line kept, and a later Next goes on from it.
	Follow bool
	p      *lineParser
	// ev is the event Next returns.
	ev Event
	// inc names the workers and publishers of each incarnation apart.
	inc incarnations
	// ahead is set under Ahead: the log is parsed on other goroutines.
	ahead *aheadReader
}

// NewDecoder reads from r; name is used in errors.
func NewDecoder(r io.Reader, name string) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10), name: name, p: newLineParser()}
}

// Name is the log's name as errors give it.
func (d *Decoder) Name() string { return d.name }

// Line is the number of the last line read.
func (d *Decoder) Line() int { return d.line }

// Reset makes the decoder read r from its start, as a log that was truncated or rotated: line
// numbers and the byte count start again.
func (d *Decoder) Reset(r io.Reader) {
	d.r.Reset(r)
	d.line, d.Bytes, d.Truncated, d.partial = 0, 0, 0, nil
	d.inc = incarnations{}
}

// Next returns the next event in file order, or io.EOF at the end of the log. The event is the
// decoder's own: it stays valid until the next call, as a Source's (a Decoder is a Source of a
// log already in commit order). Errors wrap ErrBadLog and name the line (see ReadLog).
func (d *Decoder) Next() (*Event, error) {
	if err := d.Decode(&d.ev); err != nil {
		return nil, err
	}
	return &d.ev, nil
}

// Decode reads the next event in file order into ev, overwriting all of it, or returns io.EOF
// at the end of the log (ev is then undefined); errors as Next's. An "incarnation" event (a
// store's Open) is taken in here and not returned; the workers and publishers of the events
// after it are renumbered apart per incarnation (see incarnations). It is Next without a copy of
// the event: a caller that reads a long log reuses its events.
func (d *Decoder) Decode(ev *Event) error {
	if d.ahead != nil {
		return d.decodeAhead(ev)
	}
	for {
		start := d.Bytes - int64(len(d.partial))
		raw, complete, err := d.readLine()
		if err != nil {
			return err
		}
		kind, err := logLine(d.p, raw, complete, d.name, d.line, ev)
		switch {
		case err != nil:
			return err
		case kind == lineBlank && !complete:
			return io.EOF
		case kind == lineBlank:
			continue
		case kind == lineTruncated:
			d.Truncated = d.line
			return io.EOF
		}
		ev.Line, ev.Offset = d.line, start
		if skip, err := d.take(ev); err != nil || !skip {
			return err
		}
	}
}

// lineKind is what one line of a log holds.
type lineKind int8

const (
	lineEvent lineKind = iota
	// lineBlank is a line of white space alone, which a log may hold anywhere.
	lineBlank
	// lineTruncated is a last line without a newline that is not an event: a writer stopped in
	// the middle of it.
	lineTruncated
)

// logLine parses text, line number line of the log name (without its newline, which complete
// says it has), into ev. A complete line that is not an event is an error naming the line.
func logLine(p *lineParser, text []byte, complete bool, name string, line int, ev *Event) (lineKind, error) {
	if len(bytes.TrimSpace(text)) == 0 {
		return lineBlank, nil
	}
	if perr := p.event(text, ev); perr != nil {
		if !complete {
			return lineTruncated, nil
		}
		return lineEvent, fmt.Errorf("%w: %s: line %d: %v", ErrBadLog, name, line, perr)
	}
	return lineEvent, nil
}

// errLineTooLong is the error for line number line of the log name, longer than MaxLineBytes
// with its newline.
func errLineTooLong(name string, line int) error {
	return fmt.Errorf("%w: %s: line %d is longer than %d bytes: not an event log of JSON lines", ErrBadLog, name, line, MaxLineBytes)
}

// take finishes an event read in file order: it takes in an incarnation event (skip: not
// returned) and names the workers and publishers of the others by their incarnation.
func (d *Decoder) take(ev *Event) (skip bool, err error) {
	switch ev.Op {
	case opIncarnation:
		if err := d.inc.open(ev); err != nil {
			return false, fmt.Errorf("%w: %s: %v", ErrBadLog, d.name, err)
		}
		return true, nil
	case opSnapshot:
		// A snapshot row keeps its incarnation: the checker tells one Open's rows from
		// another's by it.
		if err := d.inc.stated(ev); err != nil {
			return false, fmt.Errorf("%w: %s: %v", ErrBadLog, d.name, err)
		}
		return false, nil
	}
	d.inc.name(ev)
	return false, nil
}

// readLine returns the next line without its newline; complete is false for a last line that has
// none. At the end of the log (nothing left to read) it returns io.EOF.
func (d *Decoder) readLine() (line []byte, complete bool, err error) {
	buf := d.partial
	d.partial = nil
	for {
		chunk, err := d.r.ReadSlice('\n')
		d.Bytes += int64(len(chunk))
		if len(buf)+len(chunk) > MaxLineBytes {
			return nil, false, errLineTooLong(d.name, d.line+1)
		}
		switch {
		case err == nil:
			d.line++
			if buf == nil {
				return chunk[:len(chunk)-1], true, nil
			}
			return append(buf, chunk[:len(chunk)-1]...), true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			buf = append(buf, chunk...)
		case errors.Is(err, io.EOF):
			buf = append(buf, chunk...)
			if len(buf) == 0 {
				return nil, false, io.EOF
			}
			if d.Follow {
				// Keep the start of the line: its writer may still be writing it.
				d.partial = buf
				return nil, false, io.EOF
			}
			d.line++
			return buf, false, nil
		default:
			return nil, false, fmt.Errorf("observe: read %s: %w", d.name, err)
		}
	}
}

// IsEvent reports whether line is one event line of a log (as opposed to, say, the first line of
// a pconform.trace/v1 file).
func IsEvent(line []byte) bool {
	_, err := parseLine(line)
	return err == nil
}
