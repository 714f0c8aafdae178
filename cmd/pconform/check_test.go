package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/traces"
)

// logLine is one event line of a recorder's log; at is logical seconds.
func logLine(seq int, at int64, op, args, result string) string {
	return `{"seq":` + strconv.Itoa(seq) + `,"at":"` + traces.At(at).Format(time.RFC3339) + `","op":"` + op + `","args":` + args + `,"result":` + result + "}\n"
}

// doubleAck is a log whose last event, a second ack of one lease, the model refuses.
var doubleAck = logLine(1, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`) +
	logLine(2, 1, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":1,"token":"T1"}}`) +
	logLine(3, 2, "ack", `{"id":"m1","token":"T1"}`, `{}`) +
	logLine(4, 3, "ack", `{"id":"m1","token":"T1"}`, `{}`)

// TestCheckLog: check streams an event log: 0 when the model agrees, 1 with a finding that names
// its event and writes a window trace replay takes, 3 for a log it cannot trust, naming the line.
func TestCheckLog(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.jsonl", strings.Join(strings.SplitAfter(doubleAck, "\n")[:3], ""))
	bad := write("bad.jsonl", doubleAck)
	broken := write("broken.jsonl", doubleAck[:strings.Index(doubleAck, "\n")+1]+"{not json}\n")
	var out, errOut bytes.Buffer
	if code := run([]string{"check", good}, &out, &errOut); code != exitPass || !strings.Contains(out.String(), "3 events (3 writes) checked") {
		t.Fatalf("check of an agreeing log exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	findings := filepath.Join(dir, "findings")
	if code := run([]string{"check", "--findings", findings, bad}, &out, &errOut); code != exitFinding {
		t.Fatalf("check of a refused log exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"FINDING model oracle: event 3 (line 4, seq 4)", "lease_lost", "window: ", "the model refuses it there on its own"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("check printed no %q:\n%s", want, out.String())
		}
	}
	// The window comes from reading the file again, which stderr says (the clean log's check
	// above did not).
	if !strings.Contains(errOut.String(), "bad.jsonl: a finding: reading the file again") || strings.Count(errOut.String(), "reading the file again") != 1 {
		t.Fatalf("stderr does not say once that the file is read again for the window:\n%s", errOut.String())
	}
	window := filepath.Join(findings, "bad-line4.json")
	out.Reset()
	if code := run([]string{"replay", window, "--target", "model"}, &out, &errOut); code != exitFinding || !strings.Contains(out.String(), "#3") {
		t.Fatalf("replay of the window exited %d, want %d (the model refuses step #3):\n%s%s", code, exitFinding, out.String(), errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"check", broken}, &out, &errOut); code != exitCannotRun || !strings.Contains(errOut.String(), "line 2: not an event") {
		t.Fatalf("check of a broken log exited %d:\n%s", code, errOut.String())
	}
}

// TestCheckLogOnStdin: a path of - is an event log read from standard input, named "stdin" in
// the verdict, the errors and the finding's window; it can be given once.
func TestCheckLogOnStdin(t *testing.T) {
	good := strings.Join(strings.SplitAfter(doubleAck, "\n")[:3], "")
	if code, out, errOut := runCLI(t, good, "check", "-"); code != exitPass || !strings.Contains(out, "stdin: 3 events (3 writes) checked") {
		t.Fatalf("check - of an agreeing log exited %d:\n%s%s", code, out, errOut)
	}
	findings := t.TempDir()
	code, out, errOut := runCLI(t, doubleAck, "check", "--findings", findings, "-")
	if code != exitFinding || !strings.Contains(out, "FINDING model oracle: event 3 (line 4, seq 4)") {
		t.Fatalf("check - of a refused log exited %d:\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(findings, "stdin-line4.json")); err != nil {
		t.Fatalf("the finding's window is not stdin-line4.json: %v\n%s", err, out)
	}
	broken := doubleAck[:strings.Index(doubleAck, "\n")+1] + "{not json}\n"
	if code, _, errOut := runCLI(t, broken, "check", "-"); code != exitCannotRun || !strings.Contains(errOut, "stdin: line 2: not an event") {
		t.Fatalf("check - of a broken log exited %d:\n%s", code, errOut)
	}
	if code, _, errOut := runCLI(t, good, "check", "-", "-"); code != exitUsage || !strings.Contains(errOut, "can be read once") {
		t.Fatalf("check - - exited %d, want %d:\n%s", code, exitUsage, errOut)
	}
	if code, _, errOut := runCLI(t, good, "check", "--follow", "-"); code != exitUsage || !strings.Contains(errOut, "give - as the log") {
		t.Fatalf("check --follow - exited %d, want %d:\n%s", code, exitUsage, errOut)
	}
}

// TestCheckKeepGoing: check --keep-going reports a malformed event as a finding with its line
// and checks on to the end, and its summary does not claim to have stopped; without the flag the
// malformed event is exit 3, naming its line, and the first finding ends the check, as said.
func TestCheckKeepGoing(t *testing.T) {
	// Line 2 is a lease whose result no lease gives (attempts 0); a double ack (line 5) follows.
	log := logLine(1, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`) +
		logLine(2, 1, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":0,"token":"T0"}}`) +
		logLine(3, 1, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":1,"token":"T1"}}`) +
		logLine(4, 2, "ack", `{"id":"m1","token":"T1"}`, `{}`) +
		logLine(5, 3, "ack", `{"id":"m1","token":"T1"}`, `{}`)
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"check", path}, &out, &errOut); code != exitCannotRun || !strings.Contains(errOut.String(), "line 2 (seq 2, lease)") {
		t.Fatalf("check without --keep-going exited %d, want %d naming line 2:\n%s%s\nlog:\n%s", code, exitCannotRun, out.String(), errOut.String(), log)
	}
	out.Reset()
	errOut.Reset()
	code := run([]string{"check", "--keep-going", "--findings", t.TempDir(), path}, &out, &errOut)
	if code != exitFinding {
		t.Fatalf("check --keep-going exited %d, want %d:\n%s%s", code, exitFinding, out.String(), errOut.String())
	}
	for _, want := range []string{
		"FINDING log oracle: event 1 (line 2, seq 2): malformed event, left out of the check: line 2 (seq 2, lease): result.message.attempts",
		"FINDING model oracle: event 4 (line 5, seq 5)", "lease_lost",
		"5 events (5 writes) checked", "2 finding(s)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("check --keep-going printed no %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "stopped") {
		t.Fatalf("check --keep-going went to the end but says it stopped:\n%s", out.String())
	}
}

// TestCheckCounterexamples: every counterexample of the corpus is, to the model oracle, what it
// claims: the correct store refuses it at the step it names (exit 0).
func TestCheckCounterexamples(t *testing.T) {
	bad, err := filepath.Glob(filepath.Join("..", "..", "traces", "corpus", "*-bad.json"))
	if err != nil || len(bad) == 0 {
		t.Fatalf("no counterexamples in the corpus (%v)", err)
	}
	for _, path := range bad {
		var out, errOut bytes.Buffer
		if code := run([]string{"check", path}, &out, &errOut); code != exitPass || !strings.Contains(out.String(), "as the trace claims") {
			t.Errorf("check %s exited %d:\n%s%s", path, code, out.String(), errOut.String())
		}
	}
}

// TestCheckPModelsNotFound: the P oracle run where no models/p can be found says how to name it.
func TestCheckPModelsNotFound(t *testing.T) {
	trace, err := filepath.Abs(filepath.Join("..", "..", "traces", "corpus", "tcOutboxSplitWriteCounterexample-s1-1-bad.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	var out, errOut bytes.Buffer
	if code := run([]string{"check", "--p", trace}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "models/p not found") || !strings.Contains(errOut.String(), "--models") {
		t.Fatalf("check --p outside the repository exited %d:\n%s%s", code, out.String(), errOut.String())
	}
}

// TestCheckFollow: check --follow tails a log another process appends to. The writer writes an
// agreeing history, truncates the file and writes another, rotates the file (renames it and
// starts a new one) and writes a third history whose last event the model refuses, then goes on
// sleeping: the check says the file was truncated and rotated, checks each new history from its
// start, and reports the finding while the writer is still running.
func TestCheckFollow(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to run the writer process")
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "live.jsonl")
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(doubleAck, "\n")
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, l := range lines[:3] {
		fmt.Fprintf(&script, "printf '%%s\\n' '%s' >> \"$1\"; sleep 0.2\n", strings.TrimSuffix(l, "\n"))
	}
	script.WriteString(": > \"$1\"; sleep 0.3\n")
	for _, l := range lines[:3] {
		fmt.Fprintf(&script, "printf '%%s\\n' '%s' >> \"$1\"; sleep 0.2\n", strings.TrimSuffix(l, "\n"))
	}
	script.WriteString("mv \"$1\" \"$1.1\"; sleep 0.2; : > \"$1\"; sleep 0.3\n")
	for _, l := range lines[:4] {
		fmt.Fprintf(&script, "printf '%%s\\n' '%s' >> \"$1\"; sleep 0.2\n", strings.TrimSuffix(l, "\n"))
	}
	script.WriteString("sleep 60\n")
	writer := exec.Command(sh, "-c", script.String(), "writer", logPath)
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { writer.Wait(); close(exited) }()
	defer func() { writer.Process.Kill(); <-exited }()

	var out, errOut bytes.Buffer
	code := run([]string{"check", "--follow", logPath, "--findings", filepath.Join(dir, "f"), "--stop-after-idle", "30s"}, &out, &errOut)
	select {
	case <-exited:
		t.Fatalf("the writer ended before the check did:\n%s%s", out.String(), errOut.String())
	default:
	}
	if code != exitFinding {
		t.Fatalf("check --follow exited %d, want %d:\n%s%s", code, exitFinding, out.String(), errOut.String())
	}
	for _, want := range []string{"was truncated", "was replaced (rotated)", "starts again at seq 1"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr says no %q:\n%s", want, errOut.String())
		}
	}
	if n := strings.Count(out.String(), "3 events (3 writes) checked"); n != 2 {
		t.Errorf("stdout gives %d summaries of the two agreeing histories, want 2:\n%s", n, out.String())
	}
	for _, want := range []string{"FINDING model oracle: event 3 (line 4, seq 4)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout says no %q:\n%s", want, out.String())
		}
	}
}

