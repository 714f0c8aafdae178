package traces

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"reflect"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	seedFlag   = flag.Int64("seed", 20260101, "seed for TestRoundTripRandom")
	tracesFlag = flag.Int("traces", 2000, "number of random traces TestRoundTripRandom generates")
)

// TestRoundTripRandom generates many valid random traces from one seed and checks that each
// encodes canonically and decodes back unchanged: Unmarshal(Marshal(t)) equals t, Marshal of that is
// byte-identical, and Hash ignores name and origin only.
//
// On failure the seed and trace number are printed; rerun with
//
//	go test ./traces -run TestRoundTripRandom -seed=N
//
// A seed reproduces a run only on the same commit, since the generator may change.
func TestRoundTripRandom(t *testing.T) {
	seed := *seedFlag
	rng := rand.New(rand.NewSource(seed))
	ops := map[Op]int{}
	for i := 0; i < *tracesFlag; i++ {
		tr := randomTrace(rng, i)
		for _, s := range tr.Steps {
			ops[s.Op]++
		}
		if err := roundTrip(tr); err != nil {
			t.Fatalf("trace #%d: %v\nrerun: go test ./traces -run TestRoundTripRandom -seed=%d", i, err, seed)
		}
	}
	for _, op := range Ops {
		if ops[op] == 0 {
			t.Errorf("the generator never produced %s (seed %d)", op, seed)
		}
	}
}

func roundTrip(tr *Trace) error {
	if err := Validate(tr); err != nil {
		return fmt.Errorf("generated an invalid trace: %w", err)
	}
	b, err := Marshal(tr)
	if err != nil {
		return fmt.Errorf("marshal: %w", err)
	}
	back, err := Unmarshal(b, "random")
	if err != nil {
		return fmt.Errorf("unmarshal: %w\n%s", err, b)
	}
	if !reflect.DeepEqual(tr, back) {
		return fmt.Errorf("decoded trace differs (-written +read):\n%s", cmp.Diff(tr, back))
	}
	b2, err := Marshal(back)
	if err != nil {
		return fmt.Errorf("marshal again: %w", err)
	}
	if !bytes.Equal(b, b2) {
		return fmt.Errorf("second encoding differs:\n%s\n%s", b, b2)
	}
	h1, err := Hash(tr)
	if err != nil {
		return err
	}
	renamed := *back
	renamed.Name += "-copy"
	renamed.Origin = Origin{Kind: OriginHand, Command: "elsewhere"}
	h2, err := Hash(&renamed)
	if err != nil {
		return err
	}
	if h1 != h2 {
		return fmt.Errorf("hash depends on name or origin: %s vs %s", h1, h2)
	}
	return nil
}

// gen builds random valid traces. It does not simulate the store: results are plausible in shape
// (fresh tokens, consistent actions) but not what a store would return, which is all the format
// needs.
type gen struct {
	r *rand.Rand
	// next symbol per token namespace; tokens holds the symbols results have issued.
	next   [2]int
	tokens [2][]int
}

// Strings draw from pieces that stress the encoder: quotes, backslashes, control characters,
// HTML-sensitive characters, multi-byte runes and the JavaScript line separators.
var pieces = []string{"a", "b", "inbox", "m", "-", "_", " ", "\"", "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f",
	"<", ">", "&", "é", "日本", "🙂", "\u2028", "\u2029", "\ufffd", "0", "9"}

func (g *gen) str(nonEmpty bool) string {
	n := g.r.Intn(4)
	if nonEmpty && n == 0 {
		n = 1
	}
	s := ""
	for range n {
		s += pieces[g.r.Intn(len(pieces))]
	}
	return s
}

func (g *gen) small(lo, hi int) int { return lo + g.r.Intn(hi-lo+1) }

func (g *gen) maybe(p float64) bool { return g.r.Float64() < p }

func (g *gen) int64() int64 {
	switch g.r.Intn(4) {
	case 0:
		return 0
	case 1:
		return g.r.Int63() - g.r.Int63()
	default:
		return int64(g.small(-5, 5))
	}
}

