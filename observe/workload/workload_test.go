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
	stats, lg, tr := runHistory(t, workload.Config{}, "run")
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
	modelAgrees(t, tr, "the correct store's history")
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
	stats, _, tr := runHistory(t, workload.Config{Batch: 4}, "batched")
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
	modelAgrees(t, tr, "the batched store's history")
}

// TestGroupCommitRunAgreesWithModel: a run on a store with group commit (GroupCommit 8), where
// concurrent steps share COMMITs, records a history the model agrees with.
func TestGroupCommitRunAgreesWithModel(t *testing.T) {
	stats, lg, tr := runHistory(t, workload.Config{GroupCommit: 8}, "group-commit")
	t.Logf("stats %+v, %d events, %d steps", stats, len(lg.Events), len(tr.Steps))
	if stats.Handled == 0 || stats.Delivered == 0 || len(tr.Steps) < 50 {
		t.Fatalf("the run did too little to check anything: %+v, %d steps", stats, len(tr.Steps))
	}
	if stats.Commits >= stats.Transactions {
		t.Fatalf("%d transactions in %d commits: no group formed", stats.Transactions, stats.Commits)
	}
	modelAgrees(t, tr, "the history of a store with group commit")
}

// runHistory runs the workload as cfg says (seed 1 for 1.5 s, on a database of its own, unless cfg
// sets them) with its events kept in memory, and returns its stats, its log and the log as a trace
// named name.
func runHistory(t *testing.T, cfg workload.Config, name string) (workload.Stats, *observe.Log, *traces.Trace) {
	t.Helper()
	var events bytes.Buffer
	cfg.Target, cfg.Events = filepath.Join(t.TempDir(), "observe.db"), &events
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Budget == 0 {
		cfg.Budget = 1500 * time.Millisecond
	}
	stats, err := workload.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	lg, tr := historyOf(t, &events, name)
	return stats, lg, tr
}

// historyOf reads the events a run recorded and converts them into a trace named name.
func historyOf(t *testing.T, events *bytes.Buffer, name string) (*observe.Log, *traces.Trace) {
	t.Helper()
	lg, err := observe.ReadLog(events, "events")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := observe.Convert(lg, observe.Options{Name: name, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return lg, tr
}

// modelAgrees fails t when the reference model refuses tr, what the history is.
func modelAgrees(t *testing.T, tr *traces.Trace, what string) {
	t.Helper()
	f, err := observe.CheckModel(tr)
	if err != nil {
		t.Fatal(err)
	}
	if f != nil {
		t.Fatalf("the model refuses %s: %v", what, f)
	}
}
