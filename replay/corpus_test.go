package replay_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// corpusDir is the directory TestCorpus replays when set; else $PCONFORM_CORPUS, else the committed
// corpus. The gate names a larger corpus it makes from the models (many more schedules than the
// committed corpus keeps) in the environment variable, not the flag: the go command caches a test
// result only for a few flags of its own, and it keys the cached result on the variables the
// tests read and the files they open, so an unchanged corpus is not replayed again.
//
//	go test ./replay/ -run 'TestCorpus$' -corpus /tmp/big-corpus
//	PCONFORM_CORPUS=$PWD/out/gate/wide-corpus go test ./replay/ -run 'TestCorpus$'
var corpusDir = flag.String("corpus", "", "directory of the traces TestCorpus replays (default: $PCONFORM_CORPUS, else ../traces/corpus)")

// corpusEnv names the corpus directory when -corpus is not given.
const corpusEnv = "PCONFORM_CORPUS"

// corpusDirectory is the directory TestCorpus replays: -corpus, else $PCONFORM_CORPUS, else the
// committed corpus. It reads the environment in the test, not at init, so that the go command's
// test cache sees the variable.
func corpusDirectory() string {
	if *corpusDir != "" {
		return *corpusDir
	}
	if d := os.Getenv(corpusEnv); d != "" {
		return d
	}
	return filepath.Join("..", "traces", "corpus")
}

// errEmptyCorpus is corpusPaths's error for a directory that holds no trace: an empty corpus
// must fail the gate, never pass it vacuously.
var errEmptyCorpus = errors.New("replay: the corpus holds no trace")

// corpusPaths returns the trace files in dir. A missing directory, or one without a single .json
// trace, is an error: the gate replays the corpus the bridge generated, and nothing else may stand
// in for it.
func corpusPaths(dir string) ([]string, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("replay: corpus directory: %w", err)
	}
	paths, err := traces.Walk(dir)
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: %s (regenerate it with go run ./bridge/cmd/pconform-corpus)", errEmptyCorpus, dir)
	}
	return paths, nil
}

// readCorpus reads every trace in corpusDirectory(); it fails the test when there is none.
func readCorpus(t testing.TB) (trs []*traces.Trace, paths []string) {
	t.Helper()
	paths, err := corpusPaths(corpusDirectory())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		tr, err := traces.ReadFile(p)
		if err != nil {
			t.Fatalf("corpus: %v", err)
		}
		trs = append(trs, tr)
	}
	return trs, paths
}

// replayed is one replay of a trace and the target's state after it.
type replayed struct {
	verdict replay.Verdict
	final   replay.Snapshot
}

// replayOn replays tr against a fresh target of the named kind and returns the verdict and the
// target's state after the run.
func replayOn(t *testing.T, tr *traces.Trace, target string, b actordelivery.Backend, opts replay.Options) replayed {
	t.Helper()
	tg, err := targets.NewOn(target, storeDB(t, b))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tg.Close(); err != nil {
			t.Errorf("close %s: %v", target, err)
		}
	}()
	v, err := replay.Run(context.Background(), tr, tg, opts)
	if err != nil {
		t.Fatalf("replay against %s could not run: %v", target, err)
	}
	snap, err := tg.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("snapshot of %s: %v", target, err)
	}
	return replayed{verdict: v, final: snap}
}

// expectVerdict fails the test unless v is a Match (divergesAt == -1) or a divergence at exactly
// divergesAt. On failure it keeps the evidence in a directory that outlives the test, and prints
// its path and the commands that reproduce the replay.
func expectVerdict(t *testing.T, ev report.Evidence, divergesAt int) {
	t.Helper()
	v := ev.Verdict
	switch {
	case divergesAt == -1 && v.Outcome == replay.Match:
		return
	case divergesAt >= 0 && v.Outcome == replay.Diverged && v.Step == divergesAt:
		return
	}
	want := "a match"
	if divergesAt >= 0 {
		want = fmt.Sprintf("a divergence at step #%d", divergesAt)
	}
	var text strings.Builder
	if err := ev.WriteReport(&text); err != nil {
		t.Fatal(err)
	}
	dir, err := report.WriteEvidence(os.TempDir(), ev)
	if err != nil {
		t.Errorf("keeping the evidence failed: %v", err)
	}
	t.Errorf("replay of %q against %s: want %s, got %s\n%s\nevidence kept in %s", ev.Trace.Name, ev.Target, want, v, text.String(), dir)
}

