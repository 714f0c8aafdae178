package replay_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// uncoveredSituations are the situations no P scenario drives the model into yet, even in the
// gate's wide corpus. It is empty: the last two (a stale lease token under a newer live lease,
// an expire that clears) came with tcStaleLeases. A situation listed here is exempt from the wide
// corpus's requirement, and the committed corpus meeting it asks for its removal.
var uncoveredSituations []Situation

// scriptedSituations are the situations the scripted prologue of the P raw client in
// tcStaleLeases (RawClient.StaleLeases) meets in every schedule, so the committed corpus holds
// them whatever schedules it keeps: the corpus-blind bug classes (a lease live at lease_until, an
// extend that accepts a stale token) must diverge in it.
var scriptedSituations = []Situation{
	SituationStaleLease, SituationAtLeaseUntil, SituationExpireClears, SituationExpireDeadLetters,
	SituationBothPaths, SituationNackExhausts, SituationKeyedHeadBackoff, SituationKeyedHeadExhausted,
	SituationKeyedHeadDeadLettered,
}

// takeoverCase is the P test case whose every schedule scripts a takeover (the leased worker's
// first delivery stalls past its lease, another worker leases the message, and the stalled
// worker's handler fails with an error the policy declines), so the committed corpus holds
// SituationDeclineAfterTakeover whatever schedules it keeps.
const takeoverCase = "tcPolicyDeclines"

// scriptedCase is the P test case whose every schedule runs RawClient.StaleLeases.
const scriptedCase = "tcStaleLeases"

