package models

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

func corpusTraces(t *testing.T) []*traces.Trace {
	t.Helper()
	files, err := traces.Walk(filepath.Join("..", "traces", "corpus"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*traces.Trace
	for _, f := range files {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	if len(out) < 50 {
		t.Fatalf("only %d corpus traces", len(out))
	}
	return out
}

// TestReexpectDefaultIsIdentity: every correct corpus trace re-expected under the default profile
// is the same trace.
func TestReexpectDefaultIsIdentity(t *testing.T) {
	for _, tr := range corpusTraces(t) {
		if tr.Expect.Variant != "" {
			continue
		}
		got, err := Reexpect(Config{}, tr)
		if err != nil {
			t.Fatalf("%s: %v", tr.Name, err)
		}
		if d := gocmp.Diff(tr, got); d != "" {
			t.Errorf("%s re-expected under the default differs (-corpus +re-expected):\n%s", tr.Name, d)
		}
	}
}

// firstChange is where re-expected differs first from tr: a step index, len(steps) for the final
// snapshot, -1 for nowhere.
func firstChange(tr, re *traces.Trace) int {
	for i := range tr.Steps {
		if !gocmp.Equal(tr.Steps[i].Result, re.Steps[i].Result) || tr.Steps[i].Args.Token != re.Steps[i].Args.Token {
			return i
		}
	}
	if !gocmp.Equal(tr.Final, re.Final) {
		return len(tr.Steps)
	}
	return -1
}

// TestReexpectChangesWhereTheRuleApplies re-expects the correct corpus traces under each choice's
// alternative and checks that some trace changes, and that each first change is at a step whose op
// the choice's rule governs (or in the final snapshot, for choices that change rows only).
func TestReexpectChangesWhereTheRuleApplies(t *testing.T) {
	const final = "final"
	consumer := []traces.Op{traces.OpConsumerFetch, traces.OpConsumerHandle}
	governs := map[string][]traces.Op{
		"lease_at_until": {traces.OpLease, traces.OpPeek, traces.OpExpire, traces.OpOutboxClaim, traces.OpConsumerFetch, traces.OpPublisherDeliver, traces.OpAck, traces.OpNack, traces.OpExtend, traces.OpConsumerHandle},
		"ack":            {traces.OpEnqueue, traces.OpPublisherDeliver, traces.OpPurge, final},
		// Without the sweep, a later expire finds the leases the fetch left.
		"fetch_sweep":           append(consumer, traces.OpExpire, final),
		"exhausted_leased_head": {traces.OpLease, traces.OpPeek, traces.OpConsumerFetch},
		"processed_expiry":      {traces.OpMarkProcessed},
		"nack_by_id":            {traces.OpNackByID, final},
		"outbox_duplicate":      {traces.OpOutboxEnqueue},
		"failed_delivery":       {traces.OpOutboxClaim, final},
		"complete_fence":        {traces.OpOutboxComplete, traces.OpPublisherDeliver},
		// A completed row's claim shows in the rows only.
		"completed_claim":          {final},
		"outbox_dead_letter_fence": {traces.OpOutboxDeadLetter, traces.OpPublisherDeliver},
		"processed_scope":          {traces.OpMarkProcessed},
		"dead_letter_id":           {traces.OpEnqueue, traces.OpPublisherDeliver, traces.OpRedrive, final},
		"checkpoint_save":          {traces.OpSaveCheckpoint},
		// A redrive record keeps the reason its dead letter had.
		"reason_max_attempts":          {traces.OpListRedrives, final},
		"reason_lease_expired":         {traces.OpListRedrives, final},
		"reason_max_delivery_attempts": {traces.OpListRedrives, final},
	}
	// A batch step is its single steps in one transaction: a rule that governs the single step
	// governs its batch too.
	batchOf := map[traces.Op]traces.Op{traces.OpConsumerFetch: traces.OpConsumerFetchBatch,
		traces.OpConsumerHandle: traces.OpConsumerHandleBatch, traces.OpPublisherDeliver: traces.OpPublisherDeliverBatch}
	for name, ops := range governs {
		for _, op := range ops {
			if b, ok := batchOf[op]; ok {
				governs[name] = append(governs[name], b)
			}
		}
	}
	corpus := corpusTraces(t)
	changedSome := 0
	for _, c := range profile.Choices {
		t.Run(c.Name, func(t *testing.T) {
			alt := "another wording"
			if c.Switch() {
				alt = c.Values[1]
			}
			var p profile.Profile
			if err := p.Set(c.Name, alt); err != nil {
				t.Fatal(err)
			}
			changed, unfit := 0, 0
			for _, tr := range corpus {
				if tr.Expect.Variant != "" {
					continue
				}
				re, err := Reexpect(Config{Profile: p}, tr)
				if errors.Is(err, ErrUnfit) {
					unfit++
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", tr.Name, err)
				}
				at := firstChange(tr, re)
				if at < 0 {
					continue
				}
				changed++
				where := final
				if at < len(tr.Steps) {
					where = string(tr.Steps[at].Op)
				}
				if !slices.ContainsFunc(governs[c.Name], func(op traces.Op) bool { return string(op) == where }) {
					t.Errorf("%s under %s first changes at %s (step %d), which the rule does not govern", tr.Name, p, where, at)
				}
			}
			t.Logf("%s: %d corpus traces change, %d do not fit", p, changed, unfit)
			if changed > 0 {
				changedSome++
			}
		})
	}
	if changedSome < 6 {
		t.Errorf("only %d choices change any corpus trace", changedSome)
	}
}