// observedStore is an observed history of the correct store (pconform observe --seed 2 --budget
// 1s on SQLite): 522 steps of leased and leaseless workers, both publishers, purges and redrives.
const observedStore = "testdata/observed-store-seed2.json"

// TestCheckPCounterexamples runs check --p, with one P compile, on every counterexample of the
// corpus, on one good trace of each of the corpus' other P test cases (every one of the batch
// test cases) and on an observed history of the correct store. Every counterexample must be reported violated in the words of the monitor
// it claims, safety and liveness alike; every good trace and the observed history must hold.
// -short skips it (a P compile and checker run: about a minute).
func TestCheckPCounterexamples(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the P compile and checker run")
	}
	if _, err := exec.LookPath("p"); err != nil {
		t.Skip("the P tool `p` is not on PATH")
	}
	corpus := filepath.Join("..", "..", "traces", "corpus")
	bad, err := filepath.Glob(filepath.Join(corpus, "*Counterexample*-bad.json"))
	if err != nil || len(bad) == 0 {
		t.Fatalf("no counterexamples in the corpus (%v)", err)
	}
	ok, err := filepath.Glob(filepath.Join(corpus, "*-ok.json"))
	if err != nil || len(ok) == 0 {
		t.Fatalf("no good traces in the corpus (%v)", err)
	}
	var good []string
	seen := map[string]bool{}
	for _, path := range ok {
		tc, _, _ := strings.Cut(filepath.Base(path), "-")
		// Every batch trace: the P oracle's batch events are the newest.
		if !seen[tc] || strings.HasPrefix(tc, "tcBatch") {
			seen[tc] = true
			good = append(good, path)
		}
	}
	good = append(good, observedStore)
	// The batch traces (green and counterexamples) are among them: the P oracle takes batch steps.
	batched := 0
	for _, path := range append(slices.Clone(bad), good...) {
		tr, err := traces.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(tr.Steps, func(st traces.Step) bool { return slices.Contains(traces.BatchOps, st.Op) }) {
			batched++
		}
	}
	if batched == 0 {
		t.Fatal("no corpus trace checked holds a batch step: the P oracle's batch events go untested")
	}
	var out, errOut bytes.Buffer
	code := run(append(append([]string{"check", "--p"}, bad...), good...), &out, &errOut)
	if code != exitPass {
		t.Fatalf("check --p exited %d, want %d:\n%s%s", code, exitPass, out.String(), errOut.String())
	}
	models := filepath.Join("..", "..", "models", "p")
	liveness := 0
	for _, path := range bad {
		tr, err := traces.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		monitor := bridge.MonitorOf(models, tr.Expect.Violates)
		if monitor == "" {
			t.Fatalf("%s: no monitor found for its claim %q", path, tr.Expect.Violates)
		}
		if slices.Contains(bridge.LivenessMonitors, monitor) {
			liveness++
		}
		want := path + ": P oracle: violated, as the trace claims: " + strings.TrimSpace(claimLocation.ReplaceAllString(tr.Expect.Violates, "")) + "\n"
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s: check --p printed no %q", path, want)
		}
	}
	if liveness == 0 {
		t.Error("no counterexample claims a liveness monitor: the test shows nothing of their end-of-trace verdicts")
	}
	for _, path := range good {
		if want := path + ": P oracle: monitors "; !strings.Contains(out.String(), want) {
			t.Errorf("%s: check --p printed no %q", path, want)
		}
	}
	if want := observedStore + ": P oracle: monitors " + strings.Join(bridge.ObservedMonitors, ", ") + " hold (liveness monitors"; !strings.Contains(out.String(), want) {
		t.Errorf("the observed history: check --p printed no %q", want)
	}
	for _, never := range []string{"not checked", "P oracle: not judged", "FINDING"} {
		if strings.Contains(out.String(), never) {
			t.Errorf("check --p printed %q", never)
		}
	}
	if t.Failed() {
		t.Logf("check --p printed:\n%s", out.String())
	}
}

