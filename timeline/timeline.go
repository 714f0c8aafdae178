package timeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// OutboxLane is the lane of every outbox operation.
const OutboxLane = "outbox"

// Timeline is a trace laid out for reading.
type Timeline struct {
	// Trace is the trace's name; Origin says where it came from, in one line.
	Trace  string
	Origin string
	// Target is the replay target the observed results came from ("" when the trace was not replayed).
	Target string
	// Verdict is the replay verdict in one line ("" when not replayed).
	Verdict string
	// Claim is the verdict read against what the trace claims, one line ("" when not replayed);
	// AsClaimed says whether it is what the trace claims.
	Claim     string
	AsClaimed bool
	// Variant, PredictedStep and Violates say what the trace is: the broken variant whose
	// behaviour it records ("" for the correct store), the step at which the model predicts the
	// correct store refuses the bug (-1: none), and the property the bug violates.
	Variant       string
	PredictedStep int
	Violates      string
	// BrokenCheck and Code say what the variant gets wrong and where its code lives (see Input).
	BrokenCheck string
	Code        []string
	// ExpectedSide and ObservedSide say, in a few words, whose behaviour each side of a row shows:
	// the expected side is what the trace records (a counterexample's broken variant, else the
	// correct store), the observed side is what the replay target did.
	ExpectedSide, ObservedSide string
	// Lanes are the mailboxes in order of first appearance, then one lane per consumer worker
	// ("worker N") and per publisher ("publisher N"), then OutboxLane when the trace uses it.
	Lanes []string
	// LaneKinds maps each lane to its kind (LaneMailbox, LaneWorker, LanePublisher, LaneOutbox).
	LaneKinds map[string]string
	// Columns are the lanes a view draws: the lanes a shown step takes part in, in lane order,
	// then OtherLanes standing for Others, the lanes no shown step takes part in (when any).
	Columns []string
	Others  []string
	// Rows are the steps shown, in order; a run of steps that do not lead to the focus is collapsed
	// into one row with Gap set (see [Shown]).
	Rows []Row
	// Steps is the number of steps in the trace; Collapsed how many of them no row shows.
	Steps, Collapsed int
	// FinalDiff compares the final state the trace expects with the target's state where the
	// replay ended: "- row" expected only, "+ row" observed only; FinalNote says which states
	// were compared. Both empty when there is nothing to compare.
	FinalDiff []string
	FinalNote string
	// Divergence is the diverging step, nil on a match or when not replayed.
	Divergence *Divergence
	// Intervals draws an observed run as intervals per caller; nil for other traces.
	Intervals *Intervals
}

// OtherLanes is the column that stands for every lane no shown step takes part in.
const OtherLanes = "other lanes"

// Row is one step.
type Row struct {
	Index int
	At    int64
	Op    traces.Op
	// Lanes are the lanes the step touches; all lanes for crash and advance_clock.
	Lanes []string
	Args  string
	// Handles names the message a consumer_handle works on, as "o1 (lease token 2)"; "" for
	// other steps and for a handle whose worker holds nothing.
	Handles string
	// Causal is true for a step that leads to the focus (see [Causal]); such a step is never
	// collapsed.
	Causal bool
	// Expected is the result the trace records; Observed the target's result when the step ran
	// ("" when it did not run or was not replayed).
	Expected string
	Observed string
	// State is "match", "diverged", "not-run" (after a divergence) or "" (not replayed).
	State string
	// ExpectedState and ObservedState hold each lane's state after the step on one side: the
	// involved rows of a mailbox or of the outbox, what a worker holds, what a publisher did. A
	// side is drawn from one source only: the expected side from the trace's results and the
	// states of the target the trace claims to match, the observed side from the replay target's
	// results and states. Either is nil when that side is unknown (not replayed, not run).
	ExpectedState, ObservedState map[string][]string
	// IDs are the messages and outbox rows the step names, returns or handles.
	IDs []string
	// Gap, when > 0, makes this row a placeholder for Gap collapsed steps, Index to Index+Gap-1.
	Gap int

	everyLane bool // the step acts on, or could not be placed in, one lane: it is drawn in every lane
}

