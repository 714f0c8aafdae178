package replay_test

import (
	"context"
	"fmt"
	"github.com/pconform/pconform/profile"
	"strings"
	"text/tabwriter"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Situation names a state in which a store bug hides: the corner a mutant of the store gets wrong
// while every plain operation still looks right. Counting operations and outcomes does not show
// them ("extend returned lease_lost" is there whether or not a newer lease was live).
type Situation string

// The situations, in the order the table lists them.
const (
	// A lease token used (ack, nack, extend) while another lease on its message is live.
	SituationStaleLease Situation = "stale lease token while a newer lease is live"
	// A claim token used (outbox_complete, outbox_fail, publisher_deliver) while another claim
	// on its row is live.
	SituationStaleClaim Situation = "stale claim token while a newer claim is live"
	// A lease, peek or consumer fetch at the lease_until of a leased row in its mailbox.
	SituationAtLeaseUntil Situation = "lease/peek/fetch exactly at lease_until"
	// A lease, peek or consumer fetch at the available_at of a ready row in its mailbox.
	SituationAtAvailableAt Situation = "lease/peek/fetch exactly at available_at"
	// An outbox claim at the claim_until of a claimed pending row.
	SituationAtClaimUntil Situation = "claim exactly at claim_until"
	// An outbox claim at the available_at of a pending row.
	SituationClaimAtAvailableAt Situation = "claim exactly at available_at"
	// An expire that clears at least one lease.
	SituationExpireClears Situation = "expire that clears a lease"
	// A step after which a message is among the dead letters because its lease ran out with its
	// attempts used up.
	SituationExpireDeadLetters Situation = "lease expiry that dead-letters"
	// An enqueue of an id already present, with another payload.
	SituationDuplicateOtherPayload Situation = "duplicate enqueue with a different payload"
	// One mailbox consumed by both the leased and the leaseless path in one trace.
	SituationBothPaths Situation = "one mailbox used by both paths"
	// A nack (nack, nack_by_id, a retried handle) that leaves the message with its attempts used up.
	SituationNackExhausts Situation = "nack that exhausts attempts"
	// A lease, peek or fetch while a keyed head waits in backoff (available_at in the future)
	// ahead of a later message with its key.
	SituationKeyedHeadBackoff Situation = "keyed head in backoff"
	// ... while a keyed head has its attempts used up and is still ready.
	SituationKeyedHeadExhausted Situation = "keyed head exhausted"
	// A keyed message dead-lettered while a later message with its key is ready.
	SituationKeyedHeadDeadLettered Situation = "keyed head dead-lettered"
	// A leased worker's handler fails with an error the retry policy declines (the early
	// dead-letter) while another worker's lease on its message is live: the fence must refuse it.
	SituationDeclineAfterTakeover Situation = "declined failure after another worker took the lease"
)

// AllSituations lists every situation, in table order.
var AllSituations = []Situation{
	SituationStaleLease, SituationStaleClaim, SituationAtLeaseUntil, SituationAtAvailableAt,
	SituationAtClaimUntil, SituationClaimAtAvailableAt,
	SituationExpireClears, SituationExpireDeadLetters, SituationDuplicateOtherPayload,
	SituationBothPaths, SituationNackExhausts, SituationKeyedHeadBackoff,
	SituationKeyedHeadExhausted, SituationKeyedHeadDeadLettered, SituationDeclineAfterTakeover,
}

// Situations counts, over a set of traces, the steps (or, for SituationBothPaths, the traces) in
// each situation.
type Situations map[Situation]int

// SituationsOf runs every trace of trs without a variant through the reference model and counts
// the situations its steps meet, judged on the model's state before and after each step.
func SituationsOf(ctx context.Context, trs []*traces.Trace) (Situations, error) {
	out := Situations{}
	for _, t := range trs {
		if t.Expect.Variant != "" {
			continue
		}
		states := []traces.Snapshot{{}}
		_, err := replay.Run(ctx, t, targets.NewModelTarget(models.Config{}), replay.Options{AfterStep: func(_ int, s traces.Snapshot) {
			states = append(states, s)
		}})
		if err != nil {
			return nil, fmt.Errorf("replay: situations of %q: %w", t.Name, err)
		}
		leased, leaseless := map[string]bool{}, map[string]bool{}
		// fetched: each consumer worker's last fetched message (what its next handle acts on).
		fetched := map[int]traces.Message{}
		for i := range len(states) - 1 {
			s := t.Steps[i]
			before, after := states[i], states[i+1]
			for _, sit := range stepSituations(s, before, after) {
				out[sit]++
			}
			switch s.Op {
			case traces.OpConsumerFetch:
				delete(fetched, s.Args.Worker)
				if s.Result.Message != nil {
					fetched[s.Args.Worker] = *s.Result.Message
				}
			case traces.OpConsumerHandle:
				if f, ok := fetched[s.Args.Worker]; ok && declinedUnderForeignLease(s, f, before) {
					out[SituationDeclineAfterTakeover]++
				}
				delete(fetched, s.Args.Worker)
			case traces.OpCrash:
				clear(fetched)
			}
			switch {
			case s.Op == traces.OpLease, s.Op == traces.OpConsumerFetch && s.Args.Profile == traces.ProfileLeased:
				leased[s.Args.Mailbox] = true
			case s.Op == traces.OpConsumerFetch && s.Args.Profile == traces.ProfileLeaseless, s.Op == traces.OpPeek:
				leaseless[s.Args.Mailbox] = true
			}
		}
		for mb := range leased {
			if leaseless[mb] {
				out[SituationBothPaths]++
				break
			}
		}
	}
	return out, nil
}

// stepSituations are the situations step s meets, from the state before and after it.
func stepSituations(s traces.Step, before, after traces.Snapshot) []Situation {
	var out []Situation
	now := s.At
	msg := func(snap traces.Snapshot, id string) (traces.MessageRow, bool) {
		for _, m := range snap.Messages {
			if m.ID == id {
				return m, true
			}
		}
		return traces.MessageRow{}, false
	}
	switch s.Op {
	case traces.OpAck, traces.OpNack, traces.OpExtend:
		if m, ok := msg(before, s.Args.ID); ok && m.Token != s.Args.Token && s.Args.Token != 0 && (profile.Profile{}).Held(m.Token, m.LeaseUntil, now) {
			out = append(out, SituationStaleLease)
		}
	case traces.OpOutboxComplete, traces.OpOutboxFail, traces.OpPublisherDeliver:
		for _, o := range before.Outbox {
			if o.ID == s.Args.ID && o.Token != s.Args.Token && s.Args.Token != 0 && (profile.Profile{}).Held(o.Token, o.ClaimUntil, now) {
				out = append(out, SituationStaleClaim)
			}
		}
	}
	switch s.Op {
	case traces.OpLease, traces.OpPeek, traces.OpConsumerFetch:
		atLease, atAvailable, backoff, exhausted := false, false, false, false
		for _, m := range before.Messages {
			if m.Mailbox != s.Args.Mailbox || m.State != "ready" {
				continue
			}
			atLease = atLease || m.Token != 0 && m.LeaseUntil == now
			atAvailable = atAvailable || m.AvailableAt == now
			if m.Key != "" && hasLaterKeyed(before, m) {
				backoff = backoff || m.AvailableAt > now
				exhausted = exhausted || m.Attempts >= m.MaxAttempts
			}
		}
		if atLease {
			out = append(out, SituationAtLeaseUntil)
		}
		if atAvailable {
			out = append(out, SituationAtAvailableAt)
		}
		if backoff {
			out = append(out, SituationKeyedHeadBackoff)
		}
		if exhausted {
			out = append(out, SituationKeyedHeadExhausted)
		}
	case traces.OpOutboxClaim:
		atClaim, atAvailable := false, false
		for _, o := range before.Outbox {
			if o.State == "pending" {
				atClaim = atClaim || o.Token != 0 && o.ClaimUntil == now
				atAvailable = atAvailable || o.AvailableAt == now
			}
		}
		if atClaim {
			out = append(out, SituationAtClaimUntil)
		}
		if atAvailable {
			out = append(out, SituationClaimAtAvailableAt)
		}
	case traces.OpExpire:
		if s.Result.Affected > 0 {
			out = append(out, SituationExpireClears)
		}
	case traces.OpEnqueue:
		if m, ok := msg(before, s.Args.ID); ok && s.Result.Duplicate && m.Payload != s.Args.Payload {
			out = append(out, SituationDuplicateOtherPayload)
		}
	case traces.OpNack, traces.OpNackByID, traces.OpConsumerHandle:
		if s.Op == traces.OpConsumerHandle && s.Result.Action != traces.ActionRetried {
			break
		}
		// The nacked message is ready afterwards with no attempt left: only expire (on the
		// leased path) or a dead_letter takes it from there.
		for _, m := range after.Messages {
			prev, ok := msg(before, m.ID)
			if !ok || m.State != "ready" || m.Token != 0 || m.Attempts < m.MaxAttempts {
				continue
			}
			if prev.Token != 0 || prev.Attempts < m.MaxAttempts {
				out = append(out, SituationNackExhausts)
				break
			}
		}
	}
	// Dead letters that appeared in this step.
	had := map[string]bool{}
	for _, d := range before.DeadLetters {
		had[d.ID] = true
	}
	for _, d := range after.DeadLetters {
		if had[d.ID] {
			continue
		}
		prev, ok := msg(before, d.ID)
		if ok && prev.Token != 0 && !(profile.Profile{}).Held(prev.Token, prev.LeaseUntil, now) && prev.Attempts >= prev.MaxAttempts && s.Op != traces.OpDeadLetter {
			out = append(out, SituationExpireDeadLetters)
		}
		if ok && prev.Key != "" && hasLaterKeyed(after, prev) {
			out = append(out, SituationKeyedHeadDeadLettered)
		}
	}
	return out
}

// declinedUnderForeignLease reports whether the consumer_handle step s, of the leased delivery f,
// is a failure the retry policy declines while another lease on f's message is live in before.
func declinedUnderForeignLease(s traces.Step, f traces.Message, before traces.Snapshot) bool {
	if s.Args.Profile != traces.ProfileLeased || s.Args.Outcome != traces.OutcomeFailNoRetry {
		return false
	}
	for _, m := range before.Messages {
		if m.ID == f.ID {
			return m.State == traces.StateReady && m.Token != f.Token && (profile.Profile{}).Held(m.Token, m.LeaseUntil, s.At)
		}
	}
	return false
}

// hasLaterKeyed reports whether a ready message of m's mailbox and key that m precedes is in snap.
// Snapshots list no creation order, so "later" is approximated by the id order the generators use
// (m1, m2, ...), which is creation order in every corpus scenario.
func hasLaterKeyed(snap traces.Snapshot, m traces.MessageRow) bool {
	for _, o := range snap.Messages {
		if o.Mailbox == m.Mailbox && o.Key == m.Key && o.ID != m.ID && o.State == "ready" && idAfter(o.ID, m.ID) {
			return true
		}
	}
	return false
}

func idAfter(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

// String renders the situation x count table, every situation listed.
func (s Situations) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "SITUATION\tCOUNT")
	for _, sit := range AllSituations {
		fmt.Fprintf(w, "%s\t%d\n", sit, s[sit])
	}
	_ = w.Flush()
	return b.String()
}

// Missing lists the situations with fewer than min occurrences.
func (s Situations) Missing(min int) []Situation {
	var out []Situation
	for _, sit := range AllSituations {
		if s[sit] < min {
			out = append(out, sit)
		}
	}
	return out
}
