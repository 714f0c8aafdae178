package properties

import (
	"fmt"
	"github.com/pconform/pconform/profile"
	"math/rand"
	"slices"

	"github.com/leanovate/gopter"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// Mix weighs the operations a generated sequence draws from: the chance of an op is its weight
// over the sum of the weights of the ops that apply in the current state. An op with weight 0 (or
// missing) is never drawn.
type Mix map[traces.Op]int

// DefaultMix is the mix every property and hunt uses unless told otherwise. It leans on the
// protocol steps (consumer fetch/handle, publisher deliveries, and their batch forms) and clock
// moves to deadlines, with
// enough raw store operations to disturb them, and a few of the maintenance and keeping ops:
// purges (which free ids an enqueue then reuses), redrives of dead letters (each read back with
// list_redrives, see generate), processed-message marks and checkpoint saves and loads.
func DefaultMix() Mix {
	return Mix{
		traces.OpEnqueue: 10, traces.OpLease: 5, traces.OpPeek: 2, traces.OpAck: 3, traces.OpNack: 3,
		traces.OpAckByID: 2, traces.OpNackByID: 2, traces.OpExtend: 2, traces.OpExpire: 3,
		traces.OpDeadLetter:    1,
		traces.OpOutboxEnqueue: 5, traces.OpOutboxClaim: 5, traces.OpOutboxComplete: 2,
		traces.OpOutboxFail: 2, traces.OpOutboxDeadLetter: 1, traces.OpAdvanceClock: 9,
		traces.OpConsumerFetch: 12, traces.OpConsumerHandle: 12, traces.OpPublisherDeliver: 8,
		traces.OpCrash: 2,
		traces.OpPurge: 2, traces.OpRedrive: 3, traces.OpMarkProcessed: 2, traces.OpSaveCheckpoint: 2,
		traces.OpLoadCheckpoint: 1, traces.OpListRedrives: 1,
		traces.OpConsumerFetchBatch: 4, traces.OpConsumerHandleBatch: 8, traces.OpPublisherDeliverBatch: 3,
	}
}

// worker is a consumer worker of the fixed setup: it always serves one mailbox on one path.
type worker struct {
	id               int
	mailbox, profile string
}

// setup is what every generated sequence works with: few mailboxes, ids and keys, so that
// duplicates, FIFO keys and competing workers collide often.
type setup struct {
	mailboxes []string
	workers   []worker
	// ids is the pool of message and outbox ids: shared, so a delivery can meet a direct enqueue
	// of the same id.
	ids  []string
	keys []string
	// consumers and actors name processed-message records and checkpoints: few, so marks and
	// saves meet their own earlier ones.
	consumers, actors []string
	mix               Mix
	// avoid are the known issues whose steps are illegal in this setup.
	avoid []KnownIssue
	// harm is the invariant the hunt must see broken (variantHarm), "" for none. The situations
	// that lead to it weigh more (see "Situations"); without one, nothing changes.
	harm Check
}

func newSetup(mix Mix, avoid []KnownIssue) *setup {
	return &setup{
		mailboxes: []string{"a", "b"},
		// Mailbox a has two leased workers (they compete for leases); mailbox b has its one
		// leaseless worker (the leaseless path's single-worker rule).
		workers: []worker{
			{1, "a", traces.ProfileLeased}, {2, "a", traces.ProfileLeased}, {3, "b", traces.ProfileLeaseless},
		},
		ids:       []string{"m1", "m2", "m3", "m4", "m5", "m6"},
		keys:      []string{"", "", "k1", "k2"},
		consumers: []string{"c1", "c2"},
		actors:    []string{"x", "y"},
		mix:       mix, avoid: avoid,
	}
}

// gen is gopter's generator for the next command after w. It draws from params.Rng only, so a
// seed fixes every sequence.
func (set *setup) gen(w *world) gopter.Gen {
	return func(params *gopter.GenParameters) *gopter.GenResult {
		return gopter.NewGenResult(set.generate(w, params.Rng), gopter.NoShrinker)
	}
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.Intn(len(xs))] }

// chance is true with probability p.
func chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

// view is what the generator looks at in the model's state.
type view struct {
	w    *world
	snap traces.Snapshot
	now  int64
}

func (v *view) holders() []worker {
	var out []worker
	for _, wk := range v.w.set.workers {
		if _, ok := v.w.held[wk.id]; ok {
			out = append(out, wk)
		}
	}
	return out
}

// idle lists the workers that hold neither a fetch nor a batch.
func (v *view) idle() []worker {
	var out []worker
	for _, wk := range v.w.set.workers {
		_, held := v.w.held[wk.id]
		if _, batch := v.w.batches[wk.id]; !held && !batch {
			out = append(out, wk)
		}
	}
	return out
}

