package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// chromiumPath finds a Chromium binary. The gate installs Debian's chromium package and sets
// PCONFORM_REQUIRE_BROWSER=1, so there a missing browser fails the test instead of skipping it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("PCONFORM_REQUIRE_BROWSER") == "1" {
		t.Fatal("no Chromium on PATH, and PCONFORM_REQUIRE_BROWSER=1 (install Debian's chromium package: scripts/bootstrap.sh browser)")
	}
	t.Skip("no Chromium on PATH; scripts/bootstrap.sh browser installs it")
	return ""
}

// splitWriteCounterexample is the corpus trace the P checker found for the split-write publisher.
func splitWriteCounterexample(t *testing.T) string {
	t.Helper()
	matches, err := filepath.Glob("../../traces/corpus/tcOutboxSplitWriteCounterexample-*-bad.json")
	if err != nil || len(matches) == 0 {
		t.Fatalf("no split-write counterexample in traces/corpus (glob error %v); regenerate the corpus with go run ./bridge/cmd/pconform-corpus", err)
	}
	return matches[0]
}

// TestHTMLTimelineInBrowser renders the split-write counterexample's timeline with the CLI, loads
// the page in headless Chromium, and finds the highlighted divergence at the step the model
// predicts, showing the expected and the observed values.
func TestHTMLTimelineInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a headless Chromium")
	}
	chromium := chromiumPath(t)
	trace := splitWriteCounterexample(t)
	tr, err := traces.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "split-write.html")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"explain", trace, "--target", "store", "--html", page}, &stdout, &stderr); code != exitPass {
		t.Fatalf("explain exited %d, want %d (the correct store refuses a counterexample's bug as predicted)\nstdout:\n%s\nstderr:\n%s", code, exitPass, stdout.String(), stderr.String())
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible("#divergence")); err != nil {
		t.Fatalf("loading the page in Chromium at %s: %v", chromium, err)
	}
	highlighted := mustRun(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll("tr.divergence").length`))
	rowText := mustRun(t, bctx, chromedp.Text("#divergence"))
	step := mustRun(t, bctx, chromedp.AttributeValue("#divergence", "data-step")).Value
	background := mustRun(t, bctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#divergence td")).backgroundColor`))
	summary := mustRun(t, bctx, chromedp.Text("#divergence-summary"))
	violated := mustRun(t, bctx, chromedp.Text("#violated-property"))
	variant := mustRun(t, bctx, chromedp.Text("#variant"))
	// The property comes first on the page, in the P checker's own words.
	firstLabel := mustRun(t, bctx, chromedp.Text("#about dt"))
	if tr.Expect.Violates == "" || violated != tr.Expect.Violates {
		t.Errorf("the page names the violated property %q, the trace says %q", violated, tr.Expect.Violates)
	}
	if !strings.Contains(violated, "completed at t=0 but no message o1 was ever enqueued in mailbox inbox") {
		t.Errorf("the violated property is not in the P monitor's words: %q", violated)
	}
	if firstLabel != "violated property" {
		t.Errorf("the page opens with %q, want the violated property first", firstLabel)
	}
	if variant != "split-write" {
		t.Errorf("the page names the variant %q, want split-write", variant)
	}
	if highlighted != 1 {
		t.Errorf("%d highlighted rows, want 1", highlighted)
	}
	if want := itoa(tr.Expect.DivergesAt); step != want {
		t.Errorf("highlighted step %s, the model predicts the divergence at step %s", step, want)
	}
	for _, want := range []string{"expected:", "observed:", "publisher_deliver", "o1: action=commit_failed"} {
		if !strings.Contains(rowText, want) {
			t.Errorf("highlighted row text lacks %q:\n%s", want, rowText)
		}
	}
	// The highlight is a real colour, not the page's white, and a neutral one (it marks where
	// expected and observed part, not something bad): rgb(255, 244, 206).
	if background != "rgb(255, 244, 206)" {
		t.Errorf("highlighted row background %q, want the divergence colour rgb(255, 244, 206)", background)
	}
	if !strings.Contains(summary, "Divergence at step #"+step) {
		t.Errorf("summary does not name step %s:\n%s", step, summary)
	}
}

func mustRun[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("Chromium: %v", err)
	}
	return v
}