// GapText describes a gap row: how many steps it stands for, which, and how they went.
func (r Row) GapText() string {
	what := map[string]string{"match": "matched", "not-run": "did not run", "": "not replayed"}[r.State]
	if r.Gap == 1 {
		return fmt.Sprintf("1 step (#%d, %s)", r.Index, what)
	}
	return fmt.Sprintf("%d steps (#%d–#%d, %s)", r.Gap, r.Index, r.Index+r.Gap-1, what)
}

// Side is the side of a row a view draws.
type Side int

const (
	// SideObserved: what the replay target did.
	SideObserved Side = iota
	// SideExpected: what the trace records.
	SideExpected
)

// Result is the row's result on side s ("" when that side did not run the step).
func (r Row) Result(s Side) string {
	if s == SideExpected {
		return r.Expected
	}
	return r.Observed
}

// LaneState is the row's lane states on side s.
func (r Row) LaneState(s Side) map[string][]string {
	if s == SideExpected {
		return r.ExpectedState
	}
	return r.ObservedState
}

// DefaultSide is the side a single-side view draws of r: the observed one where the step ran, the
// expected one where it did not (after a divergence, or without a replay).
func (r Row) DefaultSide() Side {
	if r.State == "match" || r.State == "diverged" {
		return SideObserved
	}
	return SideExpected
}

// Lane kinds, in the order lanes appear.
const (
	LaneMailbox   = "mailbox"
	LaneWorker    = "worker"
	LanePublisher = "publisher"
	LaneOutbox    = "outbox"
)

// Divergence is the first disagreement between the trace and the target.
type Divergence struct {
	// Step is the diverging step's index, replay.FinalStep for the final snapshot.
	Step     int
	Reason   string
	Expected string
	Observed string
	Diff     string
	// Rows are the target's rows involved, at the divergence; ExpectedRows the same rows as the
	// expected side left them (nil when unknown).
	Rows         []string
	ExpectedRows []string
}

// Input is what Build lays out. Verdict and After are optional.
type Input struct {
	Trace *traces.Trace
	// Target names the replay target the verdict comes from.
	Target  string
	Verdict *replay.Verdict
	// Judgement is the verdict read against what the trace claims (nil when not replayed).
	Judgement *report.Judgement
	// After holds, by step index, the target's state after that step (tokens as symbols). Steps
	// without an entry show no rows.
	After map[int]traces.Snapshot
	// ExpectedTarget names the target the trace claims to match (see [ExpectedTarget]), and
	// ExpectedAfter its state after each step, as After does for the replay target. Both
	// optional: without them the expected side shows the results and the actors only.
	ExpectedTarget string
	ExpectedAfter  map[int]traces.Snapshot
	// BrokenCheck says in words what the trace's variant gets wrong, and Code where that code
	// lives, one "file:line symbol (what)" per entry; both optional.
	BrokenCheck string
	Code        []string
	// Window is how many steps to show on each side of the focus besides the causal steps (see
	// [Shown]). 0 means DefaultWindow; a negative Window shows every step.
	Window int

	_ struct{}
}

// ExpectedTarget is the target whose behaviour t records, so a replay against it matches: the
// broken variant a counterexample names, else the reference model.
func ExpectedTarget(t *traces.Trace) string {
	if t.Expect.Variant != "" {
		return t.Expect.Variant
	}
	return targets.Model
}

