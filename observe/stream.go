package observe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// Checker is one rule checked event by event beside the reference model. Check hands every
// checker each event in commit order, after the model has stepped through it; a checker keeps
// only the state its rule needs. A checker that reports nothing more at the end returns nil from
// End.
type Checker interface {
	// Observe sees the next event in commit order and returns a finding when the history
	// breaks the checker's rule at it. Check fills in the finding's position, seq and line when
	// the checker leaves Line 0. ev is valid only during the call: a checker copies what it keeps.
	Observe(ev *Event) *Finding
	// End is called once, after the last event.
	End() *Finding
}

// Source gives events in commit order: an *Ordered, or a follower of a growing log. Next
// returns io.EOF at the end. The event it returns is the source's: it stays valid until the next
// call of Next, so a long log is read without a copy of each event.
type Source interface {
	Next() (*Event, error)
}

// SourceFunc is a function as a Source.
type SourceFunc func() (*Event, error)

// Next calls f.
func (f SourceFunc) Next() (*Event, error) { return f() }

// CheckOptions configure Check. The zero value checks with the reference model alone and stops
// at the first finding.
type CheckOptions struct {
	// Variant is the store configuration that wrote the log, as Options.Variant: a broken
	// variant's protocol steps may end in ways the correct store's never do, so for one only
	// the vocabulary of their actions is checked, not how the action fits the outcome or fault.
	Variant string
	// Checkers are checked beside the model, in order.
	Checkers []Checker
	// KeepGoing goes on past a finding, and past a malformed event (one Observe refuses with
	// ErrBadLog), which it reports as a finding of the "log" oracle and leaves out; otherwise
	// Check stops at the first finding and returns a malformed event's error.
	KeepGoing bool
	// OnFinding is called with each finding as it is found; an error stops the check.
	OnFinding func(*Finding) error
	// Progress, when set, is called every ProgressEvery events (0: 65,536) and once at the end.
	Progress      func(Summary)
	ProgressEvery int
	// Log, when set, is the log the source's events were decoded from (their Offset is in it:
	// a Decoder's, not one Reset since). The oracle then keeps each live row's events as their
	// positions in it and reads them again for a finding's window, instead of holding the
	// events: memory then follows the live rows, at about a dozen bytes per event of theirs.
	Log io.ReaderAt
	// LateWakes is how long after its message was purged a wake still counts as a wake for a
	// committed message, in the log's time (see latewake.go). Zero is DefaultLateWakes; a
	// negative value judges a wake against what the model keeps, as replay does.
	LateWakes time.Duration
	// Reread, when set, opens the log again from its start: a Source that gives the events the
	// check's source gives, in the same order (ReadAgain makes one for a file). Check then keeps
	// no row's history until its first model finding. There it checks the log again from its
	// start up to that finding, keeping the histories (as positions in Log when Log is set), and
	// the finding's window is that pass's. With KeepGoing the check goes on with the second
	// pass's oracle, which keeps them. Memory then follows the model's rows alone, for a second
	// reading of the log up to the first finding. A window the second pass cannot make (the log
	// changed, an error reading it) is the finding's WindowErr. CheckJobs does the same, its
	// partitions keeping no history, and checks the log again with one job for its finding's
	// window; CheckShard keeps the histories and does not call it.
	Reread func() (Source, error)
	_      struct{}
}

// Summary counts what a check did.
type Summary struct {
	// Events is the number of events checked, Writes the write events among them.
	Events, Writes int64
	// Findings is the number of findings reported.
	Findings int
	// LiveRows is the number of rows the model keeps: messages (ready or acked, until purged),
	// dead letters and outbox rows.
	LiveRows int
	// Stopped is set when the check stopped before the end of the log: at a finding (without
	// KeepGoing), or because the model failed (never for a step it refuses as malformed).
	Stopped bool
}

