package timeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pconform/pconform/traces"
)

// Intervals is an observed run drawn as porcupine draws a history: one row per worker, per
// publisher and one for the other callers, each operation a bar, and the commit order (the
// linearization the store chose) as a line through every commit.
//
// An observed trace records commits, not calls, so a bar spans what the trace can show: a
// worker's handling of a message from the fetch that gave it the message to the commit of its
// handle, a publisher's delivery from the claim of its row to the delivery's commit; every other
// step is a bar of one commit. Positions count the shown steps (collapsed runs take one slot), so
// the view stays as narrow as the table.
type Intervals struct {
	// Rows are the callers, workers first, then publishers, then OtherCallers.
	Rows []string
	// Bars are the operations, in commit order of their end.
	Bars []Bar
	// Slots is the number of positions along the commit order; Commits lists, in commit order,
	// each shown step's position and row (the linearization's points).
	Slots   int
	Commits []Commit
}

// OtherCallers is the row of every step no worker or publisher makes (enqueues, outbox claims and
// completions, purges, checkpoints...).
const OtherCallers = "other callers"

// Bar is one operation.
type Bar struct {
	Row int
	// From and To are the positions of the first and the last step of the operation; Open is
	// true when the first is collapsed (the bar starts before From).
	From, To int
	Open     bool
	// Step is the index of the step that commits it; Label names it ("handle o1", "enqueue m3").
	Step  int
	Label string
	// IDs are the messages and outbox rows it involves (a click on one follows it).
	IDs []string
	// Diverged marks the diverging step's operation.
	Diverged bool
}

// Commit is one point of the linearization.
type Commit struct{ Slot, Row, Step int }

// BuildIntervals lays out the shown steps of tl (a timeline of t) as intervals. It returns false
// for a trace that is not an observed run.
func BuildIntervals(tl Timeline, t *traces.Trace) (Intervals, bool) {
	if t.Origin.Kind != traces.OriginObserved {
		return Intervals{}, false
	}
	var iv Intervals
	rowOf := map[string]int{}
	for _, l := range tl.Lanes {
		if k := tl.LaneKinds[l]; k == LaneWorker || k == LanePublisher {
			rowOf[l] = len(iv.Rows)
			iv.Rows = append(iv.Rows, l)
		}
	}
	rowOf[OtherCallers] = len(iv.Rows)
	iv.Rows = append(iv.Rows, OtherCallers)

	slot := map[int]int{} // step index -> position, for shown steps
	for _, r := range tl.Rows {
		if r.Gap == 0 {
			slot[r.Index] = iv.Slots
		}
		iv.Slots++
	}
	handled := HandledBy(t)
	type start struct{ step int }
	began := map[int]start{}    // worker -> its fetch
	claimed := map[string]int{} // outbox id -> the claim's step
	diverged := -1
	if tl.Divergence != nil {
		diverged = tl.Divergence.Step
	}
	for i, s := range t.Steps {
		row := OtherCallers
		switch {
		case s.Op == traces.OpConsumerFetch || s.Op == traces.OpConsumerHandle:
			row = workerLane(s.Args.Worker)
		case s.Op == traces.OpPublisherDeliver:
			row = publisherLane(s.Args.Publisher)
		}
		from := i
		switch s.Op {
		case traces.OpConsumerFetch:
			if s.Result.Message != nil {
				began[s.Args.Worker] = start{i}
			}
		case traces.OpConsumerHandle:
			if b, ok := began[s.Args.Worker]; ok {
				from = b.step
				delete(began, s.Args.Worker)
			}
		case traces.OpOutboxClaim:
			for _, c := range s.Result.Claimed {
				claimed[c.ID] = i
			}
		case traces.OpPublisherDeliver:
			if c, ok := claimed[s.Args.ID]; ok {
				from = c
			}
		}
		to, shown := slot[i]
		if !shown {
			continue
		}
		iv.Commits = append(iv.Commits, Commit{Slot: to, Row: rowOf[row], Step: i})
		if s.Op == traces.OpConsumerFetch && s.Result.Message != nil {
			continue // drawn as the start of its handle's bar
		}
		b := Bar{Row: rowOf[row], From: to, To: to, Step: i, Label: barLabel(s, handled[i]), Diverged: i == diverged}
		if from != i {
			if f, ok := slot[from]; ok {
				b.From = f
			} else {
				b.From, b.Open = slotBefore(tl, from), true
			}
		}
		ids, _ := stepRefs(s, handled[i], s.Op == traces.OpConsumerHandle)
		if from != i {
			fids, _ := stepRefs(t.Steps[from], Handled{}, false)
			if s.Op == traces.OpPublisherDeliver {
				fids = []string{s.Args.ID} // the claim's other rows are other deliveries
			}
			ids = append(ids, fids...)
		}
		slices.Sort(ids)
		b.IDs = slices.Compact(ids)
		iv.Bars = append(iv.Bars, b)
	}
	// A fetch whose handle is not shown (after the divergence, or collapsed) is a bar of its own.
	for w, b := range began {
		if to, ok := slot[b.step]; ok {
			s := t.Steps[b.step]
			iv.Bars = append(iv.Bars, Bar{Row: rowOf[workerLane(w)], From: to, To: to, Step: b.step,
				Label: barLabel(s, Handled{}), IDs: []string{s.Result.Message.ID}, Diverged: b.step == diverged})
		}
	}
	slices.SortFunc(iv.Bars, func(a, b Bar) int { return a.Step - b.Step })
	return iv, true
}

