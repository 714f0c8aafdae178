package timeline

import (
	"fmt"
	"slices"
	"sort"
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
	// Lanes are the mailboxes in order of first appearance, then OutboxLane when the trace uses it.
	Lanes []string
	Rows  []Row
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
	// Touched are the rows the step involved, as they stood after it ran (empty when unknown).
	Touched []string
}

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
	// After holds, for each step that ran, the target's state after it (tokens as symbols). Missing
	// or short slices are fine: those steps show no touched rows.
	After []traces.Snapshot

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
	tl.Lanes = lanes.order
	var fetchedBy = map[int]string{}
	for i, s := range t.Steps {
		row := Row{Index: i, At: s.At, Op: s.Op, Args: replay.FormatArgs(s.Op, s.Args), Expected: replay.FormatResult(s.Op, s.Result)}
		row.Lanes = lanes.of(s, fetchedBy)
		if len(row.Lanes) == 0 {
			row.Lanes = slices.Clone(lanes.order)
		}
		ids := involvedIDs(s, fetchedBy)
		if i < len(in.After) {
			row.Touched = rowsOf(in.After[i], ids)
		}
		tl.Rows = append(tl.Rows, row)
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
	return tl
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
	for i := range tl.Rows {
		switch {
		case i < ran:
			tl.Rows[i].State = "match"
			tl.Rows[i].Observed = tl.Rows[i].Expected
		case i == ran && v.Outcome == replay.Diverged:
			tl.Rows[i].State = "diverged"
			if v.Observed != nil {
				tl.Rows[i].Observed = replay.FormatResult(t.Steps[i].Op, *v.Observed)
			}
		default:
			tl.Rows[i].State = "not-run"
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

// laneMap knows which mailbox each message id and outbox row belongs to.
type laneMap struct {
	order     []string
	mailboxOf map[string]string // message id -> mailbox
	targetOf  map[string]string // outbox id -> target mailbox
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

func (m *laneMap) of(s traces.Step, fetchedBy map[int]string) []string {
	switch {
	case s.Op == traces.OpCrash || s.Op == traces.OpAdvanceClock || s.Op == traces.OpExpire:
		return slices.Clone(m.order)
	case s.Op == traces.OpPublisherDeliver:
		return compact(m.targetOf[s.Args.ID], OutboxLane)
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

// rowsOf renders the rows of snap whose id is in ids (every row when ids is nil).
func rowsOf(snap traces.Snapshot, ids map[string]bool) []string {
	keep := func(id string) bool { return ids == nil || ids[id] }
	var out []string
	for _, r := range snap.Messages {
		if !keep(r.ID) {
			continue
		}
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
		out = append(out, s)
	}
	for _, r := range snap.Outbox {
		if !keep(r.ID) {
			continue
		}
		s := fmt.Sprintf("outbox %s -> %s: %s deliveries %d available_at %d", r.ID, r.Target, r.State, r.DeliveryAttempts, r.AvailableAt)
		if r.Token != 0 {
			s += fmt.Sprintf(" claim token %d until %d", r.Token, r.ClaimUntil)
		}
		out = append(out, s)
	}
	for _, r := range snap.DeadLetters {
		if keep(r.ID) {
			out = append(out, fmt.Sprintf("dead letter %s from %s: attempts %d, %q", r.ID, r.Mailbox, r.Attempts, r.Reason))
		}
	}
	mailboxes := make([]string, 0, len(snap.Effects))
	for mb := range snap.Effects {
		mailboxes = append(mailboxes, mb)
	}
	sort.Strings(mailboxes)
	for _, mb := range mailboxes {
		for _, id := range snap.Effects[mb] {
			if keep(id) {
				out = append(out, fmt.Sprintf("effects of %s include %s", mb, id))
			}
		}
	}
	return out
}