// issue returns a fresh symbol and records it as issued.
func (g *gen) issue(ns int) int {
	g.next[ns]++
	g.tokens[ns] = append(g.tokens[ns], g.next[ns])
	return g.next[ns]
}

// argToken is a token an argument names: none, one issued earlier, or one never issued.
func (g *gen) argToken(ns int) int {
	switch {
	case g.maybe(0.1):
		return 0
	case len(g.tokens[ns]) > 0 && g.maybe(0.8):
		return g.tokens[ns][g.r.Intn(len(g.tokens[ns]))]
	default:
		g.next[ns]++ // named but never issued: it can never be issued afterwards
		return g.next[ns]
	}
}

func (g *gen) pick(options ...string) string { return options[g.r.Intn(len(options))] }

func randomTrace(r *rand.Rand, i int) *Trace {
	g := &gen{r: r}
	t := &Trace{
		Format: Format,
		Name:   "random-" + strconv.Itoa(i) + g.str(false),
		Origin: Origin{Kind: g.pick(OriginPChecker, OriginProperty, OriginHand, OriginObserved)},
		Expect: Expect{DivergesAt: -1},
	}
	if g.maybe(0.5) {
		t.Origin.TestCase = g.str(false)
		t.Origin.Seed = g.int64()
		t.Origin.Schedule = g.small(0, 100)
		t.Origin.Command = g.str(false)
		t.Origin.Model = g.str(false)
	}
	n := g.small(0, 40)
	t.Steps = make([]Step, n)
	at := int64(g.small(0, 3))
	for j := range t.Steps {
		if g.maybe(0.4) {
			at += int64(g.small(0, 30))
		}
		t.Steps[j] = g.step(Ops[g.r.Intn(len(Ops))], at)
	}
	if n > 0 && g.maybe(0.3) {
		t.Expect = Expect{Variant: g.pick("split-write", "raw-attempts", "x_2"), DivergesAt: g.small(-1, n-1)}
	}
	if g.maybe(0.8) {
		t.Final = g.snapshot()
	}
	return t
}

