package replay_test

import (
	"context"
	"testing"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// TestRecord records every variant trace of the committed corpus and traces/testdata/good against its own variant and
// against the correct store. The variant's recording is the trace itself (a trace of a variant
// records that variant's behaviour), and the store's recording is one the store matches, equal to
// the trace up to the step at which the trace predicts the store refuses the bug.
func TestRecord(t *testing.T) {
	var paths []string
	for _, dir := range []string{"../traces/corpus", "../traces/testdata/good"} {
		p, err := traces.Walk(dir)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p...)
	}
	ctx := context.Background()
	record := func(t *testing.T, tr *traces.Trace, target string) *traces.Trace {
		t.Helper()
		tg, err := targets.New(target, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close()
		rec, err := replay.Record(ctx, tr, tg)
		if err != nil {
			t.Fatalf("recording against %s: %v", target, err)
		}
		return rec
	}
	n := 0
	for _, path := range paths {
		tr, err := traces.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Expect.Variant == "" {
			continue
		}
		n++
		t.Run(tr.Name, func(t *testing.T) {
			own := record(t, tr, tr.Expect.Variant)
			want, _ := traces.Marshal(tr)
			got, _ := traces.Marshal(own)
			if string(want) != string(got) {
				t.Errorf("recording %s against its own variant changed it:\n%s\nwant\n%s", path, got, want)
			}
			store := record(t, tr, targets.Store)
			tg, err := targets.New(targets.Store, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			if v, err := replay.Run(ctx, store, tg, replay.Options{}); err != nil || v.Outcome != replay.Match {
				t.Errorf("the store does not match its own recording of %s: %v, %v", path, v, err)
			}
			if d := tr.Expect.DivergesAt; d >= 0 {
				for i := range d {
					if diff := replay.DiffResults(tr.Steps[i].Op, tr.Steps[i].Result, store.Steps[i].Result); diff != "" {
						t.Errorf("step #%d, before the predicted divergence at #%d, was recorded differently:\n%s", i, d, diff)
					}
				}
				if replay.DiffResults(tr.Steps[d].Op, tr.Steps[d].Result, store.Steps[d].Result) == "" {
					t.Errorf("the store's recording agrees with the trace at the predicted divergence #%d", d)
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no variant trace in the corpus or traces/testdata/good")
	}
}

// TestRecordNamesUnexpectedTokens: a token the trace does not expect gets a symbol above every
// symbol the trace uses, never one a later step binds.
func TestRecordNamesUnexpectedTokens(t *testing.T) {
	tr := &traces.Trace{
		Format: traces.Format, Name: "unexpected-token", Origin: traces.Origin{Kind: traces.OriginHand}, Expect: traces.Expect{DivergesAt: -1},
		Steps: []traces.Step{
			step(traces.OpEnqueue, 0, traces.Args{Mailbox: "in", ID: "m1", MaxAttempts: 2}),
			// The trace expects nothing at the first lease; the store leases m1.
			{Op: traces.OpLease, At: 0, Args: traces.Args{Mailbox: "in", LeaseFor: 1}, Result: traces.Result{}},
			{Op: traces.OpLease, At: 5, Args: traces.Args{Mailbox: "in", LeaseFor: 10},
				Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 2, Token: 1}}},
		},
	}
	tg, err := targets.New(targets.Store, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	rec, err := replay.Record(context.Background(), tr, tg)
	if err != nil {
		t.Fatal(err)
	}
	if m := rec.Steps[1].Result.Message; m == nil || m.Token != 2 {
		t.Errorf("first lease recorded as %+v, want m1 under the fresh symbol 2", m)
	}
	if m := rec.Steps[2].Result.Message; m == nil || m.Token != 1 {
		t.Errorf("second lease recorded as %+v, want the trace's symbol 1", m)
	}
}
