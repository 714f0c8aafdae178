package observe

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
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
// events are released: write numbers are exactly 1, 2, 3, ... with no gap and no repeat.
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
	pendingWrites map[int64]int
	// next is the seq the next released write must have.
	next int64
	// last is the sort key of the last event released (zero before the first).
	last     Event
	released int64
	eof      bool
	// free holds the events released, for push to reuse: a long log costs no allocation per
	// event here.
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
	return &Ordered{dec: dec, window: window, pendingWrites: map[int64]int{}, next: 1}
}

// Writes is the number of write events released so far.
func (o *Ordered) Writes() int64 { return o.next - 1 }

// Next returns the next event in commit order, io.EOF when the log is done. Errors wrap ErrBadLog
// and name the line or the sequence numbers.
func (o *Ordered) Next() (Event, error) {
	for !o.eof && o.held() <= o.window {
		ev, err := o.dec.Next()
		if errors.Is(err, io.EOF) {
			o.eof = true
			break
		}
		if err != nil {
			return Event{}, err
		}
		if err := o.push(ev); err != nil {
			return Event{}, err
		}
	}
	if o.eof && o.Follow || o.held() == 0 {
		// A follower's log may still grow: what is held back waits for it (see Drain).
		return Event{}, io.EOF
	}
	return o.release()
}

// Resume lets a follower go on after io.EOF once its file has grown.
func (o *Ordered) Resume() { o.eof = false }

// Restart makes a follower read its log again from the start (a truncated or rotated file):
// what was held back is dropped, and numbering starts again at seq 1.
func (o *Ordered) Restart() {
	o.inOrder, o.head, o.late = o.inOrder[:0], 0, o.late[:0]
	clear(o.pendingWrites)
	o.next, o.released, o.eof, o.last = 1, 0, false, Event{}
}

// Drain releases what is held back as if the log ended here, without ending it: a follower calls
// it when its log has been quiet, so a finding is not kept waiting for a window of later events.
// An event that arrives later but belongs before a released one is then an error.
func (o *Ordered) Drain() ([]Event, error) {
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
		out = append(out, ev)
	}
	return out, nil
}

// finish releases every held event, as at the end of the log.
func (o *Ordered) finish() ([]Event, error) {
	var out []Event
	for o.held() > 0 {
		ev, err := o.release()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

func (o *Ordered) push(ev Event) error {
	name := o.dec.Name()
	if !ev.Read {
		if line, dup := o.pendingWrites[ev.Seq]; dup {
			return fmt.Errorf("%w: %s: line %d: %s: seq %d repeats line %d's", ErrBadLog, name, ev.Line, ev.Op, ev.Seq, line)
		}
		if ev.Seq < o.next {
			return fmt.Errorf("%w: %s: line %d: %s: seq %d repeats a write already checked (the next write is seq %d)", ErrBadLog, name, ev.Line, ev.Op, ev.Seq, o.next)
		}
		o.pendingWrites[ev.Seq] = ev.Line
	}
	if o.released > 0 && before(&ev, &o.last) {
		return fmt.Errorf("%w: %s: line %d: %s (seq %d) belongs before line %d (seq %d), which was already checked: the log is out of commit order by more than the reorder window (%d events)",
			ErrBadLog, name, ev.Line, ev.Op, ev.Seq, o.last.Line, o.last.Seq, o.window)
	}
	var e *Event
	if k := len(o.free); k > 0 {
		e, o.free = o.free[k-1], o.free[:k-1]
	} else {
		e = new(Event)
	}
	*e = ev
	if n := len(o.inOrder); n == o.head || before(o.inOrder[n-1], &ev) {
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

func (o *Ordered) release() (Event, error) {
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
				return Event{}, fmt.Errorf("%w: %s: line %d: read %s is placed after seq %d, but the log's last commit is seq %d", ErrBadLog, name, top.Line, top.Op, top.Seq, o.next-1)
			}
			return Event{}, fmt.Errorf("%w: %s: gap in the sequence numbers: %s missing (line %d's read %s saw it; not within the %d events after it)", ErrBadLog, name, missing, top.Line, top.Op, o.window)
		}
		where := fmt.Sprintf("not within the reorder window of %d events", o.window)
		if o.eof {
			where = "the log ends without it"
		}
		return Event{}, fmt.Errorf("%w: %s: gap in the sequence numbers: %s missing before line %d's seq %d (%s)", ErrBadLog, name, missing, top.Line, top.Seq, where)
	}
	o.pop(top)
	if !top.Read {
		delete(o.pendingWrites, top.Seq)
		o.next++
	}
	o.last = *top
	o.released++
	ev := *top
	*top = Event{}
	o.free = append(o.free, top)
	return ev, nil
}

// before is the commit order: a comes before b.
func before(a, b *Event) bool {
	if a.Seq != b.Seq {
		return a.Seq < b.Seq
	}
	if a.Read != b.Read { // the write numbered s comes before the reads that saw it
		return !a.Read
	}
	if c := a.At.Compare(b.At); c != 0 {
		return c < 0
	}
	return a.Line < b.Line
}

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
