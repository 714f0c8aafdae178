package properties

import (
	"fmt"
	"os"
	"slices"

	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// sut is the system under test of one sequence: a fresh target in its own directory, the binding
// of serials to the target's real tokens, and the history the invariants need.
type sut struct {
	h      *hunter
	target replay.Target
	dir    string
	// err is set when the target could not be created; every step then fails as CheckTarget.
	err error
	// ran are the commands run so far; the failing one is last once failure is set.
	ran []*cmd
	// failure is the first failure; later steps are skipped.
	failure *Failure
	// tokens binds serials to the real tokens their commands issued: a command's serial is the
	// symbol of the token it issues, in the op's namespace.
	tokens *traces.Binder[string]
	hist   *history
	// record: report failures to the hunter as gopter's runs (not the shrinker's own runs).
	record bool
	// searched: the sequence is one of the hunt's generated sequences, not a shrinking run.
	searched bool
}

func newSUT(h *hunter, record bool) *sut {
	s := &sut{
		h: h, tokens: replay.NewBinder(), hist: newHistory(), record: record,
	}
	if h.ctx.Err() != nil {
		return s
	}
	dir, err := os.MkdirTemp(h.cfg.WorkDir, "pconform-hunt-")
	if err != nil {
		s.err = fmt.Errorf("properties: scratch directory: %w", err)
		if h.setupErr == nil {
			h.setupErr = s.err
		}
		return s
	}
	s.dir = dir
	s.target, s.err = h.newTarget(h.cfg.Variant, dir)
	if s.err != nil && h.setupErr == nil {
		h.setupErr = s.err
	}
	if s.err == nil && h.wrap != nil {
		s.target = h.wrap(s.target)
	}
	return s
}

// close releases the target and deletes its directory.
func (s *sut) close() {
	if s.target != nil {
		if err := s.target.Close(); err != nil {
			s.h.log.Warn("properties: closing a target failed", "dir", s.dir, "err", err)
		}
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

func (s *sut) stopped() bool { return s.h.ctx.Err() != nil }

// fail ends the sequence at f and reports whether f counts as a failure: once the hunt has found
// one, a failure counts only when it keeps that first failure's harm (Failure.keepsHarm).
func (s *sut) fail(f *Failure) bool {
	s.failure = f
	if !s.h.keepsHarm(f) {
		return false
	}
	if s.record {
		s.h.recordFailure(slices.Clone(s.ran), f)
	}
	return true
}

// run runs one command: the step, then a snapshot and the invariants.
func (s *sut) run(c *cmd) *outcome {
	if s.failure != nil || s.stopped() {
		return &outcome{s: s, skipped: true}
	}
	o := &outcome{s: s, index: len(s.ran)}
	s.ran = append(s.ran, c)
	if s.err != nil {
		o.err = s.err
		return o
	}
	ctx := s.h.ctx
	s.h.countCommand()
	obs, err := s.target.Do(ctx, c.op, c.at, replay.TargetArgs(c.args, s.tokens.Arg(c.op, c.tok)))
	if err != nil {
		o.err = err
		return o
	}
	o.res = replay.Symbolize(s.tokens, s.expected(c), obs)
	raw, err := s.target.Snapshot(ctx)
	if err != nil {
		o.err = fmt.Errorf("snapshot after the step: %w", err)
		return o
	}
	o.snap = s.snapshot(raw)
	o.broken = s.hist.observe(c, o.res, o.snap)
	return o
}

// expected is the result shape that binds c's serial: the message token of a lease or leased
// fetch, the first claimed row's token of a claim, and the k-th message's token of a leased batch
// fetch to serial+k. Nothing else binds; other tokens show as stray negative symbols.
func (s *sut) expected(c *cmd) *traces.Result {
	switch {
	case c.op == traces.OpConsumerFetchBatch && c.args.Profile == traces.ProfileLeased:
		r := &traces.Result{Messages: make([]traces.Message, max(c.args.Size, 1))}
		for k := range r.Messages {
			r.Messages[k].Token = c.serial + k
		}
		return r
	case c.op == traces.OpLease || c.op == traces.OpConsumerFetch && c.args.Profile == traces.ProfileLeased:
		return &traces.Result{Message: &traces.Message{Token: c.serial}}
	case c.op == traces.OpOutboxClaim:
		return &traces.Result{Claimed: []traces.Claimed{{Token: c.serial}}}
	}
	return &traces.Result{}
}

// snapshot is a target snapshot with tokens as serials, canonical.
func (s *sut) snapshot(in replay.Snapshot) traces.Snapshot {
	out := replay.SymbolizeSnapshot(s.tokens, in)
	traces.Canonicalize(&out)
	return out
}
