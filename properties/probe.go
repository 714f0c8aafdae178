package properties

import (
	"fmt"
	"slices"

	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Fencing probes. After every step that passed its checks, the system under test is asked to use
// every token that no row carries any more (a lease or claim that was superseded, cleared or never
// took) for each fenced operation, plus one forged token: the model refuses every such use
// (lease_lost, claim_lost), so a target that accepts one has a fencing bug. The probes do not wait
// for the generator to draw a stale-token step; a correct target changes nothing when it refuses.
// A probe the target accepts becomes the sequence's last step, so the failure is an ordinary
// command sequence that shrinks, and replays, like any other.

// fencedOps are the operations a probe tries, per token namespace.
var fencedOps = map[bool][]traces.Op{
	false: {traces.OpAck, traces.OpNack, traces.OpExtend},
	true:  {traces.OpOutboxComplete, traces.OpOutboxFail},
}

// probes lists the probe commands to try after w: each stale token with each fenced operation of
// its namespace, on each row it was issued for, and a forged token on each row that holds one.
// Only commands the model refuses are kept.
func probes(w *world) []*cmd {
	v := &view{w: w, snap: w.m.Snapshot(), now: w.m.Now()}
	var out []*cmd
	add := func(claim bool, tok int, id string) {
		for _, op := range fencedOps[claim] {
			p := &cmd{serial: w.next, op: op, at: v.now, tok: tok, args: traces.Args{ID: id}}
			if op == traces.OpExtend {
				p.args.LeaseFor = 1
			}
			if w.legal(p) != "" {
				continue
			}
			n, err := w.apply(p)
			if err != nil || n.last.Err == "" {
				continue // the model accepts it: not a stale use
			}
			out = append(out, p)
		}
	}
	for _, claim := range []bool{false, true} {
		current := v.current(claim)
		for _, s := range v.serials(claim) {
			if slices.Contains(current, s) {
				continue
			}
			for _, id := range w.issued[s].ids {
				add(claim, s, id)
			}
		}
	}
	// A forged token: the serial of the probe itself, which issued nothing.
	for _, r := range v.snap.Messages {
		if r.Token != 0 {
			add(false, w.next, r.ID)
			break
		}
	}
	for _, r := range v.snap.Outbox {
		if r.Token != 0 {
			add(true, w.next, r.ID)
			break
		}
	}
	return out
}

// probe runs the fencing probes after w on the system under test and returns the failure of the
// first one the target does not refuse as the model does (nil when all agree). That probe is
// appended to the commands run, as the failing step.
func (s *sut) probe(w *world) *Failure {
	if s.err != nil || s.failure != nil || s.stopped() {
		return nil
	}
	for _, p := range probes(w) {
		n, err := w.apply(p)
		if err != nil {
			continue
		}
		obs, err := s.target.Do(s.h.ctx, p.op, p.at, replay.TargetArgs(p.args, s.tokens.Arg(p.op, p.tok)))
		if err != nil {
			s.ran = append(s.ran, p)
			return &Failure{Step: len(s.ran) - 1, Checks: []Check{CheckTarget}, Detail: fmt.Sprintf("[%s] fencing probe %s could not run: %v", CheckTarget, p, err)}
		}
		got := replay.Symbolize(s.tokens, &traces.Result{}, obs)
		if same(n.last, got) {
			continue
		}
		s.ran = append(s.ran, p)
		return &Failure{Step: len(s.ran) - 1, Checks: []Check{CheckFencing, CheckResult}, Detail: fmt.Sprintf(
			"[%s] fencing probe %s (a token no row carries): the model says %s, the target observed %s",
			CheckFencing, p, tracefmt.Result(p.op, n.last), tracefmt.Result(p.op, got))}
	}
	return nil
}
