package models

import (
	"cmp"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pconform/pconform/internal/variants"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

var (
	seedFlag  = flag.Uint64("seed", 20260101, "first seed of the random operation sequences")
	runsFlag  = flag.Int("runs", 150, "number of random operation sequences per configuration")
	stepsFlag = flag.Int("steps", 80, "steps per random operation sequence")
)

// rawAttempts is the raw-attempts consumer: the stored count goes to the retry decision unchanged.
func rawAttempts(stored int, _ bool) int { return stored }

// TestModelMatchesNaive runs random operation sequences against the model and the naive model
// (naive_test.go), under the correct and the raw-attempts configuration, and requires the same
// result on every step and the same snapshot after every step. It also checks that Step leaves its
// input state unchanged and never reports a generated step as malformed.
//
// Sequence i uses seed -seed+i; -runs sets the number of sequences (20 at most under -short),
// -steps their length. A failure prints the failing sequence's seed and its history; rerun
// just that sequence with
//
//	go test ./models/ -run TestModelMatchesNaive -seed=N -runs=1
//
// A seed reproduces a sequence only on the same commit: a change to the generator changes the
// sequence.
func TestModelMatchesNaive(t *testing.T) {
	runs := *runsFlag
	if testing.Short() {
		runs = min(runs, 20)
	}
	for _, c := range []struct {
		name     string
		attempts func(int, bool) int
	}{{"correct", nil}, {"raw-attempts", rawAttempts}} {
		t.Run(c.name, func(t *testing.T) {
			seen := map[string]int{}
			for i := range runs {
				seed := *seedFlag + uint64(i)
				if failure := compareWithNaive(seed, *stepsFlag, c.attempts, c.attempts, "", seen); failure != "" {
					t.Fatalf("seed %d: %s\nrerun: go test ./models/ -run 'TestModelMatchesNaive/%s' -seed=%d -runs=1",
						seed, failure, c.name, seed)
				}
			}
			// A comparison that never reaches the subtle outcomes proves little: require the
			// generated sequences to have produced each of them at least once.
			if runs < 100 {
				return
			}
			for _, want := range []string{
				"enqueue duplicate", "lease message", "lease none", "peek message", "ack ok", "ack err=lease_lost",
				"nack ok", "extend ok", "expire affected", "dead_letter ok", "nack_by_id ok",
				"outbox_claim claimed", "outbox_complete ok", "outbox_complete err=claim_lost",
				"consumer_fetch message", "consumer_handle action=acked", "consumer_handle action=retried",
				"consumer_handle action=dead_lettered", "consumer_handle action=lease_lost", "consumer_handle action=idle",
				"publisher_deliver action=delivered", "publisher_deliver action=crashed", "publisher_deliver duplicate",
				"publisher_deliver action=claim_lost", "publisher_deliver action=commit_failed",
				"mark_processed duplicate", "save_checkpoint ok", "save_checkpoint err=version_conflict",
				"load_checkpoint ok", "load_checkpoint err=not_found", "redrive ok", "list_redrives redrives",
			} {
				if seen[want] == 0 {
					t.Errorf("no generated step had outcome %q in %d sequences", want, runs)
				}
			}
		})
	}
}

// TestNaiveComparisonDetectsDrift shows the comparison has teeth: a naive model with one rule
// deliberately broken must disagree with the model on some generated sequence.
func TestNaiveComparisonDetectsDrift(t *testing.T) {
	for _, c := range []struct {
		name          string
		mutation      string
		naiveAttempts func(int, bool) int // the model always runs the correct consumer
	}{
		{name: mutNoFIFO, mutation: mutNoFIFO},
		{name: mutInclusiveLease, mutation: mutInclusiveLease},
		{name: variants.DedupTTLInverted, mutation: variants.DedupTTLInverted},
		{name: variants.CheckpointReset, mutation: variants.CheckpointReset},
		{name: variants.RawAttempts, naiveAttempts: rawAttempts},
		{name: variants.RedriveKeepsAttempts, mutation: variants.RedriveKeepsAttempts},
		{name: variants.RedriveRecordsReset, mutation: variants.RedriveRecordsReset},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i := range *runsFlag {
				seed := *seedFlag + uint64(i)
				if failure := compareWithNaive(seed, *stepsFlag, nil, c.naiveAttempts, c.mutation, nil); failure != "" {
					if !strings.Contains(failure, "differ") {
						t.Fatalf("seed %d: the comparison failed for another reason: %s", seed, failure)
					}
					return
				}
			}
			t.Fatalf("no sequence out of %d told the model from the naive model with %s", *runsFlag, c.name)
		})
	}
}

