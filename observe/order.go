package observe

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultWindow is the reorder window of Ordered when none is given: how many events it holds
// back to put them in commit order.
const DefaultWindow = 1 << 12

// Ordered puts the events of a Decoder into commit order as they are read, holding back at most
// a window of them. A recorder writes each transaction's events when it commits, so a log is in
// commit order up to the events of transactions that commit close together, and a merged
// multi-process log up to how far apart its sources were when merged. An event that belongs more
// than a window before the events already released is an error naming its line, never silently
// misplaced.
//
// The order is ReadLog's: write events by sequence number, each read after the write whose
// number it carries, reads of one place ordered by time, then line. The numbering is checked as
// events are released: write numbers are exactly 1, 2, 3, ... with no gap and no repeat, or
// exactly k+1, k+2, ... for a log whose first event is a store's snapshot at seq k.
type Ordered struct {
	dec    *Decoder
	window int
	// Held events are in two parts: inOrder, events that arrived in commit order (each after
	// every event held before it), from inOrder[head]; and late, a heap of the others. A log
	// that is in order costs no heap work.
	inOrder []*Event
	head    int
	late    eventHeap
	// pendingWrites maps the seq of each write held back to its line, to name repeats.
	pendingWrites pending
	// next is the seq the next released write must have.
	next int64
	// last is the sort key of the last event released (zero before the first).
	last     orderKey
	released int64
	eof      bool
	// out is the event Next returned last, valid until the next call; free holds the events
	// released before it, for reading into again: a long log costs no allocation or copy of an
	// event here.
	out  *Event
	free []*Event
	// Follow keeps the held events at the end of the data read so far (the log may grow): Next
	// returns io.EOF, and after Resume goes on reading. Clear it to release them at the end.
	Follow bool
}

// NewOrdered reads dec in commit order with a reorder window of window events (<= 0:
// DefaultWindow).
func NewOrdered(dec *Decoder, window int) *Ordered {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Ordered{dec: dec, window: window, pendingWrites: newPending(window), next: 1}
}

// Writes is the number of write events released so far.
func (o *Ordered) Writes() int64 { return o.next - 1 }

// holdsFirstWrite reports whether the history has read its write at seq 1, checked or still held
// back for ordering: a second write at seq 1 then begins a new history.
func (o *Ordered) holdsFirstWrite() bool {
	if o.next > 1 {
		return true
	}
	_, held := o.pendingWrites.get(1, o.next)
	return held
}

// Next returns the next event in commit order, io.EOF when the log is done. The event is the
// Ordered's own: it stays valid until the next call of a method of o. Errors wrap ErrBadLog and
// name the line or the sequence numbers.
func (o *Ordered) Next() (*Event, error) {
	o.recycle()
	for !o.eof && o.held() <= o.window {
		e := o.alloc()
		err := o.dec.Decode(e)
		if errors.Is(err, io.EOF) {
			o.free = append(o.free, e)
			o.eof = true
			break
		}
		if err == nil {
			err = o.push(e)
		}
		if err != nil {
			o.free = append(o.free, e)
			return nil, err
		}
	}
	if o.eof && o.Follow || o.held() == 0 {
		// A follower's log may still grow: what is held back waits for it (see Drain).
		return nil, io.EOF
	}
	return o.release()
}

// alloc is an event to read into.
func (o *Ordered) alloc() *Event {
	if k := len(o.free); k > 0 {
		e := o.free[k-1]
		o.free = o.free[:k-1]
		return e
	}
	return new(Event)
}

// recycle takes back the event Next returned last.
func (o *Ordered) recycle() {
	if o.out != nil {
		o.free = append(o.free, o.out)
		o.out = nil
	}
}

// pushEvent puts a copy of ev among the held events (a follower's first event of a new file).
func (o *Ordered) pushEvent(ev *Event) error {
	e := o.alloc()
	*e = *ev
	if err := o.push(e); err != nil {
		o.free = append(o.free, e)
		return err
	}
	return nil
}

// Resume lets a follower go on after io.EOF once its file has grown.
func (o *Ordered) Resume() { o.eof = false }

