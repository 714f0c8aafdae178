package models

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pconform/pconform/traces"
)

// ErrMalformed is wrapped by every error Step returns: the step cannot belong to any execution (an
// unknown op, a missing or out-of-range argument, time running backwards, a handle that does not
// pair with its worker's fetch, a delivery of an outbox row that does not exist). A semantic failure
// such as a stale token is never an error; it is reported in the Result.
var ErrMalformed = errors.New("models: malformed step")

func malformed(op traces.Op, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrMalformed, op, fmt.Sprintf(format, args...))
}

// Step applies op with arguments a at logical time at to s and returns the next state and the
// result a caller would observe. It never changes s. Token arguments are model tokens (see
// [RunTrace] for traces whose tokens are symbols).
//
// Step returns an error wrapping [ErrMalformed], together with s unchanged, when the step is
// malformed; see ErrMalformed.
func Step(s State, op traces.Op, at int64, a traces.Args) (State, traces.Result, error) {
	if err := check(&s, op, at, &a); err != nil {
		return s, traces.Result{}, err
	}
	n := s.clone()
	r, err := n.apply(op, at, &a)
	if err != nil {
		return s, traces.Result{}, err
	}
	return n, r, nil
}

// check refuses a step that cannot follow s: time running backwards or arguments out of range.
// It takes s and a by pointer: a [Machine] checks every step, and both structs are large.
func check(s *State, op traces.Op, at int64, a *traces.Args) error {
	if at < 0 {
		return malformed(op, "at %d is negative", at)
	}
	if at < s.now {
		return malformed(op, "at %d is before the previous step's time %d", at, s.now)
	}
	return validate(op, a)
}

// apply runs one checked step on n in place. A malformed step changes nothing: every error is
// found before the step's first change but two, the clock and the worker's stop mark, which are
// put back (TestMalformedStepChangesNothing holds this).
func (n *State) apply(op traces.Op, at int64, a *traces.Args) (traces.Result, error) {
	prevNow := n.now
	prevStop, hadStop := n.stops[a.Worker]
	n.now = at
	r, err := n.applyAt(op, at, a)
	if err != nil {
		n.now = prevNow
		if hadStop {
			n.stops[a.Worker] = prevStop
		}
	}
	return r, err
}