// TestObservedFindingOpensInExplain is the path a long recorded log takes, end to end at a small
// scale: a broken variant's run recorded with observe --events-only, checked with check (a
// finding, its window written to --findings), and the window opened with explain. The
// unfenced-ack variant's bug shows within the first few hundred events of every run so far (a
// run is not reproducible from its seed, so the test gives it several thousand). About 3 s of
// wall time; skipped with -short.
func TestObservedFindingOpensInExplain(t *testing.T) {
	if testing.Short() {
		t.Skip("records a run of the real store; skipped with -short")
	}
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	var out, errOut bytes.Buffer
	if code := run([]string{"observe", "--events-only", "--steps", "3000", "--target", "unfenced-ack", "--seed", "3",
		"--events", events, "--out", filepath.Join(dir, "unused.json")}, &out, &errOut); code != exitPass {
		t.Fatalf("observe --events-only exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	findings := filepath.Join(dir, "findings")
	out.Reset()
	if code := run([]string{"check", "--findings", findings, events}, &out, &errOut); code != exitFinding {
		t.Fatalf("check of the unfenced-ack log exited %d, want %d (a finding):\n%s%s", code, exitFinding, out.String(), errOut.String())
	}
	windows, err := filepath.Glob(filepath.Join(findings, "events-line*.json"))
	if err != nil || len(windows) != 1 {
		t.Fatalf("check wrote windows %q (%v), want one:\n%s", windows, err, out.String())
	}
	if !strings.Contains(out.String(), "pconform explain "+windows[0]) {
		t.Fatalf("check does not name the window's explain command:\n%s", out.String())
	}
	tr, err := traces.ReadFile(windows[0])
	if err != nil {
		t.Fatalf("the window is not a trace: %v", err)
	}
	last := tr.Steps[len(tr.Steps)-1]
	out.Reset()
	errOut.Reset()
	code := run([]string{"explain", windows[0], "--target", "model"}, &out, &errOut)
	if code != exitPass && code != exitFinding {
		t.Fatalf("explain of the window exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), string(last.Op)) || len(strings.Split(out.String(), "\n")) < len(tr.Steps) {
		t.Fatalf("explain's timeline of the %d-step window does not show its last step, %s:\n%s", len(tr.Steps), last.Op, out.String())
	}
}

// TestCheckPLog: check --p on an event log streams it to the P monitors beside the model. A log
// whose split publisher reports a row delivered while its enqueue's commit failed is refused by
// OutboxCompletionImpliesDelivery at that event, in the monitor's words (the model refuses it
// too; --keep-going lets the P oracle see it); the same log without the fault holds.
func TestCheckPLog(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the streaming P oracle (its first run compiles the monitors)")
	}
	if _, err := exec.LookPath("p"); err != nil {
		t.Skip("the P tool `p` is not on PATH")
	}
	at := func(s int) string { return traces.At(int64(s)).Format(time.RFC3339) }
	log := func(fault string) string {
		return `{"seq":1,"at":"` + at(0) + `","op":"outbox_enqueue","args":{"id":"o1","target":"inbox","max_attempts":2,"max_delivery_attempts":3},"result":{}}` + "\n" +
			`{"seq":2,"at":"` + at(1) + `","op":"outbox_claim","args":{"limit":1,"claim_for":5000000000},"result":{"claimed":[{"id":"o1","delivery_attempts":1,"token":"c1"}]}}` + "\n" +
			`{"seq":3,"at":"` + at(1) + `","op":"publisher_deliver","args":{"id":"o1","token":"c1","publisher":1,"profile":"split","fault":"` + fault + `"},"result":{"action":"delivered"}}` + "\n" +
			`{"seq":4,"at":"` + at(2) + `","op":"enqueue","args":{"mailbox":"inbox","id":"m2","max_attempts":2},"result":{}}` + "\n"
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		fault string
		code  int
		want  string
	}{
		{"commit_fails", exitFinding, "FINDING p oracle: event 2 (line 3, seq 3): outbox row o1 completed at t=1000 but no message o1 was ever enqueued in mailbox inbox"},
		{"none", exitPass, "P oracle: monitors " + strings.Join(bridge.StreamMonitors, ", ") + " hold ("},
	} {
		path := filepath.Join(dir, tc.fault+".jsonl")
		if err := os.WriteFile(path, []byte(log(tc.fault)), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		args := []string{"check", "--p", "--keep-going", "--models", filepath.Join("..", "..", "models", "p"), "--findings", dir}
		if tc.fault != "none" {
			args = append(args, "--variant", "split-write") // the broken publisher's log
		}
		code := run(append(args, path), &out, &errOut)
		if code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("fault %s: exit %d, want %d with %q:\n%s%s", tc.fault, code, tc.code, tc.want, out.String(), errOut.String())
		}
	}
}