// Restart makes a follower read its log again from the start (a truncated or rotated file):
// what was held back is dropped, and numbering starts again at seq 1.
func (o *Ordered) Restart() {
	o.inOrder, o.head, o.late = o.inOrder[:0], 0, o.late[:0]
	o.pendingWrites.clear()
	o.recycle()
	o.next, o.released, o.eof, o.last = 1, 0, false, orderKey{}
}

// Drain releases what is held back as if the log ended here, without ending it: a follower calls
// it when its log has been quiet, so a finding is not kept waiting for a window of later events.
// An event that arrives later but belongs before a released one is then an error.
func (o *Ordered) Drain() ([]Event, error) {
	o.recycle()
	var out []Event
	for o.held() > 0 {
		top := o.top()
		if !top.Read && top.Seq != o.next || top.Read && top.Seq >= o.next {
			break // its write has not arrived yet: keep it
		}
		ev, err := o.release()
		if err != nil {
			return out, err
		}
		out = append(out, *ev)
	}
	return out, nil
}

// finish releases every held event, as at the end of the log.
func (o *Ordered) finish() ([]Event, error) {
	o.recycle()
	var out []Event
	for o.held() > 0 {
		ev, err := o.release()
		if err != nil {
			return out, err
		}
		out = append(out, *ev)
	}
	return out, nil
}

// push holds ev, which it owns from now on unless it returns an error.
func (o *Ordered) push(ev *Event) error {
	name := o.dec.Name()
	if ev.Op == opSnapshot && ev.Seq >= o.next && o.next == 1 && o.released == 0 && o.held() == 0 {
		// A log that begins with a store's snapshot begins where the database's commit
		// counter was: a recorder turned on again, into a new file, for a database recorded
		// before. Its first write is the one after the snapshot's place.
		o.next = ev.Seq + 1
	}
	if !ev.Read {
		if line, dup := o.pendingWrites.get(ev.Seq, o.next); dup {
			return fmt.Errorf("%w: %s: line %d: %s: seq %d repeats line %d's", ErrBadLog, name, ev.Line, ev.Op, ev.Seq, line)
		}
		if ev.Seq < o.next {
			return fmt.Errorf("%w: %s: line %d: %s: seq %d repeats a write already checked (the next write is seq %d)", ErrBadLog, name, ev.Line, ev.Op, ev.Seq, o.next)
		}
		o.pendingWrites.put(ev.Seq, ev.Line, o.next)
	}
	if o.released > 0 && keyOf(ev).before(o.last) {
		return fmt.Errorf("%w: %s: line %d: %s (seq %d) belongs before line %d (seq %d), which was already checked: the log is out of commit order by more than the reorder window (%d events)",
			ErrBadLog, name, ev.Line, ev.Op, ev.Seq, o.last.line, o.last.seq, o.window)
	}
	e := ev
	if n := len(o.inOrder); n == o.head || before(o.inOrder[n-1], e) {
		if o.head > 0 && o.head == n {
			o.inOrder, o.head = o.inOrder[:0], 0
		}
		o.inOrder = append(o.inOrder, e)
	} else {
		heap.Push(&o.late, e)
	}
	return nil
}

func (o *Ordered) held() int { return len(o.inOrder) - o.head + len(o.late) }

// top is the first held event in commit order; held() > 0.
func (o *Ordered) top() *Event {
	switch {
	case o.head == len(o.inOrder):
		return o.late[0]
	case len(o.late) == 0 || before(o.inOrder[o.head], o.late[0]):
		return o.inOrder[o.head]
	}
	return o.late[0]
}

// pop removes top.
func (o *Ordered) pop(top *Event) {
	if o.head < len(o.inOrder) && o.inOrder[o.head] == top {
		o.inOrder[o.head] = nil
		o.head++
		if o.head > 1024 && o.head*2 > len(o.inOrder) {
			n := copy(o.inOrder, o.inOrder[o.head:])
			clear(o.inOrder[n:])
			o.inOrder, o.head = o.inOrder[:n], 0
		}
		return
	}
	heap.Pop(&o.late)
}

