package models

import (
	"math"
	"slices"
)

// readyIndex indexes the ready messages for the steps that look for one: lease, peek and the
// consumer's fetch ask for a mailbox's next message, expire for the leases that have run out.
// It is derived from the rows (every write to a ready row goes through putReady or dropReady)
// and makes each of those steps cost O(log n) in the ready rows instead of a walk over all of
// them.
//
// A mailbox's next message is the best of its candidates in delivery order (before). A keyless
// ready row is a candidate while it has attempts left; of a key's ready rows only the first with
// attempts left can be (it blocks every later one), and earlier exhausted rows with a live lease
// hold it back until their leases end (unless exhausted_leased_head "passes"). A candidate is
// eligible from a time on (its availability, its own lease's end, the blocking leases' ends) and
// stays eligible as time goes on until its row changes, since time never goes back. So a
// mailbox keeps its candidates in two heaps: waiting, by the time they become eligible, and
// eligible, in delivery order. Entries are never updated in place: a change pushes a new entry
// with a new stamp and the old one is dropped when it comes to the top (cand holds each
// candidate's current stamp); a heap is rebuilt when stale entries outnumber live ones, so the
// cost stays amortised O(log n) per change. TestModelMatchesNaive and the property tests'
// checkIndexes hold the index to the rows.
type readyIndex struct {
	queues map[string]*mailboxQueue
	// cand maps the id of each candidate to the stamp of its current entry.
	cand map[string]uint64
	// leases holds an entry for every ready row with a lease token, by the lease's end (stale
	// entries are dropped when popped).
	leases heapOf[leaseEntry]
	stamp  uint64
}

type mailboxQueue struct {
	// byKey lists each key's ready rows in increasing seq.
	byKey    map[string][]string
	eligible heapOf[candEntry]
	waiting  heapOf[candEntry]
}

// candEntry is a candidate as it was when pushed.
type candEntry struct {
	id          string
	stamp       uint64
	priority    int
	availableAt int64
	seq         int64
	from        int64
}

type leaseEntry struct {
	id  string
	end int64
}

// deliveredFirst is the delivery order: higher priority first, then earlier available_at, then
// earlier enqueue (seq).
func deliveredFirst(a, b candEntry) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.availableAt != b.availableAt {
		return a.availableAt < b.availableAt
	}
	return a.seq < b.seq
}

func eligibleFirst(a, b candEntry) bool { return a.from < b.from }

func endsFirst(a, b leaseEntry) bool { return a.end < b.end }

// clone copies the index so that no change to the copy reaches x.
func (x readyIndex) clone() readyIndex {
	n := readyIndex{queues: make(map[string]*mailboxQueue, len(x.queues)), cand: cloneMap(x.cand),
		leases: x.leases.clone(), stamp: x.stamp}
	if n.cand == nil {
		n.cand = map[string]uint64{}
	}
	for mb, q := range x.queues {
		n.queues[mb] = &mailboxQueue{byKey: cloneSlices(q.byKey), eligible: q.eligible.clone(), waiting: q.waiting.clone()}
	}
	return n
}

func (s *State) queue(mailbox string) *mailboxQueue {
	q := s.idx.queues[mailbox]
	if q == nil {
		q = &mailboxQueue{byKey: map[string][]string{}}
		s.idx.queues[mailbox] = q
	}
	return q
}

// putReady writes the ready message m (new or changed) and updates the index.
func (s *State) putReady(m message) {
	old, existed := s.messages[m.id]
	s.messages[m.id] = m
	if m.key != "" && (!existed || old.acked) {
		q := s.queue(m.mailbox)
		ids := q.byKey[m.key]
		// seq only grows, so a new row goes last.
		q.byKey[m.key] = append(ids, m.id)
	}
	if m.token != 0 {
		s.idx.leases.push(leaseEntry{m.id, s.rules().leaseEnds(m.leaseUntil)}, endsFirst)
		s.compactLeases()
	}
	s.refresh(m)
}

// dropReady updates the index for the ready message m leaving the ready rows (acked,
// dead-lettered or deleted); the caller changes the row itself.
func (s *State) dropReady(m message) {
	delete(s.idx.cand, m.id)
	if m.key != "" {
		q := s.queue(m.mailbox)
		// The key's rows are in seq order and the one leaving is most often its head: look
		// for it from the front and stop there, rather than compare every row of the key.
		ids := q.byKey[m.key]
		switch i := slices.Index(ids, m.id); {
		case i == 0:
			// Slice the head off instead of moving the key's whole backlog up by one: the
			// next append that outgrows the array copies the live rows only.
			ids[0] = ""
			ids = ids[1:]
		case i > 0:
			ids = slices.Delete(ids, i, i+1)
		}
		if len(ids) == 0 {
			delete(q.byKey, m.key)
		} else {
			q.byKey[m.key] = ids
		}
		s.refreshKey(m.mailbox, m.key)
	}
}

// refresh recomputes the candidacy that m's change may have changed: m's own, or its key's.
func (s *State) refresh(m message) {
	if m.key != "" {
		s.refreshKey(m.mailbox, m.key)
		return
	}
	if m.attempts < m.maxAttempts {
		s.pushCand(m, s.eligibleFrom(m))
	} else {
		delete(s.idx.cand, m.id)
	}
}

