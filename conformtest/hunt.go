package conformtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/modeltarget"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// huntSteps is the length of a generated trace before shrinking.
const huntSteps = 16

// huntDraws is the number of kinds of draw the generator makes (its switch's cases).
const huntDraws = 15

// hunt spends a budget of n random traces over n seeds, from seed on: each trace is drawn from a
// generator of its own seed, expected by the reference model under the profile, and replayed
// against a fresh target. Every distinct divergence (by [signature]) is shrunk and reported as
// a failing subtest seed-N, with the seed that reproduces it alone; a later seed that diverges
// the same way is only logged.
func (k *kit) hunt(t *testing.T, seed int64, n int) {
	if !k.anySupported() {
		t.Skip("the target supports none of the operations the hunt draws")
	}
	seen := map[string]int64{}
	var distinct, same int
	for i := range int64(n) {
		s := seed + i
		want, err := k.generate(rand.New(rand.NewPCG(uint64(s), 0)), fmt.Sprintf("hunt-seed%d", s))
		if err != nil {
			t.Fatalf("seed %d: %v", s, err)
		}
		v := k.replayOn(t, want, replay.Options{})
		if v.Outcome == replay.Match {
			continue
		}
		sig := signature(want, v)
		if first, ok := seen[sig]; ok {
			same++
			t.Logf("seed %d diverged as seed %d did (%s)", s, first, sig)
			continue
		}
		seen[sig] = s
		distinct++
		t.Run(fmt.Sprintf("seed-%d", s), func(t *testing.T) {
			small := k.shrink(t, want)
			v := k.replayOn(t, small, replay.Options{})
			t.Logf("diverged (%s); shrunk from %d to %d steps", sig, len(want.Steps), len(small.Steps))
			k.fail(t, small, v, replay.Options{}, fmt.Sprintf("hunt (seed %d: Config{Seed: %d, Hunts: 1} reproduces it on this commit): ", s, s))
		})
	}
	t.Logf("seeds %d to %d: %d distinct divergences, %d more traces diverged the same way", seed, seed+int64(n)-1, distinct, same)
}

// signature names the kind of a divergence, so that one bug met by several seeds is reported
// once: the diverging step's operation and which of its result fields differ (with both values
// for an error kind or an action), or the final snapshot's tables that differ.
func signature(tr *traces.Trace, v replay.Verdict) string {
	if v.Step == replay.FinalStep || v.Expected == nil || v.Observed == nil {
		var tables []string
		if e, o := v.ExpectedFinal, v.ObservedFinal; e != nil && o != nil {
			for _, d := range []struct {
				name string
				same bool
			}{
				{"messages", reflect.DeepEqual(e.Messages, o.Messages)},
				{"outbox", reflect.DeepEqual(e.Outbox, o.Outbox)},
				{"dead_letters", reflect.DeepEqual(e.DeadLetters, o.DeadLetters)},
				{"effects", reflect.DeepEqual(e.Effects, o.Effects)},
			} {
				if !d.same {
					tables = append(tables, d.name)
				}
			}
		}
		return "final snapshot: " + strings.Join(tables, ", ")
	}
	e, o := *v.Expected, *v.Observed
	var fields []string
	word := func(name, e, o string) {
		if e != o {
			fields = append(fields, fmt.Sprintf("%s %q, not %q", name, o, e))
		}
	}
	word("err", e.Err, o.Err)
	word("action", e.Action, o.Action)
	for _, f := range []struct {
		name string
		same bool
	}{
		{"duplicate", e.Duplicate == o.Duplicate},
		{"message", (e.Message == nil) == (o.Message == nil)},
		{"message.attempts", e.Message == nil || o.Message == nil || e.Message.Attempts == o.Message.Attempts},
		{"message.token", e.Message == nil || o.Message == nil || (e.Message.Token == 0) == (o.Message.Token == 0)},
		{"affected", e.Affected == o.Affected},
		{"claimed", len(e.Claimed) == len(o.Claimed)},
		{"attempt", e.Attempt == o.Attempt},
		{"version", e.Version == o.Version},
		{"redrives", len(e.Redrives) == len(o.Redrives)},
	} {
		if !f.same {
			fields = append(fields, f.name)
		}
	}
	if len(fields) == 0 {
		fields = append(fields, "tokens or ids")
	}
	op := tr.Steps[v.Step].Op
	if a := tr.Steps[v.Step].Args; a.Profile != "" {
		op += traces.Op("(" + a.Profile + ")")
	}
	return fmt.Sprintf("%s: %s", op, strings.Join(fields, "; "))
}

