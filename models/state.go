package models

import (
	"cmp"
	"maps"
	"slices"

	"github.com/pconform/pconform/traces"
)

// State is one state of the model: every mailbox's messages, the dead letters, the outbox, the
// handler effects, the consumer workers' fetched-but-unhandled deliveries, the token and seq
// counters, and the Config. It is a value: [Step] returns a new State and never changes the one it
// is given, so a State can be kept, compared and stepped again freely.
//
// The zero State is an empty model with the default Config at time 0; [Init] is the usual way to
// make one.
type State struct {
	cfg Config
	// now is the time of the last step applied. Invariant: steps never go back before it.
	now int64
	// messages holds every message still in a mailbox, by id: ready and acked rows. A dead-lettered
	// message leaves it for dead.
	messages map[string]message
	// idx indexes the ready messages for lease, peek, fetch and expire (see readyIndex): it is
	// derived from messages, every write to a ready row goes through putReady or dropReady, and
	// Equal does not compare it. Acked rows are neither delivered nor block a key, so they are
	// not in it, and a step's cost is logarithmic in the mailbox's backlog.
	idx readyIndex
	// aging indexes what leaves the state at a time: the purge candidates, the retired and
	// purged ids, the processed-message records (see aging). Derived, like idx; Equal does not
	// compare it.
	aging aging
	// dead holds the dead letters by id. Invariant: no id is both in dead and in messages, unless
	// the profile's dead_letter_id is "free" (then an enqueue may reuse a dead letter's id).
	dead map[string]deadLetter
	// outbox holds every outbox row by id; only purge removes final (completed or dead-lettered) ones.
	// Every write goes through putOutbox, which keeps claims in step.
	outbox map[string]outboxRow
	// claims indexes the pending outbox rows for a claim (see claimIndex). Derived, like idx;
	// Equal does not compare it.
	claims claimIndex
	// purgedOutbox maps the id of an outbox row purge removed to the end of the purge's dedup
	// horizon for it (its final time + horizon, at least the purge's time): a publisher whose
	// claim ran out may still deliver it (claim_lost), while a delivery of an id never held is
	// malformed. Machine.Forget drops the ids whose horizon has passed, so that a long history's
	// model does not grow with every outbox row it ever purged.
	purgedOutbox map[string]int64
	// retired maps the id of a message or dead letter that purge removed to the end of its dedup
	// horizon: until then (exclusive) the id is a duplicate. Entries at or past their end mean
	// nothing and purge forgets them.
	retired map[string]int64
	// purgedMessages maps the id of a message or dead letter that purge removed to its mailbox and
	// the end of its late-wake window (Config.LateWakes after the purge): until then a wake for it
	// counts as one for a committed message. Empty when Config.LateWakes is zero. Like aging, it is
	// the checker's memory of the log, not a row of the store: Equal does not compare it.
	purgedMessages map[string]purgedMessage
	// effects maps a mailbox to the ids whose handler effect committed, in commit order.
	effects map[string][]string
	// effectsForgotten counts, per mailbox, the committed effects whose ids Machine.Forget
	// dropped from effects: the effect log's version is their number plus len(effects).
	effectsForgotten map[string]int
	// inflight maps a worker to the delivery it fetched and has not handled yet.
	inflight map[int]delivery
	// batches maps a worker to the batch it fetched (consumer_fetch_batch) and has not handled
	// yet, in batch order. A worker holds a fetch or a batch, never both.
	batches map[int][]delivery
	// owed maps a worker to the acknowledged messages whose effects its batch handle left to a
	// later commit: only a BatchAckBeforeEffects consumer leaves any.
	owed map[int][]delivery
	// stops marks the workers whose group was stopped (worker_stop) and those that ended
	// (worker_drain); a worker without an entry runs. A crash forgets every mark, as it forgets
	// the in-flight deliveries: the restarted process's workers are new.
	stops map[int]stopMark
	// wakes holds each worker and mailbox where the worker was woken for a committed message and
	// has not fetched from the mailbox since (wake.go). A crash forgets them all.
	wakes Wakes
	// processed maps a (consumer, message id) record to the time it expires: it is live while
	// expires > now. Records are never removed (an expired one counts as absent), except by a purge
	// under the profile choice processed_expiry "until_cleanup", where an expired one still counts.
	processed map[processedKey]int64
	// checkpoints holds the actors' checkpoints saved by save_checkpoint (effect logs are derived
	// from effects, see loadCheckpoint).
	checkpoints map[string]checkpoint
	// redrives is the redrive history, oldest first: one record per dead letter a redrive moved
	// back. Append-only: no step changes or removes a record (purge included).
	redrives []traces.RedriveRecord
	// lastToken is the last token issued (0: none yet). Tokens are issued in increasing order, so
	// every token a row carries is in 1..lastToken.
	lastToken int
	// lastSeq is the last seq given to a message or an outbox row.
	lastSeq int64
}