// compareWithNaive runs one generated sequence against the model (Config.Attempts = attempts) and
// a naive model with naiveAttempts and the given mutation. It returns "" when they agree
// throughout, else a description of the first difference with the history up to it. When seen is
// not nil it counts the outcomes met, as "op outcome" (see outcomes).
func compareWithNaive(seed uint64, steps int, attempts, naiveAttempts func(int, bool) int, mutation string, seen map[string]int) string {
	return compareUnderProfiles(seed, steps, attempts, naiveAttempts, mutation, seen, profile.Profile{}, profile.Profile{})
}

// compareUnderProfiles is compareWithNaive with the model under the profile mp and the naive model
// under np.
func compareUnderProfiles(seed uint64, steps int, attempts, naiveAttempts func(int, bool) int, mutation string, seen map[string]int, mp, np profile.Profile) string {
	g := newGen(seed)
	s := Init(Config{Attempts: attempts, Profile: mp})
	n := newNaive(naiveAttempts)
	n.mutation = mutation
	n.p = np
	var history []string
	for i := range steps {
		st := g.step()
		before := DescribeState(s)
		next, r, err := Step(s, st.Op, st.At, st.Args)
		if err != nil {
			return fmt.Sprintf("step #%d %s at %d: model refused a generated step: %v", i, DescribeOp(st.Op, st.Args), st.At, err)
		}
		if after := DescribeState(s); after != before {
			return fmt.Sprintf("step #%d %s changed its input state:\nbefore:\n%safter:\n%s", i, DescribeOp(st.Op, st.Args), before, after)
		}
		nr := n.apply(st.Op, st.At, st.Args)
		history = append(history, fmt.Sprintf("#%d at %d %s -> %s", i, st.At, DescribeOp(st.Op, st.Args), describeResult(st.Op, r)))
		if d := gocmp.Diff(nr, r); d != "" {
			return fmt.Sprintf("results differ at step #%d (-naive +model):\n%s\nhistory:\n%s\nmodel state before the step:\n%s",
				i, d, strings.Join(history, "\n"), before)
		}
		if d := gocmp.Diff(n.snapshot(), next.Snapshot()); d != "" {
			return fmt.Sprintf("snapshots differ after step #%d (-naive +model):\n%s\nhistory:\n%s\nmodel state before the step:\n%s",
				i, d, strings.Join(history, "\n"), before)
		}
		if err := checkIndexes(next); err != "" {
			return fmt.Sprintf("after step #%d: %s\nhistory:\n%s", i, err, strings.Join(history, "\n"))
		}
		s = next
		g.observe(st, r)
		if seen != nil {
			for _, o := range coarseOutcomes(st.Op, r) {
				seen[string(st.Op)+" "+o]++
			}
		}
	}
	return ""
}

