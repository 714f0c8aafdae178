package brokenstore_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/brokenstore"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/traces"
)

// TestRecordedCopies: the copies' recorded calls number their events in the store's own commit
// order. With the store's rules, the reference model agrees with every recorded result; with a
// variant's rule, it refuses the first result the rule changed (a stale extension accepted, a
// first checkpoint save that overwrote one).
func TestRecordedCopies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules brokenstore.Rules
		// refused is the op of the step the model refuses, "" for none.
		refused traces.Op
	}{
		{"store rules", brokenstore.Rules{}, ""},
		{"stale-extend", brokenstore.Rules{ExtendIgnoresToken: true}, traces.OpExtend},
		{"checkpoint-reset", brokenstore.Rules{CheckpointFirstSaveResets: true}, traces.OpSaveCheckpoint},
		{"dedup-ttl-inverted", brokenstore.Rules{ProcessedTTLInverted: true}, traces.OpMarkProcessed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "s.db")
			clk := actordelivery.NewManualClock(traces.Epoch)
			var events bytes.Buffer
			rec := actordelivery.JSONRecorder(&events, func(err error) { t.Error(err) })
			st, err := actordelivery.Open(path, actordelivery.Options{Clock: clk, Recorder: rec})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			e, err := brokenstore.OpenEligibility(path, tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			r := brokenstore.Recording{Clock: clk, Rec: rec}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			_, err = st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "a", ID: "m1", MaxAttempts: 3})
			must(err)
			m1, err := e.FetchRecorded(ctx, r, 1, "a", actordelivery.PathLeased, 2*time.Second)
			must(err)
			if m1 == nil {
				t.Fatal("the fetch leased nothing")
			}
			must(e.ExtendRecorded(ctx, r, "m1", m1.Token, 2*time.Second))
			clk.Advance(5 * time.Second)
			m2, err := e.FetchRecorded(ctx, r, 2, "a", actordelivery.PathLeased, 2*time.Second)
			must(err)
			if m2 == nil || m2.Token == m1.Token {
				t.Fatalf("the second fetch: %+v", m2)
			}
			// Worker 1's lease ran out and worker 2 holds the message: a stale extension.
			if err := e.ExtendRecorded(ctx, r, "m1", m1.Token, 2*time.Second); tc.rules.ExtendIgnoresToken != (err == nil) {
				t.Fatalf("stale extension: %v", err)
			}
			_, err = e.MarkProcessedRecorded(ctx, r, "g", "m1", 2*time.Second)
			must(err)
			_, err = e.MarkProcessedRecorded(ctx, r, "g", "m1", 2*time.Second)
			must(err)
			_, err = e.SaveCheckpointRecorded(ctx, r, "a1", []byte("s"), 0)
			must(err)
			if _, err := e.SaveCheckpointRecorded(ctx, r, "a1", []byte("s"), 0); err != nil && !errors.Is(err, actordelivery.ErrVersionConflict) {
				t.Fatal(err)
			}
			_, err = st.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: "o1", Target: "b", MaxAttempts: 1})
			must(err)
			rows, err := e.ClaimRecorded(ctx, r, 2, 2*time.Second)
			must(err)
			if len(rows) != 1 {
				t.Fatalf("claimed %+v", rows)
			}
			must(st.OutboxComplete(ctx, "o1", rows[0].ClaimToken))

			lg, err := observe.ReadLog(&events, "events")
			must(err)
			tr, err := observe.Convert(lg, observe.Options{Name: tc.name})
			must(err)
			if len(tr.Steps) != 12 {
				t.Fatalf("%d steps recorded, want 12", len(tr.Steps))
			}
			f, err := observe.CheckModel(tr)
			must(err)
			switch {
			case tc.refused == "" && f != nil:
				t.Fatalf("the model refuses the store's rules: %v", f)
			case tc.refused != "" && (f == nil || tr.Steps[f.Step].Op != tc.refused):
				t.Fatalf("the model's finding %v, want one at a %s", f, tc.refused)
			}
		})
	}
}
