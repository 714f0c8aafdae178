package rulecopies_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// The P copies live in these files of the P project.
const (
	rulesP    = "models/p/PSrc/Rules.p"
	consumerP = "models/p/PSpec/Consumer.p"
	storeP    = "models/p/PSrc/Store.p"
)

// pCasePrefix begins the name of every test case pSource writes; pCaseName adds a fixed-width
// number, so that no name is a prefix of another (p check -tc matches prefixes).
const pCasePrefix = "tcRuleCopy"

func pCaseName(i int) string { return fmt.Sprintf("%s%03d", pCasePrefix, i) }

// A pCase is one evaluation of a P copy of a rule on one boundary case. want is what the rule's
// Go statement gives there. A function case calls the copy and asserts it gives want; a monitor
// case announces the case's spec events to the monitor, which must refuse them exactly when want
// is true.
type pCase struct {
	copy    string // the P copy, with its file
	name    string // the case
	monitor string // the monitor a monitor case asserts; "" for a function case
	body    string // the test machine's entry: P statements
	want    any    // bool or int; for a decision case, the verdict
	// decision marks a case of the Store machine's consumer decision: its body drives a Store and
	// announces the verdict to decisionProbe, which refuses any other.
	decision bool
}

// pLiteral writes a Go bool or int as a P literal.
func pLiteral(v any) string {
	switch v := v.(type) {
	case bool:
		return fmt.Sprint(v)
	case int, int64:
		return fmt.Sprint(v)
	}
	panic(fmt.Sprintf("rulecopies: no P literal for %T", v))
}

// fnCase is a case of a rule function of Rules.p: expr, a P expression calling it, must be want.
func fnCase(fn, name, expr string, want any) pCase {
	typ := "int"
	if _, ok := want.(bool); ok {
		typ = "bool"
	}
	body := fmt.Sprintf("var got: %s;\ngot = %s;\nassert got == %s, format(\"{0}\", got);\n", typ, expr, pLiteral(want))
	return pCase{copy: fn + " (" + rulesP + ")", name: name, body: body, want: want}
}

// pRow is a mailbox row of mailbox "a" as P's tMsg, available since t=0.
type pRow struct {
	id, key, state               string
	attempts, maxAttempts, token int
	until                        int64
	seq                          int
}

func (r pRow) literal() string {
	return fmt.Sprintf(`(mailbox = "a", id = "%s", key = "%s", priority = 0, payload = "", row_state = "%s", attempts = %d, max_attempts = %d, available_at = 0, token = %d, lease_until = %d, seqno = %d)`,
		r.id, r.key, r.state, r.attempts, r.maxAttempts, r.token, r.until, r.seq)
}

// announce is the P statement that announces r as eSpecRow at at, written by the bridge as its
// P drivers write it.
func (r pRow) announce(t *testing.T, at int64) string {
	return announceP(t, bridge.SpecEvent{Kind: bridge.SpecRow, Values: []any{at, "a", r.id, r.key, int64(0), "", r.state,
		int64(r.attempts), int64(r.maxAttempts), int64(0), int64(r.token), r.until, int64(r.seq)}})
}

func announceP(t *testing.T, ev bridge.SpecEvent) string {
	t.Helper()
	s, err := bridge.PAnnounce(ev)
	if err != nil {
		t.Fatal(err)
	}
	return s + "\n"
}

// A keyedHead is m1, the earlier message of key k, as a blocking case leaves it, with m2 after it.
type keyedHead struct {
	name        string
	maxAttempts int
	leased      bool // leased at t=0 until t=leaseFor, on its first attempt
	acked       bool // acked after its lease
	nows        []int64
}

var keyedHeads = []keyedHead{
	{"ready, never leased, attempts left", 3, false, false, []int64{leaseFor}},
	{"leased, attempts left", 3, true, false, []int64{leaseFor - 1, leaseFor, leaseFor + 1}},
	{"leased on its last attempt", 1, true, false, []int64{leaseFor - 1, leaseFor, leaseFor + 1}},
	{"acked", 3, true, true, []int64{leaseFor}},
}

// row is the head's row as the P model holds it.
func (h keyedHead) row() pRow {
	r := pRow{id: "m1", key: "k", state: "ready", maxAttempts: h.maxAttempts, seq: 1}
	if h.leased {
		r.attempts, r.token, r.until = 1, 1, leaseFor
	}
	if h.acked {
		r.state, r.token, r.until = "acked", 0, 0
	}
	return r
}