// checkIndexes returns what is wrong with s's indexes ("" when nothing), rebuilding them from
// the rows: the ready index must list each key's ready rows in increasing seq, hold exactly the
// candidates the rule makes (a keyless row with attempts left, a key's first row with attempts
// left) with an entry that matches the row, an entry for every ready row's lease, and give the
// next message the rule's walk over the ready rows gives (nextByWalk); HeldTokens, which asks
// the indexes, must name the tokens the rows and fetches carry (checkHeldTokens); the claim index
// must give the claims' rows (checkClaimIndex).
func checkIndexes(s State) string {
	byKey := map[string]map[string][]string{}
	cands := map[string]int64{} // id -> eligible from
	p := s.rules()
	for _, m := range slices.SortedFunc(maps.Values(s.messages), func(a, b message) int { return cmp.Compare(a.seq, b.seq) }) {
		if m.acked || m.key == "" {
			continue
		}
		if byKey[m.mailbox] == nil {
			byKey[m.mailbox] = map[string][]string{}
		}
		byKey[m.mailbox][m.key] = append(byKey[m.mailbox][m.key], m.id)
	}
	for _, m := range s.messages {
		if !m.acked && m.key == "" && m.attempts < m.maxAttempts {
			cands[m.id] = s.eligibleFrom(m)
		}
	}
	for _, keys := range byKey {
		for _, ids := range keys {
			block := int64(math.MinInt64)
			for _, id := range ids {
				m := s.messages[id]
				if m.attempts < m.maxAttempts {
					cands[id] = max(s.eligibleFrom(m), block)
					break
				}
				if !p.ExhaustedLeasedHeadPasses && m.token != 0 {
					block = max(block, p.leaseEnds(m.leaseUntil))
				}
			}
		}
	}
	indexed := map[string]map[string][]string{}
	for mb, q := range s.idx.queues {
		if len(q.byKey) > 0 {
			indexed[mb] = q.byKey
		}
	}
	if d := gocmp.Diff(byKey, indexed, cmpopts.EquateEmpty()); d != "" {
		return "the ready index's keys are not the keyed ready rows by seq (-rows +index):\n" + d
	}
	if d := gocmp.Diff(slices.Sorted(maps.Keys(cands)), slices.Sorted(maps.Keys(s.idx.cand)), cmpopts.EquateEmpty()); d != "" {
		return "the ready index's candidates are not the rule's (-rule +index):\n" + d
	}
	for mb, q := range s.idx.queues {
		for _, e := range slices.Concat(q.eligible.items, q.waiting.items) {
			if s.idx.cand[e.id] != e.stamp {
				continue
			}
			m := s.messages[e.id]
			if m.mailbox != mb || e.priority != m.priority || e.availableAt != m.availableAt || e.seq != m.seq || e.from != cands[e.id] {
				return fmt.Sprintf("the ready index's entry %+v does not match its row %+v (eligible from %d)", e, m, cands[e.id])
			}
		}
	}
	leases := map[leaseEntry]bool{}
	for _, e := range s.idx.leases.items {
		leases[e] = true
	}
	for _, m := range s.messages {
		if !m.acked && m.token != 0 && !leases[leaseEntry{m.id, p.leaseEnds(m.leaseUntil)}] {
			return fmt.Sprintf("the ready index has no entry for the lease of %+v", m)
		}
	}
	c := s.clone() // next changes the index's heaps
	for mb := range s.idx.queues {
		want, wok := nextByWalk(&s, mb, s.now)
		got, ok := c.next(mb, s.now)
		if wok != ok || want != got {
			return fmt.Sprintf("mailbox %s's next message at %d: the index gives %+v (%v), the walk over the ready rows %+v (%v)", mb, s.now, got, ok, want, wok)
		}
	}
	if err := checkHeldTokens(s); err != "" {
		return err
	}
	return checkClaimIndex(s)
}