// TestCorpusSituations prints the situation x count table of the corpus (the committed one, or
// the one -corpus or $PCONFORM_CORPUS names, such as the gate's wide corpus). On a wide corpus it
// requires every situation but the uncovered ones; the committed corpus keeps only a few traces
// per test case, so which situations it happens to hold changes with any model change, and it is
// held to the scripted situations, which every trace of their test case meets, and to the list of
// uncovered ones: a situation it meets must leave that list.
func TestCorpusSituations(t *testing.T) {
	trs, _ := readCorpus(t)
	s, err := SituationsOf(context.Background(), trs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("situations over %d traces:\n%s", len(trs), s)
	committed := corpusDirectory() == filepath.Join("..", "traces", "corpus")
	for _, sit := range AllSituations {
		uncovered := slices.Contains(uncoveredSituations, sit)
		switch {
		case !committed && !uncovered && s[sit] == 0:
			t.Errorf("the corpus never meets the situation %q", sit)
		case committed && uncovered && s[sit] > 0:
			t.Errorf("the committed corpus now meets %q (%d times): remove it from uncoveredSituations", sit, s[sit])
		case committed && slices.Contains(scriptedSituations, sit) && s[sit] == 0:
			t.Errorf("the committed corpus never meets the scripted situation %q (%s should, in every schedule)", sit, scriptedCase)
		case committed && sit == SituationDeclineAfterTakeover && s[sit] == 0:
			t.Errorf("the committed corpus never meets the scripted situation %q (%s should, in every schedule)", sit, takeoverCase)
		}
	}
}

// TestCorpusCatchesBlindVariants replays the corpus (the committed one, or -corpus /
// $PCONFORM_CORPUS) against the broken variants whose bug hides in a situation only a scripted
// scenario reaches for sure: the lease-boundary variant (a lease still live at lease_until ==
// now) and the stale-extend variant (an extend that accepts a stale token while a newer lease is
// live), each against tcStaleLeases; and the early-dead-letter-unfenced variant (a leased
// consumer's declined failure that skips the token fence) against tcPolicyDeclines, whose every
// schedule scripts the takeover it needs; and the exhausted-dead-letter-unfenced variant (a leased
// consumer's dead-letter at max_attempts that skips the token fence) against tcPolicyDeclines too,
// whose schedules also script the redriven takeover of m4. For the first three every trace of the
// scripted test case must diverge from its variant. The redriven takeover does not happen in every
// schedule (in tcPolicyDeclines-s1-87 of the wide corpus another worker's script moves the clock past
// the Taker's lease before the stale worker fails, so both stores answer lease_lost), so for the
// fourth every trace of the committed corpus's scripted test case must diverge, and on a wider corpus
// at least one; either way the corpus as a whole does. Other traces of the correct store are replayed
// only until one diverges (the log names the first divergence). Before tcStaleLeases,
// stale-extend replayed every trace of both corpora, committed and wide, to a match; before the
// takeover, early-dead-letter-unfenced did.
//
//	go test ./replay/ -run TestCorpusCatchesBlindVariants -v
func TestCorpusCatchesBlindVariants(t *testing.T) {
	trs, _ := readCorpus(t)
	for _, b := range testBackends(t) {
		committed := corpusDirectory() == filepath.Join("..", "traces", "corpus")
		for _, c := range []struct {
			variant, scripted, script string
			every                     bool // every scripted trace must diverge, not just one
		}{
			{targets.LeaseBoundary, scriptedCase, "its script leases at lease_until", true},
			{targets.StaleExtend, scriptedCase, "its script uses a stale token under a newer lease", true},
			{targets.EarlyDeadLetterUnfenced, takeoverCase, "its script declines a failure after another worker took the lease", true},
			{targets.ExhaustedDeadLetterUnfenced, takeoverCase, "its script fails an exhausted delivery after a redrive and another worker's lease", committed},
		} {
			variant := c.variant
			t.Run(fmt.Sprintf("%s/%s", b, variant), func(t *testing.T) {
				first, scripted, scriptedDiverged := "", 0, 0
				for _, tr := range trs {
					isScripted := strings.HasPrefix(tr.Name, c.scripted+"-")
					if tr.Expect.Variant != "" || (first != "" && !isScripted) {
						continue
					}
					r := replayOn(t, tr, variant, b, replay.Options{})
					diverged := r.verdict.Outcome == replay.Diverged
					if diverged && first == "" {
						first = r.verdict.String()
						t.Logf("first divergence from %s: %s", variant, first)
					}
					if isScripted {
						scripted++
						if diverged {
							scriptedDiverged++
						} else if c.every {
							t.Errorf("%s replays against %s to %s, want a divergence (%s)", tr.Name, variant, r.verdict, c.script)
						}
					}
				}
				t.Logf("%d of %d traces of %s diverge from %s", scriptedDiverged, scripted, c.scripted, variant)
				if scripted == 0 {
					t.Errorf("%s holds no trace of %s", corpusDirectory(), c.scripted)
				} else if scriptedDiverged == 0 {
					t.Errorf("no trace of %s in %s diverges from %s (%s)", c.scripted, corpusDirectory(), variant, c.script)
				}
				if first == "" {
					t.Errorf("no trace of the correct store in %s diverges from %s: the corpus is blind to its bug", corpusDirectory(), variant)
				}
			})
		}
	}
}

// TestStepSituations checks each detector on a step and the states around it.
func TestStepSituations(t *testing.T) {
	row := func(id string, mutate func(*traces.MessageRow)) traces.MessageRow {
		m := traces.MessageRow{Mailbox: "a", ID: id, State: "ready", MaxAttempts: 3}
		if mutate != nil {
			mutate(&m)
		}
		return m
	}
	snap := func(ms ...traces.MessageRow) traces.Snapshot { return traces.Snapshot{Messages: ms} }
	leased := func(tok int, until int64, attempts int) func(*traces.MessageRow) {
		return func(m *traces.MessageRow) { m.Token, m.LeaseUntil, m.Attempts = tok, until, attempts }
	}
	cases := []struct {
		name          string
		step          traces.Step
		before, after traces.Snapshot
		want          []Situation
	}{
		{"stale ack under a newer live lease",
			traces.Step{Op: traces.OpAck, At: 5, Args: traces.Args{ID: "m1", Token: 1}},
			snap(row("m1", leased(2, 9, 2))), snap(row("m1", leased(2, 9, 2))),
			[]Situation{SituationStaleLease}},
		{"ack with the live token is not stale",
			traces.Step{Op: traces.OpAck, At: 5, Args: traces.Args{ID: "m1", Token: 2}},
			snap(row("m1", leased(2, 9, 2))), snap(), nil},
		{"lease at lease_until",
			traces.Step{Op: traces.OpLease, At: 9, Args: traces.Args{Mailbox: "a"}},
			snap(row("m1", leased(2, 9, 2))), snap(row("m1", leased(3, 10, 3))),
			[]Situation{SituationAtLeaseUntil}},
		{"fetch at available_at",
			traces.Step{Op: traces.OpConsumerFetch, At: 4, Args: traces.Args{Mailbox: "a", Profile: traces.ProfileLeaseless}},
			snap(row("m1", func(m *traces.MessageRow) { m.AvailableAt = 4 })), snap(row("m1", func(m *traces.MessageRow) { m.AvailableAt = 4 })),
			[]Situation{SituationAtAvailableAt}},
		{"expire that clears",
			traces.Step{Op: traces.OpExpire, At: 9, Result: traces.Result{Affected: 1}},
			snap(row("m1", leased(2, 9, 2))), snap(row("m1", func(m *traces.MessageRow) { m.Attempts = 2 })),
			[]Situation{SituationExpireClears}},
		{"nack to the last attempt",
			traces.Step{Op: traces.OpNack, At: 5, Args: traces.Args{ID: "m1", Token: 3}},
			snap(row("m1", leased(3, 9, 3))), snap(row("m1", func(m *traces.MessageRow) { m.Attempts = 3 })),
			[]Situation{SituationNackExhausts}},
		{"duplicate with another payload",
			traces.Step{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "a", ID: "m1", Payload: "q"}, Result: traces.Result{Duplicate: true}},
			snap(row("m1", func(m *traces.MessageRow) { m.Payload = "p" })), snap(row("m1", func(m *traces.MessageRow) { m.Payload = "p" })),
			[]Situation{SituationDuplicateOtherPayload}},
		{"keyed head in backoff and exhausted",
			traces.Step{Op: traces.OpPeek, At: 1, Args: traces.Args{Mailbox: "a"}},
			snap(row("m1", func(m *traces.MessageRow) { m.Key, m.AvailableAt = "k", 5 }), row("m2", func(m *traces.MessageRow) { m.Key = "k" }),
				row("m3", func(m *traces.MessageRow) { m.Key, m.Mailbox, m.Attempts = "j", "a", 3 }), row("m4", func(m *traces.MessageRow) { m.Key = "j" })),
			traces.Snapshot{},
			[]Situation{SituationKeyedHeadBackoff, SituationKeyedHeadExhausted}},
		{"an exhausted lease expires into the dead letters, ahead of its key's successor",
			traces.Step{Op: traces.OpLease, At: 9, Args: traces.Args{Mailbox: "b"}},
			snap(row("m1", func(m *traces.MessageRow) { m.Key, m.Token, m.LeaseUntil, m.Attempts = "k", 1, 9, 3 }), row("m2", func(m *traces.MessageRow) { m.Key = "k" })),
			traces.Snapshot{Messages: []traces.MessageRow{row("m2", func(m *traces.MessageRow) { m.Key = "k" })}, DeadLetters: []traces.DeadLetterRow{{Mailbox: "a", ID: "m1", Attempts: 3}}},
			[]Situation{SituationExpireDeadLetters, SituationKeyedHeadDeadLettered}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := stepSituations(c.step, c.before, c.after); !slices.Equal(got, c.want) {
				t.Errorf("situations %q, want %q", got, c.want)
			}
		})
	}
}