func (g *gen) step(op Op, at int64) Step {
	s := Step{Op: op, At: at}
	a, res := &s.Args, &s.Result
	mailbox := func() string { return g.pick("inbox", "orders", "q") + g.str(false) }
	id := func() string { return g.str(true) }
	switch op {
	case OpEnqueue, OpOutboxEnqueue:
		if op == OpEnqueue {
			a.Mailbox = mailbox()
			if g.maybe(0.3) {
				a.Delay = int64(g.small(0, 20))
			}
		} else {
			a.Target = mailbox()
			if g.maybe(0.3) {
				a.MaxDeliveryAttempts = g.small(1, 10)
			}
		}
		a.ID, a.MaxAttempts = id(), g.small(1, 5)
		if g.maybe(0.4) {
			a.Key = g.str(false)
		}
		if g.maybe(0.3) {
			a.Priority = g.small(-3, 3)
		}
		if g.maybe(0.4) {
			a.Payload = g.str(false)
		}
		res.Duplicate = g.maybe(0.3)
	case OpLease:
		a.Mailbox, a.LeaseFor = mailbox(), int64(g.small(1, 30))
		if g.maybe(0.7) {
			res.Message = &Message{ID: id(), Attempts: g.small(1, 5), Token: g.issue(leaseTokens)}
		}
	case OpPeek:
		a.Mailbox = mailbox()
		if g.maybe(0.7) {
			res.Message = &Message{ID: id(), Attempts: g.small(0, 5)}
		}
	case OpAck, OpNack, OpExtend:
		a.ID, a.Token = id(), g.argToken(leaseTokens)
		if op == OpNack && g.maybe(0.5) {
			a.Delay = int64(g.small(0, 10))
		}
		if op == OpExtend {
			a.LeaseFor = int64(g.small(1, 30))
		}
		if g.maybe(0.4) {
			res.Err = ErrKindLeaseLost
		}
	case OpAckByID, OpNackByID, OpDeadLetter, OpRedrive:
		a.ID = id()
		if op == OpNackByID && g.maybe(0.5) {
			a.Delay = int64(g.small(0, 10))
		}
		if op == OpDeadLetter || op == OpRedrive {
			a.Reason = g.str(true)
		}
		if g.maybe(0.4) {
			res.Err = ErrKindNotFound
		}
	case OpExpire:
		res.Affected = g.small(0, 3)
	case OpPurge:
		a.Limit = g.small(1, 4)
		if g.maybe(0.5) {
			a.OlderThan = int64(g.small(0, 20))
		}
		if g.maybe(0.5) {
			a.Horizon = int64(g.small(0, 60))
		}
		res.Affected = g.small(0, 6)
	case OpOutboxClaim:
		a.Limit, a.ClaimFor = g.small(1, 4), int64(g.small(1, 20))
		if k := g.small(0, a.Limit); k > 0 {
			tok := g.issue(claimTokens)
			for j := range k {
				res.Claimed = append(res.Claimed, Claimed{ID: g.str(false) + "#" + strconv.Itoa(j), DeliveryAttempts: g.small(1, 4), Token: tok})
			}
		}
	case OpOutboxComplete, OpOutboxFail, OpOutboxDeadLetter:
		a.ID, a.Token = id(), g.argToken(claimTokens)
		if op == OpOutboxFail && g.maybe(0.5) {
			a.Delay = int64(g.small(0, 10))
		}
		if op == OpOutboxDeadLetter {
			a.Reason = g.str(true)
		}
		if g.maybe(0.4) {
			res.Err = ErrKindClaimLost
		}
	case OpAdvanceClock, OpCrash:
	case OpMarkProcessed:
		a.Consumer, a.ID, a.TTL = g.str(true), id(), int64(g.small(1, 60))
		res.Duplicate = g.maybe(0.4)
	case OpSaveCheckpoint, OpLoadCheckpoint:
		a.Actor = g.str(true)
		if op == OpLoadCheckpoint && g.maybe(0.3) {
			a.Actor = EffectsActorPrefix + mailbox()
		}
		if op == OpSaveCheckpoint {
			a.ExpectVersion = g.small(0, 4)
			if g.maybe(0.5) {
				a.Payload = g.str(false)
			}
		}
		if g.maybe(0.4) {
			res.Err = Spec[op].Err
		} else {
			res.Version = g.small(1, 5)
		}
	case OpListRedrives:
		if g.maybe(0.5) {
			a.ID = id()
		}
		var last int64
		for range g.small(0, 3) {
			r := RedriveRecord{ID: a.ID, Kind: g.pick(RedriveKinds...), Mailbox: mailbox(), Attempts: g.small(0, 5),
				DeadReason: g.str(false), Reason: g.str(true), At: last + int64(g.small(0, 2))}
			if r.ID == "" {
				r.ID = id()
			}
			r.At = min(r.At, at)
			last = r.At
			res.Redrives = append(res.Redrives, r)
		}
	case OpConsumerFetch:
		a.Worker, a.Mailbox, a.Profile = g.small(0, 3), mailbox(), g.pick(ProfileLeased, ProfileLeaseless)
		if a.Profile == ProfileLeased {
			a.LeaseFor = int64(g.small(1, 30))
		}
		if g.maybe(0.7) {
			if a.Profile == ProfileLeased {
				res.Message = &Message{ID: id(), Attempts: g.small(1, 5), Token: g.issue(leaseTokens)}
			} else {
				res.Message = &Message{ID: id(), Attempts: g.small(0, 5)}
			}
		}
	case OpConsumerHandle:
		a.Worker, a.Mailbox = g.small(0, 3), mailbox()
		a.Profile, a.Outcome = g.pick(ProfileLeased, ProfileLeaseless), g.pick(OutcomeOK, OutcomeFail)
		if g.maybe(0.5) {
			a.RetryDelay = int64(g.small(0, 10))
		}
		if g.maybe(0.2) {
			a.Outcome, a.RetryDelay, a.Reason = OutcomeFailNoRetry, 0, g.pick("", "disk full", "bad \"payload\"")
		}
		a.Fault = g.pick("", FaultNone, FaultCommitFails)
		switch {
		case a.Fault == FaultCommitFails:
			res.Action = g.pick(ActionCommitFailed, ActionIdle)
		case a.Outcome == OutcomeOK:
			res.Action = g.pick(ActionAcked, ActionLeaseLost, ActionIdle)
		case a.Outcome == OutcomeFailNoRetry:
			res.Action = g.pick(ActionDeadLettered, ActionLeaseLost, ActionIdle)
			if res.Action != ActionIdle {
				res.Attempt = g.small(0, 5)
			}
		default:
			res.Action = g.pick(ActionRetried, ActionDeadLettered, ActionLeaseLost, ActionIdle)
			if res.Action != ActionIdle {
				res.Attempt = g.small(0, 5)
			}
		}
	case OpPublisherDeliver:
		a.Publisher, a.ID, a.Token = g.small(0, 2), id(), g.argToken(claimTokens)
		a.Profile, a.Fault = g.pick(ProfileFold, ProfileSplit), g.pick(FaultNone, FaultCommitFails, FaultCrashBetween, FaultUndeliverable)
		res.Action = map[string]string{FaultNone: ActionDelivered, FaultCommitFails: ActionCommitFailed, FaultCrashBetween: ActionCrashed,
			FaultUndeliverable: ActionDeadLettered}[a.Fault]
		if g.maybe(0.3) {
			a.RetryDelay = int64(g.small(0, 10))
		}
		if g.maybe(0.3) {
			res.Action = ActionClaimLost
		}
		res.Duplicate = g.maybe(0.3)
	case OpConsumerFetchBatch:
		a.Worker, a.Mailbox, a.Profile, a.Size = g.small(0, 3), mailbox(), g.pick(ProfileLeased, ProfileLeaseless), g.small(1, 4)
		if a.Profile == ProfileLeased {
			a.LeaseFor = int64(g.small(1, 30))
		}
		for j := range g.small(0, a.Size) {
			m := Message{ID: id() + "#" + strconv.Itoa(j), Attempts: g.small(0, 5)}
			if a.Profile == ProfileLeased {
				m.Attempts, m.Token = g.small(1, 5), g.issue(leaseTokens)
			}
			res.Messages = append(res.Messages, m)
		}
	case OpConsumerHandleBatch:
		a.Worker, a.Mailbox, a.Profile = g.small(0, 3), mailbox(), g.pick(ProfileLeased, ProfileLeaseless)
		a.Fault = g.pick(FaultNone, FaultCommitFails)
		if g.maybe(0.5) {
			a.RetryDelay = int64(g.small(0, 10))
		}
		idle := g.maybe(0.2)
		for range g.small(1, 4) {
			o := g.pick(OutcomeOK, OutcomeFail, OutcomeFailNoRetry)
			a.Outcomes = append(a.Outcomes, o)
			reason := ""
			if o == OutcomeFailNoRetry {
				reason = g.pick("", "disk full")
			}
			a.Reasons = append(a.Reasons, reason)
			if idle {
				continue
			}
			act := map[string]string{OutcomeOK: ActionAcked, OutcomeFail: ActionRetried, OutcomeFailNoRetry: ActionDeadLettered}[o]
			switch {
			case a.Fault == FaultCommitFails:
				act = ActionCommitFailed
			case g.maybe(0.2):
				act = ActionLeaseLost
			}
			res.Actions = append(res.Actions, act)
		}
	case OpConsumerEffectsBatch:
		a.Worker, a.Mailbox, a.Fault = g.small(0, 3), mailbox(), g.pick(FaultNone, FaultCommitFails)
		for j := range g.small(0, 3) {
			res.Effects = append(res.Effects, id()+"#"+strconv.Itoa(j))
		}
	case OpPublisherDeliverBatch:
		a.Publisher, a.Token = g.small(0, 2), g.argToken(claimTokens)
		a.Fault = g.pick(FaultNone, FaultCommitFails, FaultCrashBetween)
		if g.maybe(0.3) {
			a.RetryDelay = int64(g.small(0, 10))
		}
		for j := range g.small(1, 4) {
			a.IDs = append(a.IDs, id()+"#"+strconv.Itoa(j))
			act := map[string]string{FaultNone: ActionDelivered, FaultCommitFails: ActionCommitFailed, FaultCrashBetween: ActionCrashed}[a.Fault]
			if g.maybe(0.2) {
				act = ActionClaimLost
			}
			res.Actions = append(res.Actions, act)
			res.Duplicates = append(res.Duplicates, g.maybe(0.3))
		}
	case OpWorkerStop:
		a.Worker = g.small(0, 3)
	case OpWorkerDrain:
		a.Worker, a.Outcome = g.small(0, 3), g.pick(OutcomeDrained, OutcomeTimedOut)
	case OpWake:
		a.Worker, a.Mailbox, a.ID, a.Profile = g.small(0, 3), mailbox(), id(), g.pick(WakeLocal, WakeNotify)
		if g.maybe(0.2) {
			res.Err = ErrKindNotCommitted
		}
	case OpPollTick:
		a.Worker, a.Mailbox = g.small(0, 3), mailbox()
		if g.maybe(0.2) {
			res.Err = ErrKindWakeNotFetched
		}
	}
	return s
}