// shrink drops steps one at a time, from the end, while the shorter trace (re-expected by the
// model) still diverges; the setup a later step needs survives because dropping it stops the
// divergence or makes the trace invalid.
func (k *kit) shrink(t *testing.T, tr *traces.Trace) *traces.Trace {
	best := tr
	for changed := true; changed; {
		changed = false
		for i := len(best.Steps) - 1; i >= 0; i-- {
			shorter := *best
			shorter.Steps = append(append([]traces.Step(nil), best.Steps[:i]...), best.Steps[i+1:]...)
			cand, err := models.Reexpect(modelConfig(k.c.Profile), &shorter)
			if err != nil {
				continue // the shorter steps are no valid trace, or do not run on the model
			}
			if v, err := replay.Run(context.Background(), cand, k.target(t), replay.Options{}); err == nil && v.Outcome == replay.Diverged {
				best, changed = cand, true
			}
		}
	}
	return best
}

// generate draws a trace and its expectation: store-level operations the target supports, on two
// mailboxes, four message ids and two outbox ids, with small times so leases and claims end within
// the trace, and, when the target runs them, the protocol steps: consumer fetch-and-handle pairs,
// publisher deliveries of an inserted row with each fault (half of them right after a claim), and
// crashes. Each step runs on the
// reference model under the profile as it is drawn, so a token argument names a token the model
// issued (a live one or a stale one).
func (k *kit) generate(rng *rand.Rand, name string) (*traces.Trace, error) {
	ctx := context.Background()
	model := modeltarget.New(modelConfig(k.c.Profile))
	b := replay.NewBinder()
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	// token picks an issued symbol of op's namespace; false when none was issued yet.
	token := func(op traces.Op) (int, bool) {
		var syms []int
		for sym := range b.Bound(traces.Spec[op].Tokens) {
			syms = append(syms, sym)
		}
		if len(syms) == 0 {
			return 0, false
		}
		slices.Sort(syms)
		return syms[rng.IntN(len(syms))], true
	}
	var at int64
	var steps []traces.Step
	var rows []string // the outbox rows an outbox_enqueue inserted, in order
	for len(steps) < huntSteps {
		at += int64(rng.IntN(3))
		var s []traces.Step
		switch rng.IntN(huntDraws) {
		case 0, 1:
			s = []traces.Step{{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: pick("a", "b"), ID: pick("m1", "m2", "m3", "m4"),
				Key: pick("", "", "k"), Priority: rng.IntN(2), MaxAttempts: 1 + rng.IntN(3), Delay: int64(rng.IntN(2))}}}
		case 2:
			s = []traces.Step{{Op: traces.OpLease, Args: traces.Args{Mailbox: pick("a", "b"), LeaseFor: int64(1 + rng.IntN(4))}}}
		case 3:
			s = []traces.Step{{Op: traces.Op(pick(string(traces.OpAck), string(traces.OpNack), string(traces.OpExtend))), Args: traces.Args{ID: pick("m1", "m2", "m3", "m4")}}}
			if s[0].Op == traces.OpExtend {
				s[0].Args.LeaseFor = int64(1 + rng.IntN(4))
			}
		case 4:
			s = []traces.Step{{Op: traces.Op(pick(string(traces.OpAckByID), string(traces.OpNackByID))), Args: traces.Args{ID: pick("m1", "m2", "m3", "m4")}}}
		case 5:
			s = []traces.Step{{Op: traces.OpExpire}}
		case 6:
			s = []traces.Step{{Op: traces.OpPeek, Args: traces.Args{Mailbox: pick("a", "b")}}}
		case 7:
			s = []traces.Step{{Op: traces.OpDeadLetter, Args: traces.Args{ID: pick("m1", "m2", "m3", "m4"), Reason: "poison"}}}
		case 8:
			s = []traces.Step{{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: pick("o1", "o2"), Target: "a", MaxAttempts: 2, MaxDeliveryAttempts: 1 + rng.IntN(2)}}}
		case 9:
			s = []traces.Step{{Op: traces.OpOutboxClaim, Args: traces.Args{Limit: 1 + rng.IntN(2), ClaimFor: int64(1 + rng.IntN(4))}}}
		case 10:
			op := traces.Op(pick(string(traces.OpOutboxComplete), string(traces.OpOutboxFail), string(traces.OpOutboxDeadLetter)))
			s = []traces.Step{{Op: op, Args: traces.Args{ID: pick("o1", "o2")}}}
			if op == traces.OpOutboxDeadLetter {
				s[0].Args.Reason = "poison"
			}
		case 11:
			profile := pick(traces.ProfileLeased, traces.ProfileLeaseless)
			fetch := traces.Args{Worker: 1, Mailbox: pick("a", "b"), Profile: profile}
			if profile == traces.ProfileLeased {
				fetch.LeaseFor = int64(1 + rng.IntN(4))
			}
			handle := traces.Args{Worker: 1, Mailbox: fetch.Mailbox, Profile: profile, Outcome: pick(traces.OutcomeOK, traces.OutcomeFail, traces.OutcomeFailNoRetry)}
			if handle.Outcome == traces.OutcomeFail {
				handle.RetryDelay = int64(rng.IntN(3))
			}
			s = []traces.Step{{Op: traces.OpConsumerFetch, Args: fetch}, {Op: traces.OpConsumerHandle, Args: handle}}
		case 12, 13:
			// The publisher delivers a claimed row; a claim before it in the same draw makes a
			// token likely to be the row's live one.
			if len(rows) == 0 {
				continue // a delivery needs an outbox row
			}
			deliver := traces.Args{Publisher: 1, ID: rows[rng.IntN(len(rows))], Profile: pick(traces.ProfileFold, traces.ProfileSplit),
				Fault: pick(traces.FaultNone, traces.FaultCommitFails, traces.FaultCrashBetween, traces.FaultUndeliverable), RetryDelay: int64(rng.IntN(2))}
			s = []traces.Step{{Op: traces.OpPublisherDeliver, Args: deliver}}
			if rng.IntN(2) == 0 {
				s = append([]traces.Step{{Op: traces.OpOutboxClaim, Args: traces.Args{Limit: 2, ClaimFor: int64(1 + rng.IntN(4))}}}, s...)
			}
		case 14:
			s = []traces.Step{{Op: traces.OpCrash}}
		}
		ok := true
		for i := range s {
			s[i].At = at
			ok = ok && k.caps.Supports(s[i].Op)
		}
		if !ok {
			continue
		}
		for _, st := range s {
			if slices.Contains(traces.Spec[st.Op].Args, "token") {
				sym, issued := token(st.Op)
				if !issued {
					break // the draw's rest needs a token no step issued yet
				}
				st.Args.Token = sym
			}
			obs, err := model.Do(ctx, st.Op, st.At, replay.TargetArgs(st.Args, b.Arg(st.Op, st.Args.Token)))
			if err != nil {
				return nil, fmt.Errorf("the reference model refused a drawn step %s: %w", st.Op, err)
			}
			if st.Op == traces.OpOutboxEnqueue && obs.Err == "" && !slices.Contains(rows, st.Args.ID) {
				rows = append(rows, st.Args.ID)
			}
			st.Result = replay.Symbolize(b, nil, obs)
			steps = append(steps, st)
		}
	}
	snap, err := model.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	final := replay.SymbolizeSnapshot(b, snap)
	traces.Canonicalize(&final)
	tr := &traces.Trace{
		Format: traces.Format, Name: name,
		Origin: traces.Origin{Kind: traces.OriginProperty, TestCase: "conformtest.hunt"},
		Expect: traces.Expect{DivergesAt: -1, Profile: k.c.Profile}, Steps: steps, Final: &final,
	}
	return tr, traces.Validate(tr)
}

// anySupported reports whether the target runs any operation the generator draws.
func (k *kit) anySupported() bool {
	for _, op := range []traces.Op{traces.OpEnqueue, traces.OpLease, traces.OpExpire, traces.OpPeek, traces.OpOutboxEnqueue} {
		if k.caps.Supports(op) {
			return true
		}
	}
	return false
}
