package replay_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// TestRegistry builds every registered target (on every backend), checks that each has a description and that the
// broken variants are exactly the names VariantTarget resolves, and that an unknown name is
// refused with ErrUnknownTarget.
func TestRegistry(t *testing.T) {
	for _, name := range targets.Names() {
		t.Run(name, func(t *testing.T) {
			if targets.Describe(name) == "" {
				t.Errorf("%s has no description", name)
			}
			for _, b := range testBackends(t) {
				tg, err := targets.NewOn(name, storeDB(t, b))
				if err != nil {
					t.Fatalf("%s on %s: %v", name, b, err)
				}
				if _, err := tg.Snapshot(context.Background()); err != nil {
					t.Errorf("snapshot of a fresh %s on %s: %v", name, b, err)
				}
				if err := tg.Close(); err != nil {
					t.Error(err)
				}
			}
			got, ok := targets.ForVariant(name)
			if broken := slices.Contains(targets.BrokenVariants(), name); ok != broken || (ok && got != name) {
				t.Errorf("VariantTarget(%q) = %q, %v; broken variant: %v", name, got, ok, broken)
			}
		})
	}
	if got, ok := targets.ForVariant(""); !ok || got != targets.Store {
		t.Errorf(`VariantTarget("") = %q, %v; want the store`, got, ok)
	}
	if _, err := targets.New("no-such", t.TempDir()); !errors.Is(err, targets.ErrUnknown) {
		t.Errorf("error %v does not wrap ErrUnknownTarget", err)
	}
	// Every variant the P models name has a target: fifo-overtake is the one that had none.
	for _, v := range []string{targets.SplitWrite, targets.RawAttempts, targets.UnfencedAck, targets.FifoOvertake} {
		if _, ok := targets.ForVariant(v); !ok {
			t.Errorf("the models' variant %q has no target", v)
		}
	}
}

// TestFifoOvertakeTarget drives the fifo-overtake variant and the store, on every backend, through
// a keyed head that is leased (or delayed): the store keeps its successor back, the variant hands
// it out.
func TestFifoOvertakeTarget(t *testing.T) {
	m1 := handStep{traces.OpEnqueue, 0, replay.Args{Mailbox: "a", ID: "m1", Key: "k", MaxAttempts: 2}}
	m2 := handStep{traces.OpEnqueue, 0, replay.Args{Mailbox: "a", ID: "m2", Key: "k", MaxAttempts: 2}}
	for _, c := range []struct {
		name  string
		steps []handStep
	}{
		{"leased head", []handStep{m1, m2, {traces.OpLease, 0, replay.Args{Mailbox: "a", LeaseFor: 5}}, {traces.OpLease, 1, replay.Args{Mailbox: "a", LeaseFor: 5}}}},
		{"delayed head", []handStep{m1, m2, {traces.OpLease, 0, replay.Args{Mailbox: "a", LeaseFor: 5}}, {traces.OpNack, 1, replay.Args{ID: "m1", Delay: 10}}, {traces.OpPeek, 2, replay.Args{Mailbox: "a"}}}},
	} {
		for _, b := range testBackends(t) {
			t.Run(c.name+"@"+string(b), func(t *testing.T) {
				want := map[string]string{targets.Store: "", targets.EligibilityCopy: "", targets.FifoOvertake: "m2"}
				for _, target := range []string{targets.Store, targets.EligibilityCopy, targets.FifoOvertake} {
					tg, err := targets.NewOn(target, storeDB(t, b))
					if err != nil {
						t.Fatal(err)
					}
					var last replay.Observation
					var token string
					for _, s := range c.steps {
						a := s.a
						if s.op == traces.OpNack {
							a.Token = token
						}
						if last, err = tg.Do(context.Background(), s.op, s.at, a); err != nil {
							t.Fatalf("%s: %s: %v", target, s.op, err)
						}
						if s.op == traces.OpLease && last.Message != nil && token == "" {
							token = last.Message.Token
						}
					}
					got := ""
					if last.Message != nil {
						got = last.Message.ID
					}
					if got != want[target] {
						t.Errorf("%s on %s: last step handed out %q, want %q", target, b, got, want[target])
					}
					if err := tg.Close(); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
}
