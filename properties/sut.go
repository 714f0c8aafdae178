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
	// real maps a serial to the real token its command issued; serialOf is its inverse.
	// Invariant: real[s] == t iff serialOf[t] == s.
	real     map[int]string
	serialOf map[string]int
	// stray numbers real tokens no command was expected to issue, as negative symbols.
	stray map[string]int
	hist  *history
	// record: report failures to the hunter as gopter's runs (not the shrinker's own runs).
	record bool
	// searched: the sequence is one of the hunt's generated sequences, not a shrinking run.
	searched bool
}

func newSUT(h *hunter, record bool) *sut {
	s := &sut{
		h: h, real: map[int]string{}, serialOf: map[string]int{}, stray: map[string]int{},
		hist: newHistory(), record: record,
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
	s.target, s.err = NewTarget(h.cfg.Variant, dir)
	if s.err != nil && h.setupErr == nil {
		h.setupErr = s.err
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

// token is the real token a serial names: the one its command issued, else a token no target ever
// issues (so it matches nothing, like the model's token 0).
func (s *sut) token(serial int) string {
	if serial == 0 {
		return ""
	}
	if t, ok := s.real[serial]; ok {
		return t
	}
	return fmt.Sprintf("forged-%d", serial)
}

// symbol maps a real token to the serial bound to it, or to a stable negative number.
func (s *sut) symbol(t string) int {
	if t == "" {
		return 0
	}
	if n, ok := s.serialOf[t]; ok {
		return n
	}
	if n, ok := s.stray[t]; ok {
		return n
	}
	n := -(len(s.stray) + 1)
	s.stray[t] = n
	return n
}

// bind makes serial name the real token t, unless either is bound already.
func (s *sut) bind(serial int, t string) {
	if t == "" {
		return
	}
	if _, ok := s.serialOf[t]; ok {
		return
	}
	if _, ok := s.real[serial]; ok {
		return
	}
	s.real[serial], s.serialOf[t] = t, serial
}

func (s *sut) fail(f *Failure) {
	s.failure = f
	if s.record {
		s.h.recordFailure(slices.Clone(s.ran), f)
	}
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
	obs, err := s.target.Do(ctx, c.op, c.at, replay.TargetArgs(c.args, s.token(c.tok)))
	if err != nil {
		o.err = err
		return o
	}
	switch {
	case c.op == traces.OpLease || c.op == traces.OpConsumerFetch && c.args.Profile == traces.ProfileLeased:
		if obs.Message != nil {
			s.bind(c.serial, obs.Message.Token)
		}
	case c.op == traces.OpOutboxClaim:
		if len(obs.Claimed) > 0 {
			s.bind(c.serial, obs.Claimed[0].Token)
		}
	}
	o.res = s.result(obs)
	raw, err := s.target.Snapshot(ctx)
	if err != nil {
		o.err = fmt.Errorf("snapshot after the step: %w", err)
		return o
	}
	o.snap = s.snapshot(raw)
	o.broken = s.hist.observe(c, o.res, o.snap)
	return o
}

// result is an observation with tokens as serials.
func (s *sut) result(o replay.Observation) traces.Result {
	r := traces.Result{Err: o.Err, Duplicate: o.Duplicate, Affected: o.Affected, Action: o.Action, Attempt: o.Attempt}
	if o.Message != nil {
		r.Message = &traces.Message{ID: o.Message.ID, Attempts: o.Message.Attempts, Token: s.symbol(o.Message.Token)}
	}
	for _, cl := range o.Claimed {
		r.Claimed = append(r.Claimed, traces.Claimed{ID: cl.ID, DeliveryAttempts: cl.DeliveryAttempts, Token: s.symbol(cl.Token)})
	}
	return r
}

// snapshot is a target snapshot with tokens as serials, canonical.
func (s *sut) snapshot(in replay.Snapshot) traces.Snapshot {
	out := traces.Snapshot{Effects: map[string][]string{}}
	for _, m := range in.Messages {
		out.Messages = append(out.Messages, traces.MessageRow{
			Mailbox: m.Mailbox, ID: m.ID, Key: m.Key, Priority: m.Priority, Payload: m.Payload, State: m.State,
			Attempts: m.Attempts, MaxAttempts: m.MaxAttempts, AvailableAt: m.AvailableAt,
			Token: s.symbol(m.Token), LeaseUntil: m.LeaseUntil,
		})
	}
	for _, o := range in.Outbox {
		out.Outbox = append(out.Outbox, traces.OutboxRow{
			ID: o.ID, Target: o.Target, Key: o.Key, Priority: o.Priority, MaxAttempts: o.MaxAttempts,
			Payload: o.Payload, State: o.State, DeliveryAttempts: o.DeliveryAttempts, AvailableAt: o.AvailableAt,
			Token: s.symbol(o.Token), ClaimUntil: o.ClaimUntil,
		})
	}
	out.DeadLetters = slices.Clone(in.DeadLetters)
	for mb, ids := range in.Effects {
		out.Effects[mb] = slices.Clone(ids)
	}
	traces.Canonicalize(&out)
	return out
}
