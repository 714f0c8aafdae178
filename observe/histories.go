package observe

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/pconform/pconform/models"
)

// histories keeps, per row (and per checkpoint actor), the events that touched it since its
// creation; a finding's window is made from them.
//
// With a log to read again (the usual case: a file), a history holds no event, only where each
// one is: its position in commit order, its byte offset and line, and the worker and publisher
// numbers the Decoder gave it. These are written as varint deltas from the history's previous
// event, about a dozen bytes an event, in a byte slice the garbage collector does not scan.
// An event that touched several rows is also kept in shared, with its keys, so that a window can
// follow it from one row to the others. Without a log (a pipe), shared holds every event as well.
type histories struct {
	// byKey holds each key's history, behind a pointer so that adding one costs one map lookup.
	byKey map[string]*keyEvents
	// shared maps an event's position to what a window needs of it besides its place: the keys
	// of an event that touched several, the event itself when there is no log. refs counts the
	// histories that hold it; at zero it goes.
	shared map[int]*sharedEvent
	// freeLists holds the histories of keys forgotten, emptied, for reuse.
	freeLists []*keyEvents
	// last is the event added last and (without a log) a copy of it: the event a finding is at,
	// which may touch no row.
	last   eventPlace
	lastEv Event
	// log, when set, holds the events: the histories keep their places only (reread).
	log io.ReaderAt
	// noHistory keeps no history, only the last event's place: the log is checked again for a
	// finding's window (CheckOptions.Reread).
	noHistory bool
}

// eventPlace is where one event of a history is.
type eventPlace struct {
	pos  int
	off  int64
	line int
	// worker and publisher are the event's numbers as the Decoder gave them (renumbered apart per
	// incarnation, see incarnations): the line read again carries the recorded ones.
	worker, publisher int32
}

// keyEvents is one key's history: its n events in commit order encoded in enc, and the last of
// them, the base of the next one's deltas.
type keyEvents struct {
	n    int
	enc  []byte
	last eventPlace
}

// sharedEvent is what the histories keep of an event beyond its place (see histories.shared).
type sharedEvent struct {
	keys []string
	ev   *Event
	refs int
}

const (
	// maxKeyEvents bounds one key's history (a checkpoint's saves go on for ever): its first
	// event and the latest ones are kept.
	maxKeyEvents = 256
	// maxWindowEvents bounds a finding's window.
	maxWindowEvents = 20_000
)

func newHistories() histories {
	return histories{byKey: map[string]*keyEvents{}, shared: map[int]*sharedEvent{}}
}

// add records the event at position pos, which touched keys, in each key's history, and returns
// its place. keys is only read during the call.
func (h *histories) add(pos int, ev *Event, keys []string) eventPlace {
	p := eventPlace{pos: pos, off: ev.Offset, line: ev.Line, worker: int32(ev.Args.Worker), publisher: int32(ev.Args.Publisher)}
	h.last = p
	if h.noHistory {
		return p
	}
	if h.log == nil {
		h.lastEv = *ev
	}
	var sh *sharedEvent
	if len(keys) > 1 || h.log == nil && len(keys) > 0 {
		sh = &sharedEvent{refs: len(keys)}
		if len(keys) > 1 {
			sh.keys = make([]string, len(keys))
		}
		if h.log == nil {
			c := *ev
			sh.ev = &c
		}
		h.shared[pos] = sh
	}
	for i, k := range keys {
		l := h.byKey[k]
		if l == nil {
			if n := len(h.freeLists); n > 0 {
				l, h.freeLists = h.freeLists[n-1], h.freeLists[:n-1]
			} else {
				l = new(keyEvents)
			}
			// The key is the event's own string, which the model keeps too: a decoded string is
			// never a view of the decoder's buffer, so keeping it costs no copy.
			h.byKey[k] = l
		}
		if sh != nil && sh.keys != nil {
			sh.keys[i] = k
		}
		if l.n >= maxKeyEvents {
			h.trim(l)
		}
		l.append(p)
	}
	return p
}

// append adds p, later in commit order than every event of l, to l.
func (l *keyEvents) append(p eventPlace) {
	b := l.last
	l.enc = binary.AppendUvarint(l.enc, uint64(p.pos-b.pos))
	l.enc = binary.AppendVarint(l.enc, p.off-b.off)
	l.enc = binary.AppendVarint(l.enc, int64(p.line-b.line))
	l.enc = binary.AppendVarint(l.enc, int64(p.worker))
	l.enc = binary.AppendVarint(l.enc, int64(p.publisher))
	l.n++
	l.last = p
}

