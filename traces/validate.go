package traces

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Validate checks an in-memory trace against every rule [Read] enforces except those about the
// JSON text itself. In memory a field cannot be told absent from zero, so "missing" reads as "zero"
// here: a required string must be non-empty, and a field the operation does not take must be zero.
// Nil slices and maps count as empty. The error is a [*ParseError] wrapping [ErrInvalid] with an
// empty File.
//
// Producers (the bridge, property tests) call Validate before writing; [Write] and [Marshal] call it
// themselves, so a written trace always reads back.
func Validate(t *Trace) error {
	if t == nil {
		return errCtx{step: -1}.errf("", "nil trace")
	}
	v := newValidator("")
	if err := v.header(t); err != nil {
		return err
	}
	for i := range t.Steps {
		if err := v.step(i, &t.Steps[i]); err != nil {
			return err
		}
	}
	if err := v.final(t.Final); err != nil {
		return err
	}
	return v.divergence(t)
}

// StepValidator checks steps one at a time, each as the only step of a trace with a given
// header: what [Validate] says of that one-step trace, without building it. Token symbols are
// numbered within each step. A checker of a long stream of steps uses one and checks millions of
// steps with no allocation per step.
type StepValidator struct {
	v validator
}

// NewStepValidator checks t's header (t's steps and final state are ignored) and returns a
// validator of steps under it.
func NewStepValidator(t *Trace) (*StepValidator, error) {
	if t == nil {
		return nil, errCtx{step: -1}.errf("", "nil trace")
	}
	h := *t
	h.Steps, h.Final = []Step{{}}, nil
	sv := &StepValidator{v: newValidator("")}
	if err := sv.v.header(&h); err != nil {
		return nil, err
	}
	if err := sv.v.divergence(&h); err != nil {
		return nil, err
	}
	return sv, nil
}

// Step checks s as the only step of a trace with the validator's header; the error is what
// [Validate] returns for that trace.
func (sv *StepValidator) Step(s *Step) error {
	v := &sv.v
	for ns := range v.used {
		clear(v.used[ns])
		clear(v.bound[ns])
	}
	v.prevAt = 0
	return v.step(0, s)
}

// Token symbols live in two namespaces, [LeaseTokens] and [ClaimTokens]; the validator indexes
// its per-namespace tables with them.
const (
	leaseTokens = int(LeaseTokens)
	claimTokens = int(ClaimTokens)
)

// validator checks a trace part by part in file order; it carries what the rules need across
// steps: the previous step's time and which token symbols have been seen.
type validator struct {
	file   string
	prevAt int64
	// maxTime bounds a step's at and its durations, maxInstant a snapshot's times: MaxSeconds
	// and MaxInstant, in ticks of ObservedTick for an observed trace.
	maxTime, maxInstant int64
	// used maps each symbol named so far (by an argument or a result) to the first step naming it.
	used [2]map[int]int
	// bound holds the symbols some result issued.
	bound [2]map[int]bool
	// variant is set when the trace records a broken variant's behaviour: its protocol steps may
	// end in ways the correct code never does (a split-write delivery whose enqueue commit failed
	// ends "delivered"), so only the vocabulary of their actions is checked, not how the action
	// fits the outcome or fault.
	variant bool
	// uncapped is set when the trace's profile lets nack_by_id count past max_attempts, so a row's
	// attempts may exceed its max_attempts.
	uncapped bool
}

func newValidator(file string) validator {
	return validator{
		file:       file,
		maxTime:    MaxSeconds,
		maxInstant: MaxInstant,
		used:       [2]map[int]int{{}, {}},
		bound:      [2]map[int]bool{{}, {}},
	}
}

func (v *validator) header(t *Trace) error {
	c := errCtx{file: v.file, step: -1}
	v.variant = t.Expect.Variant != ""
	v.maxTime, v.maxInstant = MaxSeconds, MaxInstant
	if t.Origin.Kind == OriginObserved {
		v.maxTime, v.maxInstant = MaxSeconds*ObservedTicksPerSecond, MaxInstant*ObservedTicksPerSecond
	}
	v.uncapped = t.Expect.Profile.NackByIDUncapped
	if t.Format != Format {
		if knownFormat(t.Format) {
			return c.errf("format", "must be %q in memory, got %q (Read upgrades an earlier version as it reads it)", Format, t.Format)
		}
		return c.errf("format", "unknown format version %q; want %q", t.Format, Format)
	}
	if err := nonEmpty(c, "name", t.Name); err != nil {
		return err
	}
	o := &t.Origin
	if err := oneOf(c, "origin.kind", o.Kind, OriginPChecker, OriginProperty, OriginHand, OriginObserved); err != nil {
		return err
	}
	for _, f := range []struct{ path, s string }{
		{"origin.test_case", o.TestCase}, {"origin.command", o.Command}, {"origin.model", o.Model},
	} {
		if err := text(c, f.path, f.s); err != nil {
			return err
		}
	}
	if err := atLeast(c, "origin.schedule", int64(o.Schedule), 0); err != nil {
		return err
	}
	if t.Expect.Variant != "" && !variantName(t.Expect.Variant) {
		return c.errf("expect.variant", "%q is not a variant name (lowercase letters, digits, '-' and '_', starting with a letter or digit)", t.Expect.Variant)
	}
	return nil
}