// modelBlocks is the blocking rule as the Go reference model states it: under p, with the head
// as h leaves it and m2 enqueued after it, a peek at now does not give m2.
func modelBlocks(t *testing.T, p profile.Profile, h keyedHead, now int64) bool {
	t.Helper()
	steps := []traces.Step{
		{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "a", ID: "m1", Key: "k", MaxAttempts: h.maxAttempts}},
		{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "a", ID: "m2", Key: "k", MaxAttempts: 3}},
	}
	if h.leased {
		steps = append(steps, traces.Step{Op: traces.OpLease, Args: traces.Args{Mailbox: "a", LeaseFor: leaseFor},
			Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}})
	}
	if h.acked {
		steps = append(steps, traces.Step{Op: traces.OpAck, Args: traces.Args{ID: "m1", Token: 1}})
	}
	steps = append(steps, traces.Step{Op: traces.OpPeek, At: now, Args: traces.Args{Mailbox: "a"}})
	tr := &traces.Trace{Format: traces.Format, Name: "blocks", Expect: traces.Expect{DivergesAt: -1, Profile: p}, Steps: steps}
	results, _, err := models.RunTrace(models.Config{Profile: p}, tr)
	if err != nil && len(results) < len(steps) {
		t.Fatalf("models: %v", err)
	}
	if h.leased && (results[2].Message == nil || results[2].Message.ID != "m1") {
		t.Fatalf("models under %s: the head's lease gave %+v; want m1", p, results[2].Message)
	}
	got := results[len(steps)-1].Message
	return got == nil || got.ID != "m2"
}

// pCases are the boundary cases of every P copy under p, each with the value of its rule's Go
// statement under p.
func pCases(t *testing.T, p profile.Profile) []pCase {
	var cs []pCase
	lease := pRow{id: "m1", state: "ready", attempts: 1, maxAttempts: 3, token: 1, until: leaseFor, seq: 1}
	unleased := pRow{id: "m1", state: "ready", maxAttempts: 3, seq: 1}
	claim := func(token int, until int64) string {
		return fmt.Sprintf(`(id = "o1", target = "t", key = "", priority = 0, max_attempts = 3, payload = "", row_state = "pending", delivery_attempts = %d, available_at = 0, token = %d, claim_until = %d, seqno = 1, max_delivery_attempts = 3, dead_reason = "")`,
			token, token, until)
	}

	// The lease-live rule, for a lease and for an outbox claim: profile.Held.
	for _, c := range leaseCases {
		name := fmt.Sprintf("%s (until t=%d, now t=%d)", c.name, leaseFor, c.now)
		want := p.Held(1, leaseFor, c.now)
		cs = append(cs, fnCase("LeaseLive", name, fmt.Sprintf("LeaseLive(%s, %d)", lease.literal(), c.now), want),
			fnCase("ClaimLive", name, fmt.Sprintf("ClaimLive(%s, %d)", claim(1, leaseFor), c.now), want))
	}
	cs = append(cs, fnCase("LeaseLive", "no lease (token 0, now t=0)", fmt.Sprintf("LeaseLive(%s, 0)", unleased.literal()), p.Held(0, 0, 0)),
		fnCase("ClaimLive", "no claim (token 0, now t=0)", fmt.Sprintf("ClaimLive(%s, 0)", claim(0, 0)), p.Held(0, 0, 0)))

	// LeaseEnds: the first time at which a lease is no longer held, by profile.Held.
	ends := int64(leaseFor - 1)
	for p.Held(1, leaseFor, ends) {
		ends++
	}
	cs = append(cs, fnCase("LeaseEnds", fmt.Sprintf("the first time a lease until t=%d is not held", leaseFor),
		fmt.Sprintf("LeaseEnds(%d)", leaseFor), int(ends)))

	// The blocking rule, in Rules.p and in the monitor that judges keyed leases by it: the Go
	// reference model's peek.
	for _, h := range keyedHeads {
		for _, now := range h.nows {
			name := fmt.Sprintf("keyed head %s (until t=%d), now t=%d", h.name, h.row().until, now)
			want := modelBlocks(t, p, h, now)
			cs = append(cs, fnCase("BlocksSuccessor", name, fmt.Sprintf(`BlocksSuccessor(%s, %d, "")`, h.row().literal(), now), want))
			next := pRow{id: "m2", key: "k", state: "ready", attempts: 1, maxAttempts: 3, token: 2, until: now + leaseFor, seq: 2}
			body := h.row().announce(t, 0) + next.announce(t, now) +
				announceP(t, bridge.SpecEvent{Kind: bridge.SpecLeased, Values: []any{now, "a", "m2"}})
			cs = append(cs, pCase{copy: "monitor SameKeyClaimsRespectLiveHead (" + consumerP + ")", monitor: "SameKeyClaimsRespectLiveHead",
				name: name + ", m2 leased", body: body, want: want})
		}
	}

	// The lease rule in the monitor that fences a stale worker's dead letter: another worker's
	// lease (token 2, until t=leaseFor) is live by profile.Held.
	for _, c := range append(leaseCases, leaseCase{"no lease on the row", leaseFor}) {
		row := pRow{id: "m1", state: "ready", attempts: 2, maxAttempts: 3, token: 2, until: leaseFor, seq: 1}
		if c.name == "no lease on the row" {
			row.token, row.until = 0, 0
		}
		body := row.announce(t, 0) +
			announceP(t, bridge.SpecEvent{Kind: bridge.SpecHandled, Values: []any{c.now, int64(1), "m1", int64(1), traces.ActionDeadLettered}})
		cs = append(cs, pCase{copy: "monitor DeadLetterSparesLiveLeases (" + consumerP + ")", monitor: "DeadLetterSparesLiveLeases",
			name: fmt.Sprintf("worker 1 (token 1) dead-letters m1 at t=%d; %s (token %d, until t=%d)", c.now, c.name, row.token, row.until),
			body: body, want: p.Held(row.token, row.until, c.now)})
	}

	// The attempts rule: actordelivery.EffectiveAttempts on every stored count a fetched message
	// can carry (max_attempts 3), on each path's consumer profile.
	for _, c := range []struct {
		profile string
		path    actordelivery.Path
		lo, hi  int
	}{{"Leased", actordelivery.PathLeased, 1, 3}, {"Leaseless", actordelivery.PathLeaseless, 0, 2}} {
		for stored := c.lo; stored <= c.hi; stored++ {
			cs = append(cs, fnCase("EffectiveAttempt", fmt.Sprintf("%s, stored %d of max 3", c.profile, stored),
				fmt.Sprintf("EffectiveAttempt(%s, %d, 3)", c.profile, stored), actordelivery.EffectiveAttempts(stored, c.path)))
		}
	}
	return cs
}

