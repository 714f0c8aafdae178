package models

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// bruteForcePurge is purge as docs/semantics.md words it, by a scan and a sort of every row: the
// rule the aging index must give the same answers as.
func bruteForcePurge(s *State, now, olderThan, horizon int64, limit int) int {
	cutoff := now - olderThan
	oldest := func(rows []agedEntry) []agedEntry {
		slices.SortFunc(rows, func(a, b agedEntry) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id)) })
		return rows[:min(len(rows), limit)]
	}
	var acked, dead, final, expired []agedEntry
	for id, m := range s.messages {
		if m.acked && m.ackedAt <= cutoff {
			acked = append(acked, agedEntry{id, m.ackedAt})
		}
	}
	for id, d := range s.dead {
		if d.deadAt <= cutoff {
			dead = append(dead, agedEntry{id, d.deadAt})
		}
	}
	for id, o := range s.outbox {
		if !o.pending() && o.finalAt <= cutoff {
			final = append(final, agedEntry{id, o.finalAt})
		}
	}
	retire := func(r agedEntry) {
		if until := r.at + horizon; until > now {
			s.retired[r.id] = until
		}
	}
	acked, dead, final = oldest(acked), oldest(dead), oldest(final)
	for _, r := range acked {
		delete(s.messages, r.id)
		retire(r)
	}
	for _, r := range dead {
		delete(s.dead, r.id)
		retire(r)
	}
	for _, r := range final {
		delete(s.outbox, r.id)
		s.purgedOutbox[r.id] = max(r.at+horizon, now)
	}
	for id, until := range s.retired {
		if until <= now {
			expired = append(expired, agedEntry{id, until})
		}
	}
	for _, r := range oldest(expired) {
		delete(s.retired, r.id)
	}
	if s.cfg.Profile.ProcessedUntilCleanup {
		maps.DeleteFunc(s.processed, func(_ processedKey, expires int64) bool { return expires <= now })
	}
	return len(acked) + len(dead) + len(final)
}

// bruteForceForget is Machine.Forget's dropping by a scan of every entry.
func bruteForceForget(s *State) {
	maps.DeleteFunc(s.processed, func(_ processedKey, exp int64) bool { return exp <= s.now })
	maps.DeleteFunc(s.retired, func(_ string, until int64) bool { return until <= s.now })
	maps.DeleteFunc(s.purgedOutbox, func(_ string, until int64) bool { return until < s.now })
}

