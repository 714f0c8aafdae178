package models

import (
	"cmp"

	"github.com/pconform/pconform/traces"
)

// A check split into partitions by mailbox (observe's --jobs) runs one Machine per partition. Most
// steps touch one mailbox and run as they are. A few steps act on every mailbox at once: a claim
// picks among every target's pending rows, a purge takes the oldest rows of every mailbox up to a
// limit, an expire or a leased fetch's sweep clears every mailbox's run-out leases, and the
// workers' shutdown marks follow a worker across mailboxes. The methods here run one partition's
// share of such a step, so that the partitions' shares, joined, are the step on the whole state.

// Sweep clears the run-out leases of the machine's mailboxes at now, as the sweep of a leased
// consumer_fetch in another partition does to them (fetch_sweep "expire"). It reports how many it
// cleared.
func (m *Machine) Sweep(now int64) int {
	if m.s.cfg.Profile.FetchNoSweep {
		return 0
	}
	m.s.now = max(m.s.now, now)
	return m.s.expire(now)
}

// ClaimShare runs a partition's share of an outbox_claim at now: the claim dead-letters the
// partition's pending rows that used up their delivery attempts, as the whole claim does, and
// claims the first k of the partition's claimable rows (smallest seq first), where the whole
// claim took k rows of this partition. It returns the first upTo claimable ids before the claim
// (at least k+1 of them when there are), in the order a claim takes them, and the rows it
// claimed. A claim takes a prefix of every partition's claimable rows, so the join checks only
// how the prefixes meet (observe): whether the shares together reach the claim's limit, and
// which row comes first after each prefix.
func (m *Machine) ClaimShare(now, claimFor int64, k, upTo int) (claimable []string, claimed []traces.Claimed) {
	m.s.now = max(m.s.now, now)
	s := &m.s
	s.deadLetterExhausted(now)
	rows := s.firstClaimable(now, max(upTo, k+1), true)
	claimable = make([]string, len(rows))
	for i, o := range rows {
		claimable[i] = o.id
	}
	// With k == 0 the claim's dead-lettering above is all it does: within a limit of 0 it finds
	// nothing to claim and issues no token.
	if k == 0 {
		return claimable, nil
	}
	return claimable, s.outboxClaim(k, now, claimFor)
}

// Aged is a row a purge may take: its final time and id, the order purge takes rows in.
type Aged struct {
	At int64
	ID string
}

// Compare orders a before b as purge takes rows: oldest first, then by id.
func (a Aged) Compare(b Aged) int {
	if c := cmp.Compare(a.At, b.At); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// PurgeCandidates returns, for each table purge takes rows from (acked messages, dead letters,
// final outbox rows), the first limit rows a purge at now with olderThan would take, in order. A
// purge split into partitions takes the first limit of all partitions' candidates together, in
// each table; PurgeShare then takes this partition's share of them.
func (m *Machine) PurgeCandidates(now, olderThan int64, limit int) [3][]Aged {
	s := &m.s
	cutoff := now - olderThan
	heaps := [3]*agedQueue{&s.aging.acked, &s.aging.dead, &s.aging.final}
	valid := [3]func(agedEntry) bool{s.ackedAged, s.deadAged, s.finalAged}
	var out [3][]Aged
	for t, h := range heaps {
		var took []agedEntry
		// Entries that are no longer valid are dropped on the way, as purge drops them: they
		// stand for nothing.
		takeAged(h, cutoff, limit, valid[t], func(e agedEntry) { took = append(took, e) })
		for _, e := range took {
			out[t] = append(out[t], Aged{At: e.at, ID: e.id})
			h.push(e)
		}
	}
	return out
}

// PurgeShare runs a partition's share of a purge at now: it takes the first counts[t] rows of
// table t (the ones PurgeCandidates named first), and forgets up to limit of the partition's
// retired ids whose horizon has passed (which no step can observe). It returns how many rows it
// removed.
func (m *Machine) PurgeShare(now, olderThan, horizon int64, counts [3]int, limit int) int {
	m.s.now = max(m.s.now, now)
	return m.s.purgeLimits(now, olderThan, horizon, counts, limit)
}

// WorkerRules checks the rules that follow a consumer worker across mailboxes: the shutdown rule
// (no step after a worker_drain, no new fetch after a worker_stop but the one under way) and one
// fetch at a time. It is the model's own rule (shutdown.go, protocol.go), run on the worker steps
// alone: a check split into partitions runs it once over the whole log, beside the partitions,
// which each see a worker's steps in their own mailboxes only.
type WorkerRules struct {
	s State
}

// NewWorkerRules returns the rules with every worker running and holding nothing.
func NewWorkerRules() *WorkerRules {
	return &WorkerRules{s: State{stops: map[int]stopMark{}, inflight: map[int]delivery{}, batches: map[int][]delivery{}}}
}

// Step checks one worker step (consumer_fetch, consumer_handle, consumer_fetch_batch,
// consumer_handle_batch, worker_stop, worker_drain; other ops pass) and returns the model's error
// for it, wrapping ErrMalformed. fetched is what a fetch returned: its message, or a batch fetch's
// messages (none: an empty fetch). As in the model, a refused step changes nothing.
func (w *WorkerRules) Step(op traces.Op, a traces.Args, fetched []traces.Message) error {
	s := &w.s
	prev, had := s.stops[a.Worker]
	err := w.step(op, &a, fetched)
	if err != nil {
		if had {
			s.stops[a.Worker] = prev
		} else {
			delete(s.stops, a.Worker)
		}
	}
	return err
}

func (w *WorkerRules) step(op traces.Op, a *traces.Args, fetched []traces.Message) error {
	s := &w.s
	switch op {
	case traces.OpWorkerStop:
		return s.workerStop(a)
	case traces.OpWorkerDrain:
		return s.workerDrain(a)
	case traces.OpConsumerFetch, traces.OpConsumerFetchBatch:
		if err := s.stepAfterStop(op, a.Worker); err != nil {
			return err
		}
		if err := s.idleWorker(op, a.Worker); err != nil {
			return err
		}
		switch {
		case len(fetched) == 0:
		case op == traces.OpConsumerFetch:
			s.inflight[a.Worker] = delivery{mailbox: a.Mailbox, id: fetched[0].ID}
		default:
			b := make([]delivery, len(fetched))
			for i, m := range fetched {
				b[i] = delivery{mailbox: a.Mailbox, id: m.ID}
			}
			s.batches[a.Worker] = b
		}
	case traces.OpConsumerHandle:
		if err := s.stepAfterStop(op, a.Worker); err != nil {
			return err
		}
		if d, held := s.inflight[a.Worker]; held && d.mailbox != a.Mailbox {
			return malformed(traces.OpConsumerHandle,
				"worker %d fetched %q from mailbox %q but handles mailbox %q", a.Worker, d.id, d.mailbox, a.Mailbox)
		}
		delete(s.inflight, a.Worker)
	case traces.OpConsumerHandleBatch:
		if err := s.stepAfterStop(op, a.Worker); err != nil {
			return err
		}
		if b, held := s.batches[a.Worker]; held && b[0].mailbox != a.Mailbox {
			return malformed(traces.OpConsumerHandleBatch,
				"worker %d fetched its batch from mailbox %q but handles mailbox %q", a.Worker, b[0].mailbox, a.Mailbox)
		}
		delete(s.batches, a.Worker)
	}
	return nil
}
