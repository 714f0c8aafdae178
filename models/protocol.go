package models

import (
	"github.com/pconform/pconform/traces"
)

// The protocol steps of docs/semantics.md: the consumer's two halves and one publisher delivery,
// each as the sequence of store operations the real code runs, on a State Step has already cloned.

// consumerFetch is the first half of a consumer iteration. Leased: expire() then lease. Leaseless:
// peek. A message it returns is remembered as the worker's delivery until the worker's handle (or
// a crash). lease_for is ignored on the leaseless path.
func (s *State) consumerFetch(a *traces.Args, now int64) (traces.Result, error) {
	if err := s.idleWorker(traces.OpConsumerFetch, a.Worker); err != nil {
		return traces.Result{}, err
	}
	leaseless := a.Profile == traces.ProfileLeaseless
	var m *traces.Message
	if leaseless {
		m = s.peek(a.Mailbox, now)
	} else {
		// Under the profile choice fetch_sweep "none" the fetch only leases.
		if !s.cfg.Profile.FetchNoSweep {
			s.expire(now)
		}
		m = s.lease(a.Mailbox, now, a.LeaseFor)
	}
	if m != nil {
		s.inflight[a.Worker] = delivery{
			mailbox: a.Mailbox, id: m.ID, attempts: m.Attempts, token: m.Token, leaseless: leaseless,
			maxAttempts: s.messages[m.ID].maxAttempts,
		}
	}
	return traces.Result{Message: m}, nil
}

// consumerHandle is the second half of a consumer iteration: the commit of a handler with outcome
// a.Outcome, in one transaction with the acknowledgement, the retry or the dead-lettering (the
// handler itself ran before, outside any transaction; nothing of it is visible until this commit). Every store
// operation the handle runs either all commit or none does; a failed fenced operation (an ack or
// nack whose token no longer matches, an ack_by_id, nack_by_id or dead_letter of a row that is no
// longer ready) rolls the whole handle back and reports action lease_lost. Fault commit_fails:
// the transaction fails to commit, nothing changes and the action is commit_failed. A worker that
// holds nothing is idle, whatever the fault.
func (s *State) consumerHandle(a *traces.Args, now int64) (traces.Result, error) {
	d, ok := s.inflight[a.Worker]
	if !ok {
		return traces.Result{Action: traces.ActionIdle}, nil
	}
	if d.mailbox != a.Mailbox {
		return traces.Result{}, malformed(traces.OpConsumerHandle,
			"worker %d fetched %q from mailbox %q but handles mailbox %q", a.Worker, d.id, d.mailbox, a.Mailbox)
	}
	if d.leaseless != (a.Profile == traces.ProfileLeaseless) {
		return traces.Result{}, malformed(traces.OpConsumerHandle,
			"worker %d fetched %q on the %s path but handles it on the %s path",
			a.Worker, d.id, profileOf(d.leaseless), a.Profile)
	}
	delete(s.inflight, a.Worker)
	if a.Fault == traces.FaultCommitFails {
		// The transaction fails to commit: nothing changes and no retry decision is made, but
		// the worker no longer holds its fetch, as after a crash. Leased, the message stays
		// under its lease until it runs out; leaseless, it is unchanged for the next peek.
		return traces.Result{Action: traces.ActionCommitFailed}, nil
	}
	return s.handleDelivery(d, a.Outcome, a.Reason, a.RetryDelay, now), nil
}