// TestAgingMatchesBruteForce runs the property test's random sequences with purges (small
// limits, short older_than and horizons, so that every branch is taken) and Forgets mixed in,
// under the default profile and under processed_expiry "until_cleanup", and requires each purge
// and each Forget, which take their rows from the aging index, to leave the very state a scan and
// sort of every row gives. Rerun one with -seed N (on the same commit).
func TestAgingMatchesBruteForce(t *testing.T) {
	runs := 200
	if testing.Short() {
		runs = 40
	}
	removed, forgotten := 0, 0
	for _, p := range []profile.Profile{{}, {ProcessedUntilCleanup: true}} {
		for i := range runs {
			seed := *seedFlag + uint64(i)
			g := newGen(seed)
			m := NewMachine(Init(Config{Profile: p}))
			for j := range *stepsFlag * 4 {
				st := g.step()
				switch g.rng.IntN(8) {
				case 0:
					st.Op = traces.OpPurge
					st.Args = traces.Args{Limit: 1 + g.rng.IntN(3), OlderThan: int64(g.rng.IntN(4)), Horizon: int64(g.rng.IntN(6))}
					want := m.s.clone()
					n := bruteForcePurge(&want, st.At, st.Args.OlderThan, st.Args.Horizon, st.Args.Limit)
					want.now = st.At
					got, err := m.Step(st.Op, st.At, st.Args)
					if err != nil || got.Affected != n || !Equal(want, m.s) {
						t.Fatalf("profile %+v seed %d step #%d %s: the indexed purge removed %d (%v), a scan removes %d; states equal: %v (rerun: go test ./models/ -run TestAgingMatchesBruteForce -seed %d)",
							p, seed, j, DescribeOp(st.Op, st.Args), got.Affected, err, n, Equal(want, m.s), seed)
					}
					removed += n
					g.observe(st, got)
					continue
				case 1:
					want := m.s.clone()
					bruteForceForget(&want)
					before := len(m.s.processed) + len(m.s.retired) + len(m.s.purgedOutbox)
					m.Forget()
					forgotten += before - len(m.s.processed) - len(m.s.retired) - len(m.s.purgedOutbox)
					want.effectsForgotten, want.effects = m.s.effectsForgotten, m.s.effects
					if !Equal(want, m.s) {
						t.Fatalf("profile %+v seed %d step #%d: Forget left another state than a scan (rerun with -seed %d)", p, seed, j, seed)
					}
				}
				if st.Op == traces.OpPublisherDeliver {
					if _, held := m.s.outbox[st.Args.ID]; !held {
						continue // a delivery of a purged row may be malformed (a split one, or past its horizon)
					}
				}
				r, err := m.Step(st.Op, st.At, st.Args)
				if err != nil {
					t.Fatalf("seed %d step #%d %s: %v", seed, j, DescribeOp(st.Op, st.Args), err)
				}
				g.observe(st, r)
			}
		}
	}
	if removed == 0 || forgotten == 0 {
		t.Fatalf("the purges removed %d rows and Forget dropped %d entries: the test shows nothing", removed, forgotten)
	}
}

// TestAgedQueueTakesOldestFirst pushes entries mostly in time order, as rows turn final, with
// some out of order (an older time, an equal time with a smaller id, a repeat) and pops among
// them, and requires every pop to be the oldest entry held (agedFirst), as a sorted list of them
// gives. Pushes outnumber pops, so the ring wraps around its end and grows while wrapped.
func TestAgedQueueTakesOldestFirst(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var q agedQueue
		var held []agedEntry // sorted by agedFirst
		at, late, pops, grewWrapped := int64(0), 0, 0, 0
		for range 20_000 {
			switch r := rng.IntN(10); {
			case r < 6:
				at += int64(rng.IntN(3))
				e := agedEntry{fmt.Sprintf("m%d", rng.IntN(500)), at}
				if rng.IntN(8) == 0 {
					e.at -= int64(rng.IntN(50)) // out of order
				}
				if q.n > 0 && agedFirst(e, *q.at(q.n - 1)) {
					late++
				} else if q.n == len(q.ring) && q.head != 0 {
					grewWrapped++
				}
				q.push(e)
				i, _ := slices.BinarySearchFunc(held, e, func(a, b agedEntry) int {
					return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id))
				})
				held = slices.Insert(held, i, e)
			case len(held) > 0:
				if got := q.top(); got != held[0] {
					t.Fatalf("seed %d: top is %+v, the oldest held is %+v", seed, got, held[0])
				}
				if got := q.pop(); got != held[0] {
					t.Fatalf("seed %d: popped %+v, the oldest held is %+v", seed, got, held[0])
				}
				held = held[1:]
				pops++
			}
			if q.len() != len(held) {
				t.Fatalf("seed %d: the queue holds %d entries, %d were pushed and not popped", seed, q.len(), len(held))
			}
		}
		if late == 0 || pops == 0 || grewWrapped == 0 {
			t.Fatalf("seed %d: %d pushed out of order, %d popped, %d growths of a wrapped ring: the run shows nothing", seed, late, pops, grewWrapped)
		}
		if c := q.clone(); !slices.Equal(drain(&c), held) {
			t.Fatalf("seed %d: a clone does not give the entries held, oldest first", seed)
		}
	}
}

// drain pops every entry of q, oldest first.
func drain(q *agedQueue) []agedEntry {
	var out []agedEntry
	for q.len() > 0 {
		out = append(out, q.pop())
	}
	return out
}