// refreshKey recomputes the candidate of a key: its first ready row with attempts left, held
// back by the live leases of the exhausted rows before it.
func (s *State) refreshKey(mailbox, key string) {
	p := s.rules()
	block := int64(math.MinInt64)
	for _, id := range s.queue(mailbox).byKey[key] {
		m := s.messages[id]
		if m.attempts < m.maxAttempts {
			s.pushCand(m, max(s.eligibleFrom(m), block))
			return
		}
		delete(s.idx.cand, id)
		if !p.ExhaustedLeasedHeadPasses && m.token != 0 {
			block = max(block, p.leaseEnds(m.leaseUntil))
		}
	}
}

// eligibleFrom is the time from which m, a candidate, is eligible as far as its own row says:
// available, and its lease (if any) over.
func (s *State) eligibleFrom(m message) int64 {
	from := m.availableAt
	if m.token != 0 {
		from = max(from, s.rules().leaseEnds(m.leaseUntil))
	}
	return from
}

// pushCand makes m the candidate it now is, eligible from from.
func (s *State) pushCand(m message, from int64) {
	x := &s.idx
	x.stamp++
	x.cand[m.id] = x.stamp
	e := candEntry{id: m.id, stamp: x.stamp, priority: m.priority, availableAt: m.availableAt, seq: m.seq, from: from}
	q := s.queue(m.mailbox)
	if from <= s.now {
		q.eligible.push(e, deliveredFirst)
	} else {
		q.waiting.push(e, eligibleFirst)
	}
	if n := len(x.cand); q.eligible.len()+q.waiting.len() > 2*n+64 {
		valid := func(e candEntry) bool { return x.cand[e.id] == e.stamp }
		q.eligible.filter(valid, deliveredFirst)
		q.waiting.filter(valid, eligibleFirst)
	}
}

// next returns the mailbox's next message at now: the eligible one with the highest priority,
// then the smallest available_at, then the smallest seq, keys blocking as docs/semantics.md
// says (see readyIndex).
func (s *State) next(mailbox string, now int64) (message, bool) {
	q := s.idx.queues[mailbox]
	if q == nil {
		return message{}, false
	}
	valid := func(e candEntry) bool { return s.idx.cand[e.id] == e.stamp }
	for q.waiting.len() > 0 && q.waiting.top().from <= now {
		if e := q.waiting.pop(eligibleFirst); valid(e) {
			q.eligible.push(e, deliveredFirst)
		}
	}
	for q.eligible.len() > 0 {
		e := q.eligible.top()
		if valid(e) {
			return s.messages[e.id], true
		}
		q.eligible.pop(deliveredFirst)
	}
	return message{}, false
}

// expired returns, sorted, the ids of the ready rows whose lease has run out at now.
func (s *State) expired(now int64) []string {
	p := s.rules()
	var ran []string
	for s.idx.leases.len() > 0 && s.idx.leases.top().end <= now {
		e := s.idx.leases.pop(endsFirst)
		if m, ok := s.messages[e.id]; ok && !m.acked && m.token != 0 && p.leaseEnds(m.leaseUntil) == e.end {
			ran = append(ran, e.id)
		}
	}
	slices.Sort(ran)
	return slices.Compact(ran) // a row's lease may have been pushed twice with the same end
}

// compactLeases drops the stale lease entries once they outnumber the messages.
func (s *State) compactLeases() {
	if s.idx.leases.len() <= 2*len(s.messages)+64 {
		return
	}
	p := s.rules()
	seen := map[leaseEntry]bool{}
	s.idx.leases.filter(func(e leaseEntry) bool {
		m, ok := s.messages[e.id]
		keep := ok && !m.acked && m.token != 0 && p.leaseEnds(m.leaseUntil) == e.end && !seen[e]
		seen[e] = true
		return keep
	}, endsFirst)
}

// heapOf is a binary min-heap under the less its callers pass (always the same one for a heap).
type heapOf[T any] struct{ items []T }

func (h *heapOf[T]) len() int { return len(h.items) }
func (h *heapOf[T]) top() T   { return h.items[0] }

func (h heapOf[T]) clone() heapOf[T] { return heapOf[T]{items: slices.Clone(h.items)} }

func (h *heapOf[T]) push(x T, less func(a, b T) bool) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !less(h.items[i], h.items[parent]) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *heapOf[T]) pop(less func(a, b T) bool) T {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	var zero T
	h.items[last] = zero
	h.items = h.items[:last]
	h.down(0, less)
	return top
}

func (h *heapOf[T]) down(i int, less func(a, b T) bool) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && less(h.items[r], h.items[l]) {
			c = r
		}
		if !less(h.items[c], h.items[i]) {
			return
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
}

// filter keeps the items keep accepts and restores the heap order.
func (h *heapOf[T]) filter(keep func(T) bool, less func(a, b T) bool) {
	h.items = slices.DeleteFunc(h.items, func(x T) bool { return !keep(x) })
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i, less)
	}
}

// leaseEnds is the first time at which a lease (or claim) ending at until is no longer held:
// derived from the profile's one liveness rule (Profile.Held), which holds it at now exactly
// while now < leaseEnds(until).
func (p profileRules) leaseEnds(until int64) int64 {
	if p.Held(1, until, until) {
		return until + 1
	}
	return until
}