// Check reads src to its end, steps the reference model (the correct store's configuration)
// through every event and hands each to opts.Checkers; it returns the summary and the first
// finding (nil when none). It holds only live state: the model's rows, the token bindings still
// carried, and (without Reread) each live row's events back to its creation, for a finding's
// window. Errors are about the log (wrapping ErrBadLog, naming the line) or come from OnFinding;
// a disagreement is a finding, never an error.
func Check(src Source, opts CheckOptions) (Summary, *Finding, error) {
	o := newOracle(opts)
	o.hist.log = opts.Log
	o.hist.noHistory = opts.Reread != nil
	// windowErr is why the log could not be checked again for a window: not tried again.
	var windowErr error
	every := int64(opts.ProgressEvery)
	if every <= 0 {
		every = 1 << 16
	}
	var sum Summary
	var first *Finding
	report := func(f *Finding) error {
		sum.Findings++
		if first == nil {
			first = f
		}
		if opts.OnFinding != nil {
			return opts.OnFinding(f)
		}
		return nil
	}
	done := func(err error) (Summary, *Finding, error) {
		if o != nil { // nil when a finding ended the check and its window could not be made
			sum.LiveRows = o.m.Rows()
		}
		if opts.Progress != nil {
			opts.Progress(sum)
		}
		runtime.KeepAlive(o) // its state is what the final Progress call may measure
		return sum, first, err
	}
	for {
		ev, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return done(err)
		}
		f, err := o.Observe(ev)
		malformed := false
		if err != nil {
			if !opts.KeepGoing || !errors.Is(err, ErrBadLog) {
				return done(err)
			}
			// Going on past a finding goes on past a malformed event too: it is reported
			// with its line and left out, the model and the checkers never see it.
			f, malformed = o.skip(ev, err), true
		}
		sum.Events++
		if !ev.Read {
			sum.Writes++
		}
		if malformed {
			if err := report(f); err != nil {
				return done(err)
			}
			continue
		}
		if f != nil {
			if o.hist.noHistory {
				if windowErr == nil {
					if !opts.KeepGoing {
						// The check ends at this finding: the first reading's state goes
						// before the second reading, so that the two are never held at once.
						sum.LiveRows, o = o.m.Rows(), nil
					}
					var again *ModelOracle
					if again, windowErr = recheck(opts, f); windowErr == nil {
						o = again // it keeps the histories from here on
					}
				}
				f.WindowErr = windowErr
			}
			if err := report(f); err != nil {
				return done(err)
			}
			if !opts.KeepGoing || o.stopped {
				sum.Stopped = true
				return done(nil)
			}
		}
		for _, c := range opts.Checkers {
			if f := c.Observe(ev); f != nil {
				if f.Line == 0 {
					f.Step, f.Seq, f.Line = int(sum.Events-1), ev.Seq, ev.Line
				}
				if err := report(f); err != nil {
					return done(err)
				}
				if !opts.KeepGoing {
					sum.Stopped = true
					return done(nil)
				}
			}
		}
		if opts.Progress != nil && sum.Events%every == 0 {
			sum.LiveRows = o.m.Rows()
			opts.Progress(sum)
		}
	}
	for _, c := range opts.Checkers {
		if f := c.End(); f != nil {
			if err := report(f); err != nil {
				return done(err)
			}
			if !opts.KeepGoing {
				break
			}
		}
	}
	return done(nil)
}

// ReadAgain is a CheckOptions.Reread for a log held whole in r, such as a file that Check's
// source decodes: it decodes r again from its start, named name, in commit order within a reorder
// window of window events, as NewOrdered does.
func ReadAgain(r io.ReaderAt, name string, window int) func() (Source, error) {
	return func() (Source, error) {
		return NewOrdered(NewDecoder(io.NewSectionReader(r, 0, math.MaxInt64), name), window), nil
	}
}