// applyAt is apply's step, with n.now already at.
func (n *State) applyAt(op traces.Op, at int64, a *traces.Args) (traces.Result, error) {
	var r traces.Result
	var err error
	switch op {
	case traces.OpEnqueue:
		r.Duplicate = n.enqueue(a.Mailbox, a.ID, a.Key, a.Priority, a.MaxAttempts, at+a.Delay, a.Payload)
	case traces.OpLease:
		r.Message = n.lease(a.Mailbox, at, a.LeaseFor)
	case traces.OpPeek:
		r.Message = n.peek(a.Mailbox, at)
	case traces.OpAck:
		r.Err = errKind(n.ack(a.ID, a.Token), traces.ErrKindLeaseLost)
	case traces.OpNack:
		r.Err = errKind(n.nack(a.ID, a.Token, at+a.Delay), traces.ErrKindLeaseLost)
	case traces.OpAckByID:
		r.Err = errKind(n.ackByID(a.ID), traces.ErrKindNotFound)
	case traces.OpNackByID:
		r.Err = errKind(n.nackByID(a.ID, at+a.Delay), traces.ErrKindNotFound)
	case traces.OpExtend:
		r.Err = errKind(n.extend(a.ID, a.Token, at+a.LeaseFor), traces.ErrKindLeaseLost)
	case traces.OpExpire:
		r.Affected = n.expire(at)
	case traces.OpDeadLetter:
		r.Err = errKind(n.deadLetter(a.ID, a.Reason), traces.ErrKindNotFound)
	case traces.OpOutboxEnqueue:
		var refused bool
		r.Duplicate, refused = n.outboxEnqueue(a.ID, a.Target, a.Key, a.Priority, a.MaxAttempts, a.MaxDeliveryAttempts, a.Payload, at)
		r.Err = errKind(!refused, traces.ErrKindRefused)
	case traces.OpOutboxClaim:
		r.Claimed = n.outboxClaim(a.Limit, at, a.ClaimFor)
	case traces.OpOutboxComplete:
		// Under the profile choice complete_fence "silent" a failed fence reports nothing.
		r.Err = errKind(n.outboxComplete(a.ID, a.Token) || n.cfg.Profile.CompleteFenceSilent, traces.ErrKindClaimLost)
	case traces.OpOutboxFail:
		r.Err = errKind(n.outboxFail(a.ID, a.Token, at+a.Delay), traces.ErrKindClaimLost)
	case traces.OpOutboxDeadLetter:
		// Under the profile choice outbox_dead_letter_fence "silent" a failed fence reports nothing.
		r.Err = errKind(n.outboxDeadLetter(a.ID, a.Token, a.Reason) || n.cfg.Profile.OutboxDeadLetterFenceSilent, traces.ErrKindClaimLost)
	case traces.OpAdvanceClock:
		// Only the time moves; nothing durable changes.
	case traces.OpPurge:
		r.Affected = n.purge(at, a.OlderThan, a.Horizon, a.Limit)
	case traces.OpMarkProcessed:
		r.Duplicate = n.markProcessed(a.Consumer, a.ID, at, a.TTL)
	case traces.OpSaveCheckpoint:
		v, ok := n.saveCheckpoint(a.Actor, a.ExpectVersion, a.Payload)
		r.Version, r.Err = v, errKind(ok, traces.ErrKindVersionConflict)
	case traces.OpLoadCheckpoint:
		v, ok := n.loadCheckpoint(a.Actor)
		r.Version, r.Err = v, errKind(ok, traces.ErrKindNotFound)
	case traces.OpRedrive:
		r.Err = errKind(n.redrive(a.ID, a.Reason), traces.ErrKindNotFound)
	case traces.OpListRedrives:
		r.Redrives = n.listRedrives(a.ID)
	case traces.OpConsumerFetch:
		if err = n.stepAfterStop(op, a.Worker); err == nil {
			if r, err = n.consumerFetch(a, at); err == nil {
				n.wakes.Fetched(a.Worker, a.Mailbox)
			}
		}
	case traces.OpConsumerHandle:
		if err = n.stepAfterStop(op, a.Worker); err == nil {
			r, err = n.consumerHandle(a, at)
		}
	case traces.OpPublisherDeliver:
		r, err = n.publisherDeliver(a, at)
	case traces.OpConsumerFetchBatch:
		if err = n.stepAfterStop(op, a.Worker); err == nil {
			if r, err = n.consumerFetchBatch(a, at); err == nil {
				n.wakes.Fetched(a.Worker, a.Mailbox)
			}
		}
	case traces.OpConsumerHandleBatch:
		if err = n.stepAfterStop(op, a.Worker); err == nil {
			r, err = n.consumerHandleBatch(a, at)
		}
	case traces.OpConsumerEffectsBatch:
		r = n.consumerEffectsBatch(a)
	case traces.OpPublisherDeliverBatch:
		r, err = n.publisherDeliverBatch(a, at)
	case traces.OpCrash:
		clear(n.inflight)
		clear(n.batches)
		clear(n.owed)
		clear(n.stops)
		n.wakes.Crash()
	case traces.OpWorkerStop:
		err = n.workerStop(a)
	case traces.OpWorkerDrain:
		err = n.workerDrain(a)
	case traces.OpWake:
		// An observation: nothing changes. The wake's message must be committed in its mailbox.
		r.Err = errKind(n.committedIn(a.Mailbox, a.ID), traces.ErrKindNotCommitted)
		if r.Err == "" {
			n.wakes.Woke(a.Worker, a.Mailbox)
		}
	case traces.OpPollTick:
		// An observation: nothing changes. A worker woken for a committed message of the mailbox
		// must have fetched from it since.
		r.Err = errKind(!n.wakes.Owed(a.Worker, a.Mailbox), traces.ErrKindWakeNotFetched)
	default:
		err = malformed(op, "unknown operation")
	}
	return r, err
}

// errKind is "" when ok, else kind.
func errKind(ok bool, kind string) string {
	if ok {
		return ""
	}
	return kind
}