// checkHeldTokens returns what is wrong with HeldTokens, which asks the indexes, against a walk
// over every row and every unhandled fetch ("" when nothing).
func checkHeldTokens(s State) string {
	type held struct {
		space traces.TokenSpace
		token int
	}
	walk := map[held]bool{}
	for _, m := range s.messages {
		if m.token != 0 {
			walk[held{traces.LeaseTokens, m.token}] = true
		}
	}
	for _, o := range s.outbox {
		if o.token != 0 {
			walk[held{traces.ClaimTokens, o.token}] = true
		}
	}
	fetched := func(d delivery) {
		if d.token != 0 {
			walk[held{traces.LeaseTokens, d.token}] = true
		}
	}
	for _, d := range s.inflight {
		fetched(d)
	}
	for _, b := range s.batches {
		for _, d := range b {
			fetched(d)
		}
	}
	indexed := map[held]bool{}
	(&Machine{s: s}).HeldTokens(func(space traces.TokenSpace, token int) { indexed[held{space, token}] = true })
	if d := gocmp.Diff(walk, indexed, cmpopts.EquateEmpty()); d != "" {
		return "HeldTokens differs from the walk over the rows and fetches (-walk +HeldTokens):\n" + d
	}
	return ""
}

// checkClaimIndex returns what is wrong with s's claim index ("" when nothing): the exhausted
// set must be the exhausted pending rows, every other pending row must have an entry that a
// claim will find, and the claimable rows the index gives at s.now must be the walk's.
func checkClaimIndex(s State) string {
	p := s.rules()
	exhausted := map[string]struct{}{}
	waiting := map[claimEntry]bool{}
	for _, e := range s.claims.waiting.items {
		waiting[e] = true
	}
	ready := map[string]bool{}
	for _, e := range s.claims.ready.items {
		if o, ok := s.outbox[e.id]; ok && o.seq != e.seq {
			return fmt.Sprintf("the claim index's entry %+v does not carry its row's seq %d", e, o.seq)
		}
		ready[e.id] = true
	}
	var claimable []outboxRow
	for id, o := range s.outbox {
		switch {
		case !o.pending():
			continue
		case o.exhaustedRow():
			exhausted[id] = struct{}{}
			continue
		}
		from := p.claimableFrom(o)
		if !waiting[claimEntry{id: id, seq: o.seq, from: from}] && !(ready[id] && from <= s.now) {
			return fmt.Sprintf("the claim index has no entry for the pending row %+v (claimable from %d)", o, from)
		}
		if from <= s.now {
			claimable = append(claimable, o)
		}
	}
	if d := gocmp.Diff(exhausted, s.claims.exhausted, cmpopts.EquateEmpty()); d != "" {
		return "the claim index's exhausted set is not the exhausted pending rows (-rows +index):\n" + d
	}
	slices.SortFunc(claimable, func(a, b outboxRow) int { return cmp.Compare(a.seq, b.seq) })
	c := s.clone() // firstClaimable moves entries between the heaps
	got := c.firstClaimable(s.now, len(s.outbox)+1, true)
	if d := gocmp.Diff(claimable, got, gocmp.AllowUnexported(outboxRow{}), cmpopts.EquateEmpty()); d != "" {
		return fmt.Sprintf("the rows a claim may take at %d: the index differs from the walk over the pending rows (-walk +index):\n%s", s.now, d)
	}
	return ""
}

// nextByWalk is the mailbox's next message found as the model found it before it had an index:
// one walk over the ready rows in seq order, keeping for each key whether a blocking
// predecessor has been seen.
func nextByWalk(s *State, mailbox string, now int64) (message, bool) {
	var ready []message
	for _, m := range s.messages {
		if m.mailbox == mailbox && !m.acked {
			ready = append(ready, m)
		}
	}
	slices.SortFunc(ready, func(a, b message) int { return cmp.Compare(a.seq, b.seq) })
	var best message
	found := false
	blocked := map[string]bool{}
	p := s.rules()
	for _, m := range ready {
		live := m.live(p, now)
		eligible := m.availableAt <= now && !live && m.attempts < m.maxAttempts
		if m.key != "" {
			if blocked[m.key] {
				eligible = false
			}
			if m.attempts < m.maxAttempts || (live && !p.ExhaustedLeasedHeadPasses) {
				blocked[m.key] = true
			}
		}
		if eligible && (!found || before(m, best)) {
			best, found = m, true
		}
	}
	return best, found
}