// handleDelivery commits the outcome of one fetched delivery d: a single handle's whole
// transaction, and one message's part of a batch handle's. Every store operation it runs either
// all commit or none does: a failed fenced operation changes nothing and ends lease_lost. reason
// is the dead-letter reason of a failure the retry policy declines (the handler's error text),
// "" for traces.ReasonHandlerFailed.
func (s *State) handleDelivery(d delivery, outcome, reason string, retryDelay, now int64) traces.Result {
	if reason == "" {
		reason = traces.ReasonHandlerFailed
	}
	if outcome == traces.OutcomeOK {
		var acked bool
		if d.leaseless {
			acked = s.ackByID(d.id)
		} else {
			acked = s.ack(d.id, d.token)
		}
		if !acked {
			return traces.Result{Action: traces.ActionLeaseLost}
		}
		// The effect commits with the ack, unless a consumer_effects_batch of an EffectOutsideFold
		// consumer committed it before, outside the fold.
		if !d.effectDone {
			s.effects[d.mailbox] = append(s.effects[d.mailbox], d.id)
		}
		return traces.Result{Action: traces.ActionAcked}
	}

	// The decision reads the row as stored now on the leaseless path: a nack_by_id since the fetch
	// has counted attempts the fetched count does not show. On the leased path a matching token
	// means the row still holds the count the lease set. The effective attempt never exceeds
	// max_attempts. A leaseless row that is gone or acked keeps the fetched count: the handle then
	// reports lease_lost with it.
	stored := d.attempts
	if m, ok := s.messages[d.id]; ok && d.leaseless && !m.acked {
		stored = m.attempts
	}
	effective := min(s.cfg.filled().Attempts(stored, d.leaseless), d.maxAttempts)
	r := traces.Result{Attempt: effective, Action: traces.ActionLeaseLost}
	switch {
	case effective >= d.maxAttempts && d.leaseless:
		// The bump and the move commit together, so the dead letter records the bumped count.
		// When the nack succeeds the row is ready, so the move cannot fail after it.
		if s.nackByID(d.id, now) && s.deadLetter(d.id, s.cfg.Profile.ReasonMaxAttemptsWording()) {
			r.Action = traces.ActionDeadLettered
		}
	case effective >= d.maxAttempts:
		// Leased: fenced by the token. Used-up attempts do not keep other workers away: once this
		// lease runs out, expire dead-letters the message and a redrive puts it back with attempts
		// 0, so another worker may hold a live lease on it now.
		if _, holds := s.holding(d.id, d.token); holds && s.deadLetter(d.id, s.cfg.Profile.ReasonMaxAttemptsWording()) {
			r.Action = traces.ActionDeadLettered
		}
	case outcome == traces.OutcomeFailNoRetry && d.leaseless:
		// The policy declines: the handler's error is the reason, the bump and the move commit
		// together as at max_attempts.
		if s.nackByID(d.id, now) && s.deadLetter(d.id, reason) {
			r.Action = traces.ActionDeadLettered
		}
	case outcome == traces.OutcomeFailNoRetry:
		// Leased: the move is fenced by the token, since another worker may lease the message
		// once this lease runs out.
		if _, holds := s.holding(d.id, d.token); holds && s.deadLetter(d.id, reason) {
			r.Action = traces.ActionDeadLettered
		}
	case d.leaseless:
		if s.nackByID(d.id, now+retryDelay) {
			r.Action = traces.ActionRetried
		}
	default:
		if s.nack(d.id, d.token, now+retryDelay) {
			r.Action = traces.ActionRetried
		}
	}
	return r
}

func profileOf(leaseless bool) string {
	if leaseless {
		return traces.ProfileLeaseless
	}
	return traces.ProfileLeased
}

// publisherDeliver delivers the claimed outbox row a.ID under claim token a.Token: enqueue into
// the row's target mailbox (delay 0, the row's id) and outbox_complete, in one transaction (fold)
// or as two commits (split), with the fault a.Fault injected.
//
// The result's duplicate flag is what the target enqueue observed whenever it ran, even if its
// transaction then rolled back or failed to commit (split with commit_fails included: the enqueue
// ran, its commit failed). crash_between stops the delivery right
// after its first commit; it does not forget consumer workers' fetches (a trace in which the whole
// process died follows it with a crash step). On the fold, when the completion reports claim_lost
// no commit happens, so neither commit_fails nor crash_between can strike: the action is
// claim_lost.
//
// undeliverable: the publisher's check refuses the row before anything is enqueued, and the row is
// dead-lettered with reason "undeliverable", fenced by the claim (claim_lost when it no longer
// holds). After a commit_failed delivery the publisher releases the row in a commit of its own,
// fenced by the claim: dead-lettered ("max delivery attempts reached") when the failed attempt was
// its last, otherwise outbox_fail with a.RetryDelay.
//
// An id collision: when the row's id is already a message or dead letter of another mailbox than
// its target, the step that would complete the row dead-letters it instead, fenced by the claim,
// with traces.ReasonIDCollision(that mailbox): action dead_lettered (crashed under crash_between,
// claim_lost when the claim no longer holds). Nothing is enqueued (the id is taken).
func (s *State) publisherDeliver(a *traces.Args, now int64) (traces.Result, error) {
	r, err := s.deliverOnce(a, now)
	// Under the profile choice failed_delivery "lapses" nothing releases the row: its claim runs out.
	if err == nil && r.Action == traces.ActionCommitFailed && !s.cfg.Profile.FailedDeliveryLapses {
		if o, holds := s.claimHolding(a.ID, a.Token); holds {
			if o.deliveryAttempts >= o.maxDeliveryAttempts {
				s.outboxDeadLetter(a.ID, a.Token, s.cfg.Profile.ReasonMaxDeliveryAttemptsWording())
			} else {
				s.outboxFail(a.ID, a.Token, now+a.RetryDelay)
			}
		}
	}
	return r, err
}

