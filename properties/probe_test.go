package properties

import (
	"context"
	"slices"
	"testing"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// staleExtend is a target with a fencing bug no registered variant has: an extend that the store
// refuses for its token is reported as done.
type staleExtend struct{ replay.Target }

func (s staleExtend) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	obs, err := s.Target.Do(ctx, op, at, a)
	if err == nil && op == traces.OpExtend && obs.Err == traces.ErrKindLeaseLost {
		obs.Err = ""
	}
	return obs, err
}

// TestFencingProbes: a sequence that never extends with a stale token on its own still exposes a
// target that accepts one, because the probes after every step try every token no row carries;
// the correct store passes the same sequence.
func TestFencingProbes(t *testing.T) {
	// m1 is leased twice: after the second lease, the first lease's token (serial 2) is stale.
	cmds := []*cmd{
		{serial: 1, op: traces.OpEnqueue, args: traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 3}},
		{serial: 2, op: traces.OpLease, args: traces.Args{Mailbox: "a", LeaseFor: 1}},
		{serial: 3, op: traces.OpLease, at: 2, args: traces.Args{Mailbox: "a", LeaseFor: 5}},
	}
	run := func(wrap func(replay.Target) replay.Target) (*Failure, []*cmd) {
		h := &hunter{ctx: context.Background(), cfg: HuntConfig{Variant: targets.Store, Seed: 1}.filled(),
			set: newSetup(DefaultMix(), nil), wrap: wrap, log: HuntConfig{}.filled().Logger}
		h.cfg.WorkDir = t.TempDir()
		s := newSUT(h, false)
		defer s.close()
		w := newWorld(h.set)
		for _, c := range cmds {
			o := s.run(c)
			next := c.NextState(w).(*world)
			c.PostCondition(next, o)
			if s.failure != nil {
				return s.failure, s.ran
			}
			w = next
		}
		return nil, s.ran
	}
	if f, _ := run(nil); f != nil {
		t.Fatalf("the correct store fails the probes: %s", f)
	}
	f, ran := run(func(t replay.Target) replay.Target { return staleExtend{t} })
	if f == nil {
		t.Fatal("the probes did not catch a target that extends with a stale token")
	}
	probe := ran[len(ran)-1]
	if !slices.Contains(f.Checks, CheckFencing) || f.Step != len(ran)-1 || probe.op != traces.OpExtend {
		t.Errorf("failure %s (probe %s): want %s at an extend probe appended as the last step", f, probe, CheckFencing)
	}
	// After the second lease, the probes try the first lease's stale token (serial 2) and a
	// forged one on m1, with every fenced lease operation.
	h0 := &hunter{cfg: HuntConfig{Variant: targets.Store, Seed: 1}.filled(), set: newSetup(DefaultMix(), nil)}
	w := newWorld(h0.set)
	for _, c := range cmds {
		w, _ = w.apply(c)
	}
	var got []string
	for _, p := range probes(w) {
		got = append(got, p.String())
	}
	for _, want := range []string{"#4 @2 ack id=m1 token=2", "#4 @2 nack id=m1 token=2", "#4 @2 extend id=m1 lease_for=1 token=2", "#4 @2 extend id=m1 lease_for=1 token=4"} {
		if !slices.Contains(got, want) {
			t.Errorf("probes after the second lease %q lack %q", got, want)
		}
	}
	// The failing sequence, probe included, is an ordinary trace: the correct store refuses the
	// extend (lease_lost), as the model does.
	h := &hunter{cfg: HuntConfig{Variant: targets.Store, Seed: 1}.filled(), set: newSetup(DefaultMix(), nil)}
	tr, err := h.trace(ran)
	if err != nil {
		t.Fatal(err)
	}
	if last := tr.Steps[len(tr.Steps)-1]; last.Result.Err != traces.ErrKindLeaseLost {
		t.Errorf("the trace's probe step is %+v, want lease_lost", last)
	}
	if v := replayFile(t, tr, targets.Store, nil); v.Outcome != replay.Match {
		t.Errorf("the correct store does not match the probe's trace: %s", v)
	}
}