func describeResult(op traces.Op, r traces.Result) string {
	parts := outcomes(r)
	if r.Message == nil && slices.Contains(traces.Spec[op].Results, "message") {
		parts = append(parts, "message=none")
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, " ")
}

// coarseOutcomes classifies r for counting: "ok" or "err=kind" for ops that report an error,
// "message" or "none" for ops that return a message, "duplicate", "affected", "claimed", and
// "action=name".
func coarseOutcomes(op traces.Op, r traces.Result) []string {
	var out []string
	spec := traces.Spec[op]
	for _, field := range spec.Results {
		switch field {
		case "err":
			if r.Err == "" {
				out = append(out, "ok")
			} else {
				out = append(out, "err="+r.Err)
			}
		case "message":
			if r.Message == nil {
				out = append(out, "none")
			} else {
				out = append(out, "message")
			}
		}
	}
	if r.Duplicate {
		out = append(out, "duplicate")
	}
	if r.Affected > 0 {
		out = append(out, "affected")
	}
	if len(r.Claimed) > 0 {
		out = append(out, "claimed")
	}
	if len(r.Redrives) > 0 {
		out = append(out, "redrives")
	}
	if r.Action != "" {
		out = append(out, "action="+r.Action)
	}
	return out
}

// outcomes names what r reports: err=..., duplicate, message=id/attempts/token, none (no message),
// affected=n, claimed=..., action=..., attempt=n.
func outcomes(r traces.Result) []string {
	var parts []string
	if r.Err != "" {
		parts = append(parts, "err="+r.Err)
	}
	if r.Duplicate {
		parts = append(parts, "duplicate")
	}
	if r.Message != nil {
		parts = append(parts, fmt.Sprintf("message=%s/%d/t%d", r.Message.ID, r.Message.Attempts, r.Message.Token))
	}
	if r.Affected != 0 {
		parts = append(parts, fmt.Sprintf("affected=%d", r.Affected))
	}
	for _, c := range r.Claimed {
		parts = append(parts, fmt.Sprintf("claimed=%s/%d/t%d", c.ID, c.DeliveryAttempts, c.Token))
	}
	if r.Action != "" {
		parts = append(parts, "action="+r.Action)
	}
	if r.Attempt != 0 {
		parts = append(parts, fmt.Sprintf("attempt=%d", r.Attempt))
	}
	if r.Version != 0 {
		parts = append(parts, fmt.Sprintf("version=%d", r.Version))
	}
	for _, x := range r.Redrives {
		parts = append(parts, fmt.Sprintf("redrive=%s/%s/%d/%q/%q@%d", x.Kind, x.ID, x.Attempts, x.DeadReason, x.Reason, x.At))
	}
	return parts
}

// gen generates well-formed random steps over a small world (two mailboxes, a few ids, keys and
// workers) so that collisions — duplicates, keyed predecessors, stale tokens, competing workers —
// are frequent.
type gen struct {
	rng *rand.Rand
	now int64
	// lastToken is the largest token seen in a result, so token arguments hit live, stale and
	// never-issued tokens alike.
	lastToken int
	held      map[int]traces.Args // worker -> the fetch it has not handled
	outboxIDs []string            // outbox rows enqueued so far (publisher_deliver needs an existing row)
}

var (
	genMailboxes = []string{"a", "b"}
	genIDs       = []string{"m1", "m2", "m3", "m4", "m5", "m6"}
	genKeys      = []string{"", "", "k", "j"}
	// Outbox ids overlap the message ids so deliveries meet duplicates.
	genOutboxIDs = []string{"o1", "o2", "o3", "m1"}
)

func newGen(seed uint64) *gen {
	return &gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), held: map[int]traces.Args{}}
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func (g *gen) token() int { return g.rng.IntN(g.lastToken + 2) }

