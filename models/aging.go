package models

// aging indexes the rows and ids that leave the state at a time: the purge candidates (acked
// messages, dead letters and final outbox rows, by the time they became final), the retired and
// the purged outbox ids (by the end of their dedup horizon) and the processed-message records
// (by their expiry). A purge, and Machine.Forget, take the oldest entries from the front, so each
// costs time in the entries it touches, not in the rows the state holds.
//
// It is derived from the rows, like readyIndex, and Equal does not compare it. Entries are never
// removed when their row changes: each is checked against the row when it reaches the front, and
// dropped there if the row no longer is what the entry recorded (a dead letter redriven, an id
// retired again with a later horizon, a record marked again). So every row the index should hold
// has an entry with its current time, and a stale one costs one pop.
type aging struct {
	acked, dead, final agedQueue
	retired, purged    agedQueue
	// lateWakes orders purgedMessages by the end of their late-wake window.
	lateWakes agedQueue
	processed heapOf[processedEntry]
}

// agedEntry is a row or id as it entered an index: its id and the time that orders it.
type agedEntry struct {
	id string
	at int64
}

// processedEntry is a processed-message record as it was written: its key and expiry.
type processedEntry struct {
	key processedKey
	at  int64
}

// agedFirst orders entries by time, then by id: the order purge takes rows in.
func agedFirst(a, b agedEntry) bool { return a.at < b.at || a.at == b.at && a.id < b.id }

func processedFirst(a, b processedEntry) bool { return a.at < b.at }

func (a aging) clone() aging {
	return aging{acked: a.acked.clone(), dead: a.dead.clone(), final: a.final.clone(),
		retired: a.retired.clone(), purged: a.purged.clone(), lateWakes: a.lateWakes.clone(),
		processed: a.processed.clone()}
}

// agedQueue holds agedEntries for takeAged, oldest first (agedFirst). A row turns final at the
// state's time, which never goes back, so most entries come in order: those go to a ring
// buffer and are taken from its front, in O(1) and in memory order. A heap of a million entries
// costs some twenty levels a pop, most of them cache misses, and a long history's acked rows are
// that many. The entries that come before the last one in (a snapshot's rows, a retirement whose
// horizon is shorter than the one before, an equal time with a smaller id) go to a heap, and
// the front is the older of the two.
type agedQueue struct {
	// ring[head], ring[head+1], ... (modulo its length), n of them, are in agedFirst order.
	ring    []agedEntry
	head, n int
	late    heapOf[agedEntry]
}

func (q *agedQueue) len() int { return q.n + q.late.len() }

// at is the i-th entry of the ring from its front (i < len(q.ring)).
func (q *agedQueue) at(i int) *agedEntry {
	j := q.head + i
	if j >= len(q.ring) {
		j -= len(q.ring)
	}
	return &q.ring[j]
}

func (q *agedQueue) push(e agedEntry) {
	if q.n > 0 && agedFirst(e, *q.at(q.n - 1)) {
		q.late.push(e, agedFirst)
		return
	}
	if q.n == len(q.ring) {
		// A quarter more, as append grows a large slice: the ring holds as much as a heap.
		grown := make([]agedEntry, 16+len(q.ring)+len(q.ring)/4)
		for i := range q.n {
			grown[i] = *q.at(i)
		}
		q.ring, q.head = grown, 0
	}
	q.n++
	*q.at(q.n - 1) = e
}

// fromLate reports whether the front is the late heap's.
func (q *agedQueue) fromLate() bool {
	return q.n == 0 || q.late.len() > 0 && agedFirst(q.late.top(), *q.at(0))
}

func (q *agedQueue) top() agedEntry {
	if q.fromLate() {
		return q.late.top()
	}
	return *q.at(0)
}

func (q *agedQueue) pop() agedEntry {
	if q.fromLate() {
		return q.late.pop(agedFirst)
	}
	front := q.at(0)
	e := *front
	*front = agedEntry{} // let the id go
	if q.head++; q.head == len(q.ring) {
		q.head = 0
	}
	q.n--
	return e
}

func (q agedQueue) clone() agedQueue {
	c := agedQueue{late: q.late.clone()}
	for i := range q.n {
		c.push(*q.at(i))
	}
	return c
}

// takeAged pops from h, oldest first, up to limit entries (limit < 0: no limit) whose time is at
// most upTo and which valid confirms, and calls take with each. Entries valid refuses are dropped
// on the way and not counted. It returns how many it took.
func takeAged(h *agedQueue, upTo int64, limit int, valid func(agedEntry) bool, take func(agedEntry)) int {
	n := 0
	for h.len() > 0 && n != limit && h.top().at <= upTo {
		e := h.pop()
		if !valid(e) {
			continue
		}
		take(e)
		n++
	}
	return n
}
