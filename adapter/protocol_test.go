package adapter_test

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// storeLevel is a target with its protocol steps taken away.
type storeLevel struct{ replay.Target }

func (s storeLevel) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	if traces.Spec[op].Protocol {
		return replay.Observation{}, fmt.Errorf("%w: %s", replay.ErrUnsupported, op)
	}
	return s.Target.Do(ctx, op, at, a)
}

// TestReferenceSteps runs every committed green trace against the store (SQLite) with its
// protocol steps replaced by WithProtocol's: the reference steps, built on the store's
// store-level operations alone, must do what the real consumer and publisher do.
func TestReferenceSteps(t *testing.T) {
	tp, err := targets.NewSQLiteTemplate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"corpus", "testdata/good"} {
		names, err := fs.Glob(traces.Committed(), dir+"/*.json")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			data, err := fs.ReadFile(traces.Committed(), name)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := traces.Unmarshal(data, name)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Expect.Variant != "" || hasBatchStep(tr) {
				continue // WithProtocol has no batch steps yet
			}
			t.Run(tr.Name, func(t *testing.T) {
				st, err := targets.NewOn(targets.Store, targets.StoreDB{Dir: t.TempDir(), Template: tp})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				target := adapter.WithProtocol(storeLevel{st}, profile.Profile{})
				v, err := replay.Run(context.Background(), tr, target, replay.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if v.Outcome != replay.Match {
					t.Fatalf("%s", v)
				}
			})
		}
	}
}

// TestReferenceStepsFailedCommit replays replay's hand trace of single handles whose commit
// fails, both paths, both outcomes, against the store with WithProtocol's reference steps: a
// failed handle changes nothing and drops the worker's delivery, and the fetches after it find
// each message where its fetch left it.
func TestReferenceStepsFailedCommit(t *testing.T) {
	tr, err := traces.ReadFile(filepath.Join("..", "replay", "testdata", "handle-commit-fails.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := targets.NewOn(targets.Store, targets.StoreDB{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v, err := replay.Run(context.Background(), tr, adapter.WithProtocol(storeLevel{st}, profile.Profile{}), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Outcome != replay.Match {
		t.Fatalf("%s", v)
	}
}