// places decodes l's events, in commit order, appending them to buf.
func (l *keyEvents) places(buf []eventPlace) []eventPlace {
	var p eventPlace
	enc := l.enc
	next := func() int64 {
		v, k := binary.Varint(enc)
		enc = enc[k:]
		return v
	}
	for range l.n {
		d, k := binary.Uvarint(enc)
		enc = enc[k:]
		p.pos += int(d)
		p.off += next()
		p.line += int(next())
		p.worker, p.publisher = int32(next()), int32(next())
		buf = append(buf, p)
	}
	return buf
}

// reset empties l, keeping its storage.
func (l *keyEvents) reset() {
	l.n, l.enc, l.last = 0, l.enc[:0], eventPlace{}
}

// trim cuts l to its first event and its latest maxKeyEvents/2, letting go of the others.
func (h *histories) trim(l *keyEvents) {
	all := l.places(nil)
	h.release(all[1 : len(all)-maxKeyEvents/2])
	l.reset()
	l.append(all[0])
	for _, p := range all[len(all)-maxKeyEvents/2:] {
		l.append(p)
	}
}

// release lets go of one history's hold on events.
func (h *histories) release(places []eventPlace) {
	if len(h.shared) == 0 {
		return
	}
	for _, p := range places {
		if sh := h.shared[p.pos]; sh != nil {
			if sh.refs--; sh.refs == 0 {
				delete(h.shared, p.pos)
			}
		}
	}
}

// window is the events of keys' histories, closed under the keys those events touch (a claim's
// other rows, a delivery's message), in commit order, ending with the event added last: a finding
// is always at the event just added.
func (h *histories) window(keys []string) []eventPlace {
	last := h.last
	seen := map[string]bool{}
	in := map[int]eventPlace{last.pos: last}
	queue := slices.Clone(keys)
	var buf []eventPlace
	for len(queue) > 0 && len(in) < maxWindowEvents {
		k := queue[0]
		queue = queue[1:]
		if seen[k] {
			continue
		}
		seen[k] = true
		l := h.byKey[k]
		if l == nil {
			continue
		}
		buf = l.places(buf[:0])
		for _, p := range buf {
			if _, ok := in[p.pos]; ok || p.pos > last.pos {
				continue
			}
			in[p.pos] = p
			if sh := h.shared[p.pos]; sh != nil {
				queue = append(queue, sh.keys...)
			}
		}
	}
	all := make([]eventPlace, 0, len(in))
	for _, p := range in {
		all = append(all, p)
	}
	slices.SortFunc(all, func(a, b eventPlace) int { return a.pos - b.pos })
	return all
}

// events are the events of window, read again from the log where the histories keep places
// only.
func (h *histories) events(window []eventPlace) ([]Event, error) {
	events := make([]Event, len(window))
	var buf []byte
	p := newLineParser()
	for i, pl := range window {
		if h.log == nil {
			if pl.pos == h.last.pos {
				events[i] = h.lastEv
			} else {
				events[i] = *h.shared[pl.pos].ev
			}
			continue
		}
		var err error
		if buf, err = readLineAt(h.log, pl.off, buf); err != nil {
			return nil, fmt.Errorf("observe: reading line %d of the log again for a finding's window: %w", pl.line, err)
		}
		if err := p.event(buf, &events[i]); err != nil {
			return nil, fmt.Errorf("%w: line %d, read again for a finding's window at byte %d, is not the event it was: %v", ErrBadLog, pl.line, pl.off, err)
		}
		events[i].Line, events[i].Offset = pl.line, pl.off
		a := &events[i].Args
		a.Worker, a.Publisher, a.Incarnation = int(pl.worker), int(pl.publisher), ""
	}
	return events, nil
}

// prune forgets the histories of rows m no longer keeps; it returns how many events it kept.
func (h *histories) prune(m *models.Machine) int {
	n := 0
	var buf []eventPlace
	for k, l := range h.byKey {
		if len(k) > 0 && k[0] != 0 && !m.Holds(k) {
			delete(h.byKey, k)
			if len(h.shared) > 0 {
				buf = l.places(buf[:0])
				h.release(buf)
			}
			l.reset()
			h.freeLists = append(h.freeLists, l)
			continue
		}
		n += l.n
	}
	return n
}