// decisionProbe is the monitor of the decision cases, written into every generated file: it holds
// the Store's handle of the probed message to the verdict the case announced before it
// (eProbeExpect), and at eProbeDone requires that it saw what that verdict implies: the handle
// (its action and, on a failure, its effective attempt), the dead letter (reason and attempts) or
// the retried row (its available_at after the handle's time).
const decisionProbe = `
event eProbeExpect: (action: string, attempt: int, reason: string, dead_attempts: int, delay: int);
event eProbeDone;

spec DecisionProbe observes eProbeExpect, eObsConsumerHandle, eSpecDeadLettered, eSpecRow, eProbeDone {
  var want: (action: string, attempt: int, reason: string, dead_attempts: int, delay: int);
  var armed: bool;
  var handled: bool;
  var handledAt: int;
  var dead: bool;
  var retried: bool;
  start state Watching {
    on eProbeExpect do (w: (action: string, attempt: int, reason: string, dead_attempts: int, delay: int)) {
      want = w;
      armed = true;
    }
    on eObsConsumerHandle do (h: (at: int, worker: int, mailbox: string, profile: string, outcome: string,
                                  retry_delay: int, fault: string, reason: string, action: string, attempt: int, bug: bool)) {
      if (armed) {
        assert h.action == want.action, format("P gives action {0}, want {1}", h.action, want.action);
        assert want.action == "acked" || h.attempt == want.attempt,
          format("P gives {0} at attempt {1}, want attempt {2}", h.action, h.attempt, want.attempt);
        handled = true;
        handledAt = h.at;
      }
    }
    on eSpecDeadLettered do (d: (at: int, mailbox: string, id: string, attempts: int, max_attempts: int, reason: string)) {
      if (handled && d.id == "m") {
        assert d.reason == want.reason, format("P dead-letters with reason {0}, want {1}", d.reason, want.reason);
        assert d.attempts == want.dead_attempts,
          format("P's dead letter records attempts {0}, want {1}", d.attempts, want.dead_attempts);
        dead = true;
      }
    }
    on eSpecRow do (r: (at: int, row: tMsg)) {
      if (handled && r.row.id == "m" && want.action == "retried") {
        assert r.row.available_at - handledAt == want.delay,
          format("P retries after {0}s, want {1}s", r.row.available_at - handledAt, want.delay);
        retried = true;
      }
    }
    on eProbeDone do {
      assert handled, "the Store announced no handle of m";
      assert want.action != "dead_lettered" || dead, "the Store announced no dead letter of m";
      assert want.action != "retried" || retried, "the Store announced no retried row of m";
    }
  }
}
`

