package timeline

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// counterexamples lists every counterexample a reader explains: the corpus's -bad traces and the
// hunted ones.
func counterexamples(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, glob := range []string{"../traces/corpus/*-bad.json", "../traces/hunted/*.json"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) < 20 {
		t.Fatalf("only %d counterexamples in traces/corpus and traces/hunted", len(paths))
	}
	return paths
}

// TestCounterexampleRowsAgreeWithThemselves: on the page of every counterexample replayed against
// the correct store (what `pconform explain` shows by default), each side of each row tells one
// story. A worker lane says what that side's result says the worker got or did, a publisher lane
// repeats that side's delivery result, and a fetched or acked message's row on that side agrees.
// A row that drew its worker lane from the trace and its mailbox lane from the target would fail
// at the divergence, where the two sides part.
func TestCounterexampleRowsAgreeWithThemselves(t *testing.T) {
	for _, path := range counterexamples(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tl, tr, v := replayed(t, path, targets.Store)
			handled := HandledBy(tr)
			for _, r := range tl.Rows {
				if r.Gap > 0 {
					continue
				}
				for _, side := range []Side{SideExpected, SideObserved} {
					res := sideResult(tr, v, side, r.Index)
					state := r.LaneState(side)
					if res == nil || state == nil {
						continue
					}
					for _, problem := range contradictions(tr.Steps[r.Index], *res, state, handled[r.Index]) {
						t.Errorf("step #%d (%s), %s side: %s", r.Index, r.Op, sideName(side), problem)
					}
				}
			}
		})
	}
}

func sideName(s Side) string {
	if s == SideExpected {
		return "expected"
	}
	return "observed"
}

// sideResult is step i's result on one side, computed from the trace and the verdict alone.
func sideResult(tr *traces.Trace, v replay.Verdict, side Side, i int) *traces.Result {
	if side == SideExpected {
		return &tr.Steps[i].Result
	}
	ran := len(tr.Steps)
	if v.Outcome != replay.Match && v.Step != replay.FinalStep {
		ran = v.Step
	}
	switch {
	case i < ran:
		return &tr.Steps[i].Result
	case i == ran && v.Outcome == replay.Diverged:
		return v.Observed
	}
	return nil
}

// contradictions lists where one side's lane states disagree with that side's result of s.
func contradictions(s traces.Step, res traces.Result, state map[string][]string, h Handled) []string {
	var out []string
	expect := func(lane, want string) {
		got := state[lane]
		if len(got) != 1 || got[0] != want {
			out = append(out, fmt.Sprintf("lane %q shows %q, the result says %q", lane, got, want))
		}
	}
	messageRow := func(id string) (string, bool) {
		for lane, rows := range state {
			for _, row := range rows {
				if strings.HasPrefix(row, "message "+id+" in ") {
					return lane + ": " + row, true
				}
			}
		}
		return "", false
	}
	switch s.Op {
	case traces.OpConsumerFetch:
		m := res.Message
		if m == nil {
			expect(workerLane(s.Args.Worker), "idle: nothing to fetch")
			break
		}
		expect(workerLane(s.Args.Worker), fmt.Sprintf("holds %s (attempts %d)", m.ID, m.Attempts))
		if row, ok := messageRow(m.ID); ok && m.Token != 0 && !strings.Contains(row, fmt.Sprintf("lease token %d ", m.Token)) {
			out = append(out, fmt.Sprintf("the fetch returns %s under token %d, its row is %q", m.ID, m.Token, row))
		}
	case traces.OpConsumerHandle:
		action := res.Action
		if action == "" {
			action = "nothing"
		}
		expect(workerLane(s.Args.Worker), "idle after "+action)
		if row, ok := messageRow(h.ID); ok && res.Action == "acked" && !strings.Contains(row, ": acked ") {
			out = append(out, fmt.Sprintf("the handle acks %s, its row is %q", h.ID, row))
		}
	case traces.OpPublisherDeliver:
		expect(publisherLane(s.Args.Publisher), fmt.Sprintf("%s: %s", s.Args.ID, tracefmt.Result(s.Op, res)))
	}
	return out
}