// slotBefore is the position of the row, a gap row usually, that holds step i.
func slotBefore(tl Timeline, i int) int {
	for pos, r := range tl.Rows {
		if n := max(r.Gap, 1); i >= r.Index && i < r.Index+n {
			return pos
		}
	}
	return 0
}

// The geometry of the drawing, in pixels: the label column, one slot per position, one row per
// caller.
const (
	ivLeft = 110
	ivSlot = 16
	ivRow  = 26
	ivTop  = 6
)

// Width and Height are the drawing's size.
func (iv Intervals) Width() int  { return ivLeft + iv.Slots*ivSlot + ivSlot }
func (iv Intervals) Height() int { return ivTop*2 + len(iv.Rows)*ivRow }

// RowY is the top of row i; LabelY where its label sits.
func (iv Intervals) RowY(i int) int   { return ivTop + i*ivRow }
func (iv Intervals) LabelY(i int) int { return ivTop + i*ivRow + ivRow/2 + 4 }

// Points is the linearization as SVG polyline points: every shown commit, in commit order, at
// the end of its bar.
func (iv Intervals) Points() string {
	var b strings.Builder
	for i, c := range iv.Commits {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d,%d", ivLeft+c.Slot*ivSlot+ivSlot-3, ivTop+c.Row*ivRow+ivRow/2)
	}
	return b.String()
}

// X, Y, W and H place the bar.
func (b Bar) X() int { return ivLeft + b.From*ivSlot + 2 }
func (b Bar) Y() int { return ivTop + b.Row*ivRow + 5 }
func (b Bar) W() int { return (b.To-b.From)*ivSlot + ivSlot - 4 }
func (b Bar) H() int { return ivRow - 10 }

func barLabel(s traces.Step, h Handled) string {
	switch s.Op {
	case traces.OpConsumerHandle:
		if h.ID != "" {
			return fmt.Sprintf("handle %s → %s", h.ID, orNone(s.Result.Action))
		}
		return "handle → " + orNone(s.Result.Action)
	case traces.OpConsumerFetch:
		if m := s.Result.Message; m != nil {
			return "fetch " + m.ID
		}
		return "fetch: none"
	case traces.OpPublisherDeliver:
		return fmt.Sprintf("deliver %s → %s", s.Args.ID, orNone(s.Result.Action))
	case traces.OpOutboxClaim:
		var ids []string
		for _, c := range s.Result.Claimed {
			ids = append(ids, c.ID)
		}
		return "claim " + strings.Join(ids, ",")
	}
	if s.Args.ID != "" {
		return fmt.Sprintf("%s %s", s.Op, s.Args.ID)
	}
	return string(s.Op)
}