func variantName(s string) bool {
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || r != '-' && r != '_') {
			return false
		}
	}
	return s != ""
}

func (v *validator) divergence(t *Trace) error {
	c := errCtx{file: v.file, step: -1}
	d := t.Expect.DivergesAt
	switch {
	case t.Expect.Variant == "" && d != -1:
		return c.errf("expect.diverges_at", "must be -1 when expect.variant is empty, got %d", d)
	case t.Expect.Variant == "" && t.Expect.Violates != "":
		return c.errf("expect.violates", "must be absent when expect.variant is empty (the correct store violates nothing), got %q", t.Expect.Violates)
	case d < -1 || d >= len(t.Steps):
		if len(t.Steps) == 0 {
			return c.errf("expect.diverges_at", "must be -1 (the trace has no steps), got %d", d)
		}
		return c.errf("expect.diverges_at", "must be -1 or a step index in [0, %d), got %d", len(t.Steps), d)
	}
	return nil
}

// step checks one step; i is its index.
func (v *validator) step(i int, s *Step) error {
	c := errCtx{file: v.file, step: i}
	pl, ok := stepPlans[s.Op]
	if !ok {
		return c.errf("op", "unknown operation %q", s.Op)
	}
	c.op = s.Op
	if err := between(c, "at", s.At, 0, v.maxTime); err != nil {
		return err
	}
	if i > 0 && s.At < v.prevAt {
		return c.errf("at", "%d is before the previous step's %d; time never decreases", s.At, v.prevAt)
	}
	v.prevAt = s.At

	// One mask of the set fields against the op's, not a call per field: the first field set
	// that the op does not take is the lowest bit left.
	if extra := argsSet(&s.Args) &^ pl.argTaken; extra != 0 {
		f := &argFields[bits.TrailingZeros64(extra)]
		return c.errf("args."+f.name, "not an argument of %s (%s)", s.Op, describeArgs(s.Op))
	}
	if extra := resultSet(&s.Result) &^ pl.resultTaken; extra != 0 {
		f := &resultFields[bits.TrailingZeros64(extra)]
		return c.errf("result."+f.name, "not a result of %s (%s)", s.Op, describeResults(s.Op))
	}
	for j, name := range pl.args {
		if err := v.arg(c, i, s, pl, name, pl.argPaths[j]); err != nil {
			return err
		}
	}
	for j, name := range pl.results {
		if err := v.result(c, i, s, pl, name, pl.resultPaths[j]); err != nil {
			return err
		}
	}
	return nil
}

// stepPlan is what checking a step of one op needs from [Spec], worked out once: which argument
// and result fields the op takes (bit j for argFields[j], resultFields[j]), the arguments to
// check (Args, then OptionalArgs) and the results, with their paths, and the values each
// enumerated field allows (spec.Values looked up once, not per step).
type stepPlan struct {
	spec                       OpSpec
	argTaken, resultTaken      uint64
	args, argPaths             []string
	results, resultPaths       []string
	profiles, outcomes, faults []string
	actions                    []string
}

// stepPlans holds the plan of every op in [Spec].
var stepPlans = func() map[Op]*stepPlan {
	if len(argFields) > 64 || len(resultFields) > 64 {
		panic("traces: stepPlan's field masks hold at most 64 fields")
	}
	plans := make(map[Op]*stepPlan, len(Spec))
	for op, sp := range Spec {
		pl := &stepPlan{
			spec:     sp,
			profiles: sp.Values["profile"],
			outcomes: sp.Values["outcome"],
			faults:   sp.Values["fault"],
			actions:  sp.Values["action"],
		}
		for j, f := range argFields {
			if contains(sp.Args, f.name) || contains(sp.OptionalArgs, f.name) {
				pl.argTaken |= 1 << j
			}
		}
		for j, f := range resultFields {
			if contains(sp.Results, f.name) {
				pl.resultTaken |= 1 << j
			}
		}
		for _, args := range [2][]string{sp.Args, sp.OptionalArgs} {
			for _, name := range args {
				pl.args = append(pl.args, name)
				pl.argPaths = append(pl.argPaths, "args."+name)
			}
		}
		for _, name := range sp.Results {
			pl.results = append(pl.results, name)
			pl.resultPaths = append(pl.resultPaths, "result."+name)
		}
		plans[op] = pl
	}
	return plans
}()

