package timeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"

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
	// Lanes are the mailboxes in order of first appearance, then one lane per consumer worker
	// ("worker N") and per publisher ("publisher N"), then OutboxLane when the trace uses it.
	Lanes []string
	// LaneKinds maps each lane to its kind (LaneMailbox, LaneWorker, LanePublisher, LaneOutbox).
	LaneKinds map[string]string
	// Rows are the steps shown, in order; a run of steps far from the divergence is collapsed
	// into one row with Gap set (see Input.Window).
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
}

// Row is one step.
type Row struct {
	Index int
	At    int64
	Op    traces.Op
	// Lanes are the lanes the step touches; all lanes for crash and advance_clock.
	Lanes    []string
	Args     string
	Expected string
	// Observed is the target's result when the step ran ("" when it did not run or was not replayed).
	Observed string
	// State is "match", "diverged", "not-run" (after a divergence) or "" (not replayed).
	State string
	// Touched are the rows the step involved, as they stood after it ran (empty when unknown),
	// in lane order; LaneState holds the same per lane: each lane's state after the step (the
	// involved rows of a mailbox or of the outbox, what a worker holds, what a publisher did).
	Touched   []string
	LaneState map[string][]string
	// Gap, when > 0, makes this row a placeholder for Gap collapsed steps, Index to Index+Gap-1.
	Gap int
}

// GapText describes a gap row: how many steps it stands for, which, and how they went.
func (r Row) GapText() string {
	what := map[string]string{"match": "matched", "not-run": "did not run", "": "not replayed"}[r.State]
	if r.Gap == 1 {
		return fmt.Sprintf("1 step (#%d, %s)", r.Index, what)
	}
	return fmt.Sprintf("%d steps (#%d–#%d, %s)", r.Gap, r.Index, r.Index+r.Gap-1, what)
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
	// Rows are the target's rows involved, at the divergence.
	Rows []string
}

// Input is what Build lays out. Verdict and After are optional.
type Input struct {
	Trace *traces.Trace
	// Target names the replay target the verdict comes from.
	Target  string
	Verdict *replay.Verdict
	// Judgement is the verdict read against what the trace claims (nil when not replayed).
	Judgement *replay.Judgement
	// After holds, by step index, the target's state after that step (tokens as symbols). Steps
	// without an entry show no rows.
	After map[int]traces.Snapshot
	// Window is how many steps to show on each side of the focus (the divergence, else the
	// predicted step, else the start); steps farther away collapse into gap rows. 0 means
	// DefaultWindow; a negative Window shows every step.
	Window int

	_ struct{}
}

