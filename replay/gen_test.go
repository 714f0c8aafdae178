package replay_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// genTrace builds a random trace of n steps, every expected result and the final state computed
// by the reference model. Token symbols are the model's own tokens (issued from 1, leases and
// claims from one counter, so the two namespaces never share a symbol); a token argument is one
// the model issued, or now and then a forged symbol (>= 1000) that no step ever issues.
//
// Workers 1 and 2 consume mailbox "a" on the leased path, worker 3 mailbox "b" on the leaseless
// path (one leaseless worker per mailbox, as the semantics require). Everything is drawn from
// rng, so a seed reproduces a trace on the same commit.
func genTrace(rng *rand.Rand, name string, n int) (*traces.Trace, error) {
	g := &gen{rng: rng, m: models.NewMachine(models.Init(models.Config{})), holding: map[int]bool{}}
	t := &traces.Trace{Format: traces.Format, Name: name, Origin: traces.Origin{Kind: traces.OriginProperty, TestCase: "replay.genTrace"}, Expect: traces.Expect{DivergesAt: -1}}
	for len(t.Steps) < n {
		g.at += int64(rng.IntN(3))
		op, a := g.pick()
		r, err := g.m.Step(op, g.at, a)
		if err != nil {
			return nil, fmt.Errorf("genTrace: step %d (%s): %w", len(t.Steps), op, err)
		}
		g.observe(op, a, r)
		t.Steps = append(t.Steps, traces.Step{Op: op, At: g.at, Args: a, Result: r})
	}
	final := g.m.Snapshot()
	t.Final = &final
	if err := traces.Validate(t); err != nil {
		return nil, fmt.Errorf("genTrace: %w", err)
	}
	return t, nil
}

type gen struct {
	rng *rand.Rand
	// m runs the model in place, so a long trace is generated in linear time.
	m  *models.Machine
	at int64
	// leaseToks and claimToks are the tokens the model issued so far.
	leaseToks, claimToks []int
	outbox               []string
	// holding reports which workers hold a fetched delivery.
	holding map[int]bool
}

var (
	genMailboxes = []string{"a", "b"}
	genKeys      = []string{"", "", "k", "j"}
)

func (g *gen) id(prefix string, n int) string { return fmt.Sprintf("%s%d", prefix, 1+g.rng.IntN(n)) }

func (g *gen) token(toks []int) int {
	if len(toks) == 0 || g.rng.IntN(10) == 0 {
		return 1000 + g.rng.IntN(5)
	}
	return toks[g.rng.IntN(len(toks))]
}

func (g *gen) small() int64 { return int64(g.rng.IntN(4)) }