func (v *validator) arg(c errCtx, i int, s *Step, pl *stepPlan, name, p string) error {
	a := &s.Args
	switch name {
	case "mailbox":
		return nonEmpty(c, p, a.Mailbox)
	case "id":
		if s.Op == OpListRedrives && a.ID == "" {
			return nil // absent: the whole history
		}
		return nonEmpty(c, p, a.ID)
	case "target":
		return nonEmpty(c, p, a.Target)
	case "reason":
		if s.Op == OpConsumerHandle {
			return declinedReason(c, p, a.Outcome, a.Reason)
		}
		return nonEmpty(c, p, a.Reason)
	case "reasons":
		if len(a.Reasons) == 0 {
			return nil // absent: every declined failure's reason is ReasonHandlerFailed
		}
		if len(a.Reasons) != len(a.Outcomes) {
			return c.errf(p, "holds %d reasons for %d outcomes; one each, or none", len(a.Reasons), len(a.Outcomes))
		}
		for j, r := range a.Reasons {
			if err := declinedReason(c, index(p, j), a.Outcomes[j], r); err != nil {
				return err
			}
		}
		return nil
	case "key":
		return text(c, p, a.Key)
	case "payload":
		return text(c, p, a.Payload)
	case "max_attempts":
		return atLeast(c, p, int64(a.MaxAttempts), 1)
	case "max_delivery_attempts":
		return atLeast(c, p, int64(a.MaxDeliveryAttempts), 0)
	case "delay":
		return between(c, p, a.Delay, 0, v.maxTime)
	case "retry_delay":
		return between(c, p, a.RetryDelay, 0, v.maxTime)
	case "lease_for":
		if s.Op == OpConsumerFetch || s.Op == OpConsumerFetchBatch {
			if a.Profile == ProfileLeaseless {
				if a.LeaseFor != 0 {
					return c.errf(p, "a leaseless consumer_fetch takes no lease (it peeks), so lease_for must be absent; got %d", a.LeaseFor)
				}
				return nil
			}
			if a.LeaseFor < 1 {
				return c.errf(p, "a leased consumer_fetch takes lease_for >= 1, got %d", a.LeaseFor)
			}
			return between(c, p, a.LeaseFor, 1, v.maxTime)
		}
		// A lease that is over the moment it is taken is never what a scenario means.
		return between(c, p, a.LeaseFor, 1, v.maxTime)
	case "token":
		if err := atLeast(c, p, int64(a.Token), 0); err != nil {
			return err
		}
		v.use(int(pl.spec.Tokens), a.Token, i)
		return nil
	case "limit":
		return atLeast(c, p, int64(a.Limit), 1)
	case "claim_for":
		return between(c, p, a.ClaimFor, 1, v.maxTime)
	case "older_than":
		return between(c, p, a.OlderThan, 0, v.maxTime)
	case "horizon":
		return between(c, p, a.Horizon, 0, v.maxTime)
	case "worker":
		return atLeast(c, p, int64(a.Worker), 0)
	case "publisher":
		return atLeast(c, p, int64(a.Publisher), 0)
	case "profile":
		return oneOf(c, p, a.Profile, pl.profiles...)
	case "outcome":
		return oneOf(c, p, a.Outcome, pl.outcomes...)
	case "fault":
		if s.Op == OpConsumerHandle && a.Fault == "" {
			return nil // absent: none
		}
		return oneOf(c, p, a.Fault, pl.faults...)
	case "priority":
		return nil // any integer
	case "consumer":
		return nonEmpty(c, p, a.Consumer)
	case "ttl":
		return between(c, p, a.TTL, 1, v.maxTime)
	case "actor":
		if err := nonEmpty(c, p, a.Actor); err != nil {
			return err
		}
		if s.Op == OpSaveCheckpoint && strings.HasPrefix(a.Actor, EffectsActorPrefix) {
			return c.errf(p, "%q names a mailbox's effect log, which only the consumer handler saves", a.Actor)
		}
		return nil
	case "expect_version":
		return atLeast(c, p, int64(a.ExpectVersion), 0)
	case "size":
		return atLeast(c, p, int64(a.Size), 1)
	case "outcomes":
		for j, o := range a.Outcomes {
			if err := oneOf(c, index(p, j), o, pl.spec.Values["outcomes"]...); err != nil {
				return err
			}
		}
		return nil
	case "ids":
		if len(a.IDs) == 0 {
			return c.errf(p, "a batch delivery delivers at least one claimed row, got none")
		}
		return distinctIDs(c, p, a.IDs)
	}
	return c.errf(p, "Spec names an argument the validator does not know")
}

