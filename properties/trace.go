package properties

import (
	"fmt"
	"slices"

	"github.com/pconform/pconform/traces"
)

// trace turns a command sequence into a trace whose expected results and final state are the
// model's: the correct store matches it and a broken variant diverges from it. Serials become the
// trace's token symbols, renumbered per namespace: issued tokens 1, 2, ... in the order they were
// issued, then the never-issued (forged or dangling) ones above them, so no argument ever names a
// symbol a later result binds.
func (h *hunter) trace(cmds []*cmd) (*traces.Trace, error) {
	w := newWorld(h.set)
	steps := make([]traces.Step, 0, len(cmds))
	for i, c := range cmds {
		n, err := w.apply(c)
		if err != nil {
			return nil, fmt.Errorf("properties: building the trace: step #%d (%s): %w", i, c, err)
		}
		a := c.args
		a.Token = c.tok
		steps = append(steps, traces.Step{Op: c.op, At: c.at, Args: a, Result: n.last})
		w = n
	}
	final := w.snapshot()
	renumber(steps, &final)
	t := &traces.Trace{
		Format: traces.Format,
		Name:   fmt.Sprintf("hunt-%s-seed%d", h.cfg.Variant, h.cfg.Seed),
		Origin: traces.Origin{
			Kind: traces.OriginProperty, TestCase: h.cfg.TestCase, Seed: h.cfg.Seed, Command: h.cfg.Command,
		},
		Expect: traces.Expect{DivergesAt: -1},
		Steps:  steps,
		Final:  &final,
	}
	if err := traces.Validate(t); err != nil {
		return nil, fmt.Errorf("properties: the shrunk trace is invalid: %w", err)
	}
	return t, nil
}

// claimNamespace reports whether op's token argument is a claim token.
func claimNamespace(op traces.Op) bool {
	return op == traces.OpOutboxComplete || op == traces.OpOutboxFail || op == traces.OpOutboxDeadLetter ||
		op == traces.OpPublisherDeliver || op == traces.OpPublisherDeliverBatch
}

// renumber rewrites serials as symbols in steps and final.
func renumber(steps []traces.Step, final *traces.Snapshot) {
	var sym [2]map[int]int
	sym[0], sym[1] = map[int]int{}, map[int]int{}
	ns := func(claim bool) int {
		if claim {
			return 1
		}
		return 0
	}
	assign := func(n, serial int) {
		if serial > 0 {
			if _, ok := sym[n][serial]; !ok {
				sym[n][serial] = len(sym[n]) + 1
			}
		}
	}
	for _, s := range steps {
		if m := s.Result.Message; m != nil {
			assign(0, m.Token)
		}
		for _, c := range s.Result.Claimed {
			assign(1, c.Token)
		}
		for _, m := range s.Result.Messages {
			assign(0, m.Token)
		}
	}
	for _, s := range steps {
		assign(ns(claimNamespace(s.Op)), s.Args.Token)
	}
	for i := range steps {
		s := &steps[i]
		s.Args.Token = sym[ns(claimNamespace(s.Op))][s.Args.Token]
		if m := s.Result.Message; m != nil {
			mm := *m
			mm.Token = sym[0][mm.Token]
			s.Result.Message = &mm
		}
		s.Result.Claimed = slices.Clone(s.Result.Claimed)
		for j := range s.Result.Claimed {
			s.Result.Claimed[j].Token = sym[1][s.Result.Claimed[j].Token]
		}
		s.Result.Messages = slices.Clone(s.Result.Messages)
		for j := range s.Result.Messages {
			s.Result.Messages[j].Token = sym[0][s.Result.Messages[j].Token]
		}
	}
	for i := range final.Messages {
		final.Messages[i].Token = sym[0][final.Messages[i].Token]
	}
	for i := range final.Outbox {
		final.Outbox[i].Token = sym[1][final.Outbox[i].Token]
	}
}
