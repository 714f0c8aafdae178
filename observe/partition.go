package observe

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/pconform/pconform/traces"
)

// ErrCrossPartition is wrapped by the error a partitioned check (CheckJobs, CheckShard) returns
// for a log it cannot split: an id used in two mailboxes that fall in different partitions. Such
// a log is checked whole (jobs 1).
var ErrCrossPartition = errors.New("observe: the log cannot be split into partitions")

// AllParts is the partition of an event every partition gets.
const AllParts = -1

// share says how the partitions split an event every partition gets.
type share int8

const (
	// shareAll: each partition steps through the event as it is (a worker's stop or drain, which
	// the partitions check against the fetches they hold; the join checks the rest).
	shareAll share = iota
	// shareExpire: each partition clears its own run-out leases; the join adds up the counts.
	shareExpire
	// shareClaim: each partition claims its own rows of the result; the join checks that the
	// shares are the claim's choice among all partitions' rows.
	shareClaim
	// sharePurge: each partition purges its share, which the join decides when the purge may
	// have stopped at its limit; the join adds up the counts.
	sharePurge
	// shareRows: each partition delivers its own rows of a publisher_deliver_batch (a row's
	// part of the batch is a single delivery's, and no row's reads another's); a partition
	// without any gets nothing.
	shareRows
)

// Route is where an event of the log goes in a check split into partitions.
type Route struct {
	// Part is the partition that checks the event, AllParts when every partition does.
	Part int
	// Share says how the partitions split an event of AllParts.
	Share share
	// Sweep is set for a leased consumer_fetch: its sweep clears the run-out leases of every
	// mailbox, so every other partition sweeps its own at the fetch's place in commit order.
	Sweep bool
}

// Router assigns the events of a log, in commit order, to n partitions by key: a mailbox's
// events go to the partition of the mailbox; an event that names a row by id alone (ack, nack,
// extend, dead_letter, redrive, an outbox step, a delivery) goes where the row was enqueued, an
// outbox row with its target mailbox, so a delivery and the target's enqueue are checked together;
// a checkpoint goes by its actor (a mailbox's effect log with the mailbox), a processed mark by its
// message id. Steps that act on every mailbox (expire, outbox_claim, purge, worker_stop,
// worker_drain) go to every partition. A Router is a pure fold over the events: the same log gives
// the same routes on any machine, which is what lets N machines each check one share of it.
type Router struct {
	n int
	// home maps each message and outbox id enqueued so far to its partition. It keeps every id
	// the log enqueued (a purged id may come back while its horizon lasts).
	home map[string]int32
}

// NewRouter returns a router for n partitions (n >= 1).
func NewRouter(n int) *Router {
	return &Router{n: max(n, 1), home: map[string]int32{}}
}

// Parts is the number of partitions.
func (r *Router) Parts() int { return r.n }

// PartOf is the partition of a key (a mailbox name, or an id not enqueued in the log).
func (r *Router) PartOf(key string) int {
	if r.n == 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() % uint64(r.n))
}

// idPart is the partition of a row id: where it was enqueued, else by its own hash (a row the
// log never enqueued is unknown to every partition alike).
func (r *Router) idPart(id string) int {
	if p, ok := r.home[id]; ok {
		return int(p)
	}
	return r.PartOf(id)
}

// settle records that id is enqueued in partition p, refusing an id already enqueued in another.
func (r *Router) settle(ev *Event, id string, p int) error {
	if id == "" {
		return nil
	}
	if q, ok := r.home[id]; ok && int(q) != p {
		return fmt.Errorf("%w: line %d: %s puts id %q in partition %d, but it was enqueued in partition %d before (an id used in two mailboxes): check this log with one job",
			ErrCrossPartition, ev.Line, ev.Op, id, p, q)
	}
	r.home[id] = int32(p)
	return nil
}

