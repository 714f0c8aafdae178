package workload_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/observe/workload"
	"github.com/pconform/pconform/traces"
)

// TestObservedRunAgreesWithModel records a short concurrent run of the correct store, converts
// its history and checks it with the reference model, which must agree with every result.
func TestObservedRunAgreesWithModel(t *testing.T) {
	var events bytes.Buffer
	stats, err := workload.Run(context.Background(), workload.Config{
		Target: filepath.Join(t.TempDir(), "observe.db"), Seed: 1, Budget: 1500 * time.Millisecond, Events: &events})
	if err != nil {
		t.Fatal(err)
	}
	lg, err := observe.ReadLog(&events, "events")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := observe.Convert(lg, observe.Options{Name: "run", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats %+v, %d events, %d steps", stats, len(lg.Events), len(tr.Steps))
	if stats.Handled == 0 || stats.Delivered == 0 || len(tr.Steps) < 50 {
		t.Fatalf("the run did too little to check anything: %+v, %d steps", stats, len(tr.Steps))
	}
	// The workload reaches every rule a variant breaks: lease extensions (stale-extend),
	// processed marks (dedup-ttl-inverted), checkpoint saves (checkpoint-reset), outbox rows out
	// of delivery attempts (outbox-unbounded), and purges and redrives.
	ops := map[traces.Op]int{}
	for _, st := range tr.Steps {
		ops[st.Op]++
		if st.Op == traces.OpOutboxDeadLetter && st.Args.Reason == traces.ReasonMaxDeliveryAttempts {
			ops["outbox_dead_letter at max_delivery_attempts"]++
		}
	}
	for _, op := range []traces.Op{traces.OpExtend, traces.OpMarkProcessed, traces.OpSaveCheckpoint, traces.OpLoadCheckpoint,
		"outbox_dead_letter at max_delivery_attempts", traces.OpPurge, traces.OpRedrive} {
		if ops[op] == 0 {
			t.Errorf("the run performed no %s (ops: %v)", op, ops)
		}
	}
	f, err := observe.CheckModel(tr)
	if err != nil {
		t.Fatal(err)
	}
	if f != nil {
		t.Fatalf("the model refuses the correct store's history: %v", f)
	}
}

// TestMaxEvents: a run with MaxEvents and no budget ends once that many events are recorded.
func TestMaxEvents(t *testing.T) {
	var events bytes.Buffer
	if _, err := workload.Run(context.Background(), workload.Config{
		Target: filepath.Join(t.TempDir(), "observe.db"), Seed: 1, MaxEvents: 300, Events: &events}); err != nil {
		t.Fatal(err)
	}
	// The steps in flight when the limit is reached still commit and record.
	if n := bytes.Count(events.Bytes(), []byte("\n")); n < 300 || n > 400 {
		t.Fatalf("a run of MaxEvents 300 recorded %d events", n)
	}
}

// TestBatchedRunAgreesWithModel: a run with Config.Batch records batch steps (batches of two or
// more messages on both paths, folded deliveries of two or more rows) beside single ones, and
// the model agrees with every result.
func TestBatchedRunAgreesWithModel(t *testing.T) {
	var events bytes.Buffer
	stats, err := workload.Run(context.Background(), workload.Config{
		Target: filepath.Join(t.TempDir(), "observe.db"), Seed: 1, Budget: 1500 * time.Millisecond, Events: &events, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	lg, err := observe.ReadLog(&events, "events")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := observe.Convert(lg, observe.Options{Name: "batched", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, st := range tr.Steps {
		switch st.Op {
		case traces.OpConsumerFetchBatch:
			if len(st.Result.Messages) >= 2 {
				counts["fetch of 2+, "+st.Args.Profile]++
			}
		case traces.OpPublisherDeliverBatch:
			if len(st.Args.IDs) >= 2 {
				counts["delivery of 2+"]++
			}
		case traces.OpConsumerFetch:
			counts["single "+string(st.Op)]++
		}
	}
	t.Logf("stats %+v, %d steps, %v", stats, len(tr.Steps), counts)
	for _, k := range []string{"fetch of 2+, leased", "fetch of 2+, leaseless", "delivery of 2+", "single consumer_fetch"} {
		if counts[k] == 0 {
			t.Errorf("the run recorded no %s (%v)", k, counts)
		}
	}
	f, err := observe.CheckModel(tr)
	if err != nil {
		t.Fatal(err)
	}
	if f != nil {
		t.Fatalf("the model refuses the batched store's history: %v", f)
	}
}

// TestGroupCommitRunAgreesWithModel: a run on a store with group commit (GroupCommit 8), where
// concurrent steps share COMMITs, records a history the model agrees with.
func TestGroupCommitRunAgreesWithModel(t *testing.T) {
	var events bytes.Buffer
	stats, err := workload.Run(context.Background(), workload.Config{
		Target: filepath.Join(t.TempDir(), "observe.db"), Seed: 1, Budget: 1500 * time.Millisecond, Events: &events, GroupCommit: 8})
	if err != nil {
		t.Fatal(err)
	}
	lg, err := observe.ReadLog(&events, "events")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := observe.Convert(lg, observe.Options{Name: "group-commit", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats %+v, %d events, %d steps", stats, len(lg.Events), len(tr.Steps))
	if stats.Handled == 0 || stats.Delivered == 0 || len(tr.Steps) < 50 {
		t.Fatalf("the run did too little to check anything: %+v, %d steps", stats, len(tr.Steps))
	}
	if stats.Commits >= stats.Transactions {
		t.Fatalf("%d transactions in %d commits: no group formed", stats.Transactions, stats.Commits)
	}
	f, err := observe.CheckModel(tr)
	if err != nil {
		t.Fatal(err)
	}
	if f != nil {
		t.Fatalf("the model refuses the history of a store with group commit: %v", f)
	}
}
