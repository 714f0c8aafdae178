package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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
	if highlighted != 1 {
		t.Errorf("%d highlighted rows, want 1", highlighted)
	}
	if want := itoa(tr.Expect.DivergesAt); step != want {
		t.Errorf("highlighted step %s, the model predicts the divergence at step %s", step, want)
	}
	for _, want := range []string{"expected:", "observed:", "publisher_deliver"} {
		if !strings.Contains(rowText, want) {
			t.Errorf("highlighted row text lacks %q:\n%s", want, rowText)
		}
	}
	// The highlight is a real colour, not the page's white: rgb(253, 236, 234).
	if background != "rgb(253, 236, 234)" {
		t.Errorf("highlighted row background %q, want the divergence colour rgb(253, 236, 234)", background)
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
