package observe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/pconform/pconform/actordelivery/record"
)

// ErrBadLog is wrapped by every error about the content of an event log (not its I/O).
var ErrBadLog = errors.New("observe: bad event log")

// Event is one recorded event and the 1-based line it came from.
type Event struct {
	record.Event
	Line int
	// Offset is the byte offset of the line's start in the log a Decoder read it from (since its
	// last Reset): where CheckOptions.Log reads the event again.
	Offset int64
}

// Log is an event log read in commit order.
type Log struct {
	// Events in commit order: write events by sequence number; each read after the write whose
	// number it carries, reads of one place ordered by time, then line.
	Events []Event
	// Truncated is the line number of an incomplete last line that was ignored (a writer killed
	// mid-line), 0 when the log ended cleanly.
	Truncated int
	// Writes is the number of write events: their sequence numbers are exactly 1..Writes.
	Writes int64
}

// line is an event line: the Recorder's JSON form, or a slog JSON record of SlogRecorder (whose
// time, level and msg members are accepted and ignored). Any other member is refused. The
// decoder (linejson.go) reads it by hand; this type states the shape it reads, as encoding/json
// would, and FuzzEventLine holds the two to the same answers.
type line struct {
	Seq    *int64              `json:"seq"`
	Read   bool                `json:"read"`
	At     *time.Time          `json:"at"`
	Op     string              `json:"op"`
	Args   record.Args         `json:"args"`
	Result record.Result       `json:"result"`
	Time   json.RawMessage     `json:"time"`
	Level  json.RawMessage     `json:"level"`
	Msg    string              `json:"msg"`
	Row    *record.SnapshotRow `json:"row"`
}

// recordedOps are the operations a Recorder emits: every store operation and protocol step of
// the trace format except advance_clock and crash, which a running store never performs, and
// "incarnation", the Open of a store, which the Decoder takes in itself (incarnations), and
// "snapshot", a row the database held at that Open (see snapshot.go). A wake
// and a poll tick are read events: a consumer's wait ended after the commit its Seq names.
var recordedOps = []string{"enqueue", "lease", "peek", "ack", "nack", "ack_by_id", "nack_by_id", "extend",
	"expire", "dead_letter", "outbox_enqueue", "outbox_claim", "outbox_complete", "outbox_fail", "outbox_dead_letter",
	"purge", "redrive", "mark_processed", "save_checkpoint", "load_checkpoint",
	"consumer_fetch", "consumer_handle", "publisher_deliver", "consumer_fetch_batch", "consumer_handle_batch",
	"publisher_deliver_batch", "worker_stop", "worker_drain", "wake", "poll_tick",
	"incarnation", "snapshot"}

// ReadLog reads an event log (name is used in errors) and puts it in commit order.
//
// Errors wrap ErrBadLog and name the line: a line that is not one JSON object of the event
// shape, an unknown op, a missing seq or at, a negative seq; or the sequence numbers: a repeated
// write number, a gap in 1..n, a read placed after a commit that never came.
func ReadLog(r io.Reader, name string) (*Log, error) {
	lg := &Log{}
	var events []Event
	dec := NewDecoder(r, name)
	for {
		events = append(events, Event{})
		err := dec.Decode(&events[len(events)-1])
		if err != nil {
			events = events[:len(events)-1]
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
	}
	lg.Truncated = dec.Truncated
	if err := order(lg, events, name); err != nil {
		return nil, err
	}
	return lg, nil
}

// parseLine reads one event line with a fresh parser (see lineParser.event).
func parseLine(raw []byte) (Event, error) {
	var ev Event
	err := newLineParser().event(raw, &ev)
	return ev, err
}

// isRecordedOp is recordedOps as a set.
var isRecordedOp = func() map[string]bool {
	m := map[string]bool{}
	for _, op := range recordedOps {
		m[op] = true
	}
	return m
}()

// event reads one event line into ev (all but its Line) and checks what the JSON shape cannot
// say: the op is an event kind, seq and at are present, seq fits a write or a read.
func (p *lineParser) event(raw []byte, ev *Event) error {
	x, err := p.parse(raw, &ev.Event)
	if err != nil {
		return fmt.Errorf("not an event: %v", err)
	}
	switch {
	case ev.Op == "":
		return errors.New("op is missing")
	case !isRecordedOp[ev.Op]:
		return fmt.Errorf("op %q is not an event kind (want one of %q)", ev.Op, recordedOps)
	case !x.hasSeq:
		return fmt.Errorf("%s: seq is missing", ev.Op)
	case ev.Seq < 0:
		return fmt.Errorf("%s: seq %d is negative", ev.Op, ev.Seq)
	case !ev.Read && ev.Seq == 0:
		return fmt.Errorf("%s: a write event has seq 0 (write events are numbered from 1)", ev.Op)
	case !x.hasAt:
		return fmt.Errorf("%s: at is missing", ev.Op)
	case ev.Op == opSnapshot && (ev.Row == nil || !ev.Read):
		return errors.New("snapshot: a snapshot event is a read event (read true) with a row")
	case ev.Op != opSnapshot && ev.Row != nil:
		return fmt.Errorf("%s: only a snapshot event has a row", ev.Op)
	}
	return nil
}

// order sorts events into commit order and checks the numbering.
func order(lg *Log, events []Event, name string) error {
	writes := map[int64]Event{} // seq -> the write event numbered so
	var max int64
	for _, ev := range events {
		if ev.Read {
			continue
		}
		if prev, dup := writes[ev.Seq]; dup {
			return fmt.Errorf("%w: %s: line %d: %s: seq %d repeats line %d's (%s)", ErrBadLog, name, ev.Line, ev.Op, ev.Seq, prev.Line, prev.Op)
		}
		writes[ev.Seq] = ev
		max = maxOf(max, ev.Seq)
	}
	for s := int64(1); s <= max; s++ {
		if _, ok := writes[s]; ok {
			continue
		}
		e := s
		for e+1 <= max {
			if _, ok := writes[e+1]; ok {
				break
			}
			e++
		}
		gap := fmt.Sprintf("seq %d", s)
		if e > s {
			gap = fmt.Sprintf("seqs %d..%d", s, e)
		}
		return fmt.Errorf("%w: %s: gap in the sequence numbers: %s missing (the log has %d write events up to seq %d)", ErrBadLog, name, gap, len(writes), max)
	}
	for _, ev := range events {
		if ev.Read && ev.Seq > max {
			return fmt.Errorf("%w: %s: line %d: read %s is placed after seq %d, but the log's last commit is seq %d", ErrBadLog, name, ev.Line, ev.Op, ev.Seq, max)
		}
	}
	slices.SortStableFunc(events, func(a, b Event) int {
		if a.Seq != b.Seq {
			return cmpInt(a.Seq, b.Seq)
		}
		if a.Read != b.Read { // the write numbered s comes before the reads that saw it
			if a.Read {
				return 1
			}
			return -1
		}
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	lg.Events = events
	lg.Writes = max
	return nil
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