// longTrace writes a trace of n steps (enqueue, leaseless fetch, handle, over and over), every
// result computed by the reference model, with the expected result of step diverge made wrong so
// that a replay diverges there.
func longTrace(t *testing.T, n, diverge int) string {
	t.Helper()
	m := models.NewMachine(models.Init(models.Config{}))
	tr := &traces.Trace{Format: traces.Format, Name: "long", Origin: traces.Origin{Kind: traces.OriginHand}, Expect: traces.Expect{DivergesAt: -1}}
	for i := 0; len(tr.Steps) < n; i++ {
		at := int64(i)
		for _, s := range []traces.Step{
			{Op: traces.OpEnqueue, At: at, Args: traces.Args{Mailbox: "a", ID: fmt.Sprintf("m%d", i), MaxAttempts: 1}},
			{Op: traces.OpConsumerFetch, At: at, Args: traces.Args{Worker: 1, Mailbox: "a", Profile: traces.ProfileLeaseless}},
			{Op: traces.OpConsumerHandle, At: at, Args: traces.Args{Worker: 1, Mailbox: "a", Profile: traces.ProfileLeaseless, Outcome: traces.OutcomeOK}},
		} {
			if len(tr.Steps) == n {
				break
			}
			r, err := m.Step(s.Op, s.At, s.Args)
			if err != nil {
				t.Fatal(err)
			}
			s.Result = r
			tr.Steps = append(tr.Steps, s)
		}
	}
	final := m.Snapshot()
	tr.Final = &final
	tr.Steps[diverge].Result.Duplicate = !tr.Steps[diverge].Result.Duplicate
	path := filepath.Join(t.TempDir(), "long.json")
	if err := traces.WriteFile(path, tr); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLargeTracePageInBrowser: a 50,000-step trace's page is collapsed around its divergence, is
// under 2 MB and opens in headless Chromium with the diverging step on it.
func TestLargeTracePageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and replays a 50,000-step trace")
	}
	const steps, diverge = 50_000, 30_000 // step 30,000 is an enqueue
	trace := longTrace(t, steps, diverge)
	page := filepath.Join(t.TempDir(), "long.html")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if code := run([]string{"explain", trace, "--target", "model", "--html", page}, &stdout, &stderr); code != exitFinding {
		t.Fatalf("explain exited %d, want %d (the trace has a wrong result at step #%d)\n%s", code, exitFinding, diverge, stderr.String())
	}
	t.Logf("explain of %d steps against the model: %s, text view %d bytes", steps, time.Since(start).Round(time.Millisecond), stdout.Len())
	st, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page: %d bytes", st.Size())
	if d := os.Getenv("PCONFORM_KEEP_PAGE"); d != "" {
		data, _ := os.ReadFile(page)
		_ = os.WriteFile(d, data, 0o644)
		_ = os.WriteFile(d+".txt", stdout.Bytes(), 0o644)
	}
	if st.Size() >= 2<<20 {
		t.Errorf("the page of a %d-step trace is %d bytes, want under 2 MB", steps, st.Size())
	}
	if stdout.Len() >= 2<<20 {
		t.Errorf("the text view of a %d-step trace is %d bytes, want it collapsed too", steps, stdout.Len())
	}
	chromium := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// How fast the page opens is not asserted (a shared machine makes any bound flaky); its size,
	// checked above, is what keeps it quick.
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible("#divergence")); err != nil {
		t.Fatalf("loading the page in Chromium at %s: %v", chromium, err)
	}
	if step := mustRun(t, bctx, chromedp.AttributeValue("#divergence", "data-step")).Value; step != itoa(diverge) {
		t.Errorf("the highlighted step is %s, want %d", step, diverge)
	}
	// Every step has an anchor: a link to a collapsed step lands on the row of the run that
	// stands for it.
	const collapsed = 12_345
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+page+"#step-"+itoa(collapsed))); err != nil {
		t.Fatalf("following #step-%d: %v", collapsed, err)
	}
	reached := mustRun(t, bctx, chromedp.Evaluate[[]int](`(function () {
		var r = document.querySelector("tr.reached");
		if (!r) return [];
		var top = r.getBoundingClientRect().top;
		return [Number(r.dataset.first), Number(r.dataset.last), top > -1 && top < innerHeight ? 1 : 0];
	})()`))
	if len(reached) != 3 || reached[0] > collapsed || reached[1] < collapsed || reached[2] != 1 {
		t.Errorf("#step-%d reached %v, want the visible gap row [first, last, 1] that covers it", collapsed, reached)
	}
}

// headless starts a headless Chromium whose window is width pixels wide and returns its context.
func headless(t *testing.T, width int) context.Context {
	t.Helper()
	chromium := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, 900))...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	return bctx
}

// observedUnfencedAck is an observed run of the unfenced-ack variant with 13 lanes (the first
// steps of `pconform observe --target unfenced-ack --seed 3`).
const observedUnfencedAck = "../../timeline/testdata/observed-unfenced-ack-seed3.json"

