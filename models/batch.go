package models

import (
	"github.com/pconform/pconform/traces"
)

// The batch steps of docs/semantics.md ("Batches"): a worker's fetch of up to size messages, the
// one transaction that commits all their outcomes, and a publisher's folded delivery of several
// claimed rows. Each message's (or row's) part is exactly the single step's, so the batch rules
// are the single rules applied in order inside one step.

// BatchBug names one way to get a batch wrong: the broken batch consumers of the P model
// (tBatchProfile in models/p/PSrc/Types.p), which replay reproduces on the model until the store
// has a batch consumer of its own to break. The zero value is the correct batch consumer.
type BatchBug int

const (
	// BatchCorrect follows docs/semantics.md.
	BatchCorrect BatchBug = iota
	// BatchAckBeforeEffects acknowledges each succeeded message in the batch handle and commits
	// its effect only in a later step (consumer_effects_batch): a failure in between leaves an
	// acknowledged message whose effect never happened.
	BatchAckBeforeEffects
	// BatchAcksFailed acknowledges a message whose handler failed with the rest of the batch
	// (without an effect): the message is neither retried nor dead-lettered.
	BatchAcksFailed
	// BatchSkipsLeasedHead lets a key's head under a live lease stop blocking its key (as SKIP
	// LOCKED passes over a locked row), so the fetch takes the key's next message.
	BatchSkipsLeasedHead
)

// consumerFetchBatch is a batch fetch: leased, expire() then up to size leases in a row; leaseless,
// the messages size peeks would return if each message returned were held by the batch. A
// message is taken only when it is its key's head, so the batch holds at most one per key. The
// batch is remembered for the worker until its handle or a crash.
func (s *State) consumerFetchBatch(a *traces.Args, now int64) (traces.Result, error) {
	if err := s.idleWorker(traces.OpConsumerFetchBatch, a.Worker); err != nil {
		return traces.Result{}, err
	}
	leaseless := a.Profile == traces.ProfileLeaseless
	if !leaseless && !s.cfg.Profile.FetchNoSweep {
		s.expire(now)
	}
	var got []traces.Message
	switch {
	case s.cfg.BatchBug == BatchSkipsLeasedHead && !leaseless:
		for len(got) < a.Size {
			m, ok := s.nextSkippingLeasedHeads(a.Mailbox, now, got)
			if !ok {
				break
			}
			got = append(got, *s.leaseRow(m, now, a.LeaseFor))
		}
	case leaseless:
		got = s.peekBatch(a.Mailbox, now, a.Size)
	case s.cfg.Profile.ExhaustedLeasedHeadPasses:
		// A message leased on its last attempt stops blocking its key under this choice, but a
		// batch still holds at most one message per key. Leasing a message makes no other key's
		// message a candidate, so the leases in a row take what the leaseless read would hold.
		for _, m := range s.peekBatch(a.Mailbox, now, a.Size) {
			got = append(got, *s.leaseRow(s.messages[m.ID], now, a.LeaseFor))
		}
	default:
		// Each lease's message blocks its key while its lease is live, so leases in a row take at
		// most one message per key.
		for len(got) < a.Size {
			m := s.lease(a.Mailbox, now, a.LeaseFor)
			if m == nil {
				break
			}
			got = append(got, *m)
		}
	}
	if len(got) > 0 {
		batch := make([]delivery, len(got))
		for i, m := range got {
			batch[i] = delivery{mailbox: a.Mailbox, id: m.ID, attempts: m.Attempts, token: m.Token,
				leaseless: leaseless, maxAttempts: s.messages[m.ID].maxAttempts}
		}
		s.batches[a.Worker] = batch
	}
	return traces.Result{Messages: got}, nil
}

// peekBatch is the leaseless batch fetch's read: the messages size peeks of mailbox at now would
// return if each message returned were held by the batch, in delivery order. A held message is
// not taken twice and blocks its key; since a key has one candidate, its head, holding it leaves
// the key nothing to offer. So the batch is the first size candidates in delivery order, one per
// key: it takes them off the mailbox's eligible heap and puts them back, and changes nothing
// else. (Holding each in a copy of the whole state, as this once did, cost a copy of every live
// row per fetch.)
func (s *State) peekBatch(mailbox string, now int64, size int) []traces.Message {
	if _, ok := s.next(mailbox, now); !ok {
		return nil // next also moved the candidates due by now onto the eligible heap
	}
	q := s.idx.queues[mailbox]
	var got []traces.Message
	var taken []candEntry
	keys := map[string]bool{}
	for len(got) < size && q.eligible.len() > 0 {
		e := q.eligible.pop(deliveredFirst)
		if s.idx.cand[e.id] != e.stamp {
			continue // a stale entry, which next would drop too
		}
		taken = append(taken, e)
		m := s.messages[e.id]
		if m.key != "" {
			if keys[m.key] {
				continue
			}
			keys[m.key] = true
		}
		got = append(got, traces.Message{ID: m.id, Attempts: m.attempts})
	}
	for _, e := range taken {
		q.eligible.push(e, deliveredFirst)
	}
	return got
}

