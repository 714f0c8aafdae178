package models

import (
	"cmp"
	"slices"
	"strings"

	"github.com/pconform/pconform/internal/variants"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// The naive model's mutations that are no variant of the catalogue: they break a rule no store
// variant breaks the same way.
const (
	// mutNoFIFO drops eligibility condition 5 (no earlier blocking message of the same key).
	mutNoFIFO = "no-fifo"
	// mutInclusiveLease treats a lease as live at lease_until == now.
	mutInclusiveLease = "inclusive-lease"
)

// naiveModel is a second model of docs/semantics.md, written to be obviously faithful to the rule
// text rather than efficient: every row ever inserted stays in one slice in creation order (so a
// row's index is its seq), eligibility is the five conditions checked one by one with a scan over
// all rows for a blocking predecessor, and the next message is the eligible one no other eligible
// one beats. It mutates itself in place and keeps no index. It is the oracle the property test
// holds the real model to; tokens are issued by the same rule (one per lease, one per non-empty
// claim), so results compare without translation.
type naiveModel struct {
	attempts func(stored int, leaseless bool) int
	// p is the semantic profile the naive model follows, each choice applied where the rule text
	// names it (docs/semantics.md, "Profiles").
	p      profile.Profile
	rows   []naiveRow
	dead   []traces.DeadLetterRow
	outbox []traces.OutboxRow // creation order
	// maxDelivery holds each outbox row's max_delivery_attempts, default applied.
	maxDelivery map[string]int
	effects     map[string][]string
	tokens      int
	held        map[int]naiveHeld
	// marks lists every processed-message record ever written, oldest first; a mark is the
	// newest record of its consumer and id.
	marks []naiveMark
	// saves lists every checkpoint save that succeeded, oldest first; an actor's checkpoint is
	// its newest save, and its version the number of its saves.
	saves []naiveSave
	// redrives lists every redrive record, oldest first.
	redrives []traces.RedriveRecord
	// mutation deliberately breaks one rule ("" for none), so a test can show the comparison
	// catches that kind of drift: one of the naive-only mutations below, or a broken variant of
	// the catalogue (internal/variants: DedupTTLInverted, CheckpointReset, RedriveKeepsAttempts,
	// RedriveRecordsReset), which breaks the rule its catalogue row names.
	mutation string
}

type naiveMark struct {
	consumer, id string
	expires      int64
}

type naiveSave struct{ actor, payload string }

// markProcessed: the newest record of (consumer, id), if it has not expired, makes a duplicate;
// otherwise a new record is written.
func (n *naiveModel) markProcessed(consumer, id string, now, ttl int64) bool {
	if n.p.ProcessedPerID {
		consumer = "" // processed_scope "id": one record per id, whoever wrote it
	}
	for i := len(n.marks) - 1; i >= 0; i-- {
		if m := n.marks[i]; m.consumer == consumer && m.id == id {
			live := m.expires > now || n.p.ProcessedUntilCleanup // nothing here cleans up
			if live != (n.mutation == variants.DedupTTLInverted) {
				return true
			}
			break
		}
	}
	n.marks = append(n.marks, naiveMark{consumer, id, now + ttl})
	return false
}

// version counts actor's saves; an effect log's version counts the mailbox's effects.
func (n *naiveModel) version(actor string) int {
	if mb, ok := strings.CutPrefix(actor, traces.EffectsActorPrefix); ok {
		return len(n.effects[mb])
	}
	v := 0
	for _, s := range n.saves {
		if s.actor == actor {
			v++
		}
	}
	return v
}

type naiveRow struct {
	traces.MessageRow
	gone bool // dead-lettered, or deleted by an ack (ack "deletes"): out of every mailbox
	// deleted: an ack deleted the row, so its id is free again.
	deleted bool
}

type naiveHeld struct {
	mailbox, id, profile string
	attempts, max, token int
}

func newNaive(attempts func(int, bool) int) *naiveModel {
	if attempts == nil {
		attempts = func(stored int, leaseless bool) int {
			if leaseless {
				return stored + 1
			}
			return stored
		}
	}
	return &naiveModel{attempts: attempts, effects: map[string][]string{}, held: map[int]naiveHeld{}}
}

func (n *naiveModel) liveAt(r naiveRow, now int64) bool {
	if n.mutation == mutInclusiveLease || n.p.LeaseLiveAtUntil {
		return r.Token != 0 && r.LeaseUntil >= now
	}
	return r.Token != 0 && r.LeaseUntil > now
}

// claimLive is the same boundary for an outbox claim.
func (n *naiveModel) claimLive(o traces.OutboxRow, now int64) bool {
	if n.p.LeaseLiveAtUntil {
		return o.Token != 0 && o.ClaimUntil >= now
	}
	return o.Token != 0 && o.ClaimUntil > now
}

// eligible is Eligible(m, now), condition by condition.
func (n *naiveModel) eligible(i int, now int64) bool {
	m := n.rows[i]
	if m.gone || m.State != traces.StateReady { // 1
		return false
	}
	if m.AvailableAt > now { // 2
		return false
	}
	if n.liveAt(m, now) { // 3
		return false
	}
	if m.Attempts >= m.MaxAttempts { // 4
		return false
	}
	if m.Key != "" && n.mutation != mutNoFIFO { // 5
		for j, p := range n.rows {
			if p.gone || p.Mailbox != m.Mailbox || p.Key != m.Key || j >= i {
				continue
			}
			if p.State == traces.StateReady && (p.Attempts < p.MaxAttempts || (n.liveAt(p, now) && !n.p.ExhaustedLeasedHeadPasses)) {
				return false
			}
		}
	}
	return true
}

// beats reports whether row j goes before row i.
func (n *naiveModel) beats(j, i int) bool {
	a, b := n.rows[j], n.rows[i]
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if a.AvailableAt != b.AvailableAt {
		return a.AvailableAt < b.AvailableAt
	}
	return j < i
}

// next returns the index of the eligible row of mailbox that no other eligible row beats, or -1.
func (n *naiveModel) next(mailbox string, now int64) int {
	for i := range n.rows {
		if n.rows[i].Mailbox != mailbox || !n.eligible(i, now) {
			continue
		}
		beaten := false
		for j := range n.rows {
			if j != i && n.rows[j].Mailbox == mailbox && n.eligible(j, now) && n.beats(j, i) {
				beaten = true
			}
		}
		if !beaten {
			return i
		}
	}
	return -1
}

// find returns the index of the row id that is still in a mailbox, or -1.
func (n *naiveModel) find(id string) int {
	for i, r := range n.rows {
		if r.ID == id && !r.gone {
			return i
		}
	}
	return -1
}

func (n *naiveModel) readyRow(id string) int {
	if i := n.find(id); i >= 0 && n.rows[i].State == traces.StateReady {
		return i
	}
	return -1
}

func (n *naiveModel) tokenRow(id string, token int) int {
	if i := n.readyRow(id); i >= 0 && n.rows[i].Token != 0 && n.rows[i].Token == token {
		return i
	}
	return -1
}

// taken reports whether a row holds id: any row an ack did not delete, but under dead_letter_id
// "free" not a dead-lettered one.
func (n *naiveModel) taken(id string) bool {
	return slices.ContainsFunc(n.rows, func(r naiveRow) bool {
		return r.ID == id && !r.deleted && !(r.gone && n.p.DeadLetterIDFree)
	})
}

func (n *naiveModel) enqueue(mailbox, id, key string, prio, max int, avail int64, payload string) bool {
	if n.taken(id) {
		return true
	}
	n.rows = append(n.rows, naiveRow{MessageRow: traces.MessageRow{
		Mailbox: mailbox, ID: id, Key: key, Priority: prio, Payload: payload, State: traces.StateReady,
		MaxAttempts: max, AvailableAt: avail,
	}})
	return false
}

func (n *naiveModel) lease(mailbox string, now, leaseFor int64) *traces.Message {
	i := n.next(mailbox, now)
	if i < 0 {
		return nil
	}
	n.tokens++
	n.rows[i].Token = n.tokens
	n.rows[i].LeaseUntil = now + leaseFor
	n.rows[i].Attempts++
	return &traces.Message{ID: n.rows[i].ID, Attempts: n.rows[i].Attempts, Token: n.rows[i].Token}
}

func (n *naiveModel) peek(mailbox string, now int64) *traces.Message {
	i := n.next(mailbox, now)
	if i < 0 {
		return nil
	}
	return &traces.Message{ID: n.rows[i].ID, Attempts: n.rows[i].Attempts}
}

func (n *naiveModel) ack(id string, token int) bool {
	i := n.tokenRow(id, token)
	if i < 0 {
		return false
	}
	n.settle(i)
	return true
}

// settle acks row i: acked, or deleted under ack "deletes".
func (n *naiveModel) settle(i int) {
	n.rows[i].State, n.rows[i].Token, n.rows[i].LeaseUntil = traces.StateAcked, 0, 0
	if n.p.AckDeletes {
		n.rows[i].gone, n.rows[i].deleted = true, true
	}
}

func (n *naiveModel) nack(id string, token int, avail int64) bool {
	i := n.tokenRow(id, token)
	if i < 0 {
		return false
	}
	n.rows[i].Token, n.rows[i].LeaseUntil, n.rows[i].AvailableAt = 0, 0, avail
	return true
}

func (n *naiveModel) ackByID(id string) bool {
	i := n.readyRow(id)
	if i < 0 {
		return false
	}
	n.settle(i)
	return true
}

func (n *naiveModel) nackByID(id string, avail int64) bool {
	i := n.readyRow(id)
	if i < 0 {
		return false
	}
	if n.rows[i].Attempts < n.rows[i].MaxAttempts || n.p.NackByIDUncapped {
		n.rows[i].Attempts++
	}
	n.rows[i].Token, n.rows[i].LeaseUntil, n.rows[i].AvailableAt = 0, 0, avail
	return true
}

func (n *naiveModel) deadLetter(id, reason string, now int64) bool {
	i := n.readyRow(id)
	if i < 0 {
		return false
	}
	n.rows[i].gone = true
	r := n.rows[i].MessageRow
	// Under dead_letter_id "free" the id may already be a dead letter: the new one replaces it.
	n.dead = slices.DeleteFunc(n.dead, func(d traces.DeadLetterRow) bool { return d.ID == id })
	n.dead = append(n.dead, traces.DeadLetterRow{Mailbox: r.Mailbox, ID: id, Key: r.Key, Priority: r.Priority,
		Payload: r.Payload, Attempts: r.Attempts, MaxAttempts: r.MaxAttempts, Reason: reason, DeadAt: now})
	return true
}

func (n *naiveModel) expire(now int64) int {
	count := 0
	for i := range n.rows {
		r := &n.rows[i]
		if r.gone || r.State != traces.StateReady || r.Token == 0 || n.liveAt(*r, now) {
			continue
		}
		count++
		r.Token, r.LeaseUntil = 0, 0
		if r.Attempts >= r.MaxAttempts {
			n.deadLetter(r.ID, n.p.ReasonLeaseExpiredWording(), now)
		}
	}
	return count
}

func (n *naiveModel) outboxRow(id string) int {
	for i, o := range n.outbox {
		if o.ID == id {
			return i
		}
	}
	return -1
}

func (n *naiveModel) claimRow(id string, token int) int {
	i := n.outboxRow(id)
	if i < 0 || n.outbox[i].State != traces.StatePending || n.outbox[i].Token == 0 || n.outbox[i].Token != token {
		return -1
	}
	return i
}

// apply runs one step. It trusts its input: the property test only generates well-formed steps.
func (n *naiveModel) apply(op traces.Op, at int64, a traces.Args) traces.Result {
	switch op {
	case traces.OpEnqueue:
		return traces.Result{Duplicate: n.enqueue(a.Mailbox, a.ID, a.Key, a.Priority, a.MaxAttempts, at+a.Delay, a.Payload)}
	case traces.OpLease:
		return traces.Result{Message: n.lease(a.Mailbox, at, a.LeaseFor)}
	case traces.OpPeek:
		return traces.Result{Message: n.peek(a.Mailbox, at)}
	case traces.OpAck:
		return errResult(n.ack(a.ID, a.Token), traces.ErrKindLeaseLost)
	case traces.OpNack:
		return errResult(n.nack(a.ID, a.Token, at+a.Delay), traces.ErrKindLeaseLost)
	case traces.OpAckByID:
		return errResult(n.ackByID(a.ID), traces.ErrKindNotFound)
	case traces.OpNackByID:
		return errResult(n.nackByID(a.ID, at+a.Delay), traces.ErrKindNotFound)
	case traces.OpExtend:
		i := n.tokenRow(a.ID, a.Token)
		if i >= 0 {
			n.rows[i].LeaseUntil = at + a.LeaseFor
		}
		return errResult(i >= 0, traces.ErrKindLeaseLost)
	case traces.OpExpire:
		return traces.Result{Affected: n.expire(at)}
	case traces.OpDeadLetter:
		return errResult(n.deadLetter(a.ID, a.Reason, at), traces.ErrKindNotFound)
	case traces.OpOutboxEnqueue:
		if n.outboxRow(a.ID) >= 0 {
			if n.p.OutboxDuplicateRefused {
				return traces.Result{Err: traces.ErrKindRefused}
			}
			return traces.Result{Duplicate: true}
		}
		n.outbox = append(n.outbox, traces.OutboxRow{ID: a.ID, Target: a.Target, Key: a.Key, Priority: a.Priority,
			MaxAttempts: a.MaxAttempts, Payload: a.Payload, State: traces.StatePending, AvailableAt: at})
		if n.maxDelivery == nil {
			n.maxDelivery = map[string]int{}
		}
		n.maxDelivery[a.ID] = a.MaxDeliveryAttempts
		if a.MaxDeliveryAttempts == 0 {
			n.maxDelivery[a.ID] = traces.DefaultMaxDeliveryAttempts
		}
		return traces.Result{}
	case traces.OpOutboxClaim:
		// First the sweep: exhausted rows without a live claim are dead-lettered.
		for i, o := range n.outbox {
			if o.State == traces.StatePending && !n.claimLive(o, at) && o.DeliveryAttempts >= n.maxDelivery[o.ID] {
				n.outbox[i].State, n.outbox[i].Reason = traces.StateDeadLetter, n.p.ReasonMaxDeliveryAttemptsWording()
				n.outbox[i].Token, n.outbox[i].ClaimUntil = 0, 0
			}
		}
		var picked []int
		for i, o := range n.outbox {
			if len(picked) < a.Limit && o.State == traces.StatePending && o.AvailableAt <= at && !n.claimLive(o, at) {
				picked = append(picked, i)
			}
		}
		if len(picked) == 0 {
			return traces.Result{}
		}
		n.tokens++
		var r traces.Result
		for _, i := range picked {
			o := &n.outbox[i]
			o.Token, o.ClaimUntil = n.tokens, at+a.ClaimFor
			o.DeliveryAttempts++
			r.Claimed = append(r.Claimed, traces.Claimed{ID: o.ID, DeliveryAttempts: o.DeliveryAttempts, Token: o.Token})
		}
		return r
	case traces.OpOutboxComplete:
		i := n.claimRow(a.ID, a.Token)
		if i >= 0 {
			n.completeOutbox(i)
		}
		return errResult(i >= 0 || n.p.CompleteFenceSilent, traces.ErrKindClaimLost)
	case traces.OpOutboxFail:
		i := n.claimRow(a.ID, a.Token)
		if i >= 0 {
			n.outbox[i].Token, n.outbox[i].ClaimUntil, n.outbox[i].AvailableAt = 0, 0, at+a.Delay
		}
		return errResult(i >= 0, traces.ErrKindClaimLost)
	case traces.OpOutboxDeadLetter:
		return errResult(n.outboxDeadLetter(a.ID, a.Token, a.Reason) || n.p.OutboxDeadLetterFenceSilent, traces.ErrKindClaimLost)
	case traces.OpAdvanceClock:
		return traces.Result{}
	case traces.OpMarkProcessed:
		return traces.Result{Duplicate: n.markProcessed(a.Consumer, a.ID, at, a.TTL)}
	case traces.OpSaveCheckpoint:
		if n.mutation == variants.CheckpointReset && a.ExpectVersion == 0 && n.version(a.Actor) > 0 {
			// The broken first save overwrites a checkpoint and starts its versions again.
			n.saves = slices.DeleteFunc(n.saves, func(s naiveSave) bool { return s.actor == a.Actor })
		}
		if n.p.CheckpointOverwrites {
			// checkpoint_save "overwrites": no version check; the version still counts the saves.
			n.saves = append(n.saves, naiveSave{a.Actor, a.Payload})
			return traces.Result{Version: n.version(a.Actor)}
		}
		if n.version(a.Actor) != a.ExpectVersion {
			return traces.Result{Err: traces.ErrKindVersionConflict}
		}
		n.saves = append(n.saves, naiveSave{a.Actor, a.Payload})
		return traces.Result{Version: a.ExpectVersion + 1}
	case traces.OpLoadCheckpoint:
		if v := n.version(a.Actor); v > 0 {
			return traces.Result{Version: v}
		}
		return traces.Result{Err: traces.ErrKindNotFound}
	case traces.OpRedrive:
		return errResult(n.redrive(a.ID, a.Reason, at), traces.ErrKindNotFound)
	case traces.OpListRedrives:
		var out []traces.RedriveRecord
		for _, r := range n.redrives {
			if a.ID == "" || a.ID == r.ID {
				out = append(out, r)
			}
		}
		return traces.Result{Redrives: out}
	case traces.OpConsumerFetch:
		var m *traces.Message
		if a.Profile == traces.ProfileLeaseless {
			m = n.peek(a.Mailbox, at)
		} else {
			if !n.p.FetchNoSweep {
				n.expire(at)
			}
			m = n.lease(a.Mailbox, at, a.LeaseFor)
		}
		if m != nil {
			n.held[a.Worker] = naiveHeld{mailbox: a.Mailbox, id: m.ID, profile: a.Profile,
				attempts: m.Attempts, max: n.rows[n.find(m.ID)].MaxAttempts, token: m.Token}
		}
		return traces.Result{Message: m}
	case traces.OpConsumerHandle:
		h, ok := n.held[a.Worker]
		if !ok {
			return traces.Result{Action: traces.ActionIdle}
		}
		delete(n.held, a.Worker)
		leaseless := h.profile == traces.ProfileLeaseless
		if a.Outcome == traces.OutcomeOK {
			var done bool
			if leaseless {
				done = n.ackByID(h.id)
			} else {
				done = n.ack(h.id, h.token)
			}
			if !done {
				return traces.Result{Action: traces.ActionLeaseLost}
			}
			n.effects[h.mailbox] = append(n.effects[h.mailbox], h.id)
			return traces.Result{Action: traces.ActionAcked}
		}
		// Leaseless: the row as stored now, if it is still ready, not the fetched count.
		stored := h.attempts
		if i := n.find(h.id); leaseless && i >= 0 && n.rows[i].State == traces.StateReady {
			stored = n.rows[i].Attempts
		}
		eff := min(n.attempts(stored, leaseless), h.max)
		r := traces.Result{Attempt: eff, Action: traces.ActionLeaseLost}
		if eff >= h.max {
			if leaseless && !n.nackByID(h.id, at) {
				return r
			}
			if !leaseless && n.tokenRow(h.id, h.token) < 0 {
				return r
			}
			if n.deadLetter(h.id, n.p.ReasonMaxAttemptsWording(), at) {
				r.Action = traces.ActionDeadLettered
			}
			return r
		}
		if a.Outcome == traces.OutcomeFailNoRetry {
			if leaseless && !n.nackByID(h.id, at) {
				return r
			}
			if !leaseless && n.tokenRow(h.id, h.token) < 0 {
				return r
			}
			if n.deadLetter(h.id, traces.ReasonHandlerFailed, at) {
				r.Action = traces.ActionDeadLettered
			}
			return r
		}
		var done bool
		if leaseless {
			done = n.nackByID(h.id, at+a.RetryDelay)
		} else {
			done = n.nack(h.id, h.token, at+a.RetryDelay)
		}
		if done {
			r.Action = traces.ActionRetried
		}
		return r
	case traces.OpPublisherDeliver:
		r := n.deliver(at, a)
		if r.Action == traces.ActionCommitFailed && !n.p.FailedDeliveryLapses {
			// The publisher releases the row it failed to deliver, fenced by its claim.
			if i := n.claimRow(a.ID, a.Token); i >= 0 {
				if n.outbox[i].DeliveryAttempts >= n.maxDelivery[a.ID] {
					n.outboxDeadLetter(a.ID, a.Token, n.p.ReasonMaxDeliveryAttemptsWording())
				} else {
					n.outbox[i].Token, n.outbox[i].ClaimUntil, n.outbox[i].AvailableAt = 0, 0, at+a.RetryDelay
				}
			}
		}
		return r
	case traces.OpCrash:
		n.held = map[int]naiveHeld{}
		return traces.Result{}
	}
	// The generator only makes known ops; an unknown one shows up as a mismatch.
	return traces.Result{Err: "naive model: unknown op " + string(op)}
}

// redrive moves the dead letter id, if any, back into its mailbox as a new row (ready, attempts 0,
// available at now, the next index, so the back of its mailbox) and makes the outbox row id, if
// dead-lettered, pending again with no delivery attempts, available at now.
func (n *naiveModel) redrive(id, reason string, now int64) bool {
	found := false
	record := func(kind, mailbox string, attempts int, deadReason string) {
		if n.mutation == variants.RedriveRecordsReset {
			attempts = 0
		}
		n.redrives = append(n.redrives, traces.RedriveRecord{ID: id, Kind: kind, Mailbox: mailbox,
			Attempts: attempts, DeadReason: deadReason, Reason: reason, At: now})
	}
	// Under dead_letter_id "free" a message row may hold the dead letter's id: the dead letter stays.
	if i := slices.IndexFunc(n.dead, func(d traces.DeadLetterRow) bool { return d.ID == id }); i >= 0 && n.find(id) < 0 {
		record(traces.RedriveKindMessage, n.dead[i].Mailbox, n.dead[i].Attempts, n.dead[i].Reason)
		// The dead letter holds the message's row as it was moved: what comes back.
		old := n.dead[i]
		n.dead = slices.Delete(n.dead, i, i+1)
		attempts := 0
		if n.mutation == variants.RedriveKeepsAttempts {
			attempts = old.Attempts
		}
		n.rows = append(n.rows, naiveRow{MessageRow: traces.MessageRow{
			Mailbox: old.Mailbox, ID: id, Key: old.Key, Priority: old.Priority, Payload: old.Payload,
			State: traces.StateReady, Attempts: attempts, MaxAttempts: old.MaxAttempts, AvailableAt: now,
		}})
		found = true
	}
	if i := n.outboxRow(id); i >= 0 && n.outbox[i].State == traces.StateDeadLetter {
		o := &n.outbox[i]
		record(traces.RedriveKindOutbox, o.Target, o.DeliveryAttempts, o.Reason)
		o.State, o.Reason, o.DeliveryAttempts, o.AvailableAt = traces.StatePending, "", 0, now
		found = true
	}
	return found
}

// completeOutbox completes outbox row i: its claim cleared, or kept under completed_claim "kept".
func (n *naiveModel) completeOutbox(i int) {
	n.outbox[i].State = traces.StateCompleted
	if !n.p.CompletedClaimKept {
		n.outbox[i].Token, n.outbox[i].ClaimUntil = 0, 0
	}
}

func (n *naiveModel) outboxDeadLetter(id string, token int, reason string) bool {
	i := n.claimRow(id, token)
	if i < 0 {
		return false
	}
	n.outbox[i].State, n.outbox[i].Reason, n.outbox[i].Token, n.outbox[i].ClaimUntil = traces.StateDeadLetter, reason, 0, 0
	return true
}

// deliver is one publisher delivery before the release of a failed one.
func (n *naiveModel) deliver(at int64, a traces.Args) traces.Result {
	if a.Fault == traces.FaultUndeliverable {
		if n.outboxDeadLetter(a.ID, a.Token, traces.ReasonUndeliverable) || n.p.OutboxDeadLetterFenceSilent {
			return traces.Result{Action: traces.ActionDeadLettered}
		}
		return traces.Result{Action: traces.ActionClaimLost}
	}
	i := n.outboxRow(a.ID)
	o := n.outbox[i]
	dup := n.taken(o.ID)
	// An id collision: the id is a message (or dead letter) of another mailbox. The step then
	// dead-letters the row, fenced by its claim, where it would complete it.
	other := ""
	if k := slices.IndexFunc(n.rows, func(r naiveRow) bool { return r.ID == o.ID && !r.deleted && !(r.gone && n.p.DeadLetterIDFree) }); k >= 0 && n.rows[k].Mailbox != o.Target {
		other = n.rows[k].Mailbox
	}
	if other != "" {
		return n.deliverColliding(a, other)
	}
	holds := n.claimRow(o.ID, a.Token) >= 0
	// complete_fence "silent": the completion reports success whatever the claim, and then
	// completes nothing when the claim does not hold.
	completes := holds
	holds = holds || n.p.CompleteFenceSilent
	deliver := func() {
		n.enqueue(o.Target, o.ID, o.Key, o.Priority, o.MaxAttempts, at, o.Payload)
	}
	complete := func() {
		if completes {
			n.completeOutbox(i)
		}
	}
	if a.Profile == traces.ProfileFold {
		switch {
		case !holds:
			return traces.Result{Action: traces.ActionClaimLost, Duplicate: dup}
		case a.Fault == traces.FaultCommitFails:
			return traces.Result{Action: traces.ActionCommitFailed, Duplicate: dup}
		}
		deliver()
		complete()
		if a.Fault == traces.FaultCrashBetween {
			return traces.Result{Action: traces.ActionCrashed, Duplicate: dup}
		}
		return traces.Result{Action: traces.ActionDelivered, Duplicate: dup}
	}
	if a.Fault == traces.FaultCommitFails {
		return traces.Result{Action: traces.ActionCommitFailed, Duplicate: dup}
	}
	deliver()
	switch {
	case a.Fault == traces.FaultCrashBetween:
		return traces.Result{Action: traces.ActionCrashed, Duplicate: dup}
	case !holds:
		return traces.Result{Action: traces.ActionClaimLost, Duplicate: dup}
	}
	complete()
	return traces.Result{Action: traces.ActionDelivered, Duplicate: dup}
}

// deliverColliding is a delivery of a row whose id is a message of mailbox other: nothing to
// enqueue, and the dead-letter, fenced by the claim, in the completion's place.
func (n *naiveModel) deliverColliding(a traces.Args, other string) traces.Result {
	holds := n.claimRow(a.ID, a.Token) >= 0
	r := traces.Result{Duplicate: true}
	if a.Profile == traces.ProfileFold {
		switch {
		case !holds:
			r.Action = traces.ActionClaimLost
		case a.Fault == traces.FaultCommitFails:
			r.Action = traces.ActionCommitFailed
		case a.Fault == traces.FaultCrashBetween:
			n.outboxDeadLetter(a.ID, a.Token, traces.ReasonIDCollision(other))
			r.Action = traces.ActionCrashed
		default:
			n.outboxDeadLetter(a.ID, a.Token, traces.ReasonIDCollision(other))
			r.Action = traces.ActionDeadLettered
		}
		return r
	}
	switch {
	case a.Fault == traces.FaultCommitFails:
		r.Action = traces.ActionCommitFailed
	case a.Fault == traces.FaultCrashBetween:
		r.Action = traces.ActionCrashed
	case n.outboxDeadLetter(a.ID, a.Token, traces.ReasonIDCollision(other)):
		r.Action = traces.ActionDeadLettered
	default:
		r.Action = traces.ActionClaimLost
	}
	return r
}

func errResult(ok bool, kind string) traces.Result {
	if ok {
		return traces.Result{}
	}
	return traces.Result{Err: kind}
}

// snapshot is the canonical snapshot, built the same way traces.Snapshot documents it.
func (n *naiveModel) snapshot() traces.Snapshot {
	snap := traces.Snapshot{
		Messages: []traces.MessageRow{}, Outbox: slices.Clone(n.outbox), DeadLetters: slices.Clone(n.dead),
		Effects: map[string][]string{},
	}
	if snap.Outbox == nil {
		snap.Outbox = []traces.OutboxRow{}
	}
	if snap.DeadLetters == nil {
		snap.DeadLetters = []traces.DeadLetterRow{}
	}
	for _, r := range n.rows {
		if !r.gone {
			snap.Messages = append(snap.Messages, r.MessageRow)
		}
	}
	slices.SortFunc(snap.Messages, func(a, b traces.MessageRow) int {
		return cmp.Or(cmp.Compare(a.Mailbox, b.Mailbox), cmp.Compare(a.ID, b.ID))
	})
	slices.SortFunc(snap.Outbox, func(a, b traces.OutboxRow) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(snap.DeadLetters, func(a, b traces.DeadLetterRow) int { return cmp.Compare(a.ID, b.ID) })
	for k, v := range n.effects {
		snap.Effects[k] = slices.Clone(v)
	}
	return snap
}
