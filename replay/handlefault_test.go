package replay_test

import (
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// handleCommitFailsTrace holds single handles whose commit fails on both paths, both ways (a
// handler that succeeded, one that failed, one whose retry policy declined), of a worker that
// holds nothing, and the fetches after them that find each message where the failure left it.
const handleCommitFailsTrace = "testdata/handle-commit-fails.json"

// TestHandleCommitFails replays the trace against the store on every backend and the model
// (both must match: a store that ignored the fault would acknowledge where the trace says
// commit_failed, and the fetches after each failure check where it left the message), and checks
// what the recording store records for it (each failed handle one consumer_handle event with
// fault commit_fails, none for the idle one).
//
//	go test ./replay/ -run TestHandleCommitFails -v
func TestHandleCommitFails(t *testing.T) {
	tr, err := traces.ReadFile(handleCommitFailsTrace)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, s := range tr.Steps {
		if s.Op == traces.OpConsumerHandle && s.Args.Fault == traces.FaultCommitFails && s.Result.Action == traces.ActionCommitFailed {
			failed++
		}
	}
	if failed < 4 {
		t.Fatalf("%s holds %d consumer_handle steps whose commit fails, want both outcomes on both paths", handleCommitFailsTrace, failed)
	}
	for _, b := range testBackends(t) {
		t.Run(string(b), func(t *testing.T) {
			if v := replayOn(t, tr, targets.Store, b, replay.Options{}).verdict; v.Outcome != replay.Match {
				t.Fatalf("the store: want a match, got %s", v)
			}
		})
	}
	if v := replayOn(t, tr, targets.Model, actordelivery.BackendSQLite, replay.Options{}).verdict; v.Outcome != replay.Match {
		t.Fatalf("the model: want a match, got %s", v)
	}
	t.Run("recorded", func(t *testing.T) {
		c := *tr
		c.Final = nil
		checkRecordedReplay(t, &c, handleCommitFailsTrace, true)
	})
}