// decisionPCases are the consumer decision's traceable cases (the P consumer fails with the
// reason "handler failed" and a delay that is never negative) as P test cases of the Store
// machine's handle (HandleFetched in Store.p, for the single and the batch handle): each enqueues
// m with the case's max_attempts, brings its stored attempts to the case's count through the
// store's own requests (leased: lease and nack; leaseless: nack_by_id), fetches it on the case's
// path and handles it with the case's outcome. The verdict is decide's under p.
func decisionPCases(p profile.Profile) []pCase {
	var cs []pCase
	for _, c := range decisionCases() {
		if !c.traceable() {
			continue
		}
		want := decide(p, c)
		var b strings.Builder
		b.WriteString("var store: machine;\nvar token: int;\n")
		b.WriteString(`store = new Store("");` + "\n")
		fmt.Fprintf(&b, `send store, eEnqueueReq, (client = this, mailbox = "a", id = "m", key = "", priority = 0, max_attempts = %d, delay = 0, payload = "");`+"\n", c.maxAttempts)
		b.WriteString("receive { case eReply: (r: tReply) { } }\n")
		prof := "Leaseless"
		if c.leaseless() {
			for range c.stored {
				b.WriteString(`send store, eNackByIdReq, (client = this, id = "m", delay = 0);` + "\n")
				b.WriteString("receive { case eReply: (r: tReply) { } }\n")
			}
		} else {
			prof = "Leased"
			for range c.stored - 1 {
				fmt.Fprintf(&b, `send store, eLeaseReq, (client = this, mailbox = "a", lease_for = %d);`+"\n", fetchLease)
				b.WriteString("receive { case eReply: (r: tReply) { token = r.msg_token; } }\n")
				b.WriteString(`send store, eNackReq, (client = this, id = "m", token = token, delay = 0);` + "\n")
				b.WriteString("receive { case eReply: (r: tReply) { } }\n")
			}
		}
		fmt.Fprintf(&b, `send store, eFetchReq, (client = this, worker = 1, mailbox = "a", profile = %s, lease_for = %d);`+"\n", prof, fetchLease)
		b.WriteString(`receive { case eReply: (r: tReply) { assert r.msg_id == "m", format("the fetch gave {0}, want m", r.msg_id); } }` + "\n")
		fmt.Fprintf(&b, `announce eProbeExpect, (action = "%s", attempt = %d, reason = "%s", dead_attempts = %d, delay = %d);`+"\n",
			want.action, want.attempt, want.reason, want.deadAttempts, want.delay)
		fmt.Fprintf(&b, `send store, eHandleReq, (client = this, worker = 1, mailbox = "a", profile = %s, outcome = "%s", retry_delay = %d, fault = "");`+"\n",
			prof, c.outcome(), c.retryDelay())
		b.WriteString("receive { case eReply: (r: tReply) { } }\n")
		b.WriteString("announce eProbeDone;\n")
		cs = append(cs, pCase{copy: "the consumer decision, HandleFetched (" + storeP + ")", name: c.String(),
			monitor: "DecisionProbe", body: b.String(), want: want, decision: true})
	}
	return cs
}

// pSource is the P file of cs: a test machine and a test case per case, named pCaseName(i).
func pSource(p profile.Profile, cs []pCase) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "// Generated by internal/rulecopies (TestPRuleCopiesAgree) under profile %s: each test case\n", p)
	b.WriteString("// evaluates one P copy of a rule on one boundary case against the value of its Go statement.\n")
	b.WriteString(decisionProbe)
	for i, c := range cs {
		m := fmt.Sprintf("RuleCopy%03d", i)
		fmt.Fprintf(&b, "\n// %s: %s\nmachine %s {\n  start state Run {\n    entry {\n", c.copy, c.name, m)
		for _, l := range strings.Split(strings.TrimSuffix(c.body, "\n"), "\n") {
			b.WriteString("      " + l + "\n")
		}
		b.WriteString("    }\n  }\n}\n")
		switch {
		case c.decision:
			fmt.Fprintf(&b, "test %s [main=%s]: assert %s in { Store, %s };\n", pCaseName(i), m, c.monitor, m)
		case c.monitor != "":
			fmt.Fprintf(&b, "test %s [main=%s]: assert %s in { %s };\n", pCaseName(i), m, c.monitor, m)
		default:
			fmt.Fprintf(&b, "test %s [main=%s]: { %s };\n", pCaseName(i), m, m)
		}
	}
	return []byte(b.String())
}