// leaseRow leases the ready row m as lease does with the row it finds.
func (s *State) leaseRow(m message, now, leaseFor int64) *traces.Message {
	s.lastToken++
	m.token = s.lastToken
	m.leaseUntil = now + leaseFor
	m.attempts++
	s.putReady(m)
	return &traces.Message{ID: m.id, Attempts: m.attempts, Token: m.token}
}

// nextSkippingLeasedHeads is the BatchSkipsLeasedHead fetch's next message: the first in delivery
// order of the ready rows available, unleased and with attempts left, not yet in got, whose key
// has no earlier row that blocks it, where a row under a live lease blocks nothing. A walk over
// the mailbox's rows: it serves a broken variant, not the model's long runs.
func (s *State) nextSkippingLeasedHeads(mailbox string, now int64, got []traces.Message) (message, bool) {
	p := s.rules()
	taken := map[string]bool{}
	for _, m := range got {
		taken[m.ID] = true
	}
	eligible := func(m message) bool {
		return m.mailbox == mailbox && !m.acked && !taken[m.id] && m.availableAt <= now &&
			!m.live(p, now) && m.attempts < m.maxAttempts
	}
	blocks := func(prev, m message) bool {
		if prev.mailbox != m.mailbox || prev.key != m.key || prev.seq >= m.seq || prev.acked || prev.live(p, now) {
			return false
		}
		return prev.attempts < prev.maxAttempts
	}
	var best message
	found := false
	for _, m := range s.messages {
		if !eligible(m) {
			continue
		}
		blocked := false
		if m.key != "" {
			for _, prev := range s.messages {
				if blocks(prev, m) {
					blocked = true
					break
				}
			}
		}
		if blocked {
			continue
		}
		if !found || deliveredFirst(candEntry{id: m.id, priority: m.priority, availableAt: m.availableAt, seq: m.seq},
			candEntry{id: best.id, priority: best.priority, availableAt: best.availableAt, seq: best.seq}) {
			best, found = m, true
		}
	}
	return best, found
}

// idleWorker refuses a fetch by a worker that still holds a fetch or a batch.
func (s *State) idleWorker(op traces.Op, w int) error {
	if d, busy := s.inflight[w]; busy {
		return malformed(op, "worker %d still holds its fetch of %q from mailbox %q: a consumer_handle must come between two fetches", w, d.id, d.mailbox)
	}
	if b, busy := s.batches[w]; busy {
		return malformed(op, "worker %d still holds its batch of %d messages from mailbox %q: a consumer_handle_batch must come between two fetches", w, len(b), b[0].mailbox)
	}
	return nil
}