// TestDeclinedUnderForeignLease checks the detector of SituationDeclineAfterTakeover on a handle
// step, the delivery its worker fetched and the state before it.
func TestDeclinedUnderForeignLease(t *testing.T) {
	fetched := traces.Message{ID: "m1", Attempts: 1, Token: 1}
	row := func(tok int, until int64) traces.Snapshot {
		return traces.Snapshot{Messages: []traces.MessageRow{{Mailbox: "a", ID: "m1", State: traces.StateReady, Attempts: 2,
			MaxAttempts: 3, Token: tok, LeaseUntil: until}}}
	}
	handle := func(profile, outcome string) traces.Step {
		return traces.Step{Op: traces.OpConsumerHandle, At: 3, Args: traces.Args{Worker: 1, Mailbox: "a", Profile: profile, Outcome: outcome}}
	}
	cases := []struct {
		name   string
		step   traces.Step
		before traces.Snapshot
		want   bool
	}{
		{"declined while another lease is live", handle(traces.ProfileLeased, traces.OutcomeFailNoRetry), row(2, 5), true},
		{"declined under its own lease", handle(traces.ProfileLeased, traces.OutcomeFailNoRetry), row(1, 5), false},
		{"declined after the other lease ran out", handle(traces.ProfileLeased, traces.OutcomeFailNoRetry), row(2, 3), false},
		{"declined after expire cleared the lease", handle(traces.ProfileLeased, traces.OutcomeFailNoRetry), row(0, 0), false},
		{"a retried failure", handle(traces.ProfileLeased, traces.OutcomeFail), row(2, 5), false},
		{"a leaseless decline", handle(traces.ProfileLeaseless, traces.OutcomeFailNoRetry), row(2, 5), false},
		{"the message is gone", handle(traces.ProfileLeased, traces.OutcomeFailNoRetry), traces.Snapshot{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := declinedUnderForeignLease(c.step, fetched, c.before); got != c.want {
				t.Errorf("declinedUnderForeignLease = %v, want %v", got, c.want)
			}
		})
	}
}

// TestSituationsTableListsEverySituation: the table has a row per situation, zero rows included.
func TestSituationsTableListsEverySituation(t *testing.T) {
	table := Situations{SituationBothPaths: 2}.String()
	for _, sit := range AllSituations {
		if !strings.Contains(table, string(sit)) {
			t.Errorf("the table lacks a row for %q:\n%s", sit, table)
		}
	}
	if got := (Situations{SituationBothPaths: 2}).Missing(1); len(got) != len(AllSituations)-1 || slices.Contains(got, SituationBothPaths) {
		t.Errorf("Missing(1) = %q", got)
	}
}
