package properties

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"

	"github.com/pconform/pconform/traces"
)

// shrink is the own pass after gopter's shrinker, which only removes contiguous chunks and single
// commands: it drops random subsets of steps with a falling drop rate, then single steps, replaces
// publisher deliveries by direct enqueues where the failure does not need the outbox, then
// simplifies what is left (ids, mailboxes, workers and publishers renamed in order of first use,
// times shifted to start at 0 and gaps between steps closed, argument values set to their
// simplest), then drops single steps again. A candidate is kept when it is legal and still fails;
// every run counts against cfg.ShrinkRuns. rng is the hunt's one generator, so the pass is
// deterministic for a seed.
func (h *hunter) shrink(run *failedRun, rng *rand.Rand) *failedRun {
	p := &shrinkPass{h: h, best: run, budget: h.cfg.ShrinkRuns, rng: rng}
	for _, rate := range []float64{0.5, 0.3, 0.2, 0.1} {
		for range 4 {
			var cand []*cmd
			for _, c := range p.best.cmds {
				if !chance(p.rng, rate) {
					cand = append(cand, c)
				}
			}
			if len(cand) < len(p.best.cmds) {
				p.try(cand)
			}
		}
	}
	p.dropEach()
	if p.inlineDeliveries() {
		p.dropEach()
	}
	for _, simplify := range []func([]*cmd) []*cmd{renameIDs, renameMailboxes, renameWorkers, onePublisher, shiftTime} {
		if cand := simplify(p.best.cmds); !slices.EqualFunc(cand, p.best.cmds, func(x, y *cmd) bool { return reflect.DeepEqual(*x, *y) }) {
			p.try(cand)
		}
	}
	p.closeGaps()
	for i := 0; i < len(p.best.cmds); i++ {
		for _, simplify := range valueSimplifications {
			c := *p.best.cmds[i]
			if !simplify(&c) {
				continue
			}
			cand := slices.Clone(p.best.cmds)
			cand[i] = &c
			p.try(cand)
		}
	}
	p.dropEach()
	return p.best
}

// shrinkPass is the state of one own shrinking pass.
type shrinkPass struct {
	h *hunter
	// best is the smallest failing run so far.
	best *failedRun
	// budget is the number of candidate runs left.
	budget int
	rng    *rand.Rand
}

// try runs cand and keeps it, cut after its failing step, when it is legal and still fails. The
// kept run is what the target ran: when a fencing probe failed, the probe is its last step (it
// may come after the last command of cand).
func (p *shrinkPass) try(cand []*cmd) bool {
	if p.budget <= 0 || p.h.ctx.Err() != nil || len(cand) == 0 {
		return false
	}
	f, ran, legal := p.h.replayRun(cand)
	if !legal {
		return false
	}
	p.budget--
	if f == nil || !p.h.keepsHarm(f) {
		return false
	}
	p.best = &failedRun{cmds: ran[:f.Step+1], failure: f}
	return true
}

// inlineDeliveries tries replacing each publisher delivery by a direct enqueue of the message it
// delivers, so that a failure about the message, not the delivery, no longer needs the outbox
// steps (which dropEach can then remove). It reports whether any replacement was kept.
func (p *shrinkPass) inlineDeliveries() bool {
	kept := false
	for i := 0; i < len(p.best.cmds); i++ {
		c := p.best.cmds[i]
		if c.op != traces.OpPublisherDeliver {
			continue
		}
		j := slices.IndexFunc(p.best.cmds[:i], func(o *cmd) bool { return o.op == traces.OpOutboxEnqueue && o.args.ID == c.args.ID })
		if j < 0 {
			continue
		}
		o := p.best.cmds[j].args
		cand := slices.Clone(p.best.cmds)
		cand[i] = &cmd{serial: c.serial, op: traces.OpEnqueue, at: c.at, args: traces.Args{
			Mailbox: o.Target, ID: o.ID, Key: o.Key, Priority: o.Priority, MaxAttempts: o.MaxAttempts, Payload: o.Payload,
		}}
		kept = p.try(cand) || kept
	}
	return kept
}

// closeGaps tries, for each step that happens later than the one before it, to move it and every
// step after it back: first to the earlier step's time, else by one second.
func (p *shrinkPass) closeGaps() {
	for i := 1; i < len(p.best.cmds); i++ {
		gap := p.best.cmds[i].at - p.best.cmds[i-1].at
		if gap == 0 {
			continue
		}
		if !p.try(shiftFrom(p.best.cmds, i, gap)) && gap > 1 {
			p.try(shiftFrom(p.best.cmds, i, 1))
		}
	}
}

// shiftFrom moves the steps from index i on d seconds earlier.
func shiftFrom(cmds []*cmd, i int, d int64) []*cmd {
	out := slices.Clone(cmds)
	for j := i; j < len(out); j++ {
		n := *out[j]
		n.at -= d
		out[j] = &n
	}
	return out
}

