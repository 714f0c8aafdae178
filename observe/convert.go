package observe

import (
	"errors"
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery/record"
	"github.com/pconform/pconform/traces"
)

// Options name the trace Convert makes.
type Options struct {
	// Name is the trace's name; required.
	Name string
	// Variant is the store configuration that ran ("" for the correct store, or a replay target
	// name of a known-broken variant). An observed trace expects what was observed, so it never
	// predicts a divergence (expect.diverges_at is -1).
	Variant string
	// Seed and Command go into the trace's origin, so the run can be made again.
	Seed    int64
	Command string
	_       struct{}
}

// Convert turns a log in commit order into an observed trace. Real tokens become symbols: a token
// gets the next unused symbol where a result first shows it (a lease's, fetch's or claim's), and a
// token an argument names that no earlier result showed gets a fresh symbol of its own (it
// matches nothing). Times become whole milliseconds since traces.Epoch, durations whole
// milliseconds (traces.ObservedTicksPerSecond), both rounded down as the store rounds them. The trace has no final state.
//
// Errors wrap ErrBadLog and name the event's line: a log that starts from a snapshot of a
// database that held rows (a trace starts empty; snapshots after the first step are left out),
// an event before traces.Epoch, or one whose
// arguments or result do not fit its operation (the trace format's rules, message included).
func Convert(lg *Log, opts Options) (*traces.Trace, error) {
	t := &traces.Trace{
		Format: traces.Format,
		Name:   opts.Name,
		Origin: traces.Origin{Kind: traces.OriginObserved, Seed: opts.Seed, Command: opts.Command},
		Expect: traces.Expect{Variant: opts.Variant, DivergesAt: -1},
		Steps:  make([]traces.Step, 0, len(lg.Events)),
	}
	sym := symbols{lease: map[string]int{}, claim: map[string]int{}}
	var last int64
	// from maps a step to its event: snapshot events are not steps.
	from := make([]int, 0, len(lg.Events))
	for i, ev := range lg.Events {
		if ev.Op == opSnapshot {
			// A trace starts from the empty store, so it cannot start from a snapshot's rows;
			// a later snapshot (a restart's) states what the steps before it made and is left
			// out. pconform check starts from one (docs/observed.md).
			if len(t.Steps) == 0 && ev.Row != nil && ev.Row.Table != record.SnapEnd {
				return nil, fmt.Errorf("%w: line %d: the log starts from a snapshot of rows the database held when recording began; a trace starts from the empty store, so it cannot be converted (check the log with pconform check, which starts from the snapshot)", ErrBadLog, ev.Line)
			}
			continue
		}
		if ev.At.Before(traces.Epoch) {
			return nil, fmt.Errorf("%w: line %d: %s at %s is before the trace epoch %s", ErrBadLog, ev.Line, ev.Op, ev.At.Format(time.RFC3339), traces.Epoch.Format(time.RFC3339))
		}
		at := ticksAt(ev.At)
		if ev.Op == string(traces.OpWake) || ev.Op == string(traces.OpPollTick) {
			at = last // see wakeTime
		}
		if at < last {
			// Commit order is also time order, since a recording transaction reads the clock
			// under the commit lock; a log that goes back in time was not written that way.
			return nil, fmt.Errorf("%w: line %d: %s at %s comes after an event at %s in commit order (time goes back)", ErrBadLog, ev.Line, ev.Op, showTicks(at), showTicks(last))
		}
		last = at
		t.Steps = append(t.Steps, step(&ev, at, sym.of))
		from = append(from, i)
	}
	if err := traces.Validate(t); err != nil {
		var pe *traces.ParseError
		if errors.As(err, &pe) && pe.Step >= 0 && pe.Step < len(from) {
			ev := lg.Events[from[pe.Step]]
			return nil, fmt.Errorf("%w: line %d (seq %d, %s): %s: %s", ErrBadLog, ev.Line, ev.Seq, ev.Op, pe.Field, pe.Msg)
		}
		return nil, fmt.Errorf("%w: %w", ErrBadLog, err)
	}
	return t, nil
}

// symbols binds real tokens to trace symbols, one namespace each for lease and claim tokens.
type symbols struct {
	lease, claim map[string]int
	next         int
}

func (s *symbols) of(space traces.TokenSpace, tok string) int {
	if tok == "" {
		return 0
	}
	m := s.lease
	if space == traces.ClaimTokens {
		m = s.claim
	}
	if k, ok := m[tok]; ok {
		return k
	}
	s.next++
	m[tok] = s.next
	return s.next
}

// wakeTime: a wake or a poll tick is recorded outside any transaction, after the commit it
// follows, so its own clock reading may be later than the steps placed after it (they read the
// clock when they began, under the commit lock). It changes nothing, so in the trace it takes the
// time of the step before it, and time never goes back.

