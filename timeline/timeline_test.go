package timeline

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// replayed replays the trace at path against target and builds its timeline, the expected side
// from a replay against the target the trace claims to match.
func replayed(t *testing.T, path, target string) (Timeline, *traces.Trace, replay.Verdict) {
	t.Helper()
	tr, err := traces.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, after := replayWithSnapshots(t, tr, target)
	_, expectedAfter := replayWithSnapshots(t, tr, ExpectedTarget(tr))
	j := report.Judge(tr, target, v)
	return Build(Input{Trace: tr, Target: target, Verdict: &v, Judgement: &j, After: after,
		ExpectedTarget: ExpectedTarget(tr), ExpectedAfter: expectedAfter}), tr, v
}

// replayWithSnapshots replays tr against target, keeping the state after every step.
func replayWithSnapshots(t *testing.T, tr *traces.Trace, target string) (replay.Verdict, map[int]traces.Snapshot) {
	t.Helper()
	tg, err := targets.New(target, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	after := map[int]traces.Snapshot{}
	opts := replay.Options{}
	opts.AfterStep = func(i int, s traces.Snapshot) { after[i] = s }
	v, err := replay.Run(context.Background(), tr, tg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return v, after
}

// checkGolden compares got with testdata/name, byte for byte: every rendering, diffs included, is
// stable.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	got = bytes.ReplaceAll(got, []byte("\u00a0"), []byte(" "))
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update and review the diff):\n%s", name, got)
	}
}

// TestTextGolden pins the terminal rendering of a counterexample replayed against the correct store
// (where it diverges) and against the variant it records (where it matches).
func TestTextGolden(t *testing.T) {
	const trace = "../traces/testdata/good/leaseless-raw-attempts-stranded.json"
	for _, tc := range []struct {
		target, golden string
		diverges       bool
	}{
		{targets.Store, "raw-attempts-vs-store.txt", true},
		{targets.RawAttempts, "raw-attempts-vs-variant.txt", false},
	} {
		t.Run(tc.target, func(t *testing.T) {
			tl, tr, v := replayed(t, trace, tc.target)
			if got := tl.Divergence != nil; got != tc.diverges {
				t.Fatalf("divergence = %v, want %v (verdict %s)", got, tc.diverges, v)
			}
			if tc.diverges && tl.Divergence.Step != tr.Expect.DivergesAt {
				t.Errorf("divergence at step %d, the trace predicts %d", tl.Divergence.Step, tr.Expect.DivergesAt)
			}
			var b bytes.Buffer
			if err := WriteText(&b, tl); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, b.Bytes())
		})
	}
}

// TestHTMLMarksTheDivergence checks the page structure a reader (and the browser test) relies on:
// exactly one row carries the divergence, it is the diverging step, and it shows both values.
func TestHTMLMarksTheDivergence(t *testing.T) {
	tl, tr, v := replayed(t, "../traces/testdata/good/leaseless-raw-attempts-stranded.json", targets.Store)
	var b bytes.Buffer
	if err := WriteHTML(&b, tl); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, `id="divergence"`); n != 1 {
		t.Fatalf(`page has %d elements with id="divergence", want 1`, n)
	}
	row := page[strings.Index(page, `id="divergence"`):]
	row = row[:strings.Index(row, "</tr>")]
	wantStep := `data-step="` + itoa(tr.Expect.DivergesAt) + `"`
	if !strings.Contains(row, wantStep) {
		t.Errorf("the highlighted row is not step %d: %s", tr.Expect.DivergesAt, row)
	}
	for _, want := range []string{`class="exp"`, `class="obs"`,
		template.HTMLEscapeString(tracefmt.Result(v.Op, *v.Expected)),
		template.HTMLEscapeString(tracefmt.Result(v.Op, *v.Observed))} {
		if !strings.Contains(row, want) {
			t.Errorf("highlighted row lacks %q", want)
		}
	}
	for _, want := range []string{
		`id="violated-property">` + template.HTMLEscapeString(tr.Expect.Violates),
		`id="variant">raw-attempts<`, `id="legend"`, `id="step-0"`, `<th class="k-worker">worker 1</th>`,
		`id="final"`, "as predicted: the correct store refuses the bug",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Self-contained: nothing loaded from elsewhere; the one script is inline.
	for _, forbidden := range []string{"<script src", "http://", "https://"} {
		if strings.Contains(page, forbidden) {
			t.Errorf("page is not self-contained: it contains %q", forbidden)
		}
	}
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("page has %d scripts, want the one inline script that lands links to collapsed steps", n)
	}
}