// release pops the first held event; it is o.out until the next recycle.
func (o *Ordered) release() (*Event, error) {
	o.recycle()
	name := o.dec.Name()
	top := o.top()
	if !top.Read && top.Seq != o.next || top.Read && top.Seq >= o.next {
		// The write this event waits for (seq o.next) is neither here nor within the window.
		missing := fmt.Sprintf("seq %d", o.next)
		if !top.Read && top.Seq > o.next+1 {
			missing = fmt.Sprintf("seqs %d..%d", o.next, top.Seq-1)
		}
		if top.Read {
			if o.eof {
				return nil, fmt.Errorf("%w: %s: line %d: read %s is placed after seq %d, but the log's last commit is seq %d", ErrBadLog, name, top.Line, top.Op, top.Seq, o.next-1)
			}
			return nil, fmt.Errorf("%w: %s: gap in the sequence numbers: %s missing (line %d's read %s saw it; not within the %d events after it)", ErrBadLog, name, missing, top.Line, top.Op, o.window)
		}
		where := fmt.Sprintf("not within the reorder window of %d events", o.window)
		if o.eof {
			where = "the log ends without it"
		}
		return nil, fmt.Errorf("%w: %s: gap in the sequence numbers: %s missing before line %d's seq %d (%s)", ErrBadLog, name, missing, top.Line, top.Seq, where)
	}
	o.pop(top)
	if !top.Read {
		o.pendingWrites.remove(top.Seq, o.next)
		o.next++
	}
	o.last = keyOf(top)
	o.released++
	o.out = top
	return top, nil
}

// orderKey is what the commit order looks at in an event.
type orderKey struct {
	seq  int64
	read bool
	at   time.Time
	line int
}

func keyOf(e *Event) orderKey { return orderKey{e.Seq, e.Read, e.At, e.Line} }

// before is the commit order: a comes before b.
func (a orderKey) before(b orderKey) bool {
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	if a.read != b.read { // the write numbered s comes before the reads that saw it
		return !a.read
	}
	if c := a.at.Compare(b.at); c != 0 {
		return c < 0
	}
	return a.line < b.line
}

// before is the commit order of two events.
func before(a, b *Event) bool { return keyOf(a).before(keyOf(b)) }

type eventHeap []*Event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return before(h[i], h[j]) }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(*Event)) }
func (h *eventHeap) Pop() any {
	old := *h
	ev := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return ev
}

// pending maps the seqs of held writes to their lines. A seq from next (the next write to
// release) to next+len(ring)-1 has the ring slot seq%len(ring): no two held seqs of that range
// share one, since they differ by less than the ring's length. A seq further ahead (a log with a
// gap) goes into far. A log in order costs no map operation per event.
type pending struct {
	ring []pendingSlot
	far  map[int64]int
}

// pendingSlot is one write's seq and line; line 0 marks an empty slot.
type pendingSlot struct {
	seq  int64
	line int
}

// newPending makes a ring for at least twice window writes ahead.
func newPending(window int) pending {
	n := 1024
	for n < 2*window {
		n *= 2
	}
	return pending{ring: make([]pendingSlot, n), far: map[int64]int{}}
}

func (p *pending) slot(seq, next int64) *pendingSlot {
	if uint64(seq-next) < uint64(len(p.ring)) {
		return &p.ring[seq&int64(len(p.ring)-1)]
	}
	return nil
}

func (p *pending) get(seq, next int64) (int, bool) {
	if sl := p.slot(seq, next); sl != nil && sl.line != 0 && sl.seq == seq {
		return sl.line, true
	}
	if len(p.far) > 0 {
		line, ok := p.far[seq]
		return line, ok
	}
	return 0, false
}

// put records seq, not held yet, at line (at least 1).
func (p *pending) put(seq int64, line int, next int64) {
	if sl := p.slot(seq, next); sl != nil {
		*sl = pendingSlot{seq, line}
		return
	}
	p.far[seq] = line
}

func (p *pending) remove(seq, next int64) {
	if sl := p.slot(seq, next); sl != nil && sl.line != 0 && sl.seq == seq {
		*sl = pendingSlot{}
		return
	}
	delete(p.far, seq)
}

func (p *pending) clear() {
	clear(p.ring)
	clear(p.far)
}
