package properties

import (
	"fmt"
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
// protocol steps (consumer fetch/handle, publisher deliveries) and clock moves to deadlines, with
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

func (v *view) idle() []worker {
	var out []worker
	for _, wk := range v.w.set.workers {
		if _, ok := v.w.held[wk.id]; !ok {
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

// applicable is the weight of op in the current state, 0 when it cannot be drawn.
func (v *view) applicable(op traces.Op) int {
	weight := v.w.set.mix[op]
	switch op {
	case traces.OpAck, traces.OpNack, traces.OpExtend:
		if len(v.serials(false)) == 0 {
			return 0
		}
	case traces.OpOutboxComplete, traces.OpOutboxFail, traces.OpOutboxDeadLetter:
		if len(v.serials(true)) == 0 {
			return 0
		}
	case traces.OpPublisherDeliver:
		if len(v.snap.Outbox) == 0 {
			return 0
		}
	case traces.OpRedrive:
		// Mostly a dead letter; a redrive of anything else is not_found, drawn rarely.
		if len(v.deadIDs()) == 0 {
			return weight / 3
		}
	case traces.OpListRedrives:
		// Never drawn by weight: a non-zero weight turns on the read-back (see generate).
		return 0
	case traces.OpPurge:
		// A purge with nothing final to remove is drawn rarely.
		if !v.anyFinal() {
			return weight / 2
		}
	case traces.OpConsumerFetch:
		if len(v.idle()) == 0 {
			return 0
		}
	case traces.OpConsumerHandle:
		// A handle mostly follows a fetch; an idle one is rare but legal.
		if len(v.holders()) == 0 {
			return weight / 6
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
		a.ID = v.freshID(r)
		a.Key = pick(r, set.keys)
		a.Priority = pick(r, []int{0, 0, 0, 1})
		a.MaxAttempts = pick(r, []int{1, 2, 2, 3})
		a.Delay = pick(r, []int64{0, 0, 0, 1, 2})
		if chance(r, 0.3) {
			a.Payload = "p"
		}
	case traces.OpLease:
		a.Mailbox = pick(r, set.mailboxes)
		a.LeaseFor = pick(r, []int64{1, 2, 3})
	case traces.OpPeek:
		a.Mailbox = pick(r, set.mailboxes)
	case traces.OpAck, traces.OpNack, traces.OpExtend:
		c.tok, a.ID = v.tokenRef(r, false, c.serial)
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
		a.Fault = pick(r, []string{traces.FaultNone, traces.FaultNone, traces.FaultCommitFails, traces.FaultCrashBetween,
			traces.FaultUndeliverable})
		a.RetryDelay = pick(r, []int64{0, 0, 1})
	case traces.OpConsumerFetch:
		wk := pick(r, v.idle())
		a.Worker, a.Mailbox, a.Profile = wk.id, wk.mailbox, wk.profile
		if wk.profile == traces.ProfileLeased {
			a.LeaseFor = pick(r, []int64{1, 2, 3})
		}
	case traces.OpConsumerHandle:
		wk := pick(r, set.workers)
		if hs := v.holders(); len(hs) > 0 {
			wk = pick(r, hs)
		}
		a.Worker, a.Mailbox, a.Profile = wk.id, wk.mailbox, wk.profile
		a.Outcome = pick(r, []string{traces.OutcomeOK, traces.OutcomeFail})
		if a.Outcome == traces.OutcomeFail {
			a.RetryDelay = pick(r, []int64{0, 0, 1, 2})
		}
	case traces.OpPurge:
		a.Limit = pick(r, []int{1, 2, 5})
		a.OlderThan = pick(r, []int64{0, 0, 1, 2})
		a.Horizon = pick(r, []int64{0, 1, 2, 3, 5})
	case traces.OpRedrive:
		a.ID = v.deadID(r)
		a.Reason = "fixed"
	case traces.OpMarkProcessed:
		a.Consumer = pick(r, set.consumers)
		a.ID = pick(r, set.ids[:3])
		a.TTL = pick(r, []int64{1, 2, 3})
	case traces.OpSaveCheckpoint:
		a.Actor = pick(r, set.actors)
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

// deadID mostly names a dead letter (of the mailboxes or the outbox), else any id of the pool.
func (v *view) deadID(r *rand.Rand) string {
	if dead := v.deadIDs(); len(dead) > 0 && chance(r, 0.85) {
		return pick(r, dead)
	}
	return pick(r, v.w.set.ids)
}

// expectVersion draws the expected version of a checkpoint save: mostly the stored one (0 when
// there is none), else a stale one (below it, 0 included: a second "first" save) or one from the
// future.
func (v *view) expectVersion(r *rand.Rand, actor string) int {
	_, res, err := models.Step(v.w.m, traces.OpLoadCheckpoint, v.now, traces.Args{Actor: actor})
	stored := 0
	if err == nil && res.Err == "" {
		stored = res.Version
	}
	switch {
	case chance(r, 0.6):
		return stored
	case stored > 0 && chance(r, 0.75):
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
	if len(deadlines) > 0 && chance(r, 0.75) {
		return pick(r, deadlines)
	}
	return v.now + pick(r, []int64{1, 1, 2, 3})
}