// declinedReason checks a handle's reason for a failure of the given outcome: only a failure
// the retry policy declined (fail_no_retry) has one, and it may be absent (ReasonHandlerFailed).
func declinedReason(c errCtx, p, outcome, reason string) error {
	switch {
	case reason == "":
		return nil
	case outcome != OutcomeFailNoRetry:
		return c.errf(p, "only a failure the retry policy declines (outcome %q) has a dead-letter reason; the outcome is %q", OutcomeFailNoRetry, outcome)
	}
	return text(c, p, reason)
}

func (v *validator) result(c errCtx, i int, s *Step, pl *stepPlan, name, p string) error {
	r := &s.Result
	switch name {
	case "err":
		if k := pl.spec.Err; r.Err != "" && r.Err != k {
			return c.errf(p, "must be absent or %q for %s, got %q", k, s.Op, r.Err)
		}
		return nil
	case "duplicate":
		return nil
	case "message":
		return v.message(c, i, s)
	case "affected":
		return atLeast(c, p, int64(r.Affected), 0)
	case "claimed":
		return v.claimed(c, i, s)
	case "redrives":
		return redrives(c, s)
	case "messages":
		return v.batchMessages(c, i, s)
	case "actions":
		return v.actions(c, s, pl)
	case "duplicates":
		if n := len(r.Duplicates); n != 0 && n != len(s.Args.IDs) {
			return c.errf(p, "holds %d entries for %d rows; one per row of args.ids", n, len(s.Args.IDs))
		}
		return nil
	case "effects":
		return distinctIDs(c, p, r.Effects)
	case "action":
		return v.action(c, s, pl)
	case "attempt":
		if err := atLeast(c, p, int64(r.Attempt), 0); err != nil {
			return err
		}
		if r.Attempt != 0 && s.Args.Outcome == OutcomeOK {
			return c.errf(p, "must be 0 when the handler succeeded (no retry decision was made), got %d", r.Attempt)
		}
		if r.Attempt != 0 && r.Action == ActionIdle {
			return c.errf(p, "must be 0 for an idle worker, got %d", r.Attempt)
		}
		if r.Attempt != 0 && r.Action == ActionCommitFailed {
			return c.errf(p, "must be 0 for a handle whose commit failed (no retry decision was committed), got %d", r.Attempt)
		}
		return nil
	case "version":
		if err := atLeast(c, p, int64(r.Version), 0); err != nil {
			return err
		}
		if (r.Err == "") != (r.Version > 0) {
			return c.errf(p, "must be >= 1 exactly when %s succeeds, got %d with err %q", s.Op, r.Version, r.Err)
		}
		return nil
	}
	return c.errf(p, "Spec names a result the validator does not know")
}

func (v *validator) message(c errCtx, i int, s *Step) error {
	m := s.Result.Message
	if m == nil {
		return nil
	}
	if err := nonEmpty(c, "result.message.id", m.ID); err != nil {
		return err
	}
	if err := atLeast(c, "result.message.attempts", int64(m.Attempts), 0); err != nil {
		return err
	}
	if err := atLeast(c, "result.message.token", int64(m.Token), 0); err != nil {
		return err
	}
	if s.Op == OpLease || s.Op == OpConsumerFetch && s.Args.Profile == ProfileLeased {
		if m.Token < 1 {
			return c.errf("result.message.token", "a lease issues a token, so it must be >= 1, got %d", m.Token)
		}
		if m.Attempts < 1 {
			return c.errf("result.message.attempts", "a lease counts the delivery, so it must be >= 1, got %d", m.Attempts)
		}
		return v.bind(c, leaseTokens, m.Token, i, "result.message.token", "lease")
	}
	if m.Token != 0 {
		what := string(s.Op)
		if s.Op == OpConsumerFetch {
			what = "a leaseless consumer_fetch"
		}
		return c.errf("result.message.token", "%s takes no lease, so it must be absent, got %d", what, m.Token)
	}
	return nil
}

// shortBatch is the longest claim whose ids are checked for a repeat pairwise.
const shortBatch = 16

