package observe_test

import (
	"io"
	"strconv"
	"time"

	"github.com/pconform/pconform/traces"
)

// synthLog is an event log of about n events (the cycle under way when n is reached ends it), made as it is read, of a store the reference model
// agrees with at every event: a leased mailbox with a backlog of ready messages, each
// fetched, marked processed and acknowledged; every fourth message an outbox row claimed,
// delivered into a leaseless mailbox, fetched there (a read) and acknowledged; every sixteenth a
// checkpoint saved and loaded (a read); every 64th a purge of everything final. The clock moves
// one second every 200 events. It holds no history, so a benchmark can check 10^7 events without
// a file of gigabytes; its results are written by construction and the model must agree with
// every one (the benchmarks fail otherwise), unless breakAt is set.
type synthLog struct {
	n, made, backlog int
	// breakAt, when positive, makes the first leased fetch at or after that many events report
	// attempts 2 for a message never fetched before: one event the model refuses, whose row was
	// enqueued about backlog cycles earlier (a finding whose window must reach back that far).
	breakAt int
	// broken is the line (from 1) of the event that breakAt broke, and brokenID its message.
	broken   int
	brokenID string
	// buf[off:] is made and not yet read; the buffer is reused, so making the log costs no
	// garbage per event.
	buf []byte
	off int
	seq int64
	// i is the next leased message to consume; backlog the number enqueued ahead of it.
	i, enqueued int
	// acked and final count the rows a purge will remove.
	acked, final int
	version      int
	secs         int64
	stamp        []byte
	stampAt      int64
}

// newSynthLog makes a log of about n events whose leased mailbox keeps backlog ready messages.
func newSynthLog(n, backlog int) *synthLog { return &synthLog{n: n, backlog: backlog, stampAt: -1} }

func (s *synthLog) Read(p []byte) (int, error) {
	if s.off > 0 { // keep the unread rest at the buffer's start, so the buffer stays small
		s.buf = s.buf[:copy(s.buf, s.buf[s.off:])]
		s.off = 0
	}
	for len(s.buf)-s.off < len(p) && s.made < s.n {
		s.event()
	}
	if len(s.buf) == s.off {
		return 0, io.EOF
	}
	k := copy(p, s.buf[s.off:])
	s.off += k
	if s.off == len(s.buf) {
		s.buf, s.off = s.buf[:0], 0
	}
	return k, nil
}

// line appends one event.
func (s *synthLog) line(read bool, op, args, result string) {
	s.secs = int64(s.made / 200)
	if s.secs != s.stampAt {
		s.stamp = traces.At(s.secs).AppendFormat(s.stamp[:0], time.RFC3339)
		s.stampAt = s.secs
	}
	if !read {
		s.seq++
	}
	b := append(s.buf, `{"seq":`...)
	b = strconv.AppendInt(b, s.seq, 10)
	if read {
		b = append(b, `,"read":true`...)
	}
	b = append(b, `,"at":"`...)
	b = append(b, s.stamp...)
	b = append(b, `","op":"`...)
	b = append(b, op...)
	b = append(b, `","args":`...)
	b = append(b, args...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	s.buf = append(b, "}\n"...)
	s.made++
}

func id(prefix string, k int) string { return prefix + strconv.Itoa(k) }

// event appends the next event of the cycle.
func (s *synthLog) event() {
	if s.enqueued < s.backlog {
		s.line(false, "enqueue", `{"mailbox":"l1","id":"`+id("m", s.enqueued)+`","max_attempts":3}`, `{}`)
		s.enqueued++
		return
	}
	s.cycle()
}

// cycle queues the events of one leased message (and what rides on it).
func (s *synthLog) cycle() {
	i := s.i
	s.i++
	m := id("m", i)
	tok := id("L", i)
	s.line(false, "enqueue", `{"mailbox":"l1","id":"`+id("m", s.enqueued)+`","max_attempts":3}`, `{}`)
	s.enqueued++
	attempts := "1"
	if s.breakAt > 0 && s.broken == 0 && s.made >= s.breakAt {
		attempts, s.broken, s.brokenID = "2", s.made+1, m
	}
	s.line(false, "consumer_fetch", `{"mailbox":"l1","lease_for":30000000000,"worker":1,"profile":"leased"}`,
		`{"message":{"id":"`+m+`","attempts":`+attempts+`,"token":"`+tok+`"}}`)
	s.line(false, "mark_processed", `{"id":"`+m+`","consumer":"c1","ttl":10000000000}`, `{}`)
	s.line(false, "consumer_handle", `{"mailbox":"l1","worker":1,"profile":"leased","outcome":"ok"}`, `{"action":"acked"}`)
	s.acked++
	if i%4 == 0 {
		o := id("o", i)
		ctok := id("C", i)
		s.line(false, "outbox_enqueue", `{"id":"`+o+`","target":"l2","max_attempts":3,"max_delivery_attempts":5}`, `{}`)
		s.line(false, "outbox_claim", `{"limit":1,"claim_for":30000000000}`, `{"claimed":[{"id":"`+o+`","delivery_attempts":1,"token":"`+ctok+`"}]}`)
		s.line(false, "publisher_deliver", `{"id":"`+o+`","token":"`+ctok+`","publisher":1,"profile":"fold","fault":"none"}`, `{"action":"delivered"}`)
		s.final++
		s.line(true, "consumer_fetch", `{"mailbox":"l2","worker":2,"profile":"leaseless"}`, `{"message":{"id":"`+o+`","attempts":0}}`)
		s.line(false, "consumer_handle", `{"mailbox":"l2","worker":2,"profile":"leaseless","outcome":"ok"}`, `{"action":"acked"}`)
		s.acked++
	}
	if i%16 == 0 {
		s.line(false, "save_checkpoint", `{"actor":"a1","expect_version":`+strconv.Itoa(s.version)+`}`, `{"version":`+strconv.Itoa(s.version+1)+`}`)
		s.version++
		s.line(true, "load_checkpoint", `{"actor":"a1"}`, `{"version":`+strconv.Itoa(s.version)+`}`)
	}
	if i%64 == 63 {
		const limit = 128
		removed := min(s.acked, limit) + min(s.final, limit)
		s.acked -= min(s.acked, limit)
		s.final -= min(s.final, limit)
		s.line(false, "purge", `{"limit":`+strconv.Itoa(limit)+`}`, `{"affected":`+strconv.Itoa(removed)+`}`)
	}
}