// batchHolders lists the workers that hold a batch.
func (v *view) batchHolders() []worker {
	var out []worker
	for _, wk := range v.w.set.workers {
		if _, ok := v.w.batches[wk.id]; ok {
			out = append(out, wk)
		}
	}
	return out
}

// serials lists the serials that issued a token of the given kind, oldest first.
func (v *view) serials(claim bool) []int {
	var out []int
	for s, is := range v.w.issued {
		if is.claim == claim {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// current lists the serials whose token some row still carries.
func (v *view) current(claim bool) []int {
	var out []int
	if claim {
		for _, r := range v.snap.Outbox {
			if r.Token != 0 {
				out = append(out, v.w.symbol(r.Token))
			}
		}
	} else {
		for _, r := range v.snap.Messages {
			if r.Token != 0 {
				out = append(out, v.w.symbol(r.Token))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// applicable is the weight of op in the current state, 0 when it cannot be drawn. Where the state
// is one link of a chain a bug hides in (see "Situations" below), the next link's op weighs more
// and the ops that would waste it weigh less.
func (v *view) applicable(op traces.Op) int {
	weight := v.w.set.mix[op]
	switch op {
	case traces.OpAdvanceClock:
		if len(v.taking()) > 0 {
			return 2 * weight
		}
	case traces.OpExpire:
		if len(v.lapsed()) > 0 {
			return 4 * weight
		}
	case traces.OpLease:
		if len(v.lapsed()) > 0 {
			return 2 * weight
		}
	case traces.OpNackByID:
		if len(v.leaselessFresh()) > 0 || len(v.taking()) > 0 {
			return 5 * weight
		}
	case traces.OpEnqueue:
		if len(v.retiredIDs()) > 0 {
			return 2 * weight
		}
	case traces.OpAck, traces.OpNack, traces.OpExtend:
		if len(v.serials(false)) == 0 {
			return 0
		}
		if op == traces.OpNack && len(v.taking()) > 0 {
			return 5 * weight
		}
	case traces.OpOutboxComplete, traces.OpOutboxFail, traces.OpOutboxDeadLetter:
		if len(v.serials(true)) == 0 {
			return 0
		}
	case traces.OpPublisherDeliver:
		if len(v.snap.Outbox) == 0 {
			return 0
		}
		if v.w.set.harm == CheckNoLoss && slices.ContainsFunc(v.snap.Outbox, func(o traces.OutboxRow) bool { return o.Token != 0 && o.State == traces.StatePending }) {
			return 2 * weight
		}
	case traces.OpRedrive:
		// Mostly a dead letter, above all one a worker still holds; a redrive of anything else is
		// not_found, drawn rarely.
		switch {
		case len(v.heldDead()) > 0:
			return 6 * weight
		case len(v.deadIDs()) == 0:
			return weight / 3
		}
		return 2 * weight
	case traces.OpListRedrives:
		// Never drawn by weight: a non-zero weight turns on the read-back (see generate).
		return 0
	case traces.OpPurge:
		// A purge with nothing final to remove is drawn rarely.
		if !v.anyFinal() {
			return weight / 2
		}
		return 3 * weight
	case traces.OpConsumerFetch:
		switch {
		case len(v.idle()) == 0:
			return 0
		case len(v.takers()) > 0:
			return 2 * weight
		}
	case traces.OpConsumerFetchBatch:
		switch {
		case len(v.idle()) == 0:
			return 0
		case len(v.keyedFetchers()) > 0:
			return 6 * weight
		}
	case traces.OpConsumerHandleBatch:
		// Only a worker holding a batch handles one (an idle batch handle shows nothing).
		if len(v.batchHolders()) == 0 {
			return 0
		}
	case traces.OpPublisherDeliverBatch:
		if len(v.current(true)) == 0 {
			return 0
		}
	case traces.OpConsumerHandle:
		// A handle mostly follows a fetch; an idle one is rare but legal. A stale holder's handle
		// is a fencing test, drawn three times as often; while a holder is in the middle of a
		// chain (its lease is taking or has run out, its message is a dead letter, or it is a
		// leaseless fetch nothing has nacked yet), the next link is another step, so handles are
		// drawn half as often.
		switch {
		case len(v.holders()) == 0:
			return weight / 6
		case len(v.staleHolders()) > 0:
			return 3 * weight
		case len(v.lapsed()) > 0 || len(v.heldDead()) > 0 || len(v.taking()) > 0 || len(v.leaselessFresh()) > 0:
			return weight / 2
		}
	}
	return weight
}

// generate draws one command that is legal after w.
//
// Right after a redrive that moved something, or a purge while there is a redrive history, the
// next command (when the mix gives list_redrives a weight) is a list_redrives that reads the
// history back: of the redriven id, or all of it after a purge. It draws nothing from r, so the
// random draws of every other command are what they would be without it, and the hunts of the
// other variants meet the same sequences.
func (set *setup) generate(w *world, r *rand.Rand) *cmd {
	if w.readBack && set.mix[traces.OpListRedrives] > 0 {
		return &cmd{serial: w.next, op: traces.OpListRedrives, at: w.m.Now(), args: traces.Args{ID: w.readBackID}}
	}
	v := &view{w: w, snap: w.m.Snapshot(), now: w.m.Now()}
	total := 0
	weights := make([]int, len(traces.Ops))
	for i, op := range traces.Ops {
		weights[i] = v.applicable(op)
		total += weights[i]
	}
	op := traces.OpAdvanceClock
	if total > 0 {
		n := r.Intn(total)
		for i, wt := range weights {
			if n < wt {
				op = traces.Ops[i]
				break
			}
			n -= wt
		}
	}
	c := &cmd{serial: w.next, op: op, at: v.now}
	a := &c.args
	switch op {
	case traces.OpEnqueue:
		a.Mailbox = pick(r, set.mailboxes)
		a.ID = v.enqueueID(r)
		a.Key = pick(r, set.keys)
		a.Priority = pick(r, []int{0, 0, 0, 1})
		// A leased worker's exhausted chain needs a message whose attempts one lease uses up.
		a.MaxAttempts = pick(r, []int{1, 2, 2, 3})
		if v.leasedMailbox(a.Mailbox) {
			a.MaxAttempts = pick(r, []int{1, 1, 2, 2, 3})
		}
		a.Delay = pick(r, []int64{0, 0, 0, 1, 2})
		if chance(r, 0.3) {
			a.Payload = "p"
		}
	case traces.OpLease:
		a.Mailbox = pick(r, set.mailboxes)
		if lapsed := v.lapsed(); len(lapsed) > 0 && chance(r, 0.8) {
			// Another lease on the mailbox of a lease that ran out.
			if m, ok := v.row(pick(r, lapsed)); ok {
				a.Mailbox = m.Mailbox
			}
		}
		a.LeaseFor = pick(r, []int64{1, 2, 3})
	case traces.OpPeek:
		a.Mailbox = pick(r, set.mailboxes)
	case traces.OpAck, traces.OpNack, traces.OpExtend:
		c.tok, a.ID = v.tokenRef(r, false, c.serial)
		if taking := v.taking(); op == traces.OpNack && len(taking) > 0 && chance(r, 0.8) {
			// The nack of a taking holder's lease, with its token: the row goes back ready.
			h := pick(r, taking)
			c.tok, a.ID = v.w.serialOf[h.token], h.id
		}
		switch op {
		case traces.OpNack:
			a.Delay = pick(r, []int64{0, 0, 1, 2})
		case traces.OpExtend:
			a.LeaseFor = pick(r, []int64{1, 2, 3})
		}
	case traces.OpAckByID, traces.OpNackByID, traces.OpDeadLetter:
		a.ID = v.presentID(r)
		switch op {
		case traces.OpNackByID:
			// Mostly the message a leaseless worker holds, when it is still ready: the nack
			// counts an attempt its fetch did not see.
			ids := v.leaselessFresh()
			for _, h := range v.taking() {
				ids = append(ids, h.id)
			}
			if len(ids) > 0 && chance(r, 0.8) {
				a.ID = pick(r, ids)
			}
			a.Delay = pick(r, []int64{0, 0, 1, 2})
		case traces.OpDeadLetter:
			a.Reason = "operator"
		}
	case traces.OpExpire, traces.OpCrash:
	case traces.OpOutboxEnqueue:
		a.ID = v.freshID(r)
		a.Target = pick(r, set.mailboxes)
		a.Key = pick(r, set.keys)
		a.Priority = pick(r, []int{0, 0, 0, 1})
		a.MaxAttempts = pick(r, []int{1, 2, 2, 3})
		// Small delivery bounds, so that rows run out of delivery attempts; 0 is the default.
		a.MaxDeliveryAttempts = pick(r, []int{0, 1, 1, 2})
		if chance(r, 0.3) {
			a.Payload = "p"
		}
	case traces.OpOutboxClaim:
		a.Limit = pick(r, []int{1, 1, 2, 3})
		a.ClaimFor = pick(r, []int64{1, 2, 3})
	case traces.OpOutboxComplete, traces.OpOutboxFail, traces.OpOutboxDeadLetter:
		c.tok, a.ID = v.tokenRef(r, true, c.serial)
		switch op {
		case traces.OpOutboxFail:
			a.Delay = pick(r, []int64{0, 0, 1, 2})
		case traces.OpOutboxDeadLetter:
			a.Reason = "operator"
		}
	case traces.OpPublisherDeliver:
		a.ID, c.tok = v.delivery(r, c.serial)
		a.Publisher = pick(r, []int{1, 2})
		a.Profile = pick(r, []string{traces.ProfileFold, traces.ProfileSplit})
		faults := []string{traces.FaultNone, traces.FaultNone, traces.FaultCommitFails, traces.FaultCrashBetween, traces.FaultUndeliverable}
		switch {
		case v.w.set.harm != CheckNoLoss:
		case v.underClaim(a.ID, c.tok):
			faults = append(faults, traces.FaultCommitFails) // see "Situations"
		default:
			faults = append(faults, traces.FaultNone, traces.FaultNone)
		}
		a.Fault = pick(r, faults)
		a.RetryDelay = pick(r, []int64{0, 0, 1})
	case traces.OpConsumerFetch:
		wk := pick(r, v.idle())
		if busy := v.fetchers(); len(busy) > 0 && chance(r, 0.7) {
			wk = pick(r, busy)
		}
		if takers := v.takers(); len(takers) > 0 && chance(r, 0.8) {
			wk = pick(r, takers)
		}
		a.Worker, a.Mailbox, a.Profile = wk.id, wk.mailbox, wk.profile
		if wk.profile == traces.ProfileLeased {
			a.LeaseFor = pick(r, []int64{1, 2, 3})
			c.takeover = chance(r, 0.8)
		}
	case traces.OpConsumerHandle:
		wk := pick(r, set.workers)
		if hs := v.holders(); len(hs) > 0 {
			wk = pick(r, hs)
		}
		stale := v.staleHolders()
		if len(stale) > 0 && chance(r, 0.85) {
			wk = pick(r, stale)
		}
		a.Worker, a.Mailbox, a.Profile = wk.id, wk.mailbox, wk.profile
		a.Outcome = v.outcome(r, wk, slices.Contains(stale, wk))
		if a.Outcome == traces.OutcomeFail {
			a.RetryDelay = pick(r, []int64{0, 0, 1, 2})
		}
		// A failed commit, as for a batch handle, where the target runs the real Consumer.Handle
		// (its mix has batch handles: targetMix drops them for a variant that replaces Handle).
		// The fault is left absent otherwise, as committed traces have it.
		if _, held := v.w.held[wk.id]; held && set.mix[traces.OpConsumerHandleBatch] > 0 && chance(r, 0.1) {
			a.Fault = traces.FaultCommitFails
		}
	case traces.OpConsumerFetchBatch:
		wk := pick(r, v.idle())
		if busy := v.fetchers(); len(busy) > 0 && chance(r, 0.7) {
			wk = pick(r, busy)
		}
		if keyed := v.keyedFetchers(); len(keyed) > 0 && chance(r, 0.8) {
			wk = pick(r, keyed)
		}
		a.Worker, a.Mailbox, a.Profile = wk.id, wk.mailbox, wk.profile
		a.Size = pick(r, []int{2, 2, 3})
		if wk.profile == traces.ProfileLeased {
			a.LeaseFor = pick(r, []int64{1, 2, 3})
		}
	case traces.OpConsumerHandleBatch:
		wk := pick(r, v.batchHolders())
		b := v.w.batches[wk.id]
		a.Worker, a.Mailbox, a.Profile = wk.id, b.mailbox, b.profile
		a.Outcomes = make([]string, len(b.ids))
		for k := range a.Outcomes {
			a.Outcomes[k] = pick(r, handleOutcomes)
		}
		a.Fault = traces.FaultNone
		if v.w.fenced(b) && chance(r, 0.15) {
			a.Fault = traces.FaultCommitFails
		}
		a.RetryDelay = pick(r, []int64{0, 0, 1, 2})
	case traces.OpPublisherDeliverBatch:
		c.tok, a.IDs = v.batchDelivery(r)
		a.Publisher = pick(r, []int{1, 2})
		a.Fault = pick(r, []string{traces.FaultNone, traces.FaultNone, traces.FaultCommitFails, traces.FaultCrashBetween})
		a.RetryDelay = pick(r, []int64{0, 0, 1})
		for _, k := range set.avoid {
			if k.matches(w, c) {
				// A failed commit would be a step of a known issue the hunt avoids.
				a.Fault = traces.FaultNone
			}
		}
	case traces.OpPurge:
		a.Limit = pick(r, []int{1, 2, 5})
		a.OlderThan = pick(r, []int64{0, 0, 1, 2})
		a.Horizon = pick(r, []int64{0, 2, 3, 5, 5})
	case traces.OpRedrive:
		a.ID = v.deadID(r)
		a.Reason = "fixed"
	case traces.OpMarkProcessed:
		a.Consumer = pick(r, set.consumers)
		a.ID = pick(r, set.ids[:3])
		a.TTL = pick(r, []int64{1, 2, 3})
	case traces.OpSaveCheckpoint:
		a.Actor = v.saveActor(r)
		a.ExpectVersion = v.expectVersion(r, a.Actor)
		a.Payload = pick(r, []string{"", "s"})
	case traces.OpLoadCheckpoint:
		a.Actor = pick(r, set.actors)
	case traces.OpAdvanceClock:
		c.at = v.nextTime(r)
	default:
		panic(fmt.Sprintf("properties: generate: op %q has no generator", op))
	}
	return c
}

// deadIDs lists the ids a redrive moves: mailbox dead letters and dead-lettered outbox rows.
func (v *view) deadIDs() []string {
	var out []string
	for _, d := range v.snap.DeadLetters {
		out = append(out, d.ID)
	}
	for _, o := range v.snap.Outbox {
		if o.State == traces.StateDeadLetter {
			out = append(out, o.ID)
		}
	}
	return out
}

// anyFinal reports whether some row is final (acked, dead-lettered, or a completed or
// dead-lettered outbox row): what a purge removes.
func (v *view) anyFinal() bool {
	if len(v.snap.DeadLetters) > 0 {
		return true
	}
	for _, m := range v.snap.Messages {
		if m.State == traces.StateAcked {
			return true
		}
	}
	for _, o := range v.snap.Outbox {
		if o.State != traces.StatePending {
			return true
		}
	}
	return false
}

// deadID mostly names a dead letter (of the mailboxes or the outbox), above all one a worker still
// holds, else any id of the pool.
func (v *view) deadID(r *rand.Rand) string {
	if held := v.heldDead(); len(held) > 0 && chance(r, 0.8) {
		return pick(r, held)
	}
	if dead := v.deadIDs(); len(dead) > 0 && chance(r, 0.85) {
		return pick(r, dead)
	}
	return pick(r, v.w.set.ids)
}

// storedVersion is the version of actor's checkpoint in the model, 0 when it has none.
func (v *view) storedVersion(actor string) int {
	_, res, err := models.Step(v.w.m, traces.OpLoadCheckpoint, v.now, traces.Args{Actor: actor})
	if err == nil && res.Err == "" {
		return res.Version
	}
	return 0
}

// saveActor draws the actor of a checkpoint save: mostly one that has a checkpoint already, when
// one has, so that saves meet their own earlier ones.
func (v *view) saveActor(r *rand.Rand) string {
	var saved []string
	for _, a := range v.w.set.actors {
		if v.storedVersion(a) > 0 {
			saved = append(saved, a)
		}
	}
	if len(saved) > 0 && chance(r, 0.75) {
		return pick(r, saved)
	}
	return pick(r, v.w.set.actors)
}

// expectVersion draws the expected version of a checkpoint save. With no checkpoint stored,
// mostly 0 (the first save), else one from the future. With one stored: half the time its
// version, else mostly a stale one (below it, 0 included: a second "first" save), else one from
// the future.
func (v *view) expectVersion(r *rand.Rand, actor string) int {
	stored := v.storedVersion(actor)
	switch {
	case stored == 0 && chance(r, 0.8):
		return 0
	case stored == 0:
		return 1
	case chance(r, 0.5):
		return stored
	case chance(r, 0.8):
		return r.Intn(stored)
	default:
		return stored + 1
	}
}

// freshID prefers an id not used yet, and sometimes repeats one so duplicates happen.
func (v *view) freshID(r *rand.Rand) string {
	used := map[string]bool{}
	for _, m := range v.snap.Messages {
		used[m.ID] = true
	}
	for _, d := range v.snap.DeadLetters {
		used[d.ID] = true
	}
	for _, o := range v.snap.Outbox {
		used[o.ID] = true
	}
	var fresh []string
	for _, id := range v.w.set.ids {
		if !used[id] {
			fresh = append(fresh, id)
		}
	}
	if len(fresh) > 0 && chance(r, 0.8) {
		return pick(r, fresh)
	}
	return pick(r, v.w.set.ids)
}

// presentID mostly names a ready message, sometimes any id of the pool.
func (v *view) presentID(r *rand.Rand) string {
	var ready []string
	for _, m := range v.snap.Messages {
		if m.State == traces.StateReady {
			ready = append(ready, m.ID)
		}
	}
	if len(ready) > 0 && chance(r, 0.85) {
		return pick(r, ready)
	}
	return pick(r, v.w.set.ids)
}

// tokenRef draws a token reference and the id to use it with: mostly a token a row still carries,
// else any token issued before (stale), rarely one never issued (self: the command's own serial,
// which issues nothing). The id is mostly the one the token was issued for.
func (v *view) tokenRef(r *rand.Rand, claim bool, self int) (int, string) {
	var serial int
	cur, all := v.current(claim), v.serials(claim)
	switch {
	case chance(r, 0.05):
		return self, pick(r, v.w.set.ids)
	case len(cur) > 0 && chance(r, 0.7):
		serial = pick(r, cur)
	default:
		serial = pick(r, all)
	}
	ids := v.w.issued[serial].ids
	if chance(r, 0.9) {
		return serial, pick(r, ids)
	}
	return serial, pick(r, v.w.set.ids)
}

// underClaim reports whether outbox row id is pending under the claim tok names: a delivery of
// it is one its publisher may complete.
func (v *view) underClaim(id string, tok int) bool {
	return slices.ContainsFunc(v.snap.Outbox, func(o traces.OutboxRow) bool {
		return o.ID == id && o.Token != 0 && o.State == traces.StatePending && v.w.symbol(o.Token) == tok
	})
}

// delivery draws the outbox row a publisher delivers and its claim token: mostly a claimed
// pending row under its current claim, else any row under the newest claim that covered it, or a
// token never issued for a row never claimed.
func (v *view) delivery(r *rand.Rand, self int) (string, int) {
	var claimed []traces.OutboxRow
	for _, o := range v.snap.Outbox {
		if o.Token != 0 && o.State == traces.StatePending {
			claimed = append(claimed, o)
		}
	}
	if len(claimed) > 0 && chance(r, 0.75) {
		o := pick(r, claimed)
		return o.ID, v.w.symbol(o.Token)
	}
	o := pick(r, v.snap.Outbox)
	serials := v.serials(true)
	for i := len(serials) - 1; i >= 0; i-- {
		if slices.Contains(v.w.issued[serials[i]].ids, o.ID) {
			return o.ID, serials[i]
		}
	}
	return o.ID, self
}

// keyedFetchers lists the idle leased workers of a mailbox where two ready messages share a key:
// a batch fetch there meets a key's head and the message behind it.
func (v *view) keyedFetchers() []worker {
	keyed := map[string]bool{}
	seen := map[[2]string]bool{}
	for _, m := range v.snap.Messages {
		if m.Key == "" || m.State != traces.StateReady {
			continue
		}
		k := [2]string{m.Mailbox, m.Key}
		if seen[k] {
			keyed[m.Mailbox] = true
		}
		seen[k] = true
	}
	var out []worker
	for _, wk := range v.idle() {
		if wk.profile == traces.ProfileLeased && keyed[wk.mailbox] {
			out = append(out, wk)
		}
	}
	return out
}

// batchDelivery draws the claim a publisher delivers a batch under and the batch's rows: mostly a
// claim some row still carries, else any claim; the rows are the claim's, in order, each kept
// with a chance of three in four (at least one).
func (v *view) batchDelivery(r *rand.Rand) (int, []string) {
	serial := pick(r, v.current(true))
	if chance(r, 0.2) {
		serial = pick(r, v.serials(true))
	}
	all := v.w.issued[serial].ids
	var ids []string
	for _, id := range all {
		if chance(r, 0.75) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		ids = []string{pick(r, all)}
	}
	return serial, ids
}

// nextTime draws the time a clock advance moves to: mostly exactly at, or one second either
// side of, a deadline some row has (lease_until, available_at, claim_until), since that is where
// the boundary rules bite; else a small step.
func (v *view) nextTime(r *rand.Rand) int64 {
	var deadlines []int64
	add := func(t int64) {
		for _, d := range []int64{t - 1, t, t, t + 1} {
			if d > v.now {
				deadlines = append(deadlines, d)
			}
		}
	}
	for _, m := range v.snap.Messages {
		if m.Token != 0 {
			add(m.LeaseUntil)
		}
		if m.State == traces.StateReady && m.AvailableAt > v.now {
			add(m.AvailableAt)
		}
	}
	for _, o := range v.snap.Outbox {
		if o.Token != 0 {
			add(o.ClaimUntil)
		}
		if o.State == traces.StatePending && o.AvailableAt > v.now {
			add(o.AvailableAt)
		}
	}
	// The end of a lease a worker holds: where its chain goes on.
	if taking := v.taking(); len(taking) > 0 && chance(r, 0.6) {
		h := pick(r, taking)
		if m, ok := v.row(h.id); ok {
			return m.LeaseUntil
		}
	}
	if len(deadlines) > 0 && chance(r, 0.75) {
		return pick(r, deadlines)
	}
	return v.now + pick(r, []int64{1, 1, 2, 3})
}

// Situations. Some bugs show only at the end of a chain of steps that uniform draws seldom
// complete within a hunt's budget. When the state is one link of such a chain, the next link's
// op weighs more (applicable) and its arguments name the chain's rows:
//
//   - a taking holder: a leased fetch starts a takeover chain four times in five (cmd.takeover);
//     while its lease is live, the steps that end it weigh more: clock advances twice as much
//     (and most go to the lease's end), a raw nack five times (mostly of that lease, with its
//     token), nack_by_id five times (mostly of its message), and handles half;
//   - a lapsed holder (a leased worker whose lease ran out while its row still carries it):
//     expire weighs four times as much (it clears the lease, or dead-letters the message when its
//     attempts are used up), a raw lease twice as much and mostly on its mailbox, a fetch twice as
//     much and mostly by another worker of its mailbox (a taker), the holder's own handle half;
//   - a held dead letter (the message a leased worker still holds was dead-lettered): redrive
//     weighs six times as much and mostly names it, so the worker's handle meets its message
//     back under no lease of its own; handles weigh half meanwhile;
//   - a stale holder (a leased worker whose lease token its row no longer carries, while the
//     message is still in its mailbox: another lease took it, expire cleared it, a redrive put it
//     back): its handle is a fencing test, so handles weigh three times as much, mostly pick that
//     worker, and draw the outcomes each fence guards (outcome);
//   - a leaseless holder whose message is still ready with the attempts its fetch saw:
//     nack_by_id weighs five times as much and mostly names it, and handles half, so the handle
//     must count an attempt its fetch did not see;
//   - in a hunt whose harm is no-loss (split-write's), a pending outbox row under a claim:
//     deliveries weigh twice as much. A delivery of such a row under its own claim (one the
//     publisher may complete) has its enqueue's commit fail twice as often, and one under a
//     stale or forged claim less often, since a completion after a failed commit is where a
//     publisher loses a message; other hunts draw as before;
//   - something final to purge: purges weigh three times as much; a retired id (purged, its
//     dedup horizon still running): enqueues weigh twice as much and mostly name it.
//
//   - two ready messages of one key in a leased mailbox: batch fetches weigh six times as much
//     and mostly go to an idle worker of that mailbox, so a batch meets a key's head and the
//     message behind it.
//
// Besides, a fetch mostly goes to a worker that has something to fetch, and the leased mailbox's
// enqueues draw max_attempts 1 more often.

// handleOutcomes are a handle's outcomes, as often as drawn: mostly an ok or a retried failure,
// sometimes a failure the retry policy declines (fail_no_retry).
var handleOutcomes = []string{traces.OutcomeOK, traces.OutcomeOK, traces.OutcomeOK,
	traces.OutcomeFail, traces.OutcomeFail, traces.OutcomeFail, traces.OutcomeFailNoRetry}

// outcome draws the outcome of worker wk's handle. A stale holder's handle tests a fence: ok the
// ack's; fail_no_retry the early dead-letter's; at max_attempts (the attempts its fetch saw)
// any failure the dead-letter's, so a plain failure is drawn only there. A leaseless handle
// after a nack_by_id counted an attempt its fetch did not see mostly fails, since the failure
// must read that count.
func (v *view) outcome(r *rand.Rand, wk worker, stale bool) string {
	h, held := v.w.held[wk.id]
	switch {
	case stale && h.attempts >= v.maxAttempts(h.id):
		return pick(r, []string{traces.OutcomeOK, traces.OutcomeFail, traces.OutcomeFailNoRetry})
	case stale:
		return pick(r, []string{traces.OutcomeOK, traces.OutcomeFailNoRetry})
	case held && h.profile == traces.ProfileLeaseless:
		if m, ok := v.row(h.id); ok && m.Attempts > h.attempts {
			return pick(r, []string{traces.OutcomeOK, traces.OutcomeFail, traces.OutcomeFail, traces.OutcomeFailNoRetry})
		}
	}
	return pick(r, handleOutcomes)
}

// maxAttempts is the max_attempts of message id, 0 when no mailbox holds it.
func (v *view) maxAttempts(id string) int {
	m, _ := v.row(id)
	return m.MaxAttempts
}

// row returns the mailbox row of id.
func (v *view) row(id string) (traces.MessageRow, bool) {
	for _, m := range v.snap.Messages {
		if m.ID == id {
			return m, true
		}
	}
	return traces.MessageRow{}, false
}

// leasedHolds calls fn for every leased worker's held fetch, in worker order.
func (v *view) leasedHolds(fn func(wk worker, h heldFetch)) {
	for _, wk := range v.w.set.workers {
		if h, ok := v.w.held[wk.id]; ok && h.profile == traces.ProfileLeased {
			fn(wk, h)
		}
	}
}

// staleHolders lists the leased workers whose fetched lease token their message, still a ready
// row of its mailbox, no longer carries.
func (v *view) staleHolders() []worker {
	var out []worker
	v.leasedHolds(func(wk worker, h heldFetch) {
		if m, ok := v.row(h.id); ok && m.State == traces.StateReady && m.Token != h.token {
			out = append(out, wk)
		}
	})
	return out
}

// taking lists the fetches of the leased workers that started a takeover chain and still hold a
// live lease (the row carries the worker's token and the lease has not run out).
func (v *view) taking() []heldFetch {
	var out []heldFetch
	v.leasedHolds(func(_ worker, h heldFetch) {
		if m, ok := v.row(h.id); ok && h.takeover && m.Token == h.token && (profile.Profile{}).Held(m.Token, m.LeaseUntil, v.now) {
			out = append(out, h)
		}
	})
	return out
}

// leasedMailbox reports whether leased workers serve mailbox.
func (v *view) leasedMailbox(mailbox string) bool {
	for _, wk := range v.w.set.workers {
		if wk.mailbox == mailbox && wk.profile == traces.ProfileLeased {
			return true
		}
	}
	return false
}

// fetchers lists the idle workers whose fetch would return a message now.
func (v *view) fetchers() []worker {
	var out []worker
	for _, wk := range v.idle() {
		c := &cmd{serial: v.w.next, op: traces.OpConsumerFetch, at: v.now,
			args: traces.Args{Worker: wk.id, Mailbox: wk.mailbox, Profile: wk.profile, LeaseFor: 1}}
		if v.w.legal(c) != "" {
			continue
		}
		if _, res, err := models.Step(v.w.m, c.op, c.at, c.args); err == nil && res.Message != nil {
			out = append(out, wk)
		}
	}
	return out
}

// takers lists the idle leased workers of a mailbox where a lapsed holder is.
func (v *view) takers() []worker {
	lapsed := v.lapsed()
	var out []worker
	for _, wk := range v.idle() {
		if wk.profile != traces.ProfileLeased {
			continue
		}
		for _, id := range lapsed {
			if m, ok := v.row(id); ok && m.Mailbox == wk.mailbox {
				out = append(out, wk)
				break
			}
		}
	}
	return out
}

// lapsed lists the ids of the leased workers' messages whose row still carries the worker's
// token with the lease run out.
func (v *view) lapsed() []string {
	var out []string
	v.leasedHolds(func(_ worker, h heldFetch) {
		if m, ok := v.row(h.id); ok && m.Token == h.token && !(profile.Profile{}).Held(m.Token, m.LeaseUntil, v.now) {
			out = append(out, h.id)
		}
	})
	return out
}

// heldDead lists the ids of the leased workers' messages that are dead letters now.
func (v *view) heldDead() []string {
	var out []string
	v.leasedHolds(func(_ worker, h heldFetch) {
		for _, d := range v.snap.DeadLetters {
			if d.ID == h.id {
				out = append(out, h.id)
			}
		}
	})
	return out
}

// leaselessFresh lists the ids of the leaseless workers' messages that are still ready with the
// attempts their fetch saw.
func (v *view) leaselessFresh() []string {
	var out []string
	for _, wk := range v.w.set.workers {
		h, ok := v.w.held[wk.id]
		if !ok || h.profile != traces.ProfileLeaseless {
			continue
		}
		if m, ok := v.row(h.id); ok && m.State == traces.StateReady && m.Token == 0 && m.Attempts == h.attempts {
			out = append(out, h.id)
		}
	}
	return out
}

// retiredIDs lists the ids of the pool that no row holds but the model still takes for
// duplicates: purged, with their dedup horizon still running.
func (v *view) retiredIDs() []string {
	present := map[string]bool{}
	for _, m := range v.snap.Messages {
		present[m.ID] = true
	}
	for _, d := range v.snap.DeadLetters {
		present[d.ID] = true
	}
	var out []string
	for _, id := range v.w.set.ids {
		if present[id] {
			continue
		}
		_, res, err := models.Step(v.w.m, traces.OpEnqueue, v.now, traces.Args{Mailbox: v.w.set.mailboxes[0], ID: id, MaxAttempts: 1})
		if err == nil && res.Duplicate {
			out = append(out, id)
		}
	}
	return out
}

// enqueueID draws the id of an enqueue: mostly a retired one when there is one (the purge's dedup
// rule), else as freshID.
func (v *view) enqueueID(r *rand.Rand) string {
	if retired := v.retiredIDs(); len(retired) > 0 && chance(r, 0.8) {
		return pick(r, retired)
	}
	return v.freshID(r)
}