// dropEach tries dropping each step, last first, until no single drop keeps the failure.
func (p *shrinkPass) dropEach() {
	for {
		cur := p.best.cmds
		dropped := false
		for i := len(cur) - 1; i >= 0 && !dropped; i-- {
			dropped = p.try(slices.Delete(slices.Clone(cur), i, i+1))
		}
		if !dropped {
			return
		}
	}
}

// rename maps the values of one field in order of first use to names[0], names[1], ...
func rename(cmds []*cmd, names func(int) string, fields ...func(*traces.Args) *string) []*cmd {
	to := map[string]string{}
	out := make([]*cmd, len(cmds))
	for i, c := range cmds {
		n := *c
		for _, f := range fields {
			p := f(&n.args)
			if *p == "" {
				continue
			}
			if _, ok := to[*p]; !ok {
				to[*p] = names(len(to))
			}
			*p = to[*p]
		}
		out[i] = &n
	}
	return out
}

// renameIDs renames message and outbox ids to m1, m2, ... in order of first use. A bijection, so
// duplicates stay duplicates.
func renameIDs(cmds []*cmd) []*cmd {
	to := map[string]string{}
	name := func(id string) string {
		if _, ok := to[id]; !ok {
			to[id] = fmt.Sprintf("m%d", len(to)+1)
		}
		return to[id]
	}
	out := make([]*cmd, len(cmds))
	for i, c := range cmds {
		n := *c
		if n.args.ID != "" {
			n.args.ID = name(n.args.ID)
		}
		if len(n.args.IDs) > 0 {
			// A batch delivery's ids, in order.
			ids := make([]string, len(n.args.IDs))
			for k, id := range n.args.IDs {
				ids[k] = name(id)
			}
			n.args.IDs = ids
		}
		out[i] = &n
	}
	return out
}

// renameMailboxes renames mailboxes (and outbox targets) to a, b, ... in order of first use.
func renameMailboxes(cmds []*cmd) []*cmd {
	return rename(cmds, func(i int) string { return string(rune('a' + i)) },
		func(a *traces.Args) *string { return &a.Mailbox }, func(a *traces.Args) *string { return &a.Target })
}

// renameWorkers numbers workers 1, 2, ... in order of first use.
func renameWorkers(cmds []*cmd) []*cmd {
	to := map[int]int{}
	out := make([]*cmd, len(cmds))
	for i, c := range cmds {
		n := *c
		switch n.op {
		case traces.OpConsumerFetch, traces.OpConsumerHandle, traces.OpConsumerFetchBatch, traces.OpConsumerHandleBatch:
			if _, ok := to[n.args.Worker]; !ok {
				to[n.args.Worker] = len(to) + 1
			}
			n.args.Worker = to[n.args.Worker]
		}
		out[i] = &n
	}
	return out
}

// onePublisher makes every delivery come from publisher 1: publishers are labels only.
func onePublisher(cmds []*cmd) []*cmd {
	out := make([]*cmd, len(cmds))
	for i, c := range cmds {
		n := *c
		if n.op == traces.OpPublisherDeliver {
			n.args.Publisher = 1
		}
		out[i] = &n
	}
	return out
}

// shiftTime moves the whole sequence so it starts at time 0; every rule depends on time
// differences only.
func shiftTime(cmds []*cmd) []*cmd {
	if len(cmds) == 0 {
		return cmds
	}
	return shiftFrom(cmds, 0, cmds[0].at)
}

// valueSimplifications each set one argument of a command to its simplest value, reporting
// whether anything changed.
var valueSimplifications = []func(*cmd) bool{
	func(c *cmd) bool { return set(&c.args.Key, "") },
	func(c *cmd) bool { return set(&c.args.Priority, 0) },
	func(c *cmd) bool { return set(&c.args.Payload, "") },
	func(c *cmd) bool { return set(&c.args.Delay, 0) },
	func(c *cmd) bool { return set(&c.args.RetryDelay, 0) },
	func(c *cmd) bool { return c.args.MaxAttempts > 1 && set(&c.args.MaxAttempts, 1) },
	func(c *cmd) bool { return c.args.LeaseFor > 1 && set(&c.args.LeaseFor, 1) },
	func(c *cmd) bool { return c.args.ClaimFor > 1 && set(&c.args.ClaimFor, 1) },
	func(c *cmd) bool { return c.args.Limit > 1 && set(&c.args.Limit, 1) },
	func(c *cmd) bool { return c.args.Fault != "" && set(&c.args.Fault, traces.FaultNone) },
}

func set[T comparable](p *T, v T) bool {
	if *p == v {
		return false
	}
	*p = v
	return true
}