func (g *gen) snapshot() *Snapshot {
	s := &Snapshot{}
	for j := range g.small(0, 5) {
		maxAtt := g.small(1, 5)
		r := MessageRow{
			Mailbox: g.pick("inbox", "orders", "q"), ID: g.str(false) + "#m" + strconv.Itoa(j),
			State: g.pick(StateReady, StateAcked), Attempts: g.small(0, maxAtt), MaxAttempts: maxAtt,
			AvailableAt: int64(g.small(0, 100)),
		}
		if g.maybe(0.3) {
			r.Key, r.Priority, r.Payload = g.str(false), g.small(-2, 2), g.str(false)
		}
		if toks := g.tokens[leaseTokens]; len(toks) > 0 && g.maybe(0.4) {
			r.Token, r.LeaseUntil = toks[g.r.Intn(len(toks))], int64(g.small(0, 100))
		}
		s.Messages = append(s.Messages, r)
	}
	for j := range g.small(0, 4) {
		r := OutboxRow{
			ID: g.str(false) + "#o" + strconv.Itoa(j), Target: g.pick("inbox", "orders"), MaxAttempts: g.small(1, 4),
			State: g.pick(StatePending, StateCompleted, StateDeadLetter), DeliveryAttempts: g.small(0, 4), AvailableAt: int64(g.small(0, 100)),
		}
		if r.State == StateDeadLetter {
			r.Reason = g.pick(ReasonMaxDeliveryAttempts, ReasonUndeliverable, "poison"+g.str(false))
		}
		if g.maybe(0.3) {
			r.Key, r.Priority, r.Payload = g.str(false), g.small(-2, 2), g.str(false)
		}
		if toks := g.tokens[claimTokens]; len(toks) > 0 && g.maybe(0.4) {
			r.Token, r.ClaimUntil = toks[g.r.Intn(len(toks))], int64(g.small(0, 100))
		}
		s.Outbox = append(s.Outbox, r)
	}
	for j := range g.small(0, 3) {
		d := DeadLetterRow{
			Mailbox: g.pick("inbox", "orders"), ID: g.str(false) + "#d" + strconv.Itoa(j),
			MaxAttempts: g.small(1, 5), Reason: g.pick(ReasonMaxAttempts, ReasonLeaseExpired, "poison"+g.str(false)),
			DeadAt: int64(g.small(0, 100)),
		}
		d.Attempts = g.small(0, d.MaxAttempts)
		if g.maybe(0.3) {
			d.Key, d.Priority, d.Payload = g.str(false), g.small(-2, 2), g.str(false)
		}
		s.DeadLetters = append(s.DeadLetters, d)
	}
	if g.maybe(0.6) {
		s.Effects = map[string][]string{}
		for range g.small(0, 3) {
			mb := g.pick("inbox", "orders") + g.str(false)
			for range g.small(0, 3) {
				s.Effects[mb] = append(s.Effects[mb], g.str(true))
			}
		}
	}
	Canonicalize(s)
	return s
}
