package replay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/traces"
)

// Options configure a replay. The zero value is a plain replay: no reopen, no per-step snapshot.
type Options struct {
	// ReopenBefore lists the steps before which the target is reopened (its database closed and
	// opened again, fetched deliveries kept); len(steps) reopens before the final snapshot.
	ReopenBefore []int
	// ReopenEveryStep reopens the target before every step and before the final snapshot.
	ReopenEveryStep bool
	// AfterStep, when set, is called after every step that ran (the diverging one included)
	// with the target's state at that point: tokens as symbols, canonicalized. It costs one
	// snapshot per step; a failing snapshot makes Run return an error.
	AfterStep func(step int, s traces.Snapshot)
	// AfterStepOnly, when set, limits AfterStep (and its snapshots) to the steps it accepts, so
	// a long trace pays for snapshots only where someone will look.
	AfterStepOnly func(step int) bool

	_ struct{}
}

func (o Options) reopenBefore(i int) bool {
	return o.ReopenEveryStep || slices.Contains(o.ReopenBefore, i)
}

// cmpOptions compare results and snapshots: an empty slice or map equals an absent one, since
// the trace format omits empty fields.
var cmpOptions = cmp.Options{cmpopts.EquateEmpty()}

// Run replays t against target, step by step, and reports the first divergence.
//
// Before each step the target runs it at the step's logical time; with opts it is first
// reopened. The observed result, tokens mapped to symbols, must equal the expected result. After
// the last step the target's snapshot, canonicalized, must equal t.Final (when t.Final is nil only
// the steps are compared). Run returns an error only when the run could not happen: an invalid
// trace, or a target that failed to run a step, reopen or snapshot. It does not close target.
func Run(ctx context.Context, t *traces.Trace, target Target, opts Options) (Verdict, error) {
	if t == nil || target == nil {
		return Verdict{}, errors.New("replay: Run needs a trace and a target")
	}
	if err := traces.Validate(t); err != nil {
		return Verdict{}, fmt.Errorf("replay: trace %q: %w", t.Name, err)
	}
	r := &run{t: t, target: target, b: NewBinding(), fetched: map[int]string{}, refused: map[int]string{}}
	caps := CapabilitiesOf(target)
	if err := caps.Check(); err != nil {
		return Verdict{}, err
	}
	for i, step := range t.Steps {
		if err := ctx.Err(); err != nil {
			return r.inconclusive(i, fmt.Sprintf("stopped: %v", err)), nil
		}
		if opts.reopenBefore(i) {
			if err := target.Reopen(ctx); err != nil {
				return Verdict{}, fmt.Errorf("replay: trace %q: reopen before step #%d: %w", t.Name, i, err)
			}
		}
		if !caps.Supports(step.Op) {
			return r.inconclusive(i, fmt.Sprintf("the target declares %s unsupported", step.Op)), nil
		}
		obs, err := target.Do(ctx, step.Op, step.At, r.b.Args(step.Op, step.Args))
		if err != nil && errors.Is(err, ErrRefused) {
			// A refusal is a result like any other, compared with what the trace expects.
			obs, r.refused[i], err = Observation{Err: traces.ErrKindRefused}, err.Error(), nil
		}
		switch {
		case err != nil && errors.Is(err, ErrUnsupported):
			return r.inconclusive(i, err.Error()), nil
		case err != nil && ctx.Err() != nil:
			return r.inconclusive(i, fmt.Sprintf("stopped: %v", ctx.Err())), nil
		case err != nil:
			return Verdict{}, fmt.Errorf("replay: trace %q: step #%d (%s): %w", t.Name, i, step.Op, err)
		}
		got := r.b.Result(&step.Result, obs)
		r.history = append(r.history, tracefmt.Step(i, step.Op, step.At, step.Args, got))
		if opts.AfterStep != nil && (opts.AfterStepOnly == nil || opts.AfterStepOnly(i)) {
			snap, err := target.Snapshot(ctx)
			if err != nil {
				return Verdict{}, fmt.Errorf("replay: trace %q: snapshot after step #%d: %w", t.Name, i, err)
			}
			sym := r.b.Snapshot(snap)
			traces.Canonicalize(&sym)
			opts.AfterStep(i, sym)
		}
		want, cmp := step.Result, got
		for _, what := range caps.blankUnreported(step.Op, &want, &cmp) {
			r.notCompared = append(r.notCompared, fmt.Sprintf("step #%d (%s): %s", i, step.Op, what))
		}
		if diff := diffResults(step.Op, want, cmp); diff != "" {
			return r.diverged(ctx, i, step, got, obs, diff), nil
		}
		r.remember(step)
	}
	n := len(t.Steps)
	v := Verdict{Outcome: Match, Trace: t.Name, Step: n, History: r.history, NotCompared: r.notCompared}
	if t.Final == nil {
		v.Reason = "every step matched; the trace has no final snapshot"
		v.Tokens = r.b.Tokens()
		return v, nil
	}
	if opts.reopenBefore(n) {
		if err := target.Reopen(ctx); err != nil {
			return Verdict{}, fmt.Errorf("replay: trace %q: reopen before the final snapshot: %w", t.Name, err)
		}
	}
	snap, err := target.Snapshot(ctx)
	if err != nil {
		return Verdict{}, fmt.Errorf("replay: trace %q: final snapshot: %w", t.Name, err)
	}
	got := r.b.Snapshot(snap)
	if cols := traces.Reported(&got, caps.Unknown); len(cols) > 0 {
		return Verdict{}, fmt.Errorf("replay: trace %q: the target's snapshot states %v, which its Capabilities declare unknown; report it as zero, or declare it known", t.Name, cols)
	}
	want := cloneSnapshot(*t.Final)
	// What either side does not state is left out of the comparison, never filled in.
	unknown := traces.UnionColumns(t.Final.Unknown, caps.Unknown)
	traces.Blank(&got, unknown)
	traces.Blank(&want, unknown)
	got.Unknown, want.Unknown = unknown, slices.Clone(unknown)
	traces.Canonicalize(&got)
	traces.Canonicalize(&want)
	v.FinalCompared = true
	v.Tokens = r.b.Tokens()
	v.End = &got
	if diff := diffSnapshots(want, got); diff != "" {
		v.Outcome, v.Step, v.Diff = Diverged, FinalStep, diff
		v.ExpectedFinal, v.ObservedFinal = &want, &got
		v.Reason = "the final snapshot differs: " + differingRows(want, got)
		return v, nil
	}
	v.Reason = "every step and the final snapshot matched"
	return v, nil
}