// tick is the unit of an observed trace's times and durations (traces.ObservedTicksPerSecond):
// a millisecond, the resolution of actordelivery's clock and of its recorder.
const tick = time.Second / traces.ObservedTicksPerSecond

// ticksAt is the logical time of t, an instant at or after traces.Epoch: whole ticks since the
// epoch, rounded down. The store reads its clock in whole milliseconds, so for its events the
// rounding loses nothing.
func ticksAt(t time.Time) int64 { return int64(t.Sub(traces.Epoch) / tick) }

// Ticks is t as a logical time of an observed trace (ticksAt), for an oracle outside this
// package that reads a log's events as the model oracle does (bridge's spec deriver).
func Ticks(t time.Time) int64 { return ticksAt(t) }

// StepAt is ev as a trace step at its logical time (Ticks), its tokens named by tok: the step the
// model oracle takes for ev, but for the token names.
func StepAt(ev *Event, tok func(space traces.TokenSpace, tok string) int) traces.Step {
	return step(ev, ticksAt(ev.At), tok)
}

// showTicks renders a logical time of an observed trace as the instant it stands for.
func showTicks(at int64) string {
	return traces.Epoch.Add(time.Duration(at) * tick).Format("2006-01-02T15:04:05.000Z07:00")
}

// secs is a duration in whole ticks, rounded down as the store rounds it (durMillis).
func secs(d time.Duration) int64 { return int64(d / tick) }

// tokenOf names a real token of a namespace as an integer: a trace symbol, or a model token.
type tokenOf func(space traces.TokenSpace, tok string) int

// step is ev as a trace step at logical time at, its tokens named by tok.
func step(ev *Event, at int64, tok tokenOf) traces.Step {
	var st traces.Step
	fillStep(&st, nil, ev, at, traces.Spec[traces.Op(ev.Op)].Tokens, tok)
	return st
}

// fillStep writes ev as a trace step at logical time at into st, its tokens named by tok. A
// result's message goes into msg when it is not nil, and its claimed rows into st's own
// Result.Claimed array: a caller that checks one event at a time reuses both. space is the
// namespace of the op's token argument (traces.Spec).
func fillStep(st *traces.Step, msg *traces.Message, ev *Event, at int64, space traces.TokenSpace, tok tokenOf) {
	a, r := &ev.Args, &ev.Result
	op := traces.Op(ev.Op)
	st.Op, st.At = op, at
	st.Args = traces.Args{
		Mailbox: a.Mailbox, ID: a.ID, Key: a.Key, Priority: a.Priority, MaxAttempts: a.MaxAttempts,
		Delay: secs(a.Delay), Payload: a.Payload, LeaseFor: secs(a.LeaseFor), Reason: a.Reason,
		Target: a.Target, Limit: a.Limit, ClaimFor: secs(a.ClaimFor), Worker: a.Worker,
		Publisher: a.Publisher, Profile: a.Profile, Outcome: a.Outcome, RetryDelay: secs(a.RetryDelay),
		Fault: a.Fault, MaxDeliveryAttempts: a.MaxDeliveryAttempts, OlderThan: secs(a.OlderThan), Horizon: secs(a.Horizon),
		Consumer: a.Consumer, TTL: secs(a.TTL), Actor: a.Actor, ExpectVersion: int(a.ExpectVersion),
		Size: a.Size, Outcomes: a.Outcomes, IDs: a.IDs, Reasons: a.Reasons,
	}
	st.Args.Token = tok(space, a.Token)
	claimed := st.Result.Claimed[:0]
	st.Result = traces.Result{Err: r.Err, Duplicate: r.Duplicate, Affected: r.Affected, Action: r.Action, Attempt: r.Attempt,
		Version: int(r.Version)}
	if r.Message != nil {
		if msg == nil {
			msg = new(traces.Message)
		}
		*msg = traces.Message{ID: r.Message.ID, Attempts: r.Message.Attempts, Token: tok(traces.LeaseTokens, r.Message.Token)}
		st.Result.Message = msg
	}
	for _, c := range r.Claimed {
		claimed = append(claimed, traces.Claimed{ID: c.ID, DeliveryAttempts: c.DeliveryAttempts, Token: tok(traces.ClaimTokens, c.Token)})
	}
	if len(claimed) > 0 {
		st.Result.Claimed = claimed
	}
	// A batch step's lists: rare, so made afresh for each event.
	if len(r.Messages) > 0 {
		st.Result.Messages = make([]traces.Message, len(r.Messages))
		for i, m := range r.Messages {
			st.Result.Messages[i] = traces.Message{ID: m.ID, Attempts: m.Attempts, Token: tok(traces.LeaseTokens, m.Token)}
		}
	}
	st.Result.Actions = r.Actions
	st.Result.Duplicates = r.Duplicates
}