func TestBuildWithoutReplay(t *testing.T) {
	tr, err := traces.ReadFile("../traces/testdata/good/outbox-fold-stale-publisher.json")
	if err != nil {
		t.Fatal(err)
	}
	tl := Build(Input{Trace: tr})
	if tl.Divergence != nil || tl.Verdict != "" {
		t.Fatalf("a timeline without a replay has a verdict: %+v", tl)
	}
	if len(tl.Rows) != len(tr.Steps) {
		t.Fatalf("%d rows for %d steps", len(tl.Rows), len(tr.Steps))
	}
	if tl.Lanes[len(tl.Lanes)-1] != OutboxLane {
		t.Errorf("lanes %v: the outbox lane should come last", tl.Lanes)
	}
	for _, r := range tl.Rows {
		if len(r.Lanes) == 0 {
			t.Errorf("step #%d (%s) is in no lane", r.Index, r.Op)
		}
		if r.State != "" || r.Observed != "" {
			t.Errorf("step #%d has a replay state without a replay: %+v", r.Index, r)
		}
		if r.Op == traces.OpPublisherDeliver && !contains(r.Lanes, OutboxLane) {
			t.Errorf("delivery step #%d is not in the outbox lane: %v", r.Index, r.Lanes)
		}
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, tl); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="divergence"`) {
		t.Error("a page without a replay marks a divergence")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func contains(xs []string, x string) bool { return slices.Contains(xs, x) }

// TestLongTraceCollapses: far from the focus, steps collapse into gap rows that say how many
// steps they stand for; the start, the window around the focus and the last step stay.
func TestLongTraceCollapses(t *testing.T) {
	tr := &traces.Trace{Format: traces.Format, Name: "long", Origin: traces.Origin{Kind: "hand"}, Expect: traces.Expect{Variant: "split-write", DivergesAt: 500}}
	for i := range 1000 {
		tr.Steps = append(tr.Steps, traces.Step{Op: traces.OpEnqueue, At: int64(i), Args: traces.Args{Mailbox: "a", ID: fmt.Sprintf("m%d", i), MaxAttempts: 1}})
	}
	tl := Build(Input{Trace: tr, Window: 5})
	var shown, gaps []int
	for _, r := range tl.Rows {
		if r.Gap > 0 {
			gaps = append(gaps, r.Gap)
		} else {
			shown = append(shown, r.Index)
		}
	}
	if len(shown) != 11+1 || shown[0] != 495 || shown[len(shown)-1] != 999 {
		t.Errorf("shown steps %v: want 495..505 and 999", shown)
	}
	if want := []int{495, 999 - 506}; !slices.Equal(gaps, want) || tl.Collapsed != want[0]+want[1] {
		t.Errorf("gaps %v (collapsed %d), want %v", gaps, tl.Collapsed, want)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, tl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "495 steps (#0–#494, not replayed)") {
		t.Errorf("the page does not describe the first gap")
	}
	// A link to a collapsed step lands on its run's row: the row names the steps it stands for.
	for _, want := range []string{`id="step-0" data-first="0" data-last="494"`, `id="step-506" data-first="506" data-last="998"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the page lacks the gap row %s", want)
		}
	}
	all := Build(Input{Trace: tr, Window: -1})
	if len(all.Rows) != 1000 || all.Collapsed != 0 {
		t.Errorf("Window -1 shows %d rows, collapses %d; want every step", len(all.Rows), all.Collapsed)
	}
}