// message is one mailbox row.
type message struct {
	mailbox, id, key, payload string
	priority                  int
	maxAttempts               int // >= 1
	attempts                  int // 0 <= attempts <= maxAttempts
	availableAt               int64
	// token is the lease token, 0 when the row carries none. Invariant: token == 0 implies
	// leaseUntil == 0, so a cleared lease leaves no trace in a snapshot.
	token      int
	leaseUntil int64
	seq        int64
	acked      bool
	// ackedAt is the time of the acknowledgement; 0 while ready.
	ackedAt int64
}

// live reports whether m carries a lease that has not run out at now under the profile p. At
// leaseUntil == now the lease has expired, unless p keeps it live then (lease_at_until "live").
func (m message) live(p profileRules, now int64) bool {
	return p.Held(m.token, m.leaseUntil, now)
}

// deadLetter is one row of the dead-letter table.
type deadLetter struct {
	mailbox, id string
	attempts    int
	reason      string
	deadAt      int64 // the time of the move
	// key, priority, maxAttempts and payload are the message's own, as it was when it was moved:
	// part of the dead letter's row, and what a redrive puts back.
	key         string
	priority    int
	maxAttempts int
	payload     string
}

// outboxRow is one outbox row.
type outboxRow struct {
	id, target, key, payload string
	priority                 int
	maxAttempts              int
	// maxDeliveryAttempts bounds the claims: deliveryAttempts <= maxDeliveryAttempts, >= 1.
	maxDeliveryAttempts int
	completed           bool
	// deadReason is "" unless the row is dead-lettered; a row is never both completed and
	// dead-lettered, and a dead-lettered row holds no claim.
	deadReason       string
	deliveryAttempts int
	availableAt      int64
	// token is the claim token, 0 when the row carries none; token == 0 implies claimUntil == 0.
	token      int
	claimUntil int64
	seq        int64
	// finalAt is the time the row was completed or dead-lettered; 0 while pending.
	finalAt int64
}

// state names the row's state as traces do.
func (o outboxRow) state() string {
	switch {
	case o.completed:
		return traces.StateCompleted
	case o.deadReason != "":
		return traces.StateDeadLetter
	}
	return traces.StatePending
}

// pending reports whether the row is neither completed nor dead-lettered.
func (o outboxRow) pending() bool { return !o.completed && o.deadReason == "" }

// delivery is what a consumer worker holds between consumer_fetch and consumer_handle: the message
// as the fetch returned it. The handle decides on these values, not on a re-read of the row, as the
// real consumer does with the delivery it holds.
type delivery struct {
	mailbox, id string
	attempts    int // as the fetch reported them: after the bump (leased) or stored (leaseless)
	maxAttempts int
	token       int // 0 on the leaseless path
	leaseless   bool
	// effectDone: an EffectOutsideFold consumer has committed this delivery's effect already.
	effectDone bool
}

// Init returns the empty model for cfg at time 0.
func Init(cfg Config) State {
	s := State{cfg: cfg.filled()}
	return s.clone()
}

// Config returns the configuration the state runs with, defaults filled in.
func (s State) Config() Config { return s.cfg.filled() }

// Now returns the time of the last step applied (0 for a fresh state).
func (s State) Now() int64 { return s.now }

// Redrives returns the redrive history, oldest first (what list_redrives without an id reports;
// nil when nothing was redriven).
func (s State) Redrives() []traces.RedriveRecord { return slices.Clone(s.redrives) }

// clone returns a copy of s that shares nothing mutable with it, the slices held in its maps
// included, so the copy's steps may append to and delete from them in place.
func (s State) clone() State {
	n := s
	n.cfg = s.cfg.filled()
	n.messages = cloneMap(s.messages)
	n.idx = s.idx.clone()
	n.aging = s.aging.clone()
	n.dead = cloneMap(s.dead)
	n.outbox = cloneMap(s.outbox)
	n.claims = s.claims.clone()
	n.purgedOutbox = cloneMap(s.purgedOutbox)
	n.retired = cloneMap(s.retired)
	n.purgedMessages = cloneMap(s.purgedMessages)
	n.effects = cloneSlices(s.effects)
	n.effectsForgotten = cloneMap(s.effectsForgotten)
	n.inflight = cloneMap(s.inflight)
	n.batches = cloneSlices(s.batches)
	n.owed = cloneSlices(s.owed)
	n.stops = cloneMap(s.stops)
	n.wakes = s.wakes.clone()
	n.processed = cloneMap(s.processed)
	n.checkpoints = cloneMap(s.checkpoints)
	n.redrives = slices.Clone(s.redrives)
	return n
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	n := make(map[K]V, len(m))
	maps.Copy(n, m)
	return n
}

