package properties

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/traces"
)

// identityWorkers leased workers share one mailbox in TestWorkersRecordOwnIdentity.
const identityWorkers = 3

// TestWorkersRecordOwnIdentity checks that each of RunWorkers' leased workers records as a
// worker of its own. All of them serve the one mailbox; every handler blocks until each worker
// has fetched, so the history holds identityWorkers fetches before any handle. Under one shared
// worker number the model refuses the second fetch (its worker still holds one). The history must
// hold identityWorkers fetches under distinct numbers, and the Go model must agree with every
// step. The order comes from a barrier, not timing.
//
// Rerun: bash scripts/pg.sh go test ./properties/ -run 'TestWorkersRecordOwnIdentity' -v
func TestWorkersRecordOwnIdentity(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testWorkersRecordOwnIdentity(t, func(opts actordelivery.Options) *actordelivery.Store {
			st, err := actordelivery.Open(filepath.Join(t.TempDir(), "identity.db"), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		})
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgDSN(t)
		if dsn == "" {
			t.Skip("PCONFORM_PG_DSN is not set: skipping the PostgreSQL identity check (scripts/check.sh starts a server)")
		}
		_, schema, _ := pgSchema(t, dsn, "identity")
		testWorkersRecordOwnIdentity(t, func(opts actordelivery.Options) *actordelivery.Store { return openPGListening(t, dsn, schema, opts) })
	})
}

func testWorkersRecordOwnIdentity(t *testing.T, open func(actordelivery.Options) *actordelivery.Store) {
	var events bytes.Buffer
	rec := actordelivery.JSONRecorder(&events, func(err error) { t.Errorf("recorder: %v", err) })
	st := open(actordelivery.Options{Clock: fixedClock{contentionEpoch}, Recorder: rec})
	ctx := context.Background()
	for j := range 2 * identityWorkers {
		if _, err := st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "one", ID: fmt.Sprintf("m%d", j), MaxAttempts: 3}); err != nil {
			t.Fatal(err)
		}
	}
	tr := stopWhileHandling(t, st, &events, []string{"one"}, identityWorkers,
		actordelivery.ConsumerOptions{Path: actordelivery.PathLeased, LeaseFor: time.Minute, DrainTimeout: time.Minute}, "identity")
	workers := map[int]bool{}
	for _, s := range tr.Steps {
		if s.Op == traces.OpConsumerFetch && s.Result.Message != nil {
			workers[s.Args.Worker] = true
		}
	}
	if len(workers) != identityWorkers {
		t.Errorf("the fetches that found a message name workers %v, want %d distinct ones", workers, identityWorkers)
	}
	if f, err := observe.CheckModel(tr); err != nil || f != nil {
		t.Fatalf("the model on the group's history: %v, %v", f, err)
	}
}