// run is the state of one replay.
type run struct {
	t       *traces.Trace
	target  Target
	b       *Binding
	history []string
	// fetched holds, per worker, the id of the message its last consumer_fetch returned, so a
	// diverging consumer_handle (which names no id) can show that message's row.
	fetched map[int]string
	// refused holds, per step the target refused (ErrRefused), the target's message.
	refused map[int]string
	// notCompared lists the results left out of the comparison (Capabilities.Unreported).
	notCompared []string
}

func (r *run) remember(s traces.Step) {
	switch s.Op {
	case traces.OpConsumerFetch:
		if s.Result.Message != nil {
			r.fetched[s.Args.Worker] = s.Result.Message.ID
		} else {
			delete(r.fetched, s.Args.Worker)
		}
	case traces.OpCrash:
		clear(r.fetched)
	}
}

func (r *run) inconclusive(i int, reason string) Verdict {
	v := Verdict{Outcome: Inconclusive, Trace: r.t.Name, Step: i, Reason: reason, History: r.history, Tokens: r.b.Tokens(), NotCompared: r.notCompared}
	if i < len(r.t.Steps) {
		s := r.t.Steps[i]
		v.Op, v.At, v.Args = s.Op, s.At, s.Args
	}
	return v
}

func (r *run) diverged(ctx context.Context, i int, s traces.Step, got traces.Result, obs Observation, diff string) Verdict {
	want := s.Result
	v := Verdict{
		Outcome: Diverged, Trace: r.t.Name, Step: i, Op: s.Op, At: s.At, Args: s.Args,
		Expected: &want, Observed: &got, Raw: &obs, Diff: diff, History: r.history, Tokens: r.b.Tokens(),
		NotCompared: r.notCompared,
		Reason:      fmt.Sprintf("expected %s, observed %s", tracefmt.Result(s.Op, want), tracefmt.Result(s.Op, got)),
	}
	if msg := r.refused[i]; msg != "" {
		v.Reason += " (the store refused the step: " + msg + ")"
	}
	snap, err := r.target.Snapshot(ctx)
	if err != nil {
		v.RowsErr = err.Error()
		return v
	}
	end := r.b.Snapshot(snap)
	traces.Canonicalize(&end)
	v.End = &end
	v.Rows = involved(r.b.Snapshot(snap), r.ids(s, got))
	traces.Canonicalize(&v.Rows)
	return v
}