// validate checks the arguments a step needs are present and in range. Arguments an op does not
// take are ignored here; the trace parser refuses them in files.
func validate(op traces.Op, a *traces.Args) error {
	nonEmpty := func(name, v string) error {
		if v == "" {
			return malformed(op, "%s is empty", name)
		}
		return nil
	}
	nonNegative := func(name string, v int64) error {
		if v < 0 {
			return malformed(op, "%s %d is negative", name, v)
		}
		return nil
	}
	atLeastOne := func(name string, v int) error {
		if v < 1 {
			return malformed(op, "%s %d is less than 1", name, v)
		}
		return nil
	}
	positive := func(name string, v int64) error {
		if v < 1 {
			return malformed(op, "%s %d is less than 1", name, v)
		}
		return nil
	}
	oneOf := func(name, v string, allowed ...string) error {
		for _, x := range allowed {
			if v == x {
				return nil
			}
		}
		// A copy, so that allowed does not escape: a valid step allocates nothing here.
		return malformed(op, "%s %q is not one of %q", name, v, slices.Clone(allowed))
	}
	switch op {
	case traces.OpEnqueue:
		return errors.Join(nonEmpty("mailbox", a.Mailbox), nonEmpty("id", a.ID),
			atLeastOne("max_attempts", a.MaxAttempts), nonNegative("delay", a.Delay))
	case traces.OpLease:
		return errors.Join(nonEmpty("mailbox", a.Mailbox), nonNegative("lease_for", a.LeaseFor))
	case traces.OpPeek:
		return nonEmpty("mailbox", a.Mailbox)
	case traces.OpAck, traces.OpAckByID, traces.OpOutboxComplete, traces.OpDeadLetter:
		return nonEmpty("id", a.ID)
	case traces.OpNack, traces.OpNackByID, traces.OpOutboxFail:
		return errors.Join(nonEmpty("id", a.ID), nonNegative("delay", a.Delay))
	case traces.OpExtend:
		return errors.Join(nonEmpty("id", a.ID), nonNegative("lease_for", a.LeaseFor))
	case traces.OpOutboxEnqueue:
		return errors.Join(nonEmpty("id", a.ID), nonEmpty("target", a.Target),
			atLeastOne("max_attempts", a.MaxAttempts), nonNegative("max_delivery_attempts", int64(a.MaxDeliveryAttempts)))
	case traces.OpOutboxDeadLetter, traces.OpRedrive:
		return errors.Join(nonEmpty("id", a.ID), nonEmpty("reason", a.Reason))
	case traces.OpOutboxClaim:
		return errors.Join(atLeastOne("limit", a.Limit), nonNegative("claim_for", a.ClaimFor))
	case traces.OpPurge:
		return errors.Join(atLeastOne("limit", a.Limit), nonNegative("older_than", a.OlderThan),
			nonNegative("horizon", a.Horizon))
	case traces.OpMarkProcessed:
		return errors.Join(nonEmpty("consumer", a.Consumer), nonEmpty("id", a.ID), positive("ttl", a.TTL))
	case traces.OpSaveCheckpoint:
		if strings.HasPrefix(a.Actor, traces.EffectsActorPrefix) {
			return malformed(op, "actor %q is a mailbox's effect log, which only the consumer handler saves", a.Actor)
		}
		return errors.Join(nonEmpty("actor", a.Actor), nonNegative("expect_version", int64(a.ExpectVersion)))
	case traces.OpLoadCheckpoint:
		return nonEmpty("actor", a.Actor)
	case traces.OpConsumerFetch:
		return errors.Join(nonEmpty("mailbox", a.Mailbox),
			oneOf("profile", a.Profile, traces.ProfileLeased, traces.ProfileLeaseless),
			nonNegative("lease_for", a.LeaseFor))
	case traces.OpConsumerHandle:
		return errors.Join(nonEmpty("mailbox", a.Mailbox),
			oneOf("profile", a.Profile, traces.ProfileLeased, traces.ProfileLeaseless),
			oneOf("outcome", a.Outcome, traces.OutcomeOK, traces.OutcomeFail, traces.OutcomeFailNoRetry),
			nonNegative("retry_delay", a.RetryDelay),
			oneOf("fault", a.Fault, "", traces.FaultNone, traces.FaultCommitFails))
	case traces.OpWake:
		return errors.Join(nonEmpty("mailbox", a.Mailbox), nonEmpty("id", a.ID),
			oneOf("profile", a.Profile, traces.WakeLocal, traces.WakeNotify))
	case traces.OpPollTick:
		return nonEmpty("mailbox", a.Mailbox)
	case traces.OpPublisherDeliver:
		return errors.Join(nonEmpty("id", a.ID),
			oneOf("profile", a.Profile, traces.ProfileFold, traces.ProfileSplit),
			oneOf("fault", a.Fault, traces.FaultNone, traces.FaultCommitFails, traces.FaultCrashBetween,
				traces.FaultUndeliverable),
			nonNegative("retry_delay", a.RetryDelay))
	case traces.OpWorkerDrain:
		return oneOf("outcome", a.Outcome, traces.OutcomeDrained, traces.OutcomeTimedOut)
	case traces.OpConsumerFetchBatch:
		return errors.Join(nonEmpty("mailbox", a.Mailbox),
			oneOf("profile", a.Profile, traces.ProfileLeased, traces.ProfileLeaseless),
			atLeastOne("size", a.Size), nonNegative("lease_for", a.LeaseFor))
	case traces.OpConsumerHandleBatch:
		errs := []error{nonEmpty("mailbox", a.Mailbox),
			oneOf("profile", a.Profile, traces.ProfileLeased, traces.ProfileLeaseless),
			oneOf("fault", a.Fault, traces.FaultNone, traces.FaultCommitFails),
			nonNegative("retry_delay", a.RetryDelay)}
		for _, o := range a.Outcomes {
			errs = append(errs, oneOf("outcome", o, traces.OutcomeOK, traces.OutcomeFail, traces.OutcomeFailNoRetry))
		}
		return errors.Join(errs...)
	case traces.OpConsumerEffectsBatch:
		return errors.Join(nonEmpty("mailbox", a.Mailbox), oneOf("fault", a.Fault, traces.FaultNone, traces.FaultCommitFails))
	case traces.OpPublisherDeliverBatch:
		errs := []error{oneOf("fault", a.Fault, traces.FaultNone, traces.FaultCommitFails, traces.FaultCrashBetween),
			nonNegative("retry_delay", a.RetryDelay)}
		if len(a.IDs) == 0 {
			errs = append(errs, malformed(op, "ids is empty"))
		}
		seen := map[string]bool{}
		for _, id := range a.IDs {
			if seen[id] {
				errs = append(errs, malformed(op, "id %q is delivered twice in one batch", id))
			}
			seen[id] = true
			errs = append(errs, nonEmpty("id", id))
		}
		return errors.Join(errs...)
	}
	return nil
}