func (g *gen) step() traces.Step {
	if g.rng.IntN(3) == 0 {
		g.now += int64(g.rng.IntN(5))
	}
	st := traces.Step{At: g.now}
	a := &st.Args
	if g.rng.IntN(10) == 0 {
		return g.dedupOrCheckpoint(st)
	}
	// Weights favour the ops that move messages through their life.
	switch r := g.rng.IntN(100); {
	case r < 16:
		st.Op = traces.OpEnqueue
		a.Mailbox, a.ID, a.Key = pick(g.rng, genMailboxes), pick(g.rng, genIDs), pick(g.rng, genKeys)
		a.Priority, a.MaxAttempts, a.Delay = g.rng.IntN(3), 1+g.rng.IntN(3), int64(g.rng.IntN(3))
		a.Payload = pick(g.rng, []string{"", "p"})
	case r < 26:
		st.Op = traces.OpLease
		a.Mailbox, a.LeaseFor = pick(g.rng, genMailboxes), int64(g.rng.IntN(6))
	case r < 30:
		st.Op = traces.OpPeek
		a.Mailbox = pick(g.rng, genMailboxes)
	case r < 31:
		st.Op = traces.OpRedrive
		a.ID, a.Reason = pick(g.rng, append(slices.Clip(genIDs), genOutboxIDs...)), "fixed"
	case r < 36:
		st.Op = traces.OpAck
		a.ID, a.Token = pick(g.rng, genIDs), g.token()
	case r < 40:
		st.Op = traces.OpNack
		a.ID, a.Token, a.Delay = pick(g.rng, genIDs), g.token(), int64(g.rng.IntN(3))
	case r < 42:
		st.Op = traces.OpAckByID
		a.ID = pick(g.rng, genIDs)
	case r < 45:
		st.Op = traces.OpNackByID
		a.ID, a.Delay = pick(g.rng, genIDs), int64(g.rng.IntN(3))
	case r < 48:
		st.Op = traces.OpExtend
		a.ID, a.Token, a.LeaseFor = pick(g.rng, genIDs), g.token(), int64(g.rng.IntN(6))
	case r < 53:
		st.Op = traces.OpExpire
	case r < 55:
		st.Op = traces.OpDeadLetter
		a.ID, a.Reason = pick(g.rng, genIDs), "by hand"
	case r < 60:
		st.Op = traces.OpOutboxEnqueue
		a.ID, a.Target, a.Key = pick(g.rng, genOutboxIDs), pick(g.rng, genMailboxes), pick(g.rng, genKeys)
		a.Priority, a.MaxAttempts = g.rng.IntN(3), 1+g.rng.IntN(3)
		// Mostly small bounds, so that rows run out of delivery attempts; 0 is the default.
		a.MaxDeliveryAttempts = g.rng.IntN(3)
	case r < 64:
		st.Op = traces.OpOutboxClaim
		a.Limit, a.ClaimFor = 1+g.rng.IntN(3), int64(g.rng.IntN(6))
	case r < 66:
		st.Op = traces.OpOutboxComplete
		a.ID, a.Token = pick(g.rng, genOutboxIDs), g.token()
	case r < 67:
		st.Op = traces.OpOutboxFail
		a.ID, a.Token, a.Delay = pick(g.rng, genOutboxIDs), g.token(), int64(g.rng.IntN(3))
	case r < 68:
		st.Op = traces.OpOutboxDeadLetter
		a.ID, a.Token, a.Reason = pick(g.rng, genOutboxIDs), g.token(), "by hand"
	case r < 70:
		st.Op = traces.OpAdvanceClock
	case r < 82:
		w := 1 + g.rng.IntN(3)
		if _, busy := g.held[w]; busy {
			return g.handle(st, w)
		}
		st.Op = traces.OpConsumerFetch
		a.Worker, a.Mailbox = w, pick(g.rng, genMailboxes)
		a.Profile = pick(g.rng, []string{traces.ProfileLeased, traces.ProfileLeaseless})
		if a.Profile == traces.ProfileLeased {
			a.LeaseFor = int64(g.rng.IntN(6))
		}
	case r < 94:
		return g.handle(st, 1+g.rng.IntN(3))
	case r < 98:
		if len(g.outboxIDs) == 0 {
			st.Op = traces.OpExpire
			break
		}
		st.Op = traces.OpPublisherDeliver
		a.Publisher, a.ID, a.Token = 1, pick(g.rng, g.outboxIDs), g.token()
		a.Profile = pick(g.rng, []string{traces.ProfileFold, traces.ProfileSplit})
		a.Fault = pick(g.rng, []string{traces.FaultNone, traces.FaultNone, traces.FaultCommitFails, traces.FaultCrashBetween,
			traces.FaultUndeliverable})
		a.RetryDelay = int64(g.rng.IntN(3))
	default:
		st.Op = traces.OpCrash
	}
	return st
}