// Build lays out a trace. It never fails: a step it cannot place in a lane goes to every lane.
func Build(in Input) Timeline {
	t := in.Trace
	tl := Timeline{Trace: t.Name, Origin: describeOrigin(t.Origin), Target: in.Target,
		Variant: t.Expect.Variant, PredictedStep: t.Expect.DivergesAt, Violates: t.Expect.Violates,
		BrokenCheck: in.BrokenCheck, Code: in.Code}
	tl.ExpectedSide, tl.ObservedSide = sideNames(t, in.Target, in.ExpectedTarget)
	if in.Judgement != nil {
		tl.Claim, tl.AsClaimed = in.Judgement.Summary, in.Judgement.AsClaimed
	}
	lanes := newLaneMap(t)
	if len(lanes.order) == 0 {
		lanes.order = []string{"store"}
	}
	tl.Lanes, tl.LaneKinds = lanes.all()
	tl.Steps = len(t.Steps)
	show := Shown(t, in.Verdict, in.Window)
	causal := map[int]bool{}
	for _, i := range causalSteps(t, in.Verdict) {
		causal[i] = true
	}
	handled := HandledBy(t)
	var fetchedBy = map[int]string{}
	for i, s := range t.Steps {
		if !show(i) {
			if n := len(tl.Rows); n > 0 && tl.Rows[n-1].Gap > 0 && tl.Rows[n-1].Index+tl.Rows[n-1].Gap == i {
				tl.Rows[n-1].Gap++
			} else {
				tl.Rows = append(tl.Rows, Row{Index: i, At: s.At, Gap: 1})
			}
			tl.Collapsed++
		} else {
			row := Row{Index: i, At: s.At, Op: s.Op, Args: tracefmt.Args(s.Op, s.Args), Expected: tracefmt.Result(s.Op, s.Result), Causal: causal[i]}
			h, isHandle := handled[i]
			refs, _ := stepRefs(s, h, isHandle)
			slices.Sort(refs)
			row.IDs = slices.Compact(refs)
			if isHandle {
				row.Handles = h.ID
				if h.Token != 0 {
					row.Handles += fmt.Sprintf(" (lease token %d)", h.Token)
				}
			}
			row.Lanes = lanes.of(s, fetchedBy)
			if len(row.Lanes) == 0 || touchesAll(s.Op) {
				row.Lanes = slices.Clone(lanes.order)
				row.everyLane = true
			} else if slices.Equal(row.Lanes, lanes.order) && len(lanes.order) > 1 {
				row.everyLane = true
			}
			ids := involvedIDs(s, fetchedBy)
			if snap, ok := in.After[i]; ok {
				row.ObservedState = laneRows(snap, ids, lanes)
				noteMissingDelivery(row.ObservedState, s, lanes)
			}
			if snap, ok := in.ExpectedAfter[i]; ok {
				row.ExpectedState = laneRows(snap, ids, lanes)
				noteMissingDelivery(row.ExpectedState, s, lanes)
			}
			tl.Rows = append(tl.Rows, row)
		}
		switch s.Op {
		case traces.OpConsumerFetch:
			if s.Result.Message != nil {
				fetchedBy[s.Args.Worker] = s.Result.Message.ID
			} else {
				delete(fetchedBy, s.Args.Worker)
			}
		case traces.OpConsumerHandle:
			delete(fetchedBy, s.Args.Worker)
		case traces.OpCrash:
			clear(fetchedBy)
		}
	}
	var observed []*traces.Result // by step: the target's result; nil where it did not run
	if in.Verdict != nil {
		observed = applyVerdict(&tl, t, in.Verdict, in.ExpectedAfter)
	}
	addActorStates(&tl, t, SideExpected, func(i int) *traces.Result { return &t.Steps[i].Result })
	if in.Verdict != nil {
		addActorStates(&tl, t, SideObserved, func(i int) *traces.Result { return observed[i] })
	}
	tl.Columns, tl.Others = columns(tl)
	finalDiff(&tl, t, in.Verdict)
	if iv, ok := BuildIntervals(tl, t); ok {
		tl.Intervals = &iv
	}
	return tl
}

// noteMissingDelivery says so in the target mailbox's lane when a delivery left no message there:
// an absent row shows nothing otherwise, and an absent message is what a lost delivery looks like.
func noteMissingDelivery(state map[string][]string, s traces.Step, lanes *laneMap) {
	if s.Op != traces.OpPublisherDeliver {
		return
	}
	if mb := lanes.targetOf[s.Args.ID]; mb != "" && len(state[mb]) == 0 {
		state[mb] = []string{fmt.Sprintf("no message %s in %s", s.Args.ID, mb)}
	}
}

// sideNames says whose behaviour each side shows.
func sideNames(t *traces.Trace, target, expectedTarget string) (expected, observed string) {
	if t.Expect.Variant != "" {
		expected = fmt.Sprintf("what the broken variant %q did, as the trace records it", t.Expect.Variant)
	} else {
		expected = "what the correct store does, as the trace records it"
	}
	if expectedTarget != "" {
		expected += fmt.Sprintf(" (rows from a replay against %s)", expectedTarget)
	}
	switch {
	case target == "":
	case targets.IsCorrect(target):
		observed = fmt.Sprintf("what the correct %s did (target %s)", correctNoun(target), target)
	default:
		observed = fmt.Sprintf("what the broken variant %q did (target %s)", target, target)
	}
	return expected, observed
}

