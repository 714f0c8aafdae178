package properties

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"

	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/traces"
)

// cmd is one generated command: exactly one trace step. It implements gopter's commands.Command
// with the model (a *world) as the state and a *sut as the system under test.
type cmd struct {
	// serial identifies the command within its run; a token the command issues is named by it.
	serial int
	op     traces.Op
	at     int64
	// args are the step's arguments; args.Token is unused, tok names the token.
	args traces.Args
	// tok is the serial of the command whose token this command passes (0: it passes none).
	tok int
	// takeover marks a leased consumer_fetch with which the generator starts a takeover chain
	// (generate.go, "Situations"): a hint to the generator, no part of the step.
	takeover bool
}

var _ commands.Command = (*cmd)(nil)

// PreCondition keeps sequences legal; see world.legal.
func (c *cmd) PreCondition(st commands.State) bool { return st.(*world).legal(c) == "" }

// NextState steps the model. gopter calls it only after PreCondition held.
func (c *cmd) NextState(st commands.State) commands.State {
	w := st.(*world)
	n, err := w.apply(c)
	if err != nil {
		// Unreachable after PreCondition; keeping the state makes the postcondition fail loudly.
		return w
	}
	return n
}

// Run runs the step on the system under test and checks the invariants on its snapshot.
func (c *cmd) Run(x commands.SystemUnderTest) commands.Result { return x.(*sut).run(c) }

// PostCondition compares the system under test with the model after the step: the step's result,
// the invariants, then the whole state; then it runs the fencing probes (probe.go).
func (c *cmd) PostCondition(st commands.State, r commands.Result) *gopter.PropResult {
	o := r.(*outcome)
	if o.skipped {
		if o.s.stopped() {
			return &gopter.PropResult{Status: gopter.PropUndecided}
		}
		return &gopter.PropResult{Status: gopter.PropTrue}
	}
	f := o.judge(c, st.(*world))
	if f == nil {
		f = o.s.probe(st.(*world))
	}
	if f == nil {
		return &gopter.PropResult{Status: gopter.PropTrue}
	}
	if !o.s.fail(f) {
		// A shrinking candidate that fails without the first failure's harm is no smaller
		// version of it: to gopter's shrinker it passes (its later steps are skipped).
		return &gopter.PropResult{Status: gopter.PropTrue}
	}
	return &gopter.PropResult{Status: gopter.PropFalse, Labels: []string{f.String()}}
}

func (c *cmd) String() string {
	// The token shows as the serial of the command that issued it.
	a := c.args
	a.Token = c.tok
	s, _, _ := strings.Cut(tracefmt.Step(c.serial, c.op, c.at, a, traces.Result{}), " -> ")
	return s
}

// Check names one property a step can break.
type Check string

// The checks, in the order a step is judged.
const (
	// CheckTarget: the target could not run the step at all (an infrastructure error).
	CheckTarget Check = "target"
	// CheckResult: the step's observable result differs from the model's.
	CheckResult Check = "result"
	// CheckNoLoss: an accepted message, or the message of a completed outbox row, is in neither a
	// mailbox nor the dead letters.
	CheckNoLoss Check = "no-loss"
	// CheckAttempts: an attempt count is above the message's max_attempts.
	CheckAttempts Check = "attempts-bounded"
	// CheckNoStrand: a message only the consumer protocol touched has used up its attempts, is
	// ready and holds no lease: nothing will ever deliver or dead-letter it.
	CheckNoStrand Check = "no-strand"
	// CheckExactlyOnce: an id is stored twice, or a handler effect committed twice or without
	// its acknowledgement.
	CheckExactlyOnce Check = "exactly-once"
	// CheckFIFO: a lease, peek or fetch returned a keyed message while an earlier message of its
	// mailbox and key still blocked it.
	CheckFIFO Check = "fifo"
	// CheckState: the target's state after the step differs from the model's.
	CheckState Check = "state"
	// CheckFencing: after the step, the target accepted a token no row carries any more (or a
	// forged one) for a fenced operation: ack, nack, extend, outbox_complete or outbox_fail.
	CheckFencing Check = "fencing"
)

// statements say each check's property in one sentence: what a hunted trace names as the
// property its variant violates (expect.violates).
var statements = map[Check]string{
	CheckTarget:      "the target runs every step it is given",
	CheckResult:      "every step's result is the reference model's",
	CheckNoLoss:      "an accepted message is never lost: it stays in its mailbox or among the dead letters",
	CheckAttempts:    "no attempt count ever exceeds the message's max_attempts",
	CheckNoStrand:    "a message the consumer protocol alone touched is never stranded: once its attempts are used up it is dead-lettered",
	CheckExactlyOnce: "an id is stored once, and a handler effect commits once, only together with its acknowledgement",
	CheckFIFO:        "a keyed message is never handed out while an earlier message of its mailbox and key still blocks it",
	CheckState:       "the state after every step is the reference model's",
	CheckFencing:     "a lease or claim token that no row carries any more is refused by every fenced operation (lease_lost, claim_lost)",
}

