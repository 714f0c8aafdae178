package properties

import (
	"fmt"
	"github.com/pconform/pconform/profile"
	"slices"

	"github.com/pconform/pconform/traces"
)

// history is what the invariants remember of one sequence on the system under test. It is built
// from the target's own results and snapshots only, so the invariants judge the target by itself;
// the comparison with the model is separate (CheckResult, CheckState).
//
// The invariants, checked on the target's snapshot after every step:
//
//   - no-loss: an id whose enqueue the target accepted, and the id of every outbox row a publisher
//     delivery completed, is in a mailbox (ready or acked) or among the dead letters; and an id
//     once stored stays stored until a purge removes it (a purge removes only final rows: acked
//     messages and dead letters). A row completed by a raw outbox_complete was never delivered, so
//     rows a raw outbox_complete named are left out, and so are rows whose message a purge removed. (The id of a delivery may live in another
//     mailbox than the row's target: ids are unique across mailboxes, so a delivery of an id
//     stored elsewhere is a suppressed duplicate.)
//   - attempts-bounded: no row, dead letter or returned message has more attempts than its
//     max_attempts, and a failed handle never hands on an attempt above the max_attempts of the
//     row its fetch returned. Each is judged by its own row generation: once a purge removed a
//     row and the horizon freed its id, an enqueue of the id starts a new row with its own
//     max_attempts, and a handle still holding a fetch of the purged row is bounded by the purged
//     row's, the max_attempts the consumer caps the attempt at (docs/semantics.md, Consumer).
//   - no-strand: a ready message that has used up its attempts and holds no lease is never
//     delivered or dead-lettered again. The consumer protocol alone never leaves one behind (the
//     leased path dead-letters through the failed handle or expire(); the leaseless path through
//     the handle's effective attempt). Raw store operations can: a nack_by_id caps attempts at
//     max_attempts without dead-lettering, a nack clears the lease a lease just counted to the
//     maximum. So the invariant is scoped to messages no raw store operation ever named by id
//     (ack, nack, ack_by_id, nack_by_id, extend, dead_letter) or returned (lease).
//   - exactly-once: an id is stored at most once (mailbox rows and dead letters together); a
//     handler effect commits at most once per id, and only together with its acknowledgement, so
//     every id in an effect log is an acked row of that mailbox. Ids a purge removed are left out
//     of the effect checks: the log keeps their effects, and once the dedup horizon has passed the
//     id may be enqueued, and handled, again.
//   - fifo: a lease, peek or consumer fetch (each message of a batch fetch) that returns a keyed
//     message m at time now found, in
//     the state before the step, no earlier-created ready message of m's mailbox and key that
//     still blocks it (attempts left, or a lease live at now): a keyed claim never overtakes its
//     live head.
type history struct {
	// prev is the target's state before the current step.
	prev traces.Snapshot
	// seen holds every id stored and not purged since; order numbers the message rows by the
	// step that created them (an enqueue, a delivery, a redrive), which is the store's seq order,
	// since at most one message row is created per step.
	seen  map[string]bool
	order map[string]int
	// rows counts the message rows created so far (the next order number).
	rows int
	// maxOf is each id's max_attempts, from its current (or last) message row: a row created
	// again after a purge (a new generation of the id) replaces it.
	maxOf map[string]int
	// purged holds the ids a purge removed.
	purged map[string]bool
	// tainted holds the ids raw store operations touched (see no-strand).
	tainted map[string]bool
	// rawCompleted holds the outbox ids a raw outbox_complete named (see no-loss).
	rawCompleted map[string]bool
	// fetched maps a worker to its fetched, unhandled message.
	fetched map[int]fetch
}

// fetch is a consumer fetch not handled yet: the message's id and the max_attempts of the row
// the fetch returned, which bounds the handle's attempt even if that row is purged and its id
// enqueued again before the handle.
type fetch struct {
	id          string
	maxAttempts int
}

func newHistory() *history {
	return &history{
		seen: map[string]bool{}, order: map[string]int{}, maxOf: map[string]int{}, purged: map[string]bool{},
		tainted: map[string]bool{}, rawCompleted: map[string]bool{}, fetched: map[int]fetch{},
	}
}