// TestWidePageFitsInBrowser: with every step shown, all 13 lanes of an observed run are columns,
// and at 1400 px the page still does not scroll sideways. The side chooser switches every row to
// one side: with "expected" chosen, no observed state shows outside the diverging row.
func TestWidePageFitsInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a headless Chromium")
	}
	page := filepath.Join(t.TempDir(), "wide.html")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"explain", observedUnfencedAck, "--target", "model", "--window", "-1", "--html", page}, &stdout, &stderr); code != exitPass {
		t.Fatalf("explain exited %d, want %d\n%s", code, exitPass, stderr.String())
	}
	bctx := headless(t, 1400)
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible("#divergence")); err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	columns := mustRun(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll("#steps thead th").length`))
	if columns != 13+2 {
		t.Errorf("%d columns, want the 13 lanes and # and t", columns)
	}
	widths := mustRun(t, bctx, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, document.documentElement.clientWidth]`))
	if len(widths) != 2 || widths[0] > widths[1] {
		t.Errorf("the page is %v px wide (scroll, client) at 1400 px: it scrolls sideways", widths)
	}
	if err := chromedp.Do(bctx, chromedp.Click(`input[name="side"][value="exp"]`)); err != nil {
		t.Fatalf("choosing the expected side: %v", err)
	}
	shown := mustRun(t, bctx, chromedp.Evaluate[[]int](`(function () {
		var obs = 0, exp = 0;
		document.querySelectorAll("tr.match .sd-obs, tr.match .sd-exp").forEach(function (e) {
			if (getComputedStyle(e).display === "none" || e.textContent === "") return;
			if (e.classList.contains("sd-obs")) obs++; else exp++;
		});
		return [exp, obs];
	})()`))
	if len(shown) != 2 || shown[0] == 0 || shown[1] != 0 {
		t.Errorf("with the expected side chosen, matched rows show %v (expected, observed) side blocks, want some and none", shown)
	}
}

// TestIntervalViewFollowsAMessage: the page of an observed run draws its intervals, one row per
// worker and publisher and one for the other callers, with the commit order as a line through
// every shown commit. The diverging handle's bar starts at the fetch that gave the worker its
// message, and a click on it marks every bar and step row of that message, in several rows.
func TestIntervalViewFollowsAMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a headless Chromium")
	}
	tr, err := traces.ReadFile(observedUnfencedAck)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "intervals.html")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"explain", observedUnfencedAck, "--target", "model", "--html", page}, &stdout, &stderr); code != exitPass {
		t.Fatalf("explain exited %d, want %d\n%s", code, exitPass, stderr.String())
	}
	bctx := headless(t, 1400)
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible("#divergence")); err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	callers := mustRun(t, bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#intervals text.caller")).map(function (e) { return e.textContent; })`))
	workers := map[int]bool{}
	publishers := map[int]bool{}
	for _, s := range tr.Steps {
		switch s.Op {
		case traces.OpConsumerFetch, traces.OpConsumerHandle:
			workers[s.Args.Worker] = true
		case traces.OpPublisherDeliver:
			publishers[s.Args.Publisher] = true
		}
	}
	if want := len(workers) + len(publishers) + 1; len(callers) != want {
		t.Errorf("interval rows %v, want %d (each worker and publisher, and the other callers)", callers, want)
	}
	points := mustRun(t, bctx, chromedp.Evaluate[int](`document.querySelector("#intervals .linearization").points.numberOfItems`))
	shown := mustRun(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll("#steps tr[data-step]").length`))
	if points != shown || points == 0 {
		t.Errorf("the linearization has %d points, the page shows %d steps", points, shown)
	}
	// The diverging bar: from its fetch to its handle, so wider than one commit.
	bar := mustRun(t, bctx, chromedp.Evaluate[[]float64](`(function () {
		var g = document.querySelector("#intervals .bar.diverged");
		if (!g) return [];
		return [g.querySelector("rect").getBBox().width, Number(g.dataset.step)];
	})()`))
	step := mustRun(t, bctx, chromedp.AttributeValue("#divergence", "data-step")).Value
	if len(bar) != 2 || bar[0] <= 16 || itoa(int(bar[1])) != step {
		t.Fatalf("the diverging bar is %v (width, step), want a bar wider than one commit ending at the diverging step #%s", bar, step)
	}
	// A real mouse click at the bar's centre (chromedp's Click waits for a layout box SVG lacks).
	at := mustRun(t, bctx, chromedp.Evaluate[[]float64](`(function () {
		var r = document.querySelector("#intervals .bar.diverged rect");
		r.scrollIntoView({block: "center"});
		var b = r.getBoundingClientRect();
		return [b.left + b.width / 2, b.top + b.height / 2];
	})()`))
	if err := chromedp.Do(bctx, chromedp.MouseClickXY(at[0], at[1])); err != nil {
		t.Fatalf("clicking the diverging bar: %v", err)
	}
	followed := mustRun(t, bctx, chromedp.Evaluate[[]int](`(function () {
		var rows = {};
		document.querySelectorAll("#intervals .bar.followed").forEach(function (g) { rows[g.dataset.row] = true; });
		return [document.querySelectorAll("#intervals .bar.followed").length, Object.keys(rows).length,
			document.querySelectorAll("#steps tr.followed").length];
	})()`))
	if len(followed) != 3 || followed[1] < 2 || followed[2] < followed[0] {
		t.Errorf("after the click %v (bars followed, their rows, step rows followed): want the message followed through several rows and the steps", followed)
	}
	msg := mustRun(t, bctx, chromedp.Text("#followed"))
	if !strings.Contains(msg, "o1") {
		t.Errorf("the page says %q, want it to name the followed message o1", msg)
	}
}
