package observe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
)

// aheadChunkBytes is how much of the log one parser takes at a time: some 600 recorded lines,
// enough that handing a chunk on costs little beside parsing it.
const aheadChunkBytes = 128 << 10

// minRead is the least room a read is given.
const minRead = 4 << 10

// aheadChunks is how many chunks are read or parsed ahead of the caller at most, besides the
// one it reads from and the one being read: the memory of reading ahead (a chunk's events take
// some 3 times its bytes, so about 3 MB in all), which a small log's heap shows most.
const aheadChunks = 4

// Ahead makes d parse the log on parsers goroutines, ahead of its caller, and hand the events
// on in file order: Decode then costs a swap, not a parse. The events, the errors and Truncated
// are those of the sequential decoder; Bytes and Line count up to the last event returned.
// Parsing is about a third of a check's work, so a check (or CheckJobs' router) reading a log
// this way spends its own goroutine on the model. It must be called before the first Decode,
// and not with Follow or Reset. stop ends the reading; call it when done with d (it is safe to
// call more than once).
func (d *Decoder) Ahead(parsers int) (stop func()) {
	return d.startAhead(max(parsers, 1), aheadChunkBytes)
}

// startAhead is Ahead with the chunk size given (the tests use small chunks to cross many edges).
func (d *Decoder) startAhead(parsers, chunkBytes int) (stop func()) {
	a := &aheadReader{
		name:  d.name,
		work:  make(chan *aheadChunk, aheadChunks),
		order: make(chan *aheadChunk, aheadChunks),
		free:  make(chan *aheadChunk, aheadChunks+2),
		quit:  make(chan struct{}),
	}
	d.ahead = a
	var wg sync.WaitGroup
	wg.Add(1 + parsers)
	go func() { defer wg.Done(); a.read(d.r, chunkBytes) }()
	for range parsers {
		go func() { defer wg.Done(); a.parse() }()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			close(a.quit)
			wg.Wait()
		})
	}
}

// aheadReader is the reading of a Decoder under Ahead: a reader goroutine cuts the log into
// chunks of whole lines and hands each to the parsers (work) and, in file order, to the caller
// (order); a chunk is the caller's once its parser closes done.
type aheadReader struct {
	name              string
	work, order, free chan *aheadChunk
	quit              chan struct{}
	// cur is the chunk the caller reads from, next its next event.
	cur  *aheadChunk
	next int
}

// aheadChunk is a run of whole lines of the log and, once parsed, their events.
type aheadChunk struct {
	raw []byte
	// line is the number of raw's first line, offset the log's byte where raw starts.
	line   int
	offset int64
	// last is set when raw ends the log: its last line may have no newline.
	last bool
	// readErr is an error reading the log after raw.
	readErr error
	events  []Event
	n       int
	// err is the line's error that ends the events (a line that is not an event); truncated is
	// the number of an incomplete last line that was ignored.
	err       error
	truncated int
	done      chan struct{}
}