func cloneSlices[K comparable, V any](m map[K][]V) map[K][]V {
	n := make(map[K][]V, len(m))
	for k, v := range m {
		n[k] = slices.Clone(v)
	}
	return n
}

// Equal reports whether a and b are the same state: same time, rows, dead letters, effects,
// in-flight deliveries, workers' stops and unanswered wakes, processed-message records, checkpoints, redrive history and counters. The Config is not compared (functions have no equality).
func Equal(a, b State) bool {
	return a.now == b.now && a.lastToken == b.lastToken && a.lastSeq == b.lastSeq &&
		maps.Equal(a.messages, b.messages) &&
		maps.Equal(a.dead, b.dead) &&
		maps.Equal(a.outbox, b.outbox) &&
		maps.Equal(a.purgedOutbox, b.purgedOutbox) &&
		maps.Equal(a.retired, b.retired) &&
		maps.EqualFunc(a.effects, b.effects, slices.Equal) &&
		maps.Equal(a.effectsForgotten, b.effectsForgotten) &&
		maps.Equal(a.inflight, b.inflight) &&
		maps.EqualFunc(a.batches, b.batches, slices.Equal) &&
		maps.EqualFunc(a.owed, b.owed, slices.Equal) &&
		maps.Equal(a.stops, b.stops) &&
		a.wakes.equal(b.wakes) &&
		maps.Equal(a.processed, b.processed) &&
		maps.Equal(a.checkpoints, b.checkpoints) &&
		slices.Equal(a.redrives, b.redrives)
}

// Snapshot returns the canonical snapshot of s: messages sorted by mailbox then id, outbox rows and
// dead letters by id, the effects of every mailbox with at least one committed effect. Slices and
// the map are never nil. Token fields carry the model's tokens, 0 for none.
func (s State) Snapshot() traces.Snapshot {
	snap := traces.Snapshot{
		Messages:    make([]traces.MessageRow, 0, len(s.messages)),
		Outbox:      make([]traces.OutboxRow, 0, len(s.outbox)),
		DeadLetters: make([]traces.DeadLetterRow, 0, len(s.dead)),
		Effects:     make(map[string][]string, len(s.effects)),
	}
	for _, m := range s.messages {
		state := traces.StateReady
		if m.acked {
			state = traces.StateAcked
		}
		snap.Messages = append(snap.Messages, traces.MessageRow{
			Mailbox: m.mailbox, ID: m.id, Key: m.key, Priority: m.priority, Payload: m.payload,
			State: state, Attempts: m.attempts, MaxAttempts: m.maxAttempts, AvailableAt: m.availableAt,
			Token: m.token, LeaseUntil: m.leaseUntil,
		})
	}
	slices.SortFunc(snap.Messages, func(a, b traces.MessageRow) int {
		return cmp.Or(cmp.Compare(a.Mailbox, b.Mailbox), cmp.Compare(a.ID, b.ID))
	})
	for _, o := range s.outbox {
		snap.Outbox = append(snap.Outbox, traces.OutboxRow{
			ID: o.id, Target: o.target, Key: o.key, Priority: o.priority, MaxAttempts: o.maxAttempts,
			Payload: o.payload, State: o.state(), DeliveryAttempts: o.deliveryAttempts,
			AvailableAt: o.availableAt, Token: o.token, ClaimUntil: o.claimUntil, Reason: o.deadReason,
		})
	}
	slices.SortFunc(snap.Outbox, func(a, b traces.OutboxRow) int { return cmp.Compare(a.ID, b.ID) })
	for _, d := range s.dead {
		snap.DeadLetters = append(snap.DeadLetters, traces.DeadLetterRow{
			Mailbox: d.mailbox, ID: d.id, Key: d.key, Priority: d.priority, Payload: d.payload,
			Attempts: d.attempts, MaxAttempts: d.maxAttempts, Reason: d.reason, DeadAt: d.deadAt,
		})
	}
	slices.SortFunc(snap.DeadLetters, func(a, b traces.DeadLetterRow) int { return cmp.Compare(a.ID, b.ID) })
	for mailbox, ids := range s.effects {
		if len(ids) > 0 {
			snap.Effects[mailbox] = slices.Clone(ids)
		}
	}
	return snap
}