// deliverGone is a delivery of a row the model does not hold. A purge removes a final row while a
// publisher whose claim ran out may still hold it in memory, so a fold delivery of it is a stale
// delivery: its enqueue runs (and reports whether the id is taken), its completion finds no row
// carrying the token, and the transaction rolls back: claim_lost. The undeliverable check
// dead-letters nothing, so it is claim_lost too. A split delivery would commit the enqueue of the
// row's message, whose contents the model no longer holds: malformed.
func (s *State) deliverGone(a *traces.Args) (traces.Result, error) {
	// Only a row that purge removed can still be delivered by a publisher whose claim ran out; an
	// id the model never held names a claim that never happened: malformed, not claim_lost.
	if _, purged := s.purgedOutbox[a.ID]; !purged {
		return traces.Result{}, malformed(traces.OpPublisherDeliver, "outbox row %q does not exist and was never purged", a.ID)
	}
	switch {
	case a.Fault == traces.FaultUndeliverable:
		// Under outbox_dead_letter_fence "silent" the dead letter that finds no row reports nothing.
		return traces.Result{Action: deadLetterAction(false, s.cfg.Profile.OutboxDeadLetterFenceSilent)}, nil
	case a.Profile == traces.ProfileFold && !s.cfg.Profile.CompleteFenceSilent:
		return traces.Result{Action: traces.ActionClaimLost, Duplicate: s.has(a.ID)}, nil
	}
	return traces.Result{}, malformed(traces.OpPublisherDeliver, "outbox row %q does not exist (a %s delivery of a purged row enqueues a message the model no longer knows)", a.ID, a.Profile)
}

func (s *State) deliverOnce(a *traces.Args, now int64) (traces.Result, error) {
	o, ok := s.outbox[a.ID]
	if !ok {
		return s.deliverGone(a)
	}
	if a.Fault == traces.FaultUndeliverable {
		done := s.outboxDeadLetter(o.id, a.Token, traces.ReasonUndeliverable)
		return traces.Result{Action: deadLetterAction(done, s.cfg.Profile.OutboxDeadLetterFenceSilent)}, nil
	}
	duplicate := s.has(o.id)
	collision := s.collidesWith(o)
	// finish is the step's last write: the completion, or, for a colliding id, the dead-letter
	// (fenced by the claim whatever the complete_fence choice says).
	finish := func() bool {
		if collision != "" {
			return s.outboxDeadLetter(o.id, a.Token, traces.ReasonIDCollision(collision))
		}
		return s.outboxComplete(o.id, a.Token)
	}
	done := traces.ActionDelivered
	if collision != "" {
		done = traces.ActionDeadLettered
	}
	enqueue := func() {
		s.enqueue(o.target, o.id, o.key, o.priority, o.maxAttempts, now, o.payload)
	}
	// Under the profile choice complete_fence "silent" a completion whose claim no longer holds
	// reports nothing, so the delivery goes on as if it held (and completes nothing).
	silent := s.cfg.Profile.CompleteFenceSilent
	if a.Profile == traces.ProfileFold {
		r := traces.Result{Duplicate: duplicate}
		if _, holds := s.claimHolding(o.id, a.Token); !holds && (!silent || collision != "") {
			r.Action = traces.ActionClaimLost
			return r, nil
		}
		switch a.Fault {
		case traces.FaultCommitFails:
			r.Action = traces.ActionCommitFailed
		case traces.FaultCrashBetween:
			enqueue()
			finish()
			r.Action = traces.ActionCrashed
		default:
			enqueue()
			finish()
			r.Action = done
		}
		return r, nil
	}

	// Split: the enqueue commits on its own, then the completion does.
	if a.Fault == traces.FaultCommitFails {
		return traces.Result{Duplicate: duplicate, Action: traces.ActionCommitFailed}, nil
	}
	enqueue()
	r := traces.Result{Duplicate: duplicate}
	switch {
	case a.Fault == traces.FaultCrashBetween:
		r.Action = traces.ActionCrashed
	case finish() || (silent && collision == ""):
		r.Action = done
	default:
		r.Action = traces.ActionClaimLost
	}
	return r, nil
}

// deadLetterAction is the action of an undeliverable delivery: dead_lettered when its fenced dead
// letter took the row, claim_lost when the fence failed. Under the profile choice
// outbox_dead_letter_fence "silent" the failed fence reports nothing, so the publisher reports
// dead_lettered although the row is as it was.
func deadLetterAction(done, silent bool) string {
	if done || silent {
		return traces.ActionDeadLettered
	}
	return traces.ActionClaimLost
}

// collidesWith returns the mailbox of the message or dead letter that already has the outbox
// row's id when it is not the row's target, "" otherwise: the id is free, the row's own earlier
// delivery, or only retired (a purged id keeps no mailbox, so it counts as the row's own). Like
// the store, it asks only when the enqueue finds the id taken (has).
func (s *State) collidesWith(o outboxRow) string {
	mailbox := ""
	if m, ok := s.messages[o.id]; ok {
		mailbox = m.mailbox
	} else if d, ok := s.dead[o.id]; ok && !s.cfg.Profile.DeadLetterIDFree {
		// Under dead_letter_id "free" a dead letter does not take its id: the enqueue succeeds.
		mailbox = d.mailbox
	}
	if mailbox == o.target {
		return ""
	}
	return mailbox
}