// read cuts the log into chunks until its end, an error, or quit.
func (a *aheadReader) read(r io.Reader, chunkBytes int) {
	defer close(a.work)
	defer close(a.order)
	line, offset := 1, int64(0)
	var carry []byte // the start of a line whose end is not read yet
	for {
		var c *aheadChunk
		select {
		case c = <-a.free:
		default:
			c = &aheadChunk{}
		}
		c.raw = append(c.raw[:0], carry...)
		c.line, c.offset, c.last, c.readErr, c.n, c.err, c.truncated = line, offset, false, nil, 0, nil, 0
		c.done = make(chan struct{})
		// Read at least chunkBytes, and on to a newline: a chunk ends at the end of a line.
		for {
			if len(c.raw) >= chunkBytes && bytes.IndexByte(c.raw[len(carry):], '\n') >= 0 {
				break
			}
			if len(c.raw) > chunkBytes+MaxLineBytes {
				break // a line longer than any event: its parser names it
			}
			if cap(c.raw)-len(c.raw) < max(chunkBytes/2, minRead) {
				c.raw = slices.Grow(c.raw, max(chunkBytes, minRead))
			}
			n, err := r.Read(c.raw[len(c.raw):cap(c.raw)])
			c.raw = c.raw[:len(c.raw)+n]
			if errors.Is(err, io.EOF) {
				c.last = true
				break
			}
			if err != nil {
				c.last, c.readErr = true, fmt.Errorf("observe: read %s: %w", a.name, err)
				break
			}
		}
		carry = carry[:0]
		if c.readErr != nil {
			// The sequential decoder gives the error where the line it broke off begins.
			c.raw = c.raw[:bytes.LastIndexByte(c.raw, '\n')+1]
		}
		if !c.last {
			cut := bytes.LastIndexByte(c.raw, '\n') + 1
			if cut > 0 {
				carry = append(carry, c.raw[cut:]...)
				c.raw = c.raw[:cut]
			}
		}
		line += bytes.Count(c.raw, []byte{'\n'})
		offset += int64(len(c.raw))
		select {
		case a.order <- c:
		case <-a.quit:
			return
		}
		select {
		case a.work <- c:
		case <-a.quit:
			return
		}
		if c.last {
			return
		}
	}
}

// parse parses the chunks handed to it until there are no more or quit.
func (a *aheadReader) parse() {
	p := newLineParser()
	for {
		select {
		case c, ok := <-a.work:
			if !ok {
				return
			}
			a.parseChunk(p, c)
			close(c.done)
		case <-a.quit:
			return
		}
	}
}

// parseChunk parses c's lines as the sequential Decoder does, up to the first that is not an
// event.
func (a *aheadReader) parseChunk(p *lineParser, c *aheadChunk) {
	raw, line, start := c.raw, c.line, c.offset
	for len(raw) > 0 {
		end := bytes.IndexByte(raw, '\n')
		complete := end >= 0
		if !complete {
			end = len(raw)
		}
		text := raw[:end]
		// As the sequential decoder counts it: the line with its newline, if it has one.
		if n := len(text); complete && n+1 > MaxLineBytes || n > MaxLineBytes {
			c.err = errLineTooLong(a.name, line)
			return
		}
		if c.n == len(c.events) {
			c.events = append(c.events, Event{})
		}
		ev := &c.events[c.n]
		// Only the log's last line can lack a newline: read ends every other chunk at one.
		kind, err := logLine(p, text, complete, a.name, line, ev)
		switch {
		case err != nil:
			c.err = err
			return
		case kind == lineTruncated:
			c.truncated = line
			return
		case kind == lineEvent:
			ev.Line, ev.Offset = line, start
			c.n++
		}
		if !complete {
			return
		}
		raw = raw[end+1:]
		start += int64(end + 1)
		line++
	}
}

// decodeAhead is Decode under Ahead: the next event in file order, moved into ev.
func (d *Decoder) decodeAhead(ev *Event) error {
	a := d.ahead
	for {
		c := a.cur
		if c != nil && a.next < c.n {
			e := &c.events[a.next]
			a.next++
			// A swap, not a copy: ev's old lists go to be parsed into again, and the event's
			// are ev's alone.
			*ev, *e = *e, *ev
			d.line, d.Bytes = ev.Line, ev.Offset
			skip, err := d.take(ev)
			if err != nil || !skip {
				return err
			}
			continue
		}
		if c != nil {
			switch {
			case c.err != nil:
				return c.err
			case c.truncated > 0:
				d.Truncated = c.truncated
				return io.EOF
			case c.readErr != nil:
				return c.readErr
			case c.last:
				d.Bytes = c.offset + int64(len(c.raw))
				return io.EOF
			}
			select {
			case a.free <- c:
			default:
			}
			a.cur = nil
		}
		next, ok := <-a.order
		if !ok {
			return io.EOF // stopped
		}
		select {
		case <-next.done:
		case <-a.quit:
			return io.EOF
		}
		a.cur, a.next = next, 0
	}
}