func correctNoun(target string) string {
	if target == targets.Model {
		return "reference model"
	}
	return "store"
}

// columns picks the lanes a view draws: every lane a shown step takes part in on its own (a step
// drawn in every lane does not count), the rest folded into OtherLanes.
func columns(tl Timeline) (cols, others []string) {
	part := map[string]bool{}
	for _, r := range tl.Rows {
		if r.Gap > 0 || r.everyLane {
			continue
		}
		for _, l := range r.Lanes {
			part[l] = true
		}
	}
	for _, l := range tl.Lanes {
		if part[l] {
			cols = append(cols, l)
		} else {
			others = append(others, l)
		}
	}
	switch {
	case len(cols) == 0:
		return slices.Clone(tl.Lanes), nil
	case len(others) == 1:
		return slices.Clone(tl.Lanes), nil
	case len(others) > 0:
		cols = append(cols, OtherLanes)
	}
	return cols, others
}

// DefaultWindow is how many steps a timeline shows on each side of its focus, besides the steps
// that lead to it.
const DefaultWindow = 3

// shortTrace is the longest trace a view shows whole: collapsing a few steps of a short trace
// saves less than it hides.
const shortTrace = 30

// minGap is the shortest run of steps a view collapses: a gap row for fewer steps hides more than
// it saves.
const minGap = 3

// Focus is the step a view of t centres on: the divergence when v has one, else the step at which
// t predicts the correct store refuses the bug, else the last step.
func Focus(t *traces.Trace, v *replay.Verdict) int {
	switch {
	case v != nil && v.Outcome != replay.Match && v.Step != replay.FinalStep:
		return v.Step
	case t.Expect.DivergesAt >= 0:
		return t.Expect.DivergesAt
	}
	return len(t.Steps) - 1
}

// causalSteps are the steps that lead to the focus of a view of t (see [Causal]): besides what the
// focus step refers to, the ids of an unexpected observed result, or of the rows a final snapshot
// differs in.
func causalSteps(t *traces.Trace, v *replay.Verdict) []int {
	if len(t.Steps) == 0 {
		return nil
	}
	var extra []string
	if v != nil && v.Outcome == replay.Diverged {
		if v.Step == replay.FinalStep {
			extra = differingIDs(t.Final, v.End)
		} else if v.Observed != nil {
			if m := v.Observed.Message; m != nil {
				extra = append(extra, m.ID)
			}
			for _, c := range v.Observed.Claimed {
				extra = append(extra, c.ID)
			}
		}
	}
	return Causal(t, Focus(t, v), extra...)
}

