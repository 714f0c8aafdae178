package replay_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// TestEarlierVersionReplays replays the upgraded v1 fixture, whose dead letters' later columns
// are unknown, against the store: the comparison leaves them out and the store matches.
func TestEarlierVersionReplays(t *testing.T) {
	tr, err := traces.ReadFile("../traces/testdata/versions/v1-leased-stale-ack.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Final.Unknown) == 0 {
		t.Fatal("the fixture declares no unknown column; it no longer shows an upgrade")
	}
	target := replayTarget(t, targets.Store)
	v, err := replay.Run(context.Background(), tr, target, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Outcome != replay.Match {
		t.Fatalf("%s", v)
	}
}

// declaring is a target with a declaration of its own.
type declaring struct {
	replay.Target
	caps replay.Capabilities
	// deadAt, when set, is reported as every dead letter's dead_at.
	deadAt int64
}

func (d declaring) Capabilities() replay.Capabilities { return d.caps }

func (d declaring) Snapshot(ctx context.Context) (replay.Snapshot, error) {
	s, err := d.Target.Snapshot(ctx)
	for i := range s.DeadLetters {
		s.DeadLetters[i].DeadAt = d.deadAt
	}
	return s, err
}

// TestUnknownColumns: a column the target declares unknown is left out of the comparison when the
// target reports it as zero, and a target that reports it anyway is refused, naming the column.
func TestUnknownColumns(t *testing.T) {
	tr, err := traces.ReadFile("../traces/testdata/good/leased-stale-ack.json")
	if err != nil {
		t.Fatal(err)
	}
	caps := replay.Capabilities{Unknown: []traces.Column{traces.ColDeadLetterDeadAt}}
	v, err := replay.Run(context.Background(), tr, declaring{Target: replayTarget(t, targets.Store), caps: caps}, replay.Options{})
	if err != nil || v.Outcome != replay.Match {
		t.Fatalf("a target without dead_at: %v, %v", v, err)
	}
	v, err = replay.Run(context.Background(), tr, declaring{Target: replayTarget(t, targets.Store)}, replay.Options{})
	if err != nil || v.Outcome != replay.Diverged || v.Step != replay.FinalStep {
		t.Fatalf("a target that reports dead_at 0 without declaring it must diverge at the final snapshot: %v, %v", v, err)
	}
	_, err = replay.Run(context.Background(), tr, declaring{Target: replayTarget(t, targets.Store), caps: caps, deadAt: 7}, replay.Options{})
	if err == nil || !strings.Contains(err.Error(), "dead_letters.dead_at") {
		t.Fatalf("a target that reports a column it declared unknown: err %v, want one naming dead_letters.dead_at", err)
	}
}

// refusing refuses every outbox_enqueue, as a store with a unique constraint would a taken id.
type refusing struct{ replay.Target }

func (r refusing) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	if op == traces.OpOutboxEnqueue {
		return replay.Observation{}, errors.Join(replay.ErrRefused, errors.New("UNIQUE constraint failed: outbox.id"))
	}
	return r.Target.Do(ctx, op, at, a)
}

// TestRefusedIsAResult: a refusal is compared as err "refused", not a run error, and the verdict
// keeps the store's message.
func TestRefusedIsAResult(t *testing.T) {
	tr, err := traces.ReadFile("../traces/testdata/good/outbox-dead-letters.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := replay.Run(context.Background(), tr, refusing{replayTarget(t, targets.Store)}, replay.Options{})
	if err != nil {
		t.Fatalf("a refusal failed the run: %v", err)
	}
	if v.Outcome != replay.Diverged || v.Observed == nil || v.Observed.Err != traces.ErrKindRefused {
		t.Fatalf("want a divergence observing err %q, got %v", traces.ErrKindRefused, v)
	}
	if !strings.Contains(v.Reason, "UNIQUE constraint failed") {
		t.Errorf("the verdict does not keep the store's message: %s", v.Reason)
	}
}

// replayTarget is a fresh target of the registry on SQLite, closed with the test.
func replayTarget(t *testing.T, name string) replay.Target {
	t.Helper()
	tg, err := targets.NewOn(name, storeDB(t, actordelivery.BackendSQLite))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg
}