// TestCorpus replays every corpus trace. A trace of the correct store (no expect.variant) must
// match the store, the store reopened before every step, and the reference model. A trace of a
// broken variant must match that variant's target (skipped when the variant has none) and must
// diverge from the correct store, and from the model, at exactly expect.diverges_at.
//
// Run one trace with: go test ./replay/ -run '^TestCorpus$/^<name>$' -v (add -corpus DIR for a
// trace outside traces/corpus). The corpus-wide symptom check runs only when every trace ran, so
// a -run filter that narrows the set checks just the traces it names.
func TestCorpus(t *testing.T) {
	trs, paths := readCorpus(t)
	backends := testBackends(t)
	symptoms := map[string][]string{}
	// matched holds, per backend, the traces the correct store replayed to a match: the
	// operations and outcomes that backend was seen to perform as the model does.
	matched := map[actordelivery.Backend][]*traces.Trace{}
	ran := 0
	for i, tr := range trs {
		path, _ := filepath.Abs(paths[i])
		t.Run(tr.Name, func(t *testing.T) {
			ran++
			// check replays against target on every backend (once for the model targets, which
			// have no store) and returns the SQLite run's result.
			check := func(name, target string, opts replay.Options, divergesAt int) replayed {
				var first replayed
				for i, b := range backends {
					if i > 0 && (target == targets.Model || target == targets.ModelRawAttempts) {
						break
					}
					sub := name
					if b != actordelivery.BackendSQLite {
						sub += "@" + string(b)
					}
					t.Run(sub, func(t *testing.T) {
						r := replayOn(t, tr, target, b, opts)
						expectVerdict(t, report.Evidence{Trace: tr, TracePath: path, Target: target, Backend: b, Options: opts, Verdict: r.verdict}, divergesAt)
						if target == targets.Store && !opts.ReopenEveryStep && r.verdict.Outcome == replay.Match {
							matched[b] = append(matched[b], tr)
						}
						if i == 0 {
							first = r
						}
					})
				}
				return first
			}
			variant := tr.Expect.Variant
			if variant == "" {
				// The store reopened before every step is conformtest's reopen subtests, on both
				// backends (conformtest.TestActordelivery).
				check("store", targets.Store, replay.Options{}, -1)
				check("model", targets.Model, replay.Options{}, -1)
				return
			}
			if name, ok := targets.ForVariant(variant); ok {
				r := check(variant, name, replay.Options{}, -1)
				if found := symptom(variant, r.final); len(found) > 0 {
					symptoms[variant] = append(symptoms[variant], tr.Name)
					t.Logf("%s symptom after the replay: %s", variant, strings.Join(found, "; "))
				}
			} else {
				t.Errorf("variant %q has no target in the registry (known broken variants: %q)", variant, targets.BrokenVariants())
			}
			if variant == targets.RawAttempts {
				check(targets.ModelRawAttempts, targets.ModelRawAttempts, replay.Options{}, -1)
			}
			check("store", targets.Store, replay.Options{}, tr.Expect.DivergesAt)
			check("model", targets.Model, replay.Options{}, tr.Expect.DivergesAt)
		})
	}
	if ran < len(trs) {
		t.Logf("-run selected %d of %d traces: the corpus-wide symptom and coverage checks need them all and are skipped", ran, len(trs))
		return
	}
	// The coverage table, per backend: every operation and outcome must have been replayed to a
	// match on each backend.
	for _, b := range backends {
		c := CoverageOf(matched[b])
		t.Logf("coverage on %s: operation x outcome over the %d traces the store replayed to a match:\n%s", b, len(matched[b]), c)
		if missing := c.Missing(); len(missing) > 0 {
			t.Errorf("on %s, no matching replay exercised:\n  %s", b, strings.Join(missing, "\n  "))
		}
	}
	// The bug symptom must show in the final state of at least one trace of each main variant
	// (a checker trace may stop at the first wrong result, before the symptom builds up).
	for _, variant := range []string{targets.SplitWrite, targets.RawAttempts} {
		n := 0
		for _, tr := range trs {
			if tr.Expect.Variant == variant {
				n++
			}
		}
		switch {
		case n == 0:
			t.Errorf("the corpus has no trace of variant %q", variant)
		case len(symptoms[variant]) == 0:
			t.Errorf("none of the %d traces of variant %q shows its symptom after replay against its target", n, variant)
		default:
			t.Logf("variant %q: symptom shown by %v", variant, symptoms[variant])
		}
	}
}

// symptom describes the rows that show the named variant's bug in s: for split-write a completed
// outbox row whose message never arrived in its target mailbox; for raw-attempts a message
// stranded with attempts == max_attempts, ready, unleased and never dead-lettered.
func symptom(variant string, s replay.Snapshot) []string {
	var found []string
	dead := map[string]bool{}
	for _, d := range s.DeadLetters {
		dead[d.ID] = true
	}
	switch variant {
	case targets.SplitWrite:
		arrived := map[string]bool{}
		for _, m := range s.Messages {
			arrived[m.Mailbox+"\x00"+m.ID] = true
		}
		for _, o := range s.Outbox {
			if o.State == traces.StateCompleted && !arrived[o.Target+"\x00"+o.ID] && !dead[o.ID] {
				found = append(found, fmt.Sprintf("outbox row %q is completed but its message never arrived in %q", o.ID, o.Target))
			}
		}
	case targets.RawAttempts:
		for _, m := range s.Messages {
			if m.State == traces.StateReady && m.Attempts == m.MaxAttempts && m.Token == "" && !dead[m.ID] {
				found = append(found, fmt.Sprintf("message %q in %q is stranded: ready, attempts %d == max_attempts, not dead-lettered", m.ID, m.Mailbox, m.Attempts))
			}
		}
	}
	return found
}

// TestCorpusPathsRefusesEmpty: a missing corpus directory, or one without a trace (a stray
// README only), is an error, so a generator that wrote nothing fails the gate instead of
// passing it with nothing replayed.
func TestCorpusPathsRefusesEmpty(t *testing.T) {
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "README.md"), []byte("no traces here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		want      error
	}{
		{"empty", empty, errEmptyCorpus},
		{"missing", filepath.Join(empty, "absent"), os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths, err := corpusPaths(tc.dir)
			if !errors.Is(err, tc.want) {
				t.Fatalf("corpusPaths(%s) = %d paths, %v; want an error wrapping %v", tc.dir, len(paths), err, tc.want)
			}
		})
	}
	paths, err := corpusPaths("../traces/corpus")
	if err != nil || len(paths) == 0 {
		t.Fatalf("the committed corpus: %d paths, %v", len(paths), err)
	}
}