// recheck checks the log again (opts.Reread), with one job, from its start up to f, the first
// model finding of a check that keeps no history, with the histories kept, and gives f that
// pass's window: the window of the finding at f's event (a partitioned check words some findings
// its own way). It returns the pass's oracle, in the state the check's is in after f.
func recheck(opts CheckOptions, f *Finding) (*ModelOracle, error) {
	src, err := opts.Reread()
	if err != nil {
		return nil, fmt.Errorf("observe: reading the log again for the window of the finding at line %d: %w", f.Line, err)
	}
	o := newOracle(opts)
	o.hist.log = opts.Log
	for {
		ev, err := src.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("observe: the log read again for the window of the finding at line %d ends after %d events, before it", f.Line, o.pos)
		}
		if err != nil {
			return nil, fmt.Errorf("observe: reading the log again for the window of the finding at line %d: %w", f.Line, err)
		}
		g, err := o.Observe(ev)
		if err != nil {
			if !opts.KeepGoing || !errors.Is(err, ErrBadLog) {
				return nil, fmt.Errorf("observe: checking the log again for the window of the finding at line %d: %w", f.Line, err)
			}
			o.skip(ev, err) // as Check does
			continue
		}
		switch {
		case g == nil && o.pos <= f.Step:
			continue
		case g == nil || g.Step != f.Step || g.Line != f.Line:
			return nil, fmt.Errorf("observe: the log read again for the window of the finding at line %d is not the log checked: %v there", f.Line, describeAgain(g))
		}
		f.Window, f.WindowReproduces, f.WindowErr = g.Window, g.WindowReproduces, g.WindowErr
		return o, nil
	}
}

// describeAgain says what the second pass over a log found where the first found a finding.
func describeAgain(g *Finding) string {
	if g == nil {
		return "no finding"
	}
	return "a finding at line " + strconv.Itoa(g.Line) + ": " + g.Message
}

// ModelOracle steps the reference model through events one at a time, as Check does. Its memory
// follows the live state: token bindings no row carries any more, row histories of rows the model
// no longer keeps, expired processed marks and purged ids past their horizon are forgotten as it
// goes, at a cost amortised over the events.
type ModelOracle struct {
	variant string
	m       *models.Machine
	bind    binder
	hist    histories
	// fetched maps a worker to the id of the message its last fetch returned and no handle has
	// consumed yet, so a handle's events join that row's history.
	fetched map[int]string
	// fetchedBatch maps a worker to the ids of the batch its last consumer_fetch_batch returned
	// and no consumer_handle_batch has handled yet.
	fetchedBatch map[int][]string
	pos          int
	// lastAt is the logical time of the last event, lastLine its line.
	lastAt   int64
	lastLine int
	// stopped is set once the model refused a step: it takes no more.
	stopped bool
	// forgetAt is the position of the next pruning.
	forgetAt int
	// check validates each event as a one-step trace; st (with msg, its result's message) is
	// that step, local the tokens it names, spec its op's spec: all kept from event to event.
	// Once checked, st's result becomes the observed one the model's is compared with.
	check *traces.StepValidator
	st    traces.Step
	msg   traces.Message
	local []string
	tok   tokenOf
	spec  traces.OpSpec
	// keyBuf is keys' scratch: histories.add copies what it keeps.
	keyBuf []string
	// snaps follows the log's snapshots: the state it starts from, and each restart's.
	snaps snapshots
	// part, when set, makes the oracle check one partition of a log split by key (jobs.go).
	part *partShare
}

// NewModelOracle returns an oracle at the start of a log written by variant ("" for the correct
// store), with the default CheckOptions otherwise.
func NewModelOracle(variant string) *ModelOracle { return newOracle(CheckOptions{Variant: variant}) }

// newOracle returns an oracle at the start of a log, for opts.
func newOracle(opts CheckOptions) *ModelOracle {
	cfg := models.Config{LateWakes: lateWakeTicks(opts.LateWakes)}
	return &ModelOracle{variant: opts.Variant, m: models.NewMachine(models.Init(cfg)), bind: newBinder(),
		hist: newHistories(), fetched: map[int]string{}, fetchedBatch: map[int][]string{}, forgetAt: pruneEvery}
}

// pruneEvery is the least number of events between two prunings.
const pruneEvery = 1 << 15