// dedupOrCheckpoint makes a mark_processed, save_checkpoint or load_checkpoint over a few
// consumers, ids and actors, with short ttls (so marks expire) and expected versions near the
// stored ones (so saves both succeed and conflict). Loads also read the mailboxes' effect logs.
func (g *gen) dedupOrCheckpoint(st traces.Step) traces.Step {
	a := &st.Args
	switch g.rng.IntN(4) {
	case 3:
		st.Op = traces.OpListRedrives
		a.ID = pick(g.rng, []string{"", "", "m1", "o1"})
	case 0:
		st.Op = traces.OpMarkProcessed
		a.Consumer, a.ID, a.TTL = pick(g.rng, []string{"c1", "c2"}), pick(g.rng, genIDs[:3]), int64(1+g.rng.IntN(4))
	case 1:
		st.Op = traces.OpSaveCheckpoint
		a.Actor, a.ExpectVersion = pick(g.rng, []string{"x", "y"}), g.rng.IntN(4)
		a.Payload = pick(g.rng, []string{"", "s1", "s2"})
	default:
		st.Op = traces.OpLoadCheckpoint
		a.Actor = pick(g.rng, []string{"x", "y", traces.EffectsActorPrefix + "a", traces.EffectsActorPrefix + "b"})
	}
	return st
}

// handle makes a consumer_handle for worker w: for its own fetch when it holds one, else for a
// random mailbox (the model answers idle).
func (g *gen) handle(st traces.Step, w int) traces.Step {
	st.Op = traces.OpConsumerHandle
	a := &st.Args
	a.Worker = w
	if f, busy := g.held[w]; busy {
		a.Mailbox, a.Profile = f.Mailbox, f.Profile
	} else {
		a.Mailbox = pick(g.rng, genMailboxes)
		a.Profile = pick(g.rng, []string{traces.ProfileLeased, traces.ProfileLeaseless})
	}
	a.Outcome = pick(g.rng, []string{traces.OutcomeOK, traces.OutcomeFail, traces.OutcomeFail, traces.OutcomeFailNoRetry})
	if a.Outcome == traces.OutcomeFail {
		a.RetryDelay = int64(g.rng.IntN(3))
	}
	return st
}

// observe updates what the generator knows from a step's result.
func (g *gen) observe(st traces.Step, r traces.Result) {
	if r.Message != nil {
		g.lastToken = max(g.lastToken, r.Message.Token)
	}
	for _, c := range r.Claimed {
		g.lastToken = max(g.lastToken, c.Token)
	}
	switch st.Op {
	case traces.OpConsumerFetch:
		if r.Message != nil {
			g.held[st.Args.Worker] = st.Args
		}
	case traces.OpConsumerHandle:
		delete(g.held, st.Args.Worker)
	case traces.OpCrash:
		clear(g.held)
	case traces.OpOutboxEnqueue:
		if !r.Duplicate {
			g.outboxIDs = append(g.outboxIDs, st.Args.ID)
		}
	}
}

// before reports whether a is delivered before b, by the index's own order rule: the walk checks
// which message the index picks, not the order.
func before(a, b message) bool {
	cand := func(m message) candEntry {
		return candEntry{priority: m.priority, availableAt: m.availableAt, seq: m.seq}
	}
	return deliveredFirst(cand(a), cand(b))
}