// Build lays out a trace. It never fails: a step it cannot place in a lane goes to every lane.
func Build(in Input) Timeline {
	t := in.Trace
	tl := Timeline{Trace: t.Name, Origin: describeOrigin(t.Origin), Target: in.Target,
		Variant: t.Expect.Variant, PredictedStep: t.Expect.DivergesAt, Violates: t.Expect.Violates}
	if in.Judgement != nil {
		tl.Claim, tl.AsClaimed = in.Judgement.Summary, in.Judgement.AsClaimed
	}
	lanes := newLaneMap(t)
	if len(lanes.order) == 0 {
		lanes.order = []string{"store"}
	}
	tl.Lanes, tl.LaneKinds = lanes.all()
	tl.Steps = len(t.Steps)
	show := Visible(len(t.Steps), Focus(t, in.Verdict), in.Window)
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
			row := Row{Index: i, At: s.At, Op: s.Op, Args: replay.FormatArgs(s.Op, s.Args), Expected: replay.FormatResult(s.Op, s.Result)}
			row.Lanes = lanes.of(s, fetchedBy)
			if len(row.Lanes) == 0 {
				row.Lanes = slices.Clone(lanes.order)
			}
			if snap, ok := in.After[i]; ok {
				row.LaneState = laneRows(snap, involvedIDs(s, fetchedBy), lanes)
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
	if in.Verdict != nil {
		applyVerdict(&tl, t, in.Verdict)
	}
	addActorStates(&tl, t)
	for i := range tl.Rows {
		r := &tl.Rows[i]
		for _, l := range tl.Lanes {
			r.Touched = append(r.Touched, r.LaneState[l]...)
		}
	}
	finalDiff(&tl, t, in.Verdict)
	return tl
}

// DefaultWindow is how many steps a timeline shows on each side of its focus.
const DefaultWindow = 40

// headSteps are always shown from the start of a trace, so its setup is visible.
const headSteps = 10

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

// Visible reports which of n steps a view shows: the first steps, window steps either side of
// focus, and the last step. A negative window shows every step; 0 means DefaultWindow.
func Visible(n, focus, window int) func(int) bool {
	if window < 0 {
		return func(int) bool { return true }
	}
	if window == 0 {
		window = DefaultWindow
	}
	return func(i int) bool {
		return i < headSteps || (i >= focus-window && i <= focus+window) || i == n-1
	}
}

// addActorStates fills the worker and publisher lanes: what each worker holds after each shown
// step and what each publisher's delivery did, as the target observed it (or the trace expects
// it, when not replayed).
func addActorStates(tl *Timeline, t *traces.Trace) {
	holds := map[int]string{}
	shown := map[int]*Row{}
	for i := range tl.Rows {
		if tl.Rows[i].Gap == 0 {
			shown[tl.Rows[i].Index] = &tl.Rows[i]
		}
	}
	for i, s := range t.Steps {
		// The worker lanes follow the trace's expected results: up to the divergence they are
		// also what the target did; the diverging row shows its observed result itself.
		res := s.Result
		r := shown[i]
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
		if r == nil || r.State == "not-run" {
			continue
		}
		if r.LaneState == nil {
			r.LaneState = map[string][]string{}
		}
		switch s.Op {
		case traces.OpConsumerFetch, traces.OpConsumerHandle:
			lane := workerLane(s.Args.Worker)
			r.LaneState[lane] = []string{holds[s.Args.Worker]}
		case traces.OpPublisherDeliver:
			did := r.Observed
			if did == "" {
				did = r.Expected
			}
			r.LaneState[publisherLane(s.Args.Publisher)] = []string{fmt.Sprintf("%s: %s", s.Args.ID, did)}
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
	tl.FinalDiff = replay.DiffFields(want, got)
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
		h = append(h, HeaderLine{"violated property", tl.Violates})
	}
	h = append(h, HeaderLine{"records", fmt.Sprintf("the behaviour of the broken variant %q, bug included", tl.Variant)})
	if tl.PredictedStep >= 0 {
		h = append(h, HeaderLine{"predicted", fmt.Sprintf("the correct store refuses the bug at step #%d", tl.PredictedStep)})
	} else {
		h = append(h, HeaderLine{"predicted", "the correct store refuses the bug by the final snapshot"})
	}
	return h
}

func applyVerdict(tl *Timeline, t *traces.Trace, v *replay.Verdict) {
	tl.Verdict = v.String()
	ran := len(t.Steps)
	if v.Outcome != replay.Match && v.Step != replay.FinalStep {
		ran = v.Step
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
				r.Observed = replay.FormatResult(t.Steps[i].Op, *v.Observed)
			}
		default:
			r.State = "not-run"
		}
	}
	if v.Outcome != replay.Diverged {
		return
	}
	d := &Divergence{Step: v.Step, Reason: v.Reason, Diff: v.Diff}
	if v.Step != replay.FinalStep {
		if v.Expected != nil {
			d.Expected = replay.FormatResult(v.Op, *v.Expected)
		}
		if v.Observed != nil {
			d.Observed = replay.FormatResult(v.Op, *v.Observed)
		}
		d.Rows = rowsOf(v.Rows, nil)
	} else {
		d.Expected, d.Observed = "final snapshot as the trace records it", "final snapshot of the target"
	}
	tl.Divergence = d
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