// Statement is the property c checks, in one sentence.
func (c Check) Statement() string { return statements[c] }

// Violates names the properties f breaks, for a trace's expect.violates: the invariants first
// (they say what went wrong for a user), then the comparisons with the model.
func (f *Failure) Violates() string {
	var inv, cmp []string
	for _, c := range f.Checks {
		line := fmt.Sprintf("%s: %s", c, c.Statement())
		if c == CheckResult || c == CheckState || c == CheckTarget {
			cmp = append(cmp, line)
		} else {
			inv = append(inv, line)
		}
	}
	return strings.Join(append(inv, cmp...), "; ")
}

// harm is the invariants f breaks: the checks that say what went wrong for a user, apart from the
// comparisons with the model (result, state, target).
func (f *Failure) harm() []Check {
	var out []Check
	for _, c := range f.Checks {
		if c != CheckResult && c != CheckState && c != CheckTarget {
			out = append(out, c)
		}
	}
	return out
}

// keepsHarm reports whether f breaks every invariant in harm: a shrunk failure must show the harm
// of the failure it was shrunk from, not just some divergence from the model.
func (f *Failure) keepsHarm(harm []Check) bool {
	for _, c := range harm {
		if !slices.Contains(f.Checks, c) {
			return false
		}
	}
	return true
}

// Failure is what a failing sequence broke: the first step at which a check failed.
type Failure struct {
	// Step is the index of the failing step in the sequence.
	Step int
	// Checks are every check the step broke, in judging order.
	Checks []Check
	// Detail says, for a person, what each check saw.
	Detail string
}

func (f *Failure) String() string {
	if f == nil {
		return "no failure"
	}
	names := make([]string, len(f.Checks))
	for i, c := range f.Checks {
		names[i] = string(c)
	}
	return fmt.Sprintf("step #%d broke %s: %s", f.Step, strings.Join(names, ", "), f.Detail)
}

// outcome is what Run reports to PostCondition.
type outcome struct {
	s *sut
	// skipped: the step did not run (the sequence already failed, or the hunt stopped).
	skipped bool
	index   int
	err     error
	// res and snap are the target's result and state, tokens as serials.
	res  traces.Result
	snap traces.Snapshot
	// broken are the invariants the snapshot broke.
	broken []violation
}

type violation struct {
	check  Check
	detail string
}

var cmpOpts = cmp.Options{cmpopts.EquateEmpty()}

// same reports whether the model's value want and the target's got agree under cmpOpts. The
// comparison runs after every step and every fencing probe, where the two nearly always agree, so
// it tries reflect.DeepEqual first (equal under it means equal under cmpOpts, which only adds that
// a nil and an empty slice or map agree) and falls back to cmp.Equal; the diff is made only for a
// failure. A profile of the hunts had cmp.Diff on equal values at a tenth of their CPU time.
func same(want, got any) bool {
	return reflect.DeepEqual(want, got) || cmp.Equal(want, got, cmpOpts)
}

// judge compares the outcome with the model's world after the step.
func (o *outcome) judge(c *cmd, w *world) *Failure {
	var checks []Check
	var details []string
	add := func(ch Check, format string, args ...any) {
		if len(checks) == 0 || checks[len(checks)-1] != ch {
			checks = append(checks, ch)
		}
		details = append(details, fmt.Sprintf("[%s] ", ch)+fmt.Sprintf(format, args...))
	}
	if o.err != nil {
		add(CheckTarget, "%s could not run: %v", c.op, o.err)
	} else {
		if !same(w.last, o.res) {
			add(CheckResult, "%s: the model says %s, the target observed %s",
				c.op, tracefmt.Result(c.op, w.last), tracefmt.Result(c.op, o.res))
		}
		for _, v := range o.broken {
			add(v.check, "%s", v.detail)
		}
		if want := w.snapshot(); !same(want, o.snap) {
			add(CheckState, "the state differs from the model's (-model +target):\n%s", cmp.Diff(want, o.snap, cmpOpts))
		}
	}
	if len(checks) == 0 {
		return nil
	}
	return &Failure{Step: o.index, Checks: checks, Detail: strings.Join(details, "\n")}
}