// consumerHandleBatch commits every fetched message's outcome in one transaction, in batch order,
// each as a single handle would (handleDelivery): a message whose fence fails changes nothing, and
// the others still commit. Fault commit_fails: the transaction fails to commit and nothing
// changes; every message stays as the fetch left it (leased: under its lease until it runs out;
// leaseless: unchanged, for the next peek). A worker without a batch is idle: no actions.
func (s *State) consumerHandleBatch(a *traces.Args, now int64) (traces.Result, error) {
	batch, ok := s.batches[a.Worker]
	if !ok {
		return traces.Result{}, nil
	}
	if batch[0].mailbox != a.Mailbox {
		return traces.Result{}, malformed(traces.OpConsumerHandleBatch,
			"worker %d fetched its batch from mailbox %q but handles mailbox %q", a.Worker, batch[0].mailbox, a.Mailbox)
	}
	if batch[0].leaseless != (a.Profile == traces.ProfileLeaseless) {
		return traces.Result{}, malformed(traces.OpConsumerHandleBatch,
			"worker %d fetched its batch on the %s path but handles it on the %s path", a.Worker, profileOf(batch[0].leaseless), a.Profile)
	}
	if len(a.Outcomes) != len(batch) {
		return traces.Result{}, malformed(traces.OpConsumerHandleBatch,
			"worker %d holds a batch of %d messages but gives %d outcomes", a.Worker, len(batch), len(a.Outcomes))
	}
	delete(s.batches, a.Worker)
	actions := make([]string, len(batch))
	if a.Fault == traces.FaultCommitFails {
		for k := range actions {
			actions[k] = traces.ActionCommitFailed
		}
		return traces.Result{Actions: actions}, nil
	}
	var owed []delivery
	for k, d := range batch {
		outcome := a.Outcomes[k]
		switch bug := s.cfg.BatchBug; {
		case bug == BatchAcksFailed && outcome != traces.OutcomeOK, bug == BatchAckBeforeEffects && outcome == traces.OutcomeOK:
			// The broken consumers acknowledge without the effect.
			if !s.ackDelivery(d) {
				actions[k] = traces.ActionLeaseLost
				continue
			}
			actions[k] = traces.ActionAcked
			if outcome == traces.OutcomeOK {
				owed = append(owed, d)
			}
		default:
			reason := ""
			if k < len(a.Reasons) {
				reason = a.Reasons[k]
			}
			actions[k] = s.handleDelivery(d, outcome, reason, a.RetryDelay, now).Action
		}
	}
	if len(owed) > 0 {
		s.owed[a.Worker] = owed
	}
	return traces.Result{Actions: actions}, nil
}

// ackDelivery acknowledges d's message on d's path: by its token, or by id.
func (s *State) ackDelivery(d delivery) bool {
	if d.leaseless {
		return s.ackByID(d.id)
	}
	return s.ack(d.id, d.token)
}

// consumerEffectsBatch commits the effects worker a.Worker's batch handle owes (only a
// BatchAckBeforeEffects consumer owes any), unless its commit fails; either way they are no
// longer owed. The result lists them. Under Config.EffectOutsideFold it is also the write outside
// the fold: the effect of the single delivery the worker holds commits now, before its handle.
func (s *State) consumerEffectsBatch(a *traces.Args) traces.Result {
	if d, held := s.inflight[a.Worker]; held && s.cfg.EffectOutsideFold && !d.effectDone && d.mailbox == a.Mailbox {
		if a.Fault != traces.FaultCommitFails {
			s.effects[d.mailbox] = append(s.effects[d.mailbox], d.id)
			d.effectDone = true
			s.inflight[a.Worker] = d
		}
		return traces.Result{Effects: []string{d.id}}
	}
	owed := s.owed[a.Worker]
	delete(s.owed, a.Worker)
	var ids []string
	for _, d := range owed {
		ids = append(ids, d.id)
		if a.Fault != traces.FaultCommitFails {
			s.effects[d.mailbox] = append(s.effects[d.mailbox], d.id)
		}
	}
	return traces.Result{Effects: ids}
}

// publisherDeliverBatch delivers the claimed rows a.IDs under the claim token a.Token in one
// folded transaction: each row's part is a fold publisher_deliver's. commit_fails fails every row
// whose claim holds, each then released as after a single failed delivery; a row whose claim is
// lost is claim_lost whatever the fault. crash_between crashes after the batch's one commit: each
// row's part commits as without a fault, and a delivered row reports crashed (a lost claim or an
// id collision's dead letter reports what it did, as the P model's batch does).
func (s *State) publisherDeliverBatch(a *traces.Args, now int64) (traces.Result, error) {
	// A malformed row is found before the first row changes anything.
	for _, id := range a.IDs {
		_, held := s.outbox[id]
		if _, purged := s.purgedOutbox[id]; !held && !purged {
			return traces.Result{}, malformed(traces.OpPublisherDeliverBatch, "outbox row %q does not exist and was never purged", id)
		}
	}
	var r traces.Result
	for _, id := range a.IDs {
		one := *a
		one.ID, one.Profile, one.IDs = id, traces.ProfileFold, nil
		if a.Fault == traces.FaultCrashBetween {
			one.Fault = traces.FaultNone
		}
		res, err := s.publisherDeliver(&one, now)
		if err != nil {
			return traces.Result{}, err
		}
		if a.Fault == traces.FaultCrashBetween && res.Action == traces.ActionDelivered {
			res.Action = traces.ActionCrashed
		}
		r.Actions = append(r.Actions, res.Action)
		r.Duplicates = append(r.Duplicates, res.Duplicate)
	}
	return r, nil
}