func (v *validator) claimed(c errCtx, i int, s *Step) error {
	rows := s.Result.Claimed
	if len(rows) > s.Args.Limit {
		return c.errf("result.claimed", "%d rows exceed args.limit %d", len(rows), s.Args.Limit)
	}
	// A log holds a claim every few events: the paths are built for an error only, and a short
	// batch looks for a repeated id among the rows before it, without a set.
	field := func(j int, name string) string { return index("result.claimed", j) + "." + name }
	var seen map[string]bool
	if len(rows) > shortBatch {
		seen = make(map[string]bool, len(rows))
	}
	for j, r := range rows {
		if !isNonEmptyText(r.ID) {
			return nonEmpty(c, field(j, "id"), r.ID)
		}
		var twice bool
		if seen == nil {
			twice = slices.ContainsFunc(rows[:j], func(b Claimed) bool { return b.ID == r.ID })
		} else {
			twice, seen[r.ID] = seen[r.ID], true
		}
		if twice {
			return c.errf(field(j, "id"), "%q is claimed twice in one batch", r.ID)
		}
		if r.DeliveryAttempts < 1 {
			return atLeast(c, field(j, "delivery_attempts"), int64(r.DeliveryAttempts), 1)
		}
		if r.Token < 1 {
			return atLeast(c, field(j, "token"), int64(r.Token), 1)
		}
		if r.Token != rows[0].Token {
			return c.errf(field(j, "token"), "a claim issues one token for its whole batch: want %d (as claimed[0]), got %d", rows[0].Token, r.Token)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	return v.bind(c, claimTokens, rows[0].Token, i, "result.claimed[0].token", "claim")
}

// redrives checks a list_redrives result: well-formed records of args.id (when given), none
// later than the step, oldest first.
func redrives(c errCtx, s *Step) error {
	for j, r := range s.Result.Redrives {
		p := index("result.redrives", j)
		if err := nonEmpty(c, p+".id", r.ID); err != nil {
			return err
		}
		if s.Args.ID != "" && r.ID != s.Args.ID {
			return c.errf(p+".id", "a list_redrives of %q lists only its records, got %q", s.Args.ID, r.ID)
		}
		if err := oneOf(c, p+".kind", r.Kind, RedriveKinds...); err != nil {
			return err
		}
		if err := nonEmpty(c, p+".mailbox", r.Mailbox); err != nil {
			return err
		}
		if err := atLeast(c, p+".attempts", int64(r.Attempts), 0); err != nil {
			return err
		}
		if err := nonEmpty(c, p+".reason", r.Reason); err != nil {
			return err
		}
		if err := atLeast(c, p+".at", r.At, 0); err != nil {
			return err
		}
		if r.At > s.At {
			return c.errf(p+".at", "%d is after the step's own time %d; a record lists a redrive that happened", r.At, s.At)
		}
		if j > 0 && r.At < s.Result.Redrives[j-1].At {
			return c.errf(p+".at", "%d is before the record above it (%d); records are listed oldest first", r.At, s.Result.Redrives[j-1].At)
		}
	}
	return nil
}

// distinctIDs checks a list of message or row ids: none empty, none twice.
func distinctIDs(c errCtx, p string, ids []string) error {
	for j, id := range ids {
		if err := nonEmpty(c, index(p, j), id); err != nil {
			return err
		}
		for _, prev := range ids[:j] {
			if prev == id {
				return c.errf(index(p, j), "%q is listed twice; a batch holds each message or row once", id)
			}
		}
	}
	return nil
}

// batchMessages checks a consumer_fetch_batch's messages: at most size, each as consumer_fetch's
// message on the same path, each once; on the leased path every message has its own lease,
// whose token is a fresh symbol.
func (v *validator) batchMessages(c errCtx, i int, s *Step) error {
	ms := s.Result.Messages
	if len(ms) > s.Args.Size {
		return c.errf("result.messages", "%d messages exceed args.size %d", len(ms), s.Args.Size)
	}
	for j := range ms {
		m := &ms[j]
		p := index("result.messages", j)
		if err := nonEmpty(c, p+".id", m.ID); err != nil {
			return err
		}
		for _, prev := range ms[:j] {
			if prev.ID == m.ID {
				return c.errf(p+".id", "%q is fetched twice in one batch", m.ID)
			}
		}
		if err := atLeast(c, p+".attempts", int64(m.Attempts), 0); err != nil {
			return err
		}
		if s.Args.Profile != ProfileLeased {
			if m.Token != 0 {
				return c.errf(p+".token", "a leaseless consumer_fetch_batch takes no lease, so it must be absent, got %d", m.Token)
			}
			continue
		}
		if m.Token < 1 {
			return c.errf(p+".token", "a lease issues a token, so it must be >= 1, got %d", m.Token)
		}
		if m.Attempts < 1 {
			return c.errf(p+".attempts", "a lease counts the delivery, so it must be >= 1, got %d", m.Attempts)
		}
		if err := v.bind(c, leaseTokens, m.Token, i, p+".token", "lease"); err != nil {
			return err
		}
	}
	return nil
}

// actions checks the per-message (or per-row) actions of a batch step: one per outcome (a
// consumer_handle_batch of a worker that holds no batch has none) or one per delivered row, in
// the op's vocabulary. A correct consumer never acknowledges a failed handler's message, and a
// failed commit fails every message of the batch.
func (v *validator) actions(c errCtx, s *Step, pl *stepPlan) error {
	r := &s.Result
	var n int
	switch s.Op {
	case OpConsumerHandleBatch:
		n = len(s.Args.Outcomes)
	case OpPublisherDeliverBatch:
		n = len(s.Args.IDs)
	}
	if len(r.Actions) != 0 && len(r.Actions) != n {
		return c.errf("result.actions", "holds %d actions for %d %s; one each, or none", len(r.Actions), n,
			map[bool]string{true: "outcomes", false: "rows"}[s.Op == OpConsumerHandleBatch])
	}
	for j, a := range r.Actions {
		p := index("result.actions", j)
		if err := oneOf(c, p, a, pl.spec.Values["actions"]...); err != nil {
			return err
		}
		if v.variant {
			continue
		}
		failed := s.Args.Fault == FaultCommitFails
		switch s.Op {
		case OpConsumerHandleBatch:
			o := s.Args.Outcomes[j]
			switch {
			case failed && a != ActionCommitFailed:
				return c.errf(p, "a batch whose commit fails changes nothing: every action is %q, got %q", ActionCommitFailed, a)
			case !failed && a == ActionCommitFailed:
				return c.errf(p, "only a batch whose commit fails (fault %q) ends %q", FaultCommitFails, a)
			case o == OutcomeOK && (a == ActionRetried || a == ActionDeadLettered):
				return c.errf(p, "a handler that succeeded cannot end %q", a)
			case o != OutcomeOK && a == ActionAcked:
				return c.errf(p, "a handler that failed cannot end %q", a)
			case o == OutcomeFailNoRetry && a == ActionRetried:
				return c.errf(p, "a handler whose retry policy declines cannot end %q", a)
			}
		case OpPublisherDeliverBatch:
			// As a single fold delivery: an id collision ends a fault-free row dead_lettered.
			if s.Args.Fault == FaultNone && a == ActionDeadLettered {
				if j >= len(s.Result.Duplicates) || !s.Result.Duplicates[j] {
					return c.errf(index("result.duplicates", j), "a delivery with fault %q ends %q only for an id collision, whose target enqueue found the id taken (duplicate true)", s.Args.Fault, a)
				}
				continue
			}
			if want := deliveryAction(s.Args.Fault); a != ActionClaimLost && a != want {
				return c.errf(p, "a delivery with fault %q ends %q or %q, got %q", s.Args.Fault, want, ActionClaimLost, a)
			}
		}
	}
	return nil
}

func (v *validator) action(c errCtx, s *Step, pl *stepPlan) error {
	r := &s.Result
	switch s.Op {
	case OpConsumerHandle:
		if err := oneOf(c, "result.action", r.Action, pl.actions...); err != nil {
			return err
		}
		if v.variant {
			return nil
		}
		failed := s.Args.Fault == FaultCommitFails
		switch {
		case failed && r.Action != ActionCommitFailed && r.Action != ActionIdle:
			return c.errf("result.action", "a handle whose commit fails changes nothing: it ends %q (or %q for a worker that holds nothing), got %q", ActionCommitFailed, ActionIdle, r.Action)
		case !failed && r.Action == ActionCommitFailed:
			return c.errf("result.action", "only a handle whose commit fails (fault %q) ends %q", FaultCommitFails, r.Action)
		}
		if s.Args.Outcome == OutcomeOK && (r.Action == ActionRetried || r.Action == ActionDeadLettered) {
			return c.errf("result.action", "a handler that succeeded cannot end %q", r.Action)
		}
		if s.Args.Outcome != OutcomeOK && r.Action == ActionAcked {
			return c.errf("result.action", "a handler that failed cannot end %q", r.Action)
		}
		if s.Args.Outcome == OutcomeFailNoRetry && r.Action == ActionRetried {
			return c.errf("result.action", "a handler whose retry policy declines cannot end %q", r.Action)
		}
	case OpPublisherDeliver:
		if err := oneOf(c, "result.action", r.Action, pl.actions...); err != nil {
			return err
		}
		if v.variant {
			return nil
		}
		// A lost claim can end any delivery; otherwise the fault decides the action, except that
		// an id collision (the target enqueue found the id taken in another mailbox) ends a
		// fault-free delivery dead_lettered.
		want := deliveryAction(s.Args.Fault)
		if s.Args.Fault == FaultNone && r.Action == ActionDeadLettered {
			if !r.Duplicate {
				return c.errf("result.duplicate", "a delivery with fault %q ends %q only for an id collision, whose target enqueue found the id taken (duplicate true)", s.Args.Fault, r.Action)
			}
			return nil
		}
		if r.Action != ActionClaimLost && r.Action != want {
			return c.errf("result.action", "a delivery with fault %q ends %q or %q, got %q", s.Args.Fault, want, ActionClaimLost, r.Action)
		}
	}
	return nil
}

// deliveryAction is the action a delivery with fault ends in when it keeps its claim ("" for a
// fault that is not one).
func deliveryAction(fault string) string {
	switch fault {
	case FaultNone:
		return ActionDelivered
	case FaultCommitFails:
		return ActionCommitFailed
	case FaultCrashBetween:
		return ActionCrashed
	case FaultUndeliverable:
		return ActionDeadLettered
	}
	return ""
}

// use records that step i named symbol tok (0 names no token).
func (v *validator) use(ns, tok, i int) {
	if tok == 0 {
		return
	}
	if _, ok := v.used[ns][tok]; !ok {
		v.used[ns][tok] = i
	}
}

// bind records a symbol a result issued; every issue is a fresh token, so the symbol must not have
// been named before, not even by an argument (that argument stood for a token never issued).
func (v *validator) bind(c errCtx, ns, tok, i int, path, what string) error {
	if first, ok := v.used[ns][tok]; ok {
		return c.errf(path, "symbol %d was already used at step %d; every %s issues a fresh token", tok, first, what)
	}
	v.used[ns][tok] = i
	v.bound[ns][tok] = true
	return nil
}

func (v *validator) final(f *Snapshot) error {
	if f == nil {
		return nil
	}
	c := errCtx{file: v.file, step: -1}
	if err := checkColumns(c, f.Unknown); err != nil {
		return err
	}
	if got := Reported(f, f.Unknown); len(got) > 0 {
		return c.errf("final.unknown", "declares %s unknown, but a row states it", joinColumns(got))
	}
	for i := range f.Messages {
		r := &f.Messages[i]
		p := index("final.messages", i)
		if err := v.messageRow(c, p, r, f); err != nil {
			return err
		}
		if i > 0 {
			q := &f.Messages[i-1]
			if r.Mailbox < q.Mailbox || r.Mailbox == q.Mailbox && r.ID <= q.ID {
				return c.errf(p, "(%q, %q) does not sort after the row before it, (%q, %q); rows are ordered by mailbox, then id, without repeats (see Canonicalize)", r.Mailbox, r.ID, q.Mailbox, q.ID)
			}
		}
	}
	for i := range f.Outbox {
		r := &f.Outbox[i]
		p := index("final.outbox", i)
		if err := v.outboxRow(c, p, r, f); err != nil {
			return err
		}
		if i > 0 && r.ID <= f.Outbox[i-1].ID {
			return c.errf(p, "id %q does not sort after the row before it, %q; rows are ordered by id, without repeats (see Canonicalize)", r.ID, f.Outbox[i-1].ID)
		}
	}
	for i := range f.DeadLetters {
		r := &f.DeadLetters[i]
		p := index("final.dead_letters", i)
		if err := nonEmpty(c, p+".mailbox", r.Mailbox); err != nil {
			return err
		}
		if err := nonEmpty(c, p+".id", r.ID); err != nil {
			return err
		}
		if err := text(c, p+".key", r.Key); err != nil {
			return err
		}
		if err := text(c, p+".payload", r.Payload); err != nil {
			return err
		}
		if err := attemptsWithin(c, p, r.Attempts, r.MaxAttempts, f.unknown(ColDeadLetterMaxAttempts), v.uncapped); err != nil {
			return err
		}
		if err := nonEmpty(c, p+".reason", r.Reason); err != nil {
			return err
		}
		if err := between(c, p+".dead_at", r.DeadAt, 0, v.maxInstant); err != nil {
			return err
		}
		if i > 0 && r.ID <= f.DeadLetters[i-1].ID {
			return c.errf(p, "id %q does not sort after the row before it, %q; rows are ordered by id, without repeats (see Canonicalize)", r.ID, f.DeadLetters[i-1].ID)
		}
	}
	mailboxes := make([]string, 0, len(f.Effects))
	for mb := range f.Effects {
		mailboxes = append(mailboxes, mb)
	}
	sort.Strings(mailboxes)
	for _, mb := range mailboxes {
		p := mapKey("final.effects", mb)
		if err := nonEmpty(c, p, mb); err != nil {
			return err
		}
		ids := f.Effects[mb]
		if len(ids) == 0 {
			return c.errf(p, "empty list; a mailbox without effects is left out (Canonicalize drops it)")
		}
		for j, id := range ids {
			if err := nonEmpty(c, index(p, j), id); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkColumns checks final.unknown: columns of Unknowable, sorted, without repeats.
func checkColumns(c errCtx, cols []Column) error {
	for i, col := range cols {
		p := index("final.unknown", i)
		if !slices.Contains(Unknowable, col) {
			return c.errf(p, "%q is not a column a snapshot may declare unknown (%s)", col, joinColumns(Unknowable))
		}
		if i > 0 && col <= cols[i-1] {
			return c.errf(p, "%q does not sort after %q; the list is sorted, without repeats", col, cols[i-1])
		}
	}
	return nil
}

// attemptsWithin checks a row's attempts against its max_attempts, or only that attempts is a
// count when max_attempts is unknown.
func attemptsWithin(c errCtx, p string, attempts, maxAttempts int, maxUnknown, uncapped bool) error {
	if !maxUnknown {
		if err := atLeast(c, p+".max_attempts", int64(maxAttempts), 1); err != nil {
			return err
		}
	}
	if err := atLeast(c, p+".attempts", int64(attempts), 0); err != nil {
		return err
	}
	if !maxUnknown && !uncapped && attempts > maxAttempts {
		return c.errf(p+".attempts", "%d exceeds max_attempts %d", attempts, maxAttempts)
	}
	return nil
}

func joinColumns(cols []Column) string {
	s := make([]string, len(cols))
	for i, c := range cols {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

func (v *validator) messageRow(c errCtx, p string, r *MessageRow, f *Snapshot) error {
	if err := nonEmpty(c, p+".mailbox", r.Mailbox); err != nil {
		return err
	}
	if err := nonEmpty(c, p+".id", r.ID); err != nil {
		return err
	}
	if err := text(c, p+".key", r.Key); err != nil {
		return err
	}
	if err := text(c, p+".payload", r.Payload); err != nil {
		return err
	}
	if err := oneOf(c, p+".state", r.State, StateReady, StateAcked); err != nil {
		return err
	}
	if err := attemptsWithin(c, p, r.Attempts, r.MaxAttempts, f.unknown(ColMessageMaxAttempts), v.uncapped); err != nil {
		return err
	}
	if err := between(c, p+".available_at", r.AvailableAt, 0, v.maxInstant); err != nil {
		return err
	}
	return v.heldToken(c, p, leaseTokens, r.Token, "lease_until", r.LeaseUntil)
}

func (v *validator) outboxRow(c errCtx, p string, r *OutboxRow, f *Snapshot) error {
	if err := nonEmpty(c, p+".id", r.ID); err != nil {
		return err
	}
	if err := nonEmpty(c, p+".target", r.Target); err != nil {
		return err
	}
	if err := text(c, p+".key", r.Key); err != nil {
		return err
	}
	if err := text(c, p+".payload", r.Payload); err != nil {
		return err
	}
	if !f.unknown(ColOutboxMaxAttempts) {
		if err := atLeast(c, p+".max_attempts", int64(r.MaxAttempts), 1); err != nil {
			return err
		}
	}
	if err := oneOf(c, p+".state", r.State, StatePending, StateCompleted, StateDeadLetter); err != nil {
		return err
	}
	if err := text(c, p+".reason", r.Reason); err != nil {
		return err
	}
	if !f.unknown(ColOutboxReason) && (r.State == StateDeadLetter) != (r.Reason != "") {
		return c.errf(p+".reason", "a reason goes with state %q and only with it; got state %q, reason %q", StateDeadLetter, r.State, r.Reason)
	}
	if err := atLeast(c, p+".delivery_attempts", int64(r.DeliveryAttempts), 0); err != nil {
		return err
	}
	if err := between(c, p+".available_at", r.AvailableAt, 0, v.maxInstant); err != nil {
		return err
	}
	return v.heldToken(c, p, claimTokens, r.Token, "claim_until", r.ClaimUntil)
}

// heldToken checks a row's lease or claim: a token must be one a result issued, and the deadline
// is recorded only while a token is held, so two stores that clear a lease differently (one also
// zeroing the deadline, one not) still produce the same snapshot.
func (v *validator) heldToken(c errCtx, p string, ns, tok int, untilName string, until int64) error {
	if err := atLeast(c, p+".token", int64(tok), 0); err != nil {
		return err
	}
	if err := between(c, p+"."+untilName, until, 0, v.maxInstant); err != nil {
		return err
	}
	if tok == 0 && until != 0 {
		return c.errf(p+"."+untilName, "must be absent when the row holds no token, got %d", until)
	}
	if tok != 0 && !v.bound[ns][tok] {
		return c.errf(p+".token", "symbol %d was never issued by a step's result", tok)
	}
	return nil
}

func nonEmpty(c errCtx, path, s string) error {
	if s == "" {
		return c.errf(path, "must be non-empty")
	}
	return text(c, path, s)
}

// isNonEmptyText is the condition nonEmpty accepts, for a caller that builds its path only on
// an error.
func isNonEmptyText(s string) bool { return s != "" && utf8.ValidString(s) }

func text(c errCtx, path, s string) error {
	if !utf8.ValidString(s) {
		return c.errf(path, "must be valid UTF-8")
	}
	return nil
}

func atLeast(c errCtx, path string, x, min int64) error {
	if x < min {
		return c.errf(path, "must be >= %d, got %d", min, x)
	}
	return nil
}

// between checks min <= x <= max.
func between(c errCtx, path string, x, min, max int64) error {
	if err := atLeast(c, path, x, min); err != nil {
		return err
	}
	if x > max {
		return c.errf(path, "must be <= %d, got %d", max, x)
	}
	return nil
}

func oneOf(c errCtx, path, s string, allowed ...string) error {
	if contains(allowed, s) {
		return nil
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return c.errf(path, "must be one of %s; got %q", strings.Join(quoted, ", "), s)
}