// Route returns where ev goes. Errors wrap ErrCrossPartition (naming ev's line) or ErrBadLog
// (an op that is not an event kind).
func (r *Router) Route(ev *Event) (Route, error) {
	a := &ev.Args
	switch traces.Op(ev.Op) {
	case traces.OpEnqueue:
		p := r.PartOf(a.Mailbox)
		return Route{Part: p}, r.settle(ev, a.ID, p)
	case traces.OpOutboxEnqueue:
		p := r.PartOf(a.Target)
		return Route{Part: p}, r.settle(ev, a.ID, p)
	case traces.OpLease, traces.OpPeek, traces.OpConsumerHandle, traces.OpWake, traces.OpPollTick:
		return Route{Part: r.PartOf(a.Mailbox)}, nil
	case traces.OpConsumerFetch:
		return Route{Part: r.PartOf(a.Mailbox), Sweep: a.Profile != traces.ProfileLeaseless}, nil
	case traces.OpConsumerFetchBatch:
		// A batch is one mailbox's; a leased batch fetch sweeps as a single one does.
		return Route{Part: r.PartOf(a.Mailbox), Sweep: a.Profile != traces.ProfileLeaseless}, nil
	case traces.OpConsumerHandleBatch, traces.OpConsumerEffectsBatch:
		return Route{Part: r.PartOf(a.Mailbox)}, nil
	case traces.OpPublisherDeliverBatch:
		if len(a.IDs) == 0 {
			return Route{}, fmt.Errorf("%w: line %d: %s names no rows (ids is empty)", ErrBadLog, ev.Line, ev.Op)
		}
		return Route{Part: AllParts, Share: shareRows}, nil
	case traces.OpAck, traces.OpNack, traces.OpAckByID, traces.OpNackByID, traces.OpExtend, traces.OpDeadLetter,
		traces.OpRedrive, traces.OpOutboxComplete, traces.OpOutboxFail, traces.OpOutboxDeadLetter, traces.OpPublisherDeliver:
		return Route{Part: r.idPart(a.ID)}, nil
	case traces.OpMarkProcessed:
		// A processed mark is a (consumer, id) record of its own, which no other step reads.
		return Route{Part: r.PartOf(a.ID)}, nil
	case traces.OpSaveCheckpoint, traces.OpLoadCheckpoint:
		if mailbox, isLog := strings.CutPrefix(a.Actor, traces.EffectsActorPrefix); isLog {
			return Route{Part: r.PartOf(mailbox)}, nil
		}
		return Route{Part: r.PartOf(a.Actor)}, nil
	case traces.OpExpire:
		return Route{Part: AllParts, Share: shareExpire}, nil
	case traces.OpOutboxClaim:
		return Route{Part: AllParts, Share: shareClaim}, nil
	case traces.OpPurge:
		return Route{Part: AllParts, Share: sharePurge}, nil
	case traces.OpWorkerStop, traces.OpWorkerDrain:
		return Route{Part: AllParts, Share: shareAll}, nil
	}
	if ev.Op == opSnapshot {
		// A snapshot's rows and its end count would each need a share and a join of their own.
		return Route{}, fmt.Errorf("%w: line %d: a snapshot of the rows a store held at its Open: a partitioned check does not take one; check this log with one job",
			ErrCrossPartition, ev.Line)
	}
	return Route{}, fmt.Errorf("%w: line %d: %s is not an event a partitioned check can route", ErrBadLog, ev.Line, ev.Op)
}

// rowsIn is the part of a publisher_deliver_batch that partition p checks: the indexes of its rows
// in ids (and so in the per-row results), in order.
func (r *Router) rowsIn(ev *Event, p int) []int {
	var idx []int
	for i, id := range ev.Args.IDs {
		if r.idPart(id) == p {
			idx = append(idx, i)
		}
	}
	return idx
}

// claimedIn is the part of a claim's result that partition p checks: the claimed rows it holds,
// in the result's order.
func (r *Router) claimedIn(ev *Event, p int) []int {
	var idx []int
	for i, c := range ev.Result.Claimed {
		if r.idPart(c.ID) == p {
			idx = append(idx, i)
		}
	}
	return idx
}