// observe checks the invariants after step c, whose result was r and after which the target's
// state is snap, and then remembers the step.
func (h *history) observe(c *cmd, r traces.Result, snap traces.Snapshot) []violation {
	var out []violation
	bad := func(ch Check, format string, args ...any) {
		out = append(out, violation{check: ch, detail: fmt.Sprintf(format, args...)})
	}
	switch c.op {
	case traces.OpLease, traces.OpPeek, traces.OpConsumerFetch:
		if r.Message != nil {
			h.fifo(r.Message.ID, c.at, bad)
		}
	case traces.OpConsumerFetchBatch:
		// Each message of a batch is judged as a fetch of its own, against the state before the
		// batch: a message behind another of the same batch is behind a blocking head.
		for _, m := range r.Messages {
			h.fifo(m.ID, c.at, bad)
		}
	}

	rows := map[string]traces.MessageRow{}
	count := map[string]int{}
	for _, m := range snap.Messages {
		rows[m.ID] = m
		count[m.ID]++
	}
	for _, d := range snap.DeadLetters {
		count[d.ID]++
	}
	before := map[string]bool{}
	for _, m := range h.prev.Messages {
		before[m.ID] = true
	}
	var created []string
	for _, m := range snap.Messages {
		if !before[m.ID] {
			h.maxOf[m.ID] = m.MaxAttempts
			created = append(created, m.ID)
		}
	}
	if c.op == traces.OpPurge {
		// The final rows the purge removed: they leave the stored ids.
		for _, id := range sortedKeys(h.seen) {
			if count[id] > 0 {
				continue
			}
			for _, m := range h.prev.Messages {
				if m.ID == id && m.State != traces.StateAcked {
					bad(CheckNoLoss, "purge removed message %q, which was %s, not acked", id, m.State)
				}
			}
			h.purged[id] = true
			delete(h.seen, id)
		}
	}

	// no-loss
	required := map[string]string{}
	for id := range h.seen {
		required[id] = "was stored before"
	}
	if c.op == traces.OpEnqueue && !r.Duplicate {
		required[c.args.ID] = "was accepted by this enqueue"
	}
	if c.op == traces.OpOutboxComplete {
		h.rawCompleted[c.args.ID] = true
	}
	for _, o := range snap.Outbox {
		if o.State == traces.StateCompleted && !h.rawCompleted[o.ID] && !h.purged[o.ID] {
			required[o.ID] = fmt.Sprintf("is the message of completed outbox row %q (target %q)", o.ID, o.Target)
		}
	}
	for _, id := range sortedKeys(required) {
		if count[id] == 0 {
			bad(CheckNoLoss, "message %q %s but is in no mailbox and not among the dead letters", id, required[id])
		}
	}

	// exactly-once
	for _, id := range sortedKeys(count) {
		if count[id] > 1 {
			bad(CheckExactlyOnce, "id %q is stored %d times", id, count[id])
		}
	}
	effects := map[string]int{}
	for _, mb := range sortedKeys(snap.Effects) {
		for _, id := range snap.Effects[mb] {
			if h.purged[id] {
				continue
			}
			effects[id]++
			if effects[id] == 2 {
				bad(CheckExactlyOnce, "the handler effect of %q committed more than once", id)
			}
			if m, ok := rows[id]; !ok || m.State != traces.StateAcked || m.Mailbox != mb {
				bad(CheckExactlyOnce, "the handler effect of %q committed in mailbox %q, but %q is not an acked message of it", id, mb, id)
			}
		}
	}

	// attempts-bounded
	for _, m := range snap.Messages {
		if m.Attempts < 0 || m.Attempts > m.MaxAttempts {
			bad(CheckAttempts, "message %q has attempts %d, max_attempts %d", m.ID, m.Attempts, m.MaxAttempts)
		}
	}
	for _, d := range snap.DeadLetters {
		if mx, ok := h.maxOf[d.ID]; ok && d.Attempts > mx {
			bad(CheckAttempts, "dead letter %q has attempts %d, max_attempts %d", d.ID, d.Attempts, mx)
		}
	}
	if m := r.Message; m != nil {
		if mx, ok := h.maxOf[m.ID]; ok && m.Attempts > mx {
			bad(CheckAttempts, "%s returned %q with attempts %d, max_attempts %d", c.op, m.ID, m.Attempts, mx)
		}
	}
	if c.op == traces.OpConsumerHandle && r.Attempt > 0 {
		if f, ok := h.fetched[c.args.Worker]; ok && r.Attempt > f.maxAttempts {
			bad(CheckAttempts, "the handle of %q handed on attempt %d, max_attempts %d", f.id, r.Attempt, f.maxAttempts)
		}
	}

	// no-strand
	h.taint(c, r)
	for _, m := range snap.Messages {
		if m.State == traces.StateReady && m.Attempts >= m.MaxAttempts && m.Token == 0 && !h.tainted[m.ID] {
			bad(CheckNoStrand, "message %q (mailbox %q) used up its %d attempts, is ready and holds no lease: it is stranded, never delivered or dead-lettered again", m.ID, m.Mailbox, m.MaxAttempts)
		}
	}

	// Remember the step.
	for _, id := range sortedKeys(count) {
		h.seen[id] = true
	}
	for _, id := range created {
		h.order[id] = h.rows
		h.rows++
	}
	switch c.op {
	case traces.OpConsumerFetch:
		if r.Message == nil {
			break
		}
		if mx, ok := h.maxOf[r.Message.ID]; ok {
			h.fetched[c.args.Worker] = fetch{id: r.Message.ID, maxAttempts: mx}
		}
	case traces.OpConsumerHandle:
		delete(h.fetched, c.args.Worker)
	case traces.OpCrash:
		clear(h.fetched)
	}
	h.prev = snap
	return out
}

// taint records the ids a raw store operation touched.
func (h *history) taint(c *cmd, r traces.Result) {
	switch c.op {
	case traces.OpAck, traces.OpNack, traces.OpAckByID, traces.OpNackByID, traces.OpExtend, traces.OpDeadLetter:
		h.tainted[c.args.ID] = true
	case traces.OpLease:
		if r.Message != nil {
			h.tainted[r.Message.ID] = true
		}
	}
}

// fifo reports a blocking predecessor of the returned message id in the state before the step.
func (h *history) fifo(id string, now int64, bad func(Check, string, ...any)) {
	i := slices.IndexFunc(h.prev.Messages, func(m traces.MessageRow) bool { return m.ID == id })
	if i < 0 {
		return // not a stored message: the result check reports it
	}
	m := h.prev.Messages[i]
	if m.Key == "" {
		return
	}
	for _, p := range h.prev.Messages {
		if p.ID == id || p.Mailbox != m.Mailbox || p.Key != m.Key || h.order[p.ID] > h.order[id] || p.State != traces.StateReady {
			continue
		}
		live := (profile.Profile{}).Held(p.Token, p.LeaseUntil, now)
		if p.Attempts < p.MaxAttempts || live {
			bad(CheckFIFO, "%q (key %q) was handed out at %d while the earlier %q of the same key still blocks it (attempts %d of %d, live lease %v)",
				id, m.Key, now, p.ID, p.Attempts, p.MaxAttempts, live)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