// pCacheDir is where the compiled projects are kept across runs: pconform/rulecopies under the
// user's cache directory, or the test's temporary directory when there is none.
func pCacheDir(t *testing.T) string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "pconform", "rulecopies")
	}
	return t.TempDir()
}

// TestPRuleCopiesAgree evaluates the P model's copies of the rules on their boundary cases under
// every shipped profile and fails on each copy that disagrees with the rule's Go statement,
// naming the copy, the profile and the case. The copies: LeaseLive, ClaimLive and LeaseEnds
// (profile.Profile.Held), BlocksSuccessor (the Go reference model's peek behind a keyed head) and
// EffectiveAttempt (actordelivery.EffectiveAttempts) in Rules.p, and the two monitors that judge
// leases by them (SameKeyClaimsRespectLiveHead, DeadLetterSparesLiveLeases), fed spec events that
// put a lease at its boundary; and the Store machine's consumer decision (HandleFetched), driven
// through its requests on the decision's traceable cases (decisionPCases).
//
// Per profile, one P project (the model without its scenarios, the profile's constants and one
// test case per case, generated here with the Go values) is compiled through bridge.CheckCases and kept
// in the user's cache directory under its sources' hash; one checker run then runs every test
// case. A first run compiles once per profile (about a minute each); a run with the same sources
// only runs the checker. It needs the P tool; -short skips it. It belongs to the gate's efficacy
// tier (TOOLKIT_TESTS in scripts/check.sh).
func TestPRuleCopiesAgree(t *testing.T) {
	if _, err := exec.LookPath("p"); err != nil {
		t.Skip("the P tool `p` is not on PATH (run `. scripts/env.sh` after scripts/bootstrap.sh); skipping the P copies of the rules")
	}
	if testing.Short() {
		t.Skip("-short: skipping the P copies of the rules (a P compile per profile)")
	}
	cfg := bridge.Config{ProjectDir: filepath.Join("..", "..", "models", "p")}
	cache := pCacheDir(t)
	for _, p := range shippedProfiles(t) {
		cs := append(pCases(t, p), decisionPCases(p)...)
		msgs, err := bridge.CheckCases(context.Background(), cfg, p, map[string][]byte{"RuleCopies.p": pSource(p, cs)}, pCasePrefix, cache)
		if err != nil {
			t.Fatalf("profile %s: %v", p, err)
		}
		if len(msgs) != len(cs) {
			t.Fatalf("profile %s: the checker ran %d test cases, want %d", p, len(msgs), len(cs))
		}
		for i, c := range cs {
			msg, ok := msgs[pCaseName(i)]
			switch {
			case !ok:
				t.Errorf("profile %s: the checker did not run %s (%s, case %s)", p, pCaseName(i), c.copy, c.name)
			case c.decision && msg != "":
				t.Errorf("%s disagrees with the consumer decision under profile %s, case %s: %s; the rule gives %v (%s)",
					c.copy, p, c.name, msg, c.want, pCaseName(i))
			case c.decision:
			case c.monitor == "" && msg != "":
				// The assertion's message is the value P computed, as C# prints it ("True").
				msg = strings.ToLower(msg)
				t.Errorf("%s disagrees with its Go statement under profile %s, case %s: P gives %s, want %s (%s)",
					c.copy, p, c.name, msg, pLiteral(c.want), pCaseName(i))
			case c.monitor != "" && (msg != "") != c.want.(bool):
				verdict := "holds"
				if msg != "" {
					verdict = fmt.Sprintf("refuses (%q)", msg)
				}
				want := "hold"
				if c.want.(bool) {
					want = "refuse"
				}
				t.Errorf("%s disagrees with its Go statement under profile %s, case %s: the monitor %s, want it to %s (%s)",
					c.copy, p, c.name, verdict, want, pCaseName(i))
			}
		}
	}
}