// Observe steps the model through ev, the next event in commit order, and returns a finding when
// the model's result differs from the observed one or the model cannot take the step. Errors are
// about the event itself (ErrBadLog, naming its line). ev is only read, and only during the call.
func (o *ModelOracle) Observe(ev *Event) (*Finding, error) {
	if o.stopped {
		return nil, nil
	}
	if ev.At.Before(traces.Epoch) {
		return nil, fmt.Errorf("%w: line %d: %s at %s is before the trace epoch %s", ErrBadLog, ev.Line, ev.Op, ev.At.Format(time.RFC3339), traces.Epoch.Format(time.RFC3339))
	}
	at := ticksAt(ev.At)
	if ev.Op == string(traces.OpWake) || ev.Op == string(traces.OpPollTick) {
		at = o.lastAt // see wakeTime
	}
	if at < o.lastAt {
		return nil, fmt.Errorf("%w: line %d: %s at %s comes after line %d's event at %s in commit order (time goes back)", ErrBadLog, ev.Line, ev.Op, showTicks(at), o.lastLine, showTicks(o.lastAt))
	}
	if ev.Op == opSnapshot {
		if err := o.snapshot(ev, at); err != nil {
			return nil, err
		}
		o.lastAt, o.lastLine = at, ev.Line
		return nil, nil
	}
	if len(o.snaps.open) > 0 {
		if err := o.unfinished(ev); err != nil {
			return nil, err
		}
	}
	if err := o.validate(ev, at); err != nil {
		return nil, err
	}
	o.lastAt, o.lastLine = at, ev.Line
	pos := o.pos
	o.pos++
	op := traces.Op(ev.Op)
	// The checked step is the model's, but for its token: the model takes the one bound to the
	// store's.
	st := &o.st
	st.Args.Token = o.bind.arg(o.spec.Tokens, ev.Args.Token)
	got, err := o.stepModel(ev, op, at, st)
	keys := o.keys(ev, &got)
	pe := o.hist.add(pos, ev, keys)
	// keys stays valid until the next event's: the finding clones what it keeps.
	if err != nil {
		if errors.Is(err, models.ErrMalformed) {
			// The model refused the step and changed nothing: it goes on from the state before it.
			msg := fmt.Sprintf("the model cannot take the observed step: %v", err)
			if cerr := o.contradiction(ev, keys, msg); cerr != nil {
				o.pos--
				return nil, cerr
			}
			return o.finding(pe, keys, ev, msg), nil
		}
		o.stopped = true
		return nil, fmt.Errorf("observe: model at line %d: %w", ev.Line, err)
	}
	want := &st.Result // checked above, its tokens still numbered within the step
	o.bind.observed(ev, want, &got)
	if !sameResult(want, &got) {
		msg := fmt.Sprintf("%s at %s: the store observed %s, the model gives %s",
			models.DescribeOp(op, st.Args), showTicks(at), show(*want), show(got))
		if cerr := o.contradiction(ev, keys, msg); cerr != nil {
			o.pos--
			return nil, cerr
		}
		return o.finding(pe, keys, ev, msg), nil
	}
	_ = o.contradiction(ev, keys, "")
	if o.pos >= o.forgetAt {
		o.prune()
	}
	return nil, nil
}

// skip passes over ev, an event Observe refused as malformed (err), and returns the finding that
// reports it: the event keeps its position in commit order, nothing else changes.
func (o *ModelOracle) skip(ev *Event, err error) *Finding {
	pos := o.pos
	o.pos++
	return &Finding{Oracle: "log", Step: pos, Seq: ev.Seq, Line: ev.Line,
		Message: fmt.Sprintf("malformed event, left out of the check: %s", strings.TrimPrefix(err.Error(), ErrBadLog.Error()+": "))}
}

