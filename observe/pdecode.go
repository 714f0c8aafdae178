package observe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Parsing a line is most of the cost of reading a log, and each line parses alone: a Decoder in
// parallel mode has a reader goroutine cut the log into chunks of whole lines, a few goroutines
// parse the chunks, and Decode takes the chunks' lines back in file order. What Decode gives is
// what it gives in serial mode, errors and all: the line numbers, offsets, a truncated last line
// and the incarnations are all worked out in file order, on the caller's goroutine.

// chunkBytes is about how much of the log one chunk holds.
const chunkBytes = 128 << 10

// chunksAhead bounds the chunks read but not yet taken by Decode, so memory stays bounded.
const chunksAhead = 8

// chunk is a run of whole lines of the log and, once parsed (done closed), their events.
type chunk struct {
	buf []byte
	// start is buf's offset in the log.
	start int64
	// eof marks the log's last chunk; its last line may lack a newline.
	eof bool
	// tail, when set, is the error that follows buf's lines: a read error, or a line longer than
	// MaxLineBytes (tooLong).
	tail    error
	tooLong bool

	lines  []chunkLine
	events []Event
	done   chan struct{}
}

// chunkLine is one line of a chunk: where it ends in buf (past its newline), and its event's
// index in events, or what kept it from having one.
type chunkLine struct {
	end   int
	ev    int
	blank bool
	err   error
}

// parallelDecode is a Decoder's state in parallel mode.
type parallelDecode struct {
	order chan *chunk
	stop  chan struct{}
	once  sync.Once
	cur   *chunk
	next  int
	// over is set once the log's end (or its error) was given.
	over error
}

// parallel puts d, which has read nothing yet, in parallel mode with workers parsers. It reports
// false, changing nothing, when d has begun reading or follows its log.
func (d *Decoder) parallel(workers, chunkSize int) bool {
	if d.pd != nil || d.Follow || d.line > 0 || d.Bytes > 0 || len(d.partial) > 0 {
		return false
	}
	workers = max(workers, 1)
	pd := &parallelDecode{order: make(chan *chunk, chunksAhead), stop: make(chan struct{})}
	work := make(chan *chunk, chunksAhead)
	for range workers {
		go func() {
			p := newLineParser()
			for c := range work {
				parseChunk(p, c)
			}
		}()
	}
	go d.readChunks(pd, work, max(chunkSize, 1))
	d.pd = pd
	return true
}

// stopParallel lets the reader and the parsers go when the caller stops reading before the end.
func (d *Decoder) stopParallel() {
	if d.pd != nil {
		d.pd.once.Do(func() { close(d.pd.stop) })
	}
}

// readChunks cuts the log into chunks of whole lines for the parsers, and hands them to Decode in
// file order.
func (d *Decoder) readChunks(pd *parallelDecode, work chan<- *chunk, chunkSize int) {
	defer close(work)
	defer close(pd.order)
	var carry []byte
	var off int64
	send := func(c *chunk) bool {
		c.done = make(chan struct{})
		select {
		case pd.order <- c:
		case <-pd.stop:
			return false
		}
		if len(c.buf) == 0 {
			close(c.done) // nothing to parse
			return true
		}
		select {
		case work <- c:
			return true
		case <-pd.stop:
			return false
		}
	}
	for {
		size := max(chunkSize, 2*len(carry))
		buf := make([]byte, size)
		n := copy(buf, carry)
		m, err := io.ReadFull(d.r, buf[n:])
		buf = buf[:n+m]
		atEnd := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !atEnd {
			send(&chunk{buf: cutLines(buf, &carry), start: off, tail: fmt.Errorf("observe: read %s: %w", d.name, err)})
			return
		}
		if atEnd {
			send(&chunk{buf: buf, start: off, eof: true})
			return
		}
		whole := cutLines(buf, &carry)
		if len(whole) == 0 && len(carry) > MaxLineBytes {
			// One line fills more than MaxLineBytes without its end: serial mode stops there.
			send(&chunk{start: off, tail: errLineTooLong, tooLong: true})
			return
		}
		if len(whole) > 0 {
			if !send(&chunk{buf: whole, start: off}) {
				return
			}
			off += int64(len(whole))
		}
	}
}