func (g *gen) pick() (traces.Op, traces.Args) {
	worker := 1 + g.rng.IntN(3)
	mailbox, profile := "a", traces.ProfileLeased
	if worker == 3 {
		mailbox, profile = "b", traces.ProfileLeaseless
	}
	switch g.rng.IntN(20) {
	case 0, 1, 2:
		return traces.OpEnqueue, traces.Args{Mailbox: genMailboxes[g.rng.IntN(2)], ID: g.id("m", 8), Key: genKeys[g.rng.IntN(4)],
			Priority: g.rng.IntN(3), MaxAttempts: 1 + g.rng.IntN(3), Delay: g.small(), Payload: g.id("p", 3)}
	case 3:
		return traces.OpLease, traces.Args{Mailbox: genMailboxes[g.rng.IntN(2)], LeaseFor: 1 + g.small()}
	case 4:
		return traces.OpPeek, traces.Args{Mailbox: genMailboxes[g.rng.IntN(2)]}
	case 5:
		return traces.OpAck, traces.Args{ID: g.id("m", 8), Token: g.token(g.leaseToks)}
	case 6:
		return traces.OpNack, traces.Args{ID: g.id("m", 8), Token: g.token(g.leaseToks), Delay: g.small()}
	case 7:
		if g.rng.IntN(2) == 0 {
			return traces.OpAckByID, traces.Args{ID: g.id("m", 8)}
		}
		return traces.OpNackByID, traces.Args{ID: g.id("m", 8), Delay: g.small()}
	case 8:
		return traces.OpExtend, traces.Args{ID: g.id("m", 8), Token: g.token(g.leaseToks), LeaseFor: 1 + g.small()}
	case 9:
		if g.rng.IntN(2) == 0 {
			return traces.OpExpire, traces.Args{}
		}
		return traces.OpDeadLetter, traces.Args{ID: g.id("m", 8), Reason: "manual"}
	case 10:
		return traces.OpOutboxEnqueue, traces.Args{ID: g.id("o", 5), Target: genMailboxes[g.rng.IntN(2)], Key: genKeys[g.rng.IntN(4)],
			Priority: g.rng.IntN(3), MaxAttempts: 1 + g.rng.IntN(3)}
	case 11:
		return traces.OpOutboxClaim, traces.Args{Limit: 1 + g.rng.IntN(3), ClaimFor: 1 + g.small()}
	case 12:
		if g.rng.IntN(2) == 0 {
			return traces.OpOutboxComplete, traces.Args{ID: g.id("o", 5), Token: g.token(g.claimToks)}
		}
		return traces.OpOutboxFail, traces.Args{ID: g.id("o", 5), Token: g.token(g.claimToks), Delay: g.small()}
	case 13, 14:
		if len(g.outbox) == 0 {
			return traces.OpAdvanceClock, traces.Args{}
		}
		faults := []string{traces.FaultNone, traces.FaultNone, traces.FaultCommitFails, traces.FaultCrashBetween}
		profiles := []string{traces.ProfileFold, traces.ProfileSplit}
		return traces.OpPublisherDeliver, traces.Args{Publisher: 1, ID: g.outbox[g.rng.IntN(len(g.outbox))], Token: g.token(g.claimToks),
			Profile: profiles[g.rng.IntN(2)], Fault: faults[g.rng.IntN(4)]}
	case 15, 16, 17:
		if g.holding[worker] {
			outcome := traces.OutcomeOK
			if g.rng.IntN(3) == 0 {
				outcome = traces.OutcomeFail
			}
			return traces.OpConsumerHandle, traces.Args{Worker: worker, Mailbox: mailbox, Profile: profile, Outcome: outcome, RetryDelay: g.small()}
		}
		a := traces.Args{Worker: worker, Mailbox: mailbox, Profile: profile}
		if profile == traces.ProfileLeased {
			a.LeaseFor = 1 + g.small()
		}
		return traces.OpConsumerFetch, a
	case 18:
		if g.rng.IntN(4) == 0 {
			return traces.OpCrash, traces.Args{}
		}
		return traces.OpConsumerHandle, traces.Args{Worker: worker, Mailbox: mailbox, Profile: profile, Outcome: traces.OutcomeOK}
	}
	// Processed-message marks with short ttls (so they expire and renew), checkpoint saves with
	// expected versions near the stored ones (so they both succeed and conflict), and loads, of
	// the effect logs too.
	switch g.rng.IntN(6) {
	case 0:
		return traces.OpMarkProcessed, traces.Args{Consumer: g.id("c", 2), ID: g.id("m", 3), TTL: 1 + g.small()}
	case 1:
		return traces.OpSaveCheckpoint, traces.Args{Actor: g.id("x", 2), ExpectVersion: g.rng.IntN(3), Payload: g.id("s", 3)}
	case 2:
		actor := g.id("x", 2)
		if g.rng.IntN(2) == 0 {
			actor = traces.EffectsActorPrefix + genMailboxes[g.rng.IntN(2)]
		}
		return traces.OpLoadCheckpoint, traces.Args{Actor: actor}
	}
	return traces.OpAdvanceClock, traces.Args{}
}

// observe tracks what later steps may refer to: issued tokens, outbox ids, workers' deliveries.
func (g *gen) observe(op traces.Op, a traces.Args, r traces.Result) {
	if r.Message != nil && r.Message.Token != 0 {
		g.leaseToks = append(g.leaseToks, r.Message.Token)
	}
	if len(r.Claimed) > 0 {
		g.claimToks = append(g.claimToks, r.Claimed[0].Token)
	}
	switch op {
	case traces.OpOutboxEnqueue:
		if !r.Duplicate {
			g.outbox = append(g.outbox, a.ID)
		}
	case traces.OpConsumerFetch:
		g.holding[a.Worker] = r.Message != nil
	case traces.OpConsumerHandle:
		g.holding[a.Worker] = false
	case traces.OpCrash:
		clear(g.holding)
	}
}