// validate checks ev against the trace format's rules for one step, its tokens numbered within
// the step (a token's history across steps is the model's to judge). It leaves the step in o.st
// and the op's spec in o.spec.
func (o *ModelOracle) validate(ev *Event, at int64) error {
	if o.check == nil {
		sv, err := traces.NewStepValidator(&traces.Trace{Format: traces.Format, Name: "event", Origin: traces.Origin{Kind: traces.OriginObserved},
			Expect: traces.Expect{Variant: o.variant, DivergesAt: -1}})
		if err != nil {
			return fmt.Errorf("%w: variant %q: %w", ErrBadLog, o.variant, err)
		}
		o.check = sv
	}
	o.local = o.local[:0] // a step names a few tokens at most
	if o.tok == nil {
		o.tok = o.localToken
	}
	o.spec = traces.Spec[traces.Op(ev.Op)]
	fillStep(&o.st, &o.msg, ev, at, o.spec.Tokens, o.tok)
	if err := o.check.Step(&o.st); err != nil {
		var pe *traces.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("%w: line %d (seq %d, %s): %s: %s", ErrBadLog, ev.Line, ev.Seq, ev.Op, pe.Field, pe.Msg)
		}
		return fmt.Errorf("%w: line %d (seq %d, %s): %w", ErrBadLog, ev.Line, ev.Seq, ev.Op, err)
	}
	return nil
}

// localToken numbers a real token within the step being checked (0 for none).
func (o *ModelOracle) localToken(_ traces.TokenSpace, tok string) int {
	if tok == "" {
		return 0
	}
	if k := slices.Index(o.local, tok); k >= 0 {
		return k + 1
	}
	o.local = append(o.local, tok)
	return len(o.local)
}