// differingIDs lists the ids of the rows two snapshots hold differently (a row one of them lacks
// included).
func differingIDs(a, b *traces.Snapshot) []string {
	if a == nil || b == nil {
		return nil
	}
	render := func(s *traces.Snapshot) map[string]string {
		out := map[string]string{}
		for _, r := range s.Messages {
			out["m:"+r.ID] = messageRow(r)
		}
		for _, r := range s.Outbox {
			out["o:"+r.ID] = outboxRow(r)
		}
		for _, r := range s.DeadLetters {
			out["d:"+r.ID] = deadRow(r)
		}
		for mb, ids := range s.Effects {
			for _, id := range ids {
				out["e:"+mb+":"+id] = id
			}
		}
		return out
	}
	ra, rb := render(a), render(b)
	seen := map[string]bool{}
	var ids []string
	for _, m := range []map[string]string{ra, rb} {
		for k := range m {
			if ra[k] != rb[k] {
				id := k[strings.LastIndex(k, ":")+1:]
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// Shown reports which steps a view of t, replayed with verdict v (nil when not replayed), shows:
// every step that leads to the focus ([Causal]), window steps either side of the focus, and the
// last step; a run of fewer than three other steps is shown rather than collapsed. A trace of at
// most 30 steps, or a negative window, shows every step; window 0 means DefaultWindow.
func Shown(t *traces.Trace, v *replay.Verdict, window int) func(int) bool {
	n := len(t.Steps)
	if window < 0 || n <= shortTrace {
		return func(int) bool { return true }
	}
	if window == 0 {
		window = DefaultWindow
	}
	focus := Focus(t, v)
	show := make([]bool, n)
	for _, i := range causalSteps(t, v) {
		show[i] = true
	}
	for i := max(0, focus-window); i <= min(n-1, focus+window); i++ {
		show[i] = true
	}
	if n > 0 {
		show[n-1] = true
	}
	for i := 0; i < n; {
		if show[i] {
			i++
			continue
		}
		j := i
		for j < n && !show[j] {
			j++
		}
		if j-i < minGap {
			for k := i; k < j; k++ {
				show[k] = true
			}
		}
		i = j
	}
	return func(i int) bool { return i >= 0 && i < n && show[i] }
}

// addActorStates fills the worker and publisher lanes of one side: what each worker holds after
// each shown step and what each publisher's delivery did, from that side's results (result(i) is
// nil for a step that side did not run).
func addActorStates(tl *Timeline, t *traces.Trace, side Side, result func(int) *traces.Result) {
	holds := map[int]string{}
	shown := map[int]*Row{}
	for i := range tl.Rows {
		if tl.Rows[i].Gap == 0 {
			shown[tl.Rows[i].Index] = &tl.Rows[i]
		}
	}
	for i, s := range t.Steps {
		res := result(i)
		if res == nil {
			break
		}
		switch s.Op {
		case traces.OpConsumerFetch:
			if res.Message != nil {
				holds[s.Args.Worker] = fmt.Sprintf("holds %s (attempts %d)", res.Message.ID, res.Message.Attempts)
			} else {
				holds[s.Args.Worker] = "idle: nothing to fetch"
			}
		case traces.OpConsumerHandle:
			holds[s.Args.Worker] = fmt.Sprintf("idle after %s", orNone(res.Action))
		case traces.OpCrash:
			for w := range holds {
				holds[w] = "idle: crashed, fetch forgotten"
			}
		}
		r := shown[i]
		if r == nil {
			continue
		}
		state := &r.ObservedState
		if side == SideExpected {
			state = &r.ExpectedState
		}
		if *state == nil {
			*state = map[string][]string{}
		}
		switch s.Op {
		case traces.OpConsumerFetch, traces.OpConsumerHandle:
			(*state)[workerLane(s.Args.Worker)] = []string{holds[s.Args.Worker]}
		case traces.OpPublisherDeliver:
			(*state)[publisherLane(s.Args.Publisher)] = []string{fmt.Sprintf("%s: %s", s.Args.ID, tracefmt.Result(s.Op, *res))}
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// finalDiffLines caps the final-state diff a view shows.
const finalDiffLines = 100

// finalDiff compares the final state the trace expects with where the target ended.
func finalDiff(tl *Timeline, t *traces.Trace, v *replay.Verdict) {
	if t.Final == nil || v == nil || v.End == nil {
		return
	}
	want, got := rowsOf(*t.Final, nil), rowsOf(*v.End, nil)
	tl.FinalDiff = tracefmt.DiffFields(want, got)
	if n := len(tl.FinalDiff); n > finalDiffLines {
		tl.FinalDiff = append(tl.FinalDiff[:finalDiffLines:finalDiffLines],
			fmt.Sprintf("… %d more differing rows (pconform replay --json lists the whole diff)", n-finalDiffLines))
	}
	switch {
	case v.Outcome == replay.Diverged && v.Step != replay.FinalStep:
		tl.FinalNote = fmt.Sprintf("the final state the trace expects against the target's state where the replay stopped, after step #%d", v.Step)
	default:
		tl.FinalNote = "the final state the trace expects against the target's final state"
	}
}

// HeaderLine is one labelled line of what a trace is.
type HeaderLine struct{ Label, Text string }

// Header says what the trace is, for the top of every view: the violated property first, then
// the variant and the predicted step (a trace of the correct store says only that).
func (tl Timeline) Header() []HeaderLine {
	if tl.Variant == "" {
		return []HeaderLine{{"records", "the correct store's behaviour (no known bug)"}}
	}
	var h []HeaderLine
	if tl.Violates != "" {
		h = append(h, HeaderLine{"violated property", report.PlainProperty(tl.Violates)})
	}
	if tl.BrokenCheck != "" {
		h = append(h, HeaderLine{"broken check", tl.BrokenCheck})
	}
	for _, c := range tl.Code {
		h = append(h, HeaderLine{"code", c})
	}
	h = append(h, HeaderLine{"records", fmt.Sprintf("the behaviour of the broken variant %q, bug included", tl.Variant)})
	if tl.PredictedStep >= 0 {
		h = append(h, HeaderLine{"predicted", fmt.Sprintf("the correct store refuses the bug at step #%d", tl.PredictedStep)})
	} else {
		h = append(h, HeaderLine{"predicted", "the correct store refuses the bug by the final snapshot"})
	}
	return h
}

// applyVerdict marks each row with how its step went and returns, by step, the target's result
// (nil for a step that did not run).
func applyVerdict(tl *Timeline, t *traces.Trace, v *replay.Verdict, expectedAfter map[int]traces.Snapshot) []*traces.Result {
	tl.Verdict = v.String()
	ran := len(t.Steps)
	if v.Outcome != replay.Match && v.Step != replay.FinalStep {
		ran = v.Step
	}
	observed := make([]*traces.Result, len(t.Steps))
	for i := 0; i < ran && i < len(t.Steps); i++ {
		observed[i] = &t.Steps[i].Result
	}
	if v.Outcome == replay.Diverged && v.Step != replay.FinalStep && v.Observed != nil && v.Step < len(t.Steps) {
		observed[v.Step] = v.Observed
	}
	for k := range tl.Rows {
		r := &tl.Rows[k]
		i := r.Index
		switch {
		case r.Gap > 0 && i+r.Gap <= ran:
			r.State = "match"
		case r.Gap > 0:
			r.State = "not-run"
		case i < ran:
			r.State = "match"
			r.Observed = r.Expected
		case i == ran && v.Outcome == replay.Diverged:
			r.State = "diverged"
			if v.Observed != nil {
				r.Observed = tracefmt.Result(t.Steps[i].Op, *v.Observed)
			}
		default:
			r.State = "not-run"
			r.ObservedState = nil
		}
	}
	if v.Outcome != replay.Diverged {
		return observed
	}
	d := &Divergence{Step: v.Step, Reason: v.Reason, Diff: v.Diff}
	if v.Step != replay.FinalStep {
		if v.Expected != nil {
			d.Expected = tracefmt.Result(v.Op, *v.Expected)
		}
		if v.Observed != nil {
			d.Observed = tracefmt.Result(v.Op, *v.Observed)
		}
		d.Rows = rowsOf(v.Rows, nil)
		if snap, ok := expectedAfter[v.Step]; ok {
			d.ExpectedRows = rowsOf(snap, rowIDs(v.Rows))
		}
	} else {
		d.Expected, d.Observed = "final snapshot as the trace records it", "final snapshot of the target"
	}
	tl.Divergence = d
	return observed
}

// rowIDs are the ids of a snapshot's rows.
func rowIDs(s traces.Snapshot) map[string]bool {
	ids := map[string]bool{}
	for _, r := range s.Messages {
		ids[r.ID] = true
	}
	for _, r := range s.Outbox {
		ids[r.ID] = true
	}
	for _, r := range s.DeadLetters {
		ids[r.ID] = true
	}
	for _, l := range s.Effects {
		for _, id := range l {
			ids[id] = true
		}
	}
	return ids
}

func describeOrigin(o traces.Origin) string {
	parts := []string{o.Kind}
	if o.TestCase != "" {
		parts = append(parts, "test "+o.TestCase)
	}
	if o.Seed != 0 {
		parts = append(parts, fmt.Sprintf("seed %d", o.Seed))
	}
	if o.Kind == "p-checker" {
		parts = append(parts, fmt.Sprintf("schedule %d", o.Schedule))
	}
	return strings.Join(parts, ", ")
}

func workerLane(w int) string    { return fmt.Sprintf("worker %d", w) }
func publisherLane(p int) string { return fmt.Sprintf("publisher %d", p) }

// laneMap knows which mailbox each message id and outbox row belongs to.
type laneMap struct {
	order      []string // mailboxes, then the outbox
	workers    []int
	publishers []int
	mailboxOf  map[string]string // message id -> mailbox
	targetOf   map[string]string // outbox id -> target mailbox
}

func newLaneMap(t *traces.Trace) *laneMap {
	m := &laneMap{mailboxOf: map[string]string{}, targetOf: map[string]string{}}
	seen := map[string]bool{}
	add := func(l string) {
		if l != "" && !seen[l] {
			seen[l] = true
			m.order = append(m.order, l)
		}
	}
	usesOutbox := false
	for _, s := range t.Steps {
		switch s.Op {
		case traces.OpEnqueue:
			if _, ok := m.mailboxOf[s.Args.ID]; !ok {
				m.mailboxOf[s.Args.ID] = s.Args.Mailbox
			}
		case traces.OpOutboxEnqueue:
			if _, ok := m.targetOf[s.Args.ID]; !ok {
				m.targetOf[s.Args.ID] = s.Args.Target
			}
			if _, ok := m.mailboxOf[s.Args.ID]; !ok {
				m.mailboxOf[s.Args.ID] = s.Args.Target
			}
			add(s.Args.Target)
		}
		add(s.Args.Mailbox)
		if strings.HasPrefix(string(s.Op), "outbox_") || s.Op == traces.OpPublisherDeliver {
			usesOutbox = true
		}
		if (s.Op == traces.OpConsumerFetch || s.Op == traces.OpConsumerHandle) && !slices.Contains(m.workers, s.Args.Worker) {
			m.workers = append(m.workers, s.Args.Worker)
		}
		if s.Op == traces.OpPublisherDeliver && !slices.Contains(m.publishers, s.Args.Publisher) {
			m.publishers = append(m.publishers, s.Args.Publisher)
		}
	}
	if t.Final != nil {
		for _, r := range t.Final.Messages {
			add(r.Mailbox)
		}
	}
	if usesOutbox {
		m.order = append(m.order, OutboxLane)
	}
	return m
}

// all lists every lane in display order, with its kind: mailboxes, workers, publishers, outbox.
func (m *laneMap) all() ([]string, map[string]string) {
	kinds := map[string]string{}
	var lanes []string
	for _, l := range m.order {
		if l != OutboxLane {
			lanes = append(lanes, l)
			kinds[l] = LaneMailbox
		}
	}
	ws, ps := slices.Sorted(slices.Values(m.workers)), slices.Sorted(slices.Values(m.publishers))
	for _, w := range ws {
		lanes = append(lanes, workerLane(w))
		kinds[workerLane(w)] = LaneWorker
	}
	for _, p := range ps {
		lanes = append(lanes, publisherLane(p))
		kinds[publisherLane(p)] = LanePublisher
	}
	if slices.Contains(m.order, OutboxLane) {
		lanes = append(lanes, OutboxLane)
		kinds[OutboxLane] = LaneOutbox
	}
	return lanes, kinds
}

func (m *laneMap) of(s traces.Step, fetchedBy map[int]string) []string {
	switch {
	case s.Op == traces.OpCrash || s.Op == traces.OpAdvanceClock || s.Op == traces.OpExpire:
		return slices.Clone(m.order)
	case s.Op == traces.OpPublisherDeliver:
		return compact(publisherLane(s.Args.Publisher), m.targetOf[s.Args.ID], OutboxLane)
	case s.Op == traces.OpConsumerFetch || s.Op == traces.OpConsumerHandle:
		if id, ok := fetchedBy[s.Args.Worker]; ok && s.Op == traces.OpConsumerHandle {
			if mb, ok := m.mailboxOf[id]; ok {
				return compact(workerLane(s.Args.Worker), mb)
			}
		}
		return compact(workerLane(s.Args.Worker), s.Args.Mailbox)
	case strings.HasPrefix(string(s.Op), "outbox_"):
		return []string{OutboxLane}
	case s.Args.Mailbox != "":
		return []string{s.Args.Mailbox}
	case s.Args.ID != "":
		if mb, ok := m.mailboxOf[s.Args.ID]; ok {
			return []string{mb}
		}
	}
	if id, ok := fetchedBy[s.Args.Worker]; ok {
		if mb, ok := m.mailboxOf[id]; ok {
			return []string{mb}
		}
	}
	return slices.Clone(m.order)
}

func compact(lanes ...string) []string {
	var out []string
	for _, l := range lanes {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// involvedIDs are the message and outbox ids a step names or returns; nil means "all rows".
func involvedIDs(s traces.Step, fetchedBy map[int]string) map[string]bool {
	ids := map[string]bool{}
	if s.Args.ID != "" {
		ids[s.Args.ID] = true
	}
	if s.Result.Message != nil {
		ids[s.Result.Message.ID] = true
	}
	for _, c := range s.Result.Claimed {
		ids[c.ID] = true
	}
	if s.Op == traces.OpConsumerHandle {
		if id, ok := fetchedBy[s.Args.Worker]; ok {
			ids[id] = true
		}
	}
	if s.Op == traces.OpExpire {
		return nil
	}
	return ids
}

// laneRows renders the rows of snap whose id is in ids (every row when ids is nil), grouped by
// the lane each belongs to: a message, dead letter or effect to its mailbox, an outbox row to
// the outbox.
func laneRows(snap traces.Snapshot, ids map[string]bool, lanes *laneMap) map[string][]string {
	out := map[string][]string{}
	keep := func(id string) bool { return ids == nil || ids[id] }
	for _, r := range snap.Messages {
		if keep(r.ID) {
			out[r.Mailbox] = append(out[r.Mailbox], messageRow(r))
		}
	}
	for _, r := range snap.Outbox {
		if keep(r.ID) {
			out[OutboxLane] = append(out[OutboxLane], outboxRow(r))
		}
	}
	for _, r := range snap.DeadLetters {
		if keep(r.ID) {
			out[r.Mailbox] = append(out[r.Mailbox], deadRow(r))
		}
	}
	for _, mb := range slices.Sorted(maps.Keys(snap.Effects)) {
		for _, id := range snap.Effects[mb] {
			if keep(id) {
				out[mb] = append(out[mb], fmt.Sprintf("effects of %s include %s", mb, id))
			}
		}
	}
	return out
}

func messageRow(r traces.MessageRow) string {
	s := fmt.Sprintf("message %s in %s: %s attempts %d/%d available_at %d", r.ID, r.Mailbox, r.State, r.Attempts, r.MaxAttempts, r.AvailableAt)
	if r.Key != "" {
		s += " key " + r.Key
	}
	if r.Priority != 0 {
		s += fmt.Sprintf(" priority %d", r.Priority)
	}
	if r.Token != 0 {
		s += fmt.Sprintf(" lease token %d until %d", r.Token, r.LeaseUntil)
	}
	return s
}

func outboxRow(r traces.OutboxRow) string {
	s := fmt.Sprintf("outbox %s -> %s: %s deliveries %d available_at %d", r.ID, r.Target, r.State, r.DeliveryAttempts, r.AvailableAt)
	if r.Token != 0 {
		s += fmt.Sprintf(" claim token %d until %d", r.Token, r.ClaimUntil)
	}
	if r.Reason != "" {
		s += fmt.Sprintf(", %q", r.Reason)
	}
	return s
}

func deadRow(r traces.DeadLetterRow) string {
	s := fmt.Sprintf("dead letter %s from %s: attempts %d/%d dead_at %d", r.ID, r.Mailbox, r.Attempts, r.MaxAttempts, r.DeadAt)
	if r.Key != "" {
		s += " key " + r.Key
	}
	if r.Priority != 0 {
		s += fmt.Sprintf(" priority %d", r.Priority)
	}
	return s + fmt.Sprintf(", %q", r.Reason)
}

// rowsOf renders the rows of snap whose id is in ids (every row when ids is nil).
func rowsOf(snap traces.Snapshot, ids map[string]bool) []string {
	keep := func(id string) bool { return ids == nil || ids[id] }
	var out []string
	for _, r := range snap.Messages {
		if keep(r.ID) {
			out = append(out, messageRow(r))
		}
	}
	for _, r := range snap.Outbox {
		if keep(r.ID) {
			out = append(out, outboxRow(r))
		}
	}
	for _, r := range snap.DeadLetters {
		if keep(r.ID) {
			out = append(out, deadRow(r))
		}
	}
	for _, mb := range slices.Sorted(maps.Keys(snap.Effects)) {
		for _, id := range snap.Effects[mb] {
			if keep(id) {
				out = append(out, fmt.Sprintf("effects of %s include %s", mb, id))
			}
		}
	}
	return out
}