// errLineTooLong stands for the error Decode words with the line's number.
var errLineTooLong = errors.New("line too long")

// cutLines returns buf's whole lines and keeps the rest (a line not ended yet) in carry.
func cutLines(buf []byte, carry *[]byte) []byte {
	cut := bytes.LastIndexByte(buf, '\n') + 1
	*carry = append((*carry)[:0:0], buf[cut:]...)
	return buf[:cut]
}

// parseChunk parses each line of c.
func parseChunk(p *lineParser, c *chunk) {
	defer close(c.done)
	n := bytes.Count(c.buf, []byte{'\n'}) + 1
	c.lines = make([]chunkLine, 0, n)
	c.events = make([]Event, 0, n)
	rest := c.buf
	pos := 0
	for len(rest) > 0 {
		raw := rest
		next := len(rest)
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			raw, next = rest[:i], i+1
		}
		rest = rest[next:]
		pos += next
		ln := chunkLine{end: pos, ev: -1}
		switch {
		case next > MaxLineBytes || len(raw) == next && len(raw) > MaxLineBytes:
			ln.err = errLineTooLong
		case len(bytes.TrimSpace(raw)) == 0:
			ln.blank = true
		default:
			c.events = c.events[:len(c.events)+1] // zeroed by make
			if err := p.event(raw, &c.events[len(c.events)-1]); err != nil {
				c.events = c.events[:len(c.events)-1]
				ln.err = err
			} else {
				ln.ev = len(c.events) - 1
			}
		}
		c.lines = append(c.lines, ln)
	}
}

// decodeParallel is Decode in parallel mode: the next event in file order, the chunk's own (it is
// not reused), with the line's number and offset, and the incarnations worked out.
func (d *Decoder) decodeParallel() (*Event, error) {
	pd := d.pd
	for {
		if pd.over != nil {
			return nil, pd.over
		}
		if pd.cur == nil || pd.next == len(pd.cur.lines) {
			if c := pd.cur; c != nil && c.tail != nil {
				pd.over = c.tail
				if c.tooLong {
					pd.over = fmt.Errorf("%w: %s: line %d is longer than %d bytes: not an event log of JSON lines", ErrBadLog, d.name, d.line+1, MaxLineBytes)
				}
				continue
			}
			c, ok := <-pd.order
			if !ok {
				pd.over = io.EOF
				continue
			}
			<-c.done
			pd.cur, pd.next = c, 0
			continue
		}
		c := pd.cur
		ln := c.lines[pd.next]
		begin := 0
		if pd.next > 0 {
			begin = c.lines[pd.next-1].end
		}
		pd.next++
		start := c.start + int64(begin)
		complete := ln.end > begin && c.buf[ln.end-1] == '\n'
		if ln.err == errLineTooLong {
			pd.over = fmt.Errorf("%w: %s: line %d is longer than %d bytes: not an event log of JSON lines", ErrBadLog, d.name, d.line+1, MaxLineBytes)
			continue
		}
		d.line++
		d.Bytes = c.start + int64(ln.end)
		if ln.blank {
			if !complete {
				pd.over = io.EOF
			}
			continue
		}
		if ln.err != nil {
			if !complete {
				d.Truncated = d.line
				pd.over = io.EOF
				continue
			}
			pd.over = fmt.Errorf("%w: %s: line %d: %v", ErrBadLog, d.name, d.line, ln.err)
			continue
		}
		ev := &c.events[ln.ev]
		ev.Line, ev.Offset = d.line, start
		if ev.Op == opIncarnation {
			if err := d.inc.open(ev); err != nil {
				pd.over = fmt.Errorf("%w: %s: %v", ErrBadLog, d.name, err)
			}
			continue
		}
		if ev.Op == opSnapshot {
			if err := d.inc.stated(ev); err != nil {
				pd.over = fmt.Errorf("%w: %s: %v", ErrBadLog, d.name, err)
				continue
			}
			return ev, nil
		}
		d.inc.name(ev)
		return ev, nil
	}
}