// keys names the rows and checkpoints ev touches: its id, the rows its result and the model's
// name, the message a handle's worker fetched, the actor of a checkpoint.
func (o *ModelOracle) keys(ev *Event, got *traces.Result) []string {
	keys := o.keyBuf[:0]
	add := func(k string) {
		if k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	a, r := &ev.Args, &ev.Result
	add(a.ID)
	if a.Actor != "" {
		add(actorKey + a.Actor)
	}
	if r.Message != nil {
		add(r.Message.ID)
	}
	for _, c := range r.Claimed {
		add(c.ID)
	}
	if got.Message != nil {
		add(got.Message.ID)
	}
	for _, c := range got.Claimed {
		add(c.ID)
	}
	switch traces.Op(ev.Op) {
	case traces.OpConsumerFetch:
		if r.Message != nil {
			o.fetched[a.Worker] = r.Message.ID
		}
	case traces.OpConsumerHandle:
		add(o.fetched[a.Worker])
		delete(o.fetched, a.Worker)
	case traces.OpConsumerFetchBatch:
		ids := make([]string, 0, len(r.Messages))
		for _, m := range r.Messages {
			add(m.ID)
			ids = append(ids, m.ID)
		}
		if len(ids) > 0 {
			o.fetchedBatch[a.Worker] = ids
		}
		for _, m := range got.Messages {
			add(m.ID)
		}
	case traces.OpConsumerHandleBatch:
		for _, id := range o.fetchedBatch[a.Worker] {
			add(id)
		}
		delete(o.fetchedBatch, a.Worker)
	case traces.OpPublisherDeliverBatch:
		for _, id := range a.IDs {
			add(id)
		}
	}
	o.keyBuf = keys[:0]
	return keys
}

// actorKey prefixes a checkpoint's actor among the history keys, apart from row ids.
const actorKey = "\x00actor:"

// finding makes the finding at pe (ev, the event it is at, which touched peKeys) with its window:
// the events of the rows it touches back to their creation, closed under the rows those events touch. Replaying the window on the model
// must refuse its last step; where it refuses an earlier one instead (a row the window left out
// decided that step in the full history), the rows of that step's model result join the window
// and it is tried again, a few times.
func (o *ModelOracle) finding(pe eventPlace, peKeys []string, ev *Event, msg string) *Finding {
	f := &Finding{Oracle: "model", Step: pe.pos, Seq: ev.Seq, Line: ev.Line, Message: msg}
	if o.hist.noHistory {
		return f // Check makes the window by checking the log again (recheck)
	}
	keys := slices.Clone(peKeys)
	for range windowRepairs {
		window := o.hist.window(keys)
		events, err := o.hist.events(window)
		if err != nil {
			f.Window, f.WindowErr = nil, err
			return f
		}
		t, err := Convert(&Log{Events: events}, Options{Name: fmt.Sprintf("finding-line%d", ev.Line), Variant: o.variant,
			Command: fmt.Sprintf("the window of the model oracle's finding at line %d (seq %d)", ev.Line, ev.Seq)})
		if err != nil {
			f.Window, f.WindowErr = nil, err
			return f
		}
		f.Window, f.WindowErr = t, nil
		results, _, _ := models.RunTrace(models.Config{}, t)
		j := firstDifference(t, results)
		if j == len(t.Steps)-1 {
			f.WindowReproduces = true
			return f
		}
		if j < 0 || j >= len(results) {
			return f
		}
		grown := len(keys)
		add := func(ids []string) {
			for _, id := range ids {
				if !slices.Contains(keys, id) {
					keys = append(keys, id)
				}
			}
		}
		add(resultIDs(results[j]))
		if len(keys) == grown {
			// A fetch's result is decided by its keys' earlier messages too (a keyed head blocks
			// its successors), which neither result names: the rows that share a mailbox and a
			// key with the rows the step's results name join the window.
			named := append(resultIDs(results[j]), resultIDs(t.Steps[j].Result)...)
			add(sameKeyRows(o.m.Snapshot(), named))
		}
		if len(keys) == grown {
			return f
		}
	}
	return f
}

// windowRepairs bounds the attempts at a window that reproduces its finding.
const windowRepairs = 6

// firstDifference is the first step whose result in results differs from t's, len(results) when
// the model stopped there (a malformed step), -1 when none differs.
func firstDifference(t *traces.Trace, results []traces.Result) int {
	for i := range results {
		if !sameResult(&t.Steps[i].Result, &results[i]) {
			return i
		}
	}
	if len(results) < len(t.Steps) {
		return len(results)
	}
	return -1
}

// sameKeyRows are the messages of snap that share a mailbox and a (non-empty) key with one of
// the messages ids.
func sameKeyRows(snap traces.Snapshot, ids []string) []string {
	type group struct{ mailbox, key string }
	groups := map[group]bool{}
	for _, m := range snap.Messages {
		if m.Key != "" && slices.Contains(ids, m.ID) {
			groups[group{m.Mailbox, m.Key}] = true
		}
	}
	var out []string
	for _, m := range snap.Messages {
		if groups[group{m.Mailbox, m.Key}] {
			out = append(out, m.ID)
		}
	}
	return out
}

// resultIDs are the rows a result names: a fetch's message, a batch fetch's messages, a claim's
// rows.
func resultIDs(r traces.Result) []string {
	var ids []string
	if r.Message != nil {
		ids = append(ids, r.Message.ID)
	}
	for _, m := range r.Messages {
		ids = append(ids, m.ID)
	}
	for _, c := range r.Claimed {
		ids = append(ids, c.ID)
	}
	return ids
}

// prune forgets what no later event can refer to, and schedules the next pruning so that its
// cost, linear in the live state, is amortised over the events in between.
func (o *ModelOracle) prune() {
	live := o.m.Forget()
	live += o.bind.prune(o.m)
	live += o.hist.prune(o.m)
	o.pruneAdopted()
	live += len(o.snaps.adopted)
	// Pruning walks the model's rows too (HeldTokens, Holds): the next one waits for as many
	// events.
	live += o.m.Rows()
	o.forgetAt = o.pos + max(pruneEvery, live)
}

// binder binds the store's tokens to the model's, in each namespace, as traces.Binder binds
// symbols: a real token is bound the first time a result shows it, to the token the model issued
// there, unless that model token is bound already. It forgets the bindings of tokens no row
// carries any more (prune): a later step naming such a token is stale either way.
type binder struct {
	fwd    [2]map[string]int
	rev    [2]map[int]string
	forged int
}

func newBinder() binder {
	return binder{fwd: [2]map[string]int{{}, {}}, rev: [2]map[int]string{{}, {}}}
}

// arg is the model token passed for a real token argument: its binding, or -1, which no row
// carries.
func (b *binder) arg(space traces.TokenSpace, tok string) int {
	if k, ok := b.fwd[space][tok]; ok && tok != "" {
		return k
	}
	return -1
}

// result names the real token tok of a result as a model token, binding it to model (the token
// the model's result has there) if neither is bound; an unbound token the model cannot match
// gets a negative number of its own, so the comparison shows the difference.
func (b *binder) result(space traces.TokenSpace, tok string, model int) int {
	if tok == "" {
		return 0
	}
	if k, ok := b.fwd[space][tok]; ok {
		return k
	}
	if model > 0 {
		if _, taken := b.rev[space][model]; !taken {
			b.fwd[space][tok] = model
			b.rev[space][model] = tok
			return model
		}
	}
	b.forged--
	return b.forged
}

// observed names the tokens of r, ev's result as the oracle converted it for checking (its tokens
// numbered within the step), as model tokens, in place, binding against got: the result is
// converted once per event, and only its tokens differ from the checked step's.
func (b *binder) observed(ev *Event, r, got *traces.Result) {
	if m := ev.Result.Message; m != nil {
		var model int
		if got.Message != nil {
			model = got.Message.Token
		}
		r.Message.Token = b.result(traces.LeaseTokens, m.Token, model)
	}
	for i, c := range ev.Result.Claimed {
		var model int
		if i < len(got.Claimed) {
			model = got.Claimed[i].Token
		}
		r.Claimed[i].Token = b.result(traces.ClaimTokens, c.Token, model)
	}
	for i, m := range ev.Result.Messages {
		var model int
		if i < len(got.Messages) {
			model = got.Messages[i].Token
		}
		r.Messages[i].Token = b.result(traces.LeaseTokens, m.Token, model)
	}
}

// prune keeps the bindings of the tokens m's rows still carry; it returns how many it kept.
func (b *binder) prune(m *models.Machine) int {
	held := [2]map[int]bool{{}, {}}
	m.HeldTokens(func(space traces.TokenSpace, tok int) { held[space][tok] = true })
	n := 0
	for space := range b.fwd {
		for tok, k := range b.fwd[space] {
			if !held[space][k] {
				delete(b.fwd[space], tok)
				delete(b.rev[space], k)
				continue
			}
			n++
		}
	}
	return n
}

// sameResult is the comparison CheckModel makes (go-cmp with empty slices equal to nil) written
// out for speed; TestSameResultCoversResult keeps it in step with traces.Result's fields.
func sameResult(a, b *traces.Result) bool {
	if a.Err != b.Err || a.Duplicate != b.Duplicate || a.Affected != b.Affected || a.Action != b.Action ||
		a.Attempt != b.Attempt || a.Version != b.Version {
		return false
	}
	if (a.Message == nil) != (b.Message == nil) || a.Message != nil && *a.Message != *b.Message {
		return false
	}
	return slices.Equal(a.Claimed, b.Claimed) && slices.Equal(a.Redrives, b.Redrives) &&
		slices.Equal(a.Messages, b.Messages) && slices.Equal(a.Actions, b.Actions) &&
		slices.Equal(a.Duplicates, b.Duplicates) && slices.Equal(a.Effects, b.Effects)
}

// readLineAt reads the line that starts at byte off of r (without its newline) into buf's
// storage, reading more until it has the newline or the end of r, at most MaxLineBytes.
func readLineAt(r io.ReaderAt, off int64, buf []byte) ([]byte, error) {
	size := max(cap(buf), 4096)
	for {
		buf = slices.Grow(buf[:0], size)[:size]
		n, err := r.ReadAt(buf, off)
		if k := bytes.IndexByte(buf[:n], '\n'); k >= 0 {
			return buf[:k], nil
		}
		switch {
		case errors.Is(err, io.EOF):
			return buf[:n], nil // the last line, without a newline
		case err != nil:
			return nil, err
		case size >= MaxLineBytes:
			return nil, fmt.Errorf("%w: the line at byte %d is longer than %d bytes", ErrBadLog, off, MaxLineBytes)
		}
		size *= 2
	}
}