// ids lists the message and outbox ids a step involves: its id argument, the ids in its
// expected and observed results and, for a consumer_handle, the message its worker fetched. A
// step that names none (expire, crash) involves every row.
func (r *run) ids(s traces.Step, got traces.Result) map[string]bool {
	ids := map[string]bool{}
	add := func(id string) {
		if id != "" {
			ids[id] = true
		}
	}
	add(s.Args.ID)
	for _, res := range []traces.Result{s.Result, got} {
		if res.Message != nil {
			add(res.Message.ID)
		}
		for _, c := range res.Claimed {
			add(c.ID)
		}
	}
	if s.Op == traces.OpConsumerHandle {
		add(r.fetched[s.Args.Worker])
	}
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// involved keeps the rows whose ids are in ids (every row when ids is nil) and, of the effect
// logs of the mailboxes those rows live in, the entries of those ids.
func involved(s traces.Snapshot, ids map[string]bool) traces.Snapshot {
	if ids == nil {
		return s
	}
	out := traces.Snapshot{Effects: map[string][]string{}}
	mailboxes := map[string]bool{}
	for _, m := range s.Messages {
		if ids[m.ID] {
			out.Messages = append(out.Messages, m)
			mailboxes[m.Mailbox] = true
		}
	}
	for _, o := range s.Outbox {
		if ids[o.ID] {
			out.Outbox = append(out.Outbox, o)
		}
	}
	for _, d := range s.DeadLetters {
		if ids[d.ID] {
			out.DeadLetters = append(out.DeadLetters, d)
			mailboxes[d.Mailbox] = true
		}
	}
	// Of each mailbox's effects, only the involved ids: the whole list grows with the trace.
	for mb := range mailboxes {
		var kept []string
		for _, id := range s.Effects[mb] {
			if ids[id] {
				kept = append(kept, id)
			}
		}
		if len(kept) > 0 {
			out.Effects[mb] = kept
		}
	}
	return out
}

// cloneSnapshot copies s deeply, so canonicalizing the copy leaves the trace untouched.
func cloneSnapshot(s traces.Snapshot) traces.Snapshot {
	out := traces.Snapshot{
		Messages:    slices.Clone(s.Messages),
		Outbox:      slices.Clone(s.Outbox),
		DeadLetters: slices.Clone(s.DeadLetters),
		Effects:     maps.Clone(s.Effects),
	}
	for mb, ids := range out.Effects {
		out.Effects[mb] = slices.Clone(ids)
	}
	return out
}

// differingRows names the rows two canonical snapshots disagree on, for a verdict's one line.
func differingRows(want, got traces.Snapshot) string {
	var parts []string
	note := func(kind string, ids []string) {
		if len(ids) > 0 {
			parts = append(parts, kind+" "+strings.Join(ids, ", "))
		}
	}
	note("message", differing(want.Messages, got.Messages, func(m traces.MessageRow) string { return m.Mailbox + "/" + m.ID }))
	note("outbox row", differing(want.Outbox, got.Outbox, func(o traces.OutboxRow) string { return o.ID }))
	note("dead letter", differing(want.DeadLetters, got.DeadLetters, func(d traces.DeadLetterRow) string { return d.ID }))
	mailboxes := map[string]bool{}
	for mb := range want.Effects {
		mailboxes[mb] = true
	}
	for mb := range got.Effects {
		mailboxes[mb] = true
	}
	var effects []string
	for _, mb := range slices.Sorted(maps.Keys(mailboxes)) {
		if !slices.Equal(want.Effects[mb], got.Effects[mb]) {
			effects = append(effects, mb)
		}
	}
	note("effects of", effects)
	return strings.Join(parts, "; ")
}

// differing lists the keys whose rows differ between want and got, or exist on one side only.
func differing[R comparable](want, got []R, key func(R) string) []string {
	w, g := map[string]R{}, map[string]R{}
	for _, r := range want {
		w[key(r)] = r
	}
	for _, r := range got {
		g[key(r)] = r
	}
	var out []string
	for k, r := range w {
		if o, ok := g[k]; !ok || o != r {
			out = append(out, k)
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
