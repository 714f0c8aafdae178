package properties

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"
	"github.com/leanovate/gopter/gen"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/report"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Defaults of HuntConfig: quick enough for CI, where a hunt of a broken variant finds it within a
// few dozen sequences.
const (
	DefaultSequences  = 200
	DefaultMinSteps   = 5
	DefaultMaxSteps   = 40
	DefaultShrinkRuns = 150
)

// HuntConfig configures one hunt. Every field is optional except Variant.
type HuntConfig struct {
	// Variant is the system under test: "store" (the correct store), a broken variant (see
	// targets.BrokenVariants) or any other name targets.New accepts.
	Variant string
	// Seed fixes every random choice of the hunt: the sequences, their shrinking and the own
	// shrinking pass. A seed reproduces a hunt only on the same commit.
	Seed int64
	// Sequences is the budget of generated sequences; 0 means DefaultSequences.
	Sequences int
	// MinSteps and MaxSteps bound the length of a sequence: gopter grows it from MinSteps to
	// MaxSteps over the hunt. 0 means DefaultMinSteps / DefaultMaxSteps.
	MinSteps, MaxSteps int
	// ShrinkRuns bounds the sequences the own shrinking pass runs after gopter's shrinker;
	// 0 means DefaultShrinkRuns, negative skips the pass.
	ShrinkRuns int
	// Mix weighs the operations; nil means DefaultMix.
	Mix Mix
	// IncludeKnownIssues also generates the steps of the known issues (see KnownIssues), which
	// hunts avoid by default.
	IncludeKnownIssues bool
	// Dir is where the shrunk trace is written; "" writes none.
	Dir string
	// Server, when set, runs the store-backed targets on PostgreSQL (each sequence under a table
	// prefix of its own on the server); nil runs them on SQLite files in WorkDir.
	Server *targets.PGServer
	// WorkDir holds the scratch databases (one per sequence, deleted after it); "" means
	// ScratchDir().
	WorkDir string
	// TestCase and Command go into the trace's origin: the property's name and the command that
	// reproduces the hunt. Empty: "Hunt/<variant>" and a `go test` command for TestHuntVariants.
	TestCase, Command string
	// Progress, when set, is called after every generated sequence with the number run so far and
	// the budget.
	Progress func(done, total int)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger

	_ struct{}
}

// HuntResult is what a hunt found.
type HuntResult struct {
	// Found reports a failing sequence.
	Found bool
	// Sequences counts the generated sequences run, the failing one included; Commands the steps
	// they ran. Shrinking runs are counted apart, in ShrinkRuns.
	Sequences, Commands int
	ShrinkRuns          int
	// OriginalSteps is the length of the first failing sequence, up to its failing step.
	OriginalSteps int
	// Original is what the first failing sequence broke; Failure is what the shrunk sequence
	// breaks on the hunted target. Failure breaks every invariant of Original (for a variant
	// with a catalogued harm, that invariant, which both break).
	Original, Failure *Failure
	// Shrunk is the shrunk sequence as a trace. For a finding in a broken variant it records the
	// variant's own results, with expect naming the variant, the step at which the correct store
	// refuses the bug and the property it violates (docs/trace-format.md, "What a trace claims").
	// For a finding in the store itself, or when the finding does not reproduce, its results are
	// the model's. ShrunkSteps is its length.
	Shrunk      *traces.Trace
	ShrunkSteps int
	// Path is the file Shrunk was written to ("" when Dir was empty).
	Path string
	// Store and Variant are the replays of Shrunk against the correct store and the hunted target.
	// When Shrunk records the variant's results, Store diverges where Shrunk predicts and Variant
	// matches.
	Store, Variant replay.Verdict
	Elapsed        time.Duration
}

// ErrReproduce is wrapped by Hunt when the shrunk trace does not reproduce on its own: the hunted
// target does not diverge from it (a correct store that diverges is ErrStoreDiverges). The
// result still holds the trace and both verdicts.
var ErrReproduce = errors.New("properties: the shrunk trace does not reproduce the failure")

// ErrStoreDiverges is wrapped by Hunt when the correct store itself diverges from the model on the
// shrunk trace of a hunt in a broken variant: whatever the variant did, that trace is a report of
// a bug in the store (or in the model), not a failed hunt. The result holds the trace.
var ErrStoreDiverges = errors.New("properties: the correct store diverges from the model")

// ScratchDir is where hunts keep their scratch databases by default: /dev/shm when it is a
// writable directory (a sequence opens a fresh SQLite database, and fsync on a disk dominates the
// run time), else the system's temporary directory.
func ScratchDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", ".pconform-probe-"); err == nil {
			name := f.Name()
			_ = f.Close()
			_ = os.Remove(name)
			return "/dev/shm"
		}
	}
	return os.TempDir()
}

func (cfg HuntConfig) filled() HuntConfig {
	if cfg.Sequences == 0 {
		cfg.Sequences = DefaultSequences
	}
	if cfg.MinSteps == 0 {
		cfg.MinSteps = DefaultMinSteps
	}
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.ShrinkRuns == 0 {
		cfg.ShrinkRuns = DefaultShrinkRuns
	}
	if cfg.Mix == nil {
		cfg.Mix = DefaultMix()
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = ScratchDir()
	}
	if cfg.TestCase == "" {
		cfg.TestCase = "Hunt/" + cfg.Variant
	}
	if cfg.Command == "" {
		cfg.Command = cfg.defaultCommand()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// defaultCommand is the test that reruns a hunt with cfg's variant and seed, when the rest of cfg
// is what that test uses; otherwise the Hunt call itself.
func (cfg HuntConfig) defaultCommand() string {
	plain := cfg.Sequences == DefaultSequences && cfg.MinSteps == DefaultMinSteps && cfg.MaxSteps == DefaultMaxSteps &&
		cfg.ShrinkRuns == DefaultShrinkRuns && !cfg.IncludeKnownIssues && maps.Equal(cfg.Mix, DefaultMix())
	switch {
	case plain && slices.Contains(HuntedVariants(), cfg.Variant):
		return fmt.Sprintf("go test ./properties/ -run 'TestHuntVariants/^%s$/^seed-%d$' -seed %d", cfg.Variant, cfg.Seed, cfg.Seed)
	case plain && cfg.Variant == targets.Store:
		return fmt.Sprintf("go test ./properties/ -run 'TestPropertyStore$' -seed %d", cfg.Seed)
	}
	return fmt.Sprintf("properties.Hunt(ctx, properties.HuntConfig{Variant: %q, Seed: %d, Sequences: %d, MinSteps: %d, MaxSteps: %d, ShrinkRuns: %d, IncludeKnownIssues: %v})",
		cfg.Variant, cfg.Seed, cfg.Sequences, cfg.MinSteps, cfg.MaxSteps, cfg.ShrinkRuns, cfg.IncludeKnownIssues)
}

func (cfg HuntConfig) check() error {
	switch {
	case cfg.Variant == "":
		return errors.New("properties: HuntConfig.Variant is empty")
	case !slices.Contains(targets.Names(), cfg.Variant):
		return fmt.Errorf("%w %q (known: %q)", targets.ErrUnknown, cfg.Variant, targets.Names())
	case cfg.Sequences < 1:
		return fmt.Errorf("properties: HuntConfig.Sequences %d is below 1", cfg.Sequences)
	case cfg.MinSteps < 1 || cfg.MaxSteps < cfg.MinSteps:
		return fmt.Errorf("properties: HuntConfig steps [%d, %d] is not a range of lengths >= 1", cfg.MinSteps, cfg.MaxSteps)
	}
	for op, w := range cfg.Mix {
		if _, ok := traces.Spec[op]; !ok || w < 0 {
			return fmt.Errorf("properties: HuntConfig.Mix: %q with weight %d is not an operation with a weight >= 0", op, w)
		}
	}
	return nil
}

// Hunt runs random sequences of commands against the configured target with the model as the
// oracle until one fails or the budget is spent. A failing sequence is shrunk (gopter's command
// shrinker, then an own pass that drops random subsets of steps and simplifies ids, values and
// times), turned into a trace of the model's results and replayed against the correct store (it
// must match) and the hunted target (it must diverge). For a broken variant the trace is then
// recorded against the variant and written in the convention of docs/trace-format.md: the
// variant's results, the step at which the correct store refuses them, the violated property.
//
// Hunt returns an error only when the hunt itself could not run (a bad config, a target that
// cannot be created, ctx ending), wrapping ErrReproduce when the shrunk trace does not reproduce
// on its own, or wrapping ErrStoreDiverges when the correct store diverges from the model on it.
// Finding nothing is HuntResult{Found: false}, a finding is Found: true; neither is an error.
func Hunt(ctx context.Context, cfg HuntConfig) (res HuntResult, err error) {
	cfg = cfg.filled()
	if err := cfg.check(); err != nil {
		return HuntResult{}, err
	}
	start := time.Now()
	defer func() { res.Elapsed = time.Since(start) }()
	var avoid []KnownIssue
	if !cfg.IncludeKnownIssues {
		avoid = KnownIssues()
	}
	set := newSetup(targetMix(cfg.Mix, cfg.Variant), avoid)
	set.harm = variantHarm[cfg.Variant]
	h := &hunter{ctx: ctx, cfg: cfg, set: set, log: cfg.Logger, searching: true}

	params := gopter.DefaultTestParametersWithSeed(cfg.Seed)
	params.MinSuccessfulTests = cfg.Sequences
	params.MinSize, params.MaxSize = cfg.MinSteps, cfg.MaxSteps
	params.Workers = 1
	tr := commands.Prop(h.commands()).Check(params)

	res = HuntResult{Sequences: h.sequences, Commands: h.commandsRun, ShrinkRuns: h.shrinkRuns}
	if h.setupErr != nil {
		return res, fmt.Errorf("properties: hunt of %s: %w", cfg.Variant, h.setupErr)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("properties: hunt of %s stopped after %d sequences: %w", cfg.Variant, h.sequences, err)
	}
	switch tr.Status {
	case gopter.TestPassed:
		return res, nil
	case gopter.TestFailed:
	case gopter.TestError:
		return res, fmt.Errorf("properties: hunt of %s: a command panicked: %v\n%s", cfg.Variant, tr.Error, tr.ErrorStack)
	default:
		return res, fmt.Errorf("properties: hunt of %s ended %v after %d sequences", cfg.Variant, tr.Status, h.sequences)
	}
	if h.first == nil || h.last == nil {
		return res, fmt.Errorf("properties: hunt of %s: gopter reported a failure the sequences did not record", cfg.Variant)
	}
	res.Found = true
	res.OriginalSteps = h.first.failure.Step + 1
	res.Original = h.first.failure

	best := h.last
	if cfg.ShrinkRuns > 0 {
		// The own pass draws from the same generator gopter used, so one seed fixes both.
		best = h.shrink(best, params.Rng)
	}
	res.ShrinkRuns = h.shrinkRuns
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("properties: hunt of %s stopped while shrinking: %w", cfg.Variant, err)
	}
	res.Failure = best.failure
	trace, err := h.trace(best.cmds)
	if err != nil {
		return res, err
	}
	res.Shrunk, res.ShrunkSteps = trace, len(trace.Steps)
	if cfg.Dir != "" {
		res.Path = filepath.Join(cfg.Dir, trace.Name+".json")
	}
	verr := h.verify(&res)
	if verr == nil && cfg.Variant != targets.Store {
		verr = h.claimBug(&res)
	}
	if cfg.Dir != "" {
		// Written even when it does not reproduce: it is the evidence of the failed hunt.
		if err := traces.WriteFile(res.Path, res.Shrunk); err != nil {
			return res, errors.Join(verr, fmt.Errorf("properties: %w", err))
		}
	}
	return res, verr
}

// targetMix is mix without the steps the target cannot run (a variant that replaces
// Consumer.Handle has no batch handle, and then draws no batch fetch, which nothing could handle).
func targetMix(mix Mix, target string) Mix {
	out := maps.Clone(mix)
	for _, op := range targets.Unsupported(target) {
		delete(out, op)
		if op == traces.OpConsumerHandleBatch {
			delete(out, traces.OpConsumerFetchBatch)
		}
	}
	return out
}

// Report writes the result for a person: what was run, and for a finding the failure, the shrunk
// trace step by step, where it was written and how the correct store and the hunted target
// replay it.
func (r HuntResult) Report(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d sequences, %d commands", r.Sequences, r.Commands)
	if !r.Found {
		fmt.Fprintf(&b, ": no failure (%v)\n", r.Elapsed.Round(time.Millisecond))
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, ", then %d shrinking runs: a failing sequence of %d steps shrank to %d (%v)\n",
		r.ShrinkRuns, r.OriginalSteps, r.ShrunkSteps, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "failure: %s\n", r.Failure)
	if r.Shrunk != nil {
		whose := "the model's results"
		if e := r.Shrunk.Expect; e.Variant != "" {
			whose = fmt.Sprintf("the results of variant %s; the correct store refuses them at %s", e.Variant, predictedAt(e.DivergesAt))
		}
		fmt.Fprintf(&b, "trace %s (%s):\n", r.Shrunk.Name, whose)
		for _, line := range tracefmt.History(r.Shrunk) {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	if r.Path != "" {
		fmt.Fprintf(&b, "written to %s\n", r.Path)
	}
	fmt.Fprintf(&b, "replay against the store: %s\nreplay against the hunted target: %s\n", r.Store, r.Variant)
	_, err := io.WriteString(w, b.String())
	return err
}

func predictedAt(step int) string {
	if step < 0 {
		return "the final snapshot"
	}
	return fmt.Sprintf("step #%d", step)
}

// hunter is the state of one hunt. gopter drives it through the commands it builds; it counts
// sequences and keeps the first and the last failing run (the last one gopter's shrinker reached
// is its shrunk sequence, since the shrinker only moves on from a failing candidate).
type hunter struct {
	ctx context.Context
	cfg HuntConfig
	set *setup
	log *slog.Logger
	// searching is true until the first failure; the runs after it are gopter's shrinking.
	searching                          bool
	sequences, commandsRun, shrinkRuns int
	first, last                        *failedRun
	// setupErr is the first failure to create a target: the hunt could not run.
	setupErr error
	// template is the migrated SQLite database the hunt's SQLite targets start from; made by the
	// first newTarget on SQLite.
	template *targets.SQLiteTemplate
	// wrap, when set, wraps every system-under-test target: how this package's tests stand a
	// bug no registered variant has in front of the probes.
	wrap func(replay.Target) replay.Target
}

// failedRun is a failing sequence, up to and including its failing step.
type failedRun struct {
	cmds    []*cmd
	failure *Failure
}

func (h *hunter) commands() commands.Commands {
	initial := newWorld(h.set)
	return &commands.ProtoCommands{
		NewSystemUnderTestFunc: func(commands.State) commands.SystemUnderTest {
			s := newSUT(h, true)
			if s.searched = h.searching; s.searched {
				h.sequences++
			} else {
				h.shrinkRuns++
			}
			return s
		},
		DestroySystemUnderTestFunc: func(x commands.SystemUnderTest) {
			s := x.(*sut)
			s.close()
			if s.searched && h.cfg.Progress != nil {
				h.cfg.Progress(h.sequences, h.cfg.Sequences)
			}
		},
		// Worlds are never changed once built, so one initial world serves every sequence.
		InitialStateGen: gen.Const(initial),
		GenCommandFunc: func(st commands.State) gopter.Gen {
			return h.set.gen(st.(*world))
		},
	}
}

func (h *hunter) countCommand() {
	if h.searching {
		h.commandsRun++
	}
}

// keepsHarm reports whether f counts as a failure of this hunt. For a variant whose catalogue row
// names its harm (variantHarm), f must break that invariant, while searching and while shrinking:
// an earlier divergence without it is passed over. For any other target f must break every
// invariant the hunt's first failure broke (any f does, before one was found). So every
// shrinking step, gopter's and the own pass's, keeps the harm of what was found.
func (h *hunter) keepsHarm(f *Failure) bool {
	if c, ok := variantHarm[h.cfg.Variant]; ok {
		return f.keepsHarm([]Check{c})
	}
	return h.first == nil || f.keepsHarm(h.first.failure.harm())
}

func (h *hunter) recordFailure(cmds []*cmd, f *Failure) {
	run := &failedRun{cmds: cmds, failure: f}
	if h.searching {
		h.searching = false
		h.first = run
		h.log.Info("properties: found a failing sequence", "variant", h.cfg.Variant, "seed", h.cfg.Seed,
			"sequences", h.sequences, "steps", len(cmds), "failure", f.String())
	}
	h.last = run
}

// replayRun runs cmds on a fresh target, outside gopter, and returns the first failure (nil when
// the sequence passes) and the commands the target ran, which f.Step indexes: cmds up to the
// failing one, followed by the fencing probe that failed when a probe did (probes run after
// every step and are not in cmds). ok is false when cmds is not a legal sequence.
func (h *hunter) replayRun(cmds []*cmd) (f *Failure, ran []*cmd, ok bool) {
	w := newWorld(h.set)
	for _, c := range cmds {
		if w.legal(c) != "" {
			return nil, nil, false
		}
		w, _ = w.apply(c)
	}
	h.shrinkRuns++
	s := newSUT(h, false)
	defer s.close()
	w = newWorld(h.set)
	for _, c := range cmds {
		o := s.run(c)
		next := c.NextState(w).(*world)
		c.PostCondition(next, o)
		if s.failure != nil {
			return s.failure, slices.Clone(s.ran), true
		}
		w = next
	}
	return nil, slices.Clone(s.ran), true
}

// verify replays the shrunk trace against the correct store and the hunted target.
func (h *hunter) verify(res *HuntResult) error {
	run := func(target string) (replay.Verdict, error) {
		dir, err := os.MkdirTemp(h.cfg.WorkDir, "pconform-verify-")
		if err != nil {
			return replay.Verdict{}, fmt.Errorf("properties: %w", err)
		}
		defer os.RemoveAll(dir)
		t, err := h.newTarget(target, dir)
		if err != nil {
			return replay.Verdict{}, err
		}
		defer t.Close()
		v, err := replay.Run(h.ctx, res.Shrunk, t, replay.Options{})
		if err != nil {
			return v, fmt.Errorf("properties: replay of the shrunk trace against %s: %w", target, err)
		}
		return v, nil
	}
	var err error
	if res.Store, err = run(targets.Store); err != nil {
		return err
	}
	if h.cfg.Variant == targets.Store {
		// A finding against the store itself: the trace must show it as a divergence.
		res.Variant = res.Store
		if res.Store.Outcome != replay.Diverged {
			return fmt.Errorf("%w: the store broke %s but matches the model's trace, so the model breaks it too: %s",
				ErrReproduce, res.Failure, res.Store)
		}
		return nil
	}
	if res.Variant, err = run(h.cfg.Variant); err != nil {
		return err
	}
	switch {
	case res.Store.Outcome != replay.Match:
		where := "the shrunk trace"
		if res.Path != "" {
			where = res.Path
		}
		return fmt.Errorf("%w: hunting %s, the correct store diverged from the model on %s: %s (reproduce: pconform replay %s --target store)",
			ErrStoreDiverges, h.cfg.Variant, where, res.Store, where)
	case res.Variant.Outcome != replay.Diverged:
		return fmt.Errorf("%w: %s does not diverge from the model's trace: %s", ErrReproduce, h.cfg.Variant, res.Variant)
	}
	return nil
}

// claimBug rewrites res.Shrunk in the convention every bug-showing trace follows
// (docs/trace-format.md, "What a trace claims"): the steps and final state are the hunted
// variant's own, recorded by running the model's trace against it; expect names the variant, the
// step at which the correct store refuses the bug, and the property the failure broke. Both claims
// are checked before the trace replaces the model's: the variant must reproduce the recording, and
// the correct store must refuse it where expect says.
func (h *hunter) claimBug(res *HuntResult) error {
	withTarget := func(name string, fn func(replay.Target) error) error {
		dir, err := os.MkdirTemp(h.cfg.WorkDir, "pconform-claim-")
		if err != nil {
			return fmt.Errorf("properties: %w", err)
		}
		defer os.RemoveAll(dir)
		t, err := h.newTarget(name, dir)
		if err != nil {
			return err
		}
		defer t.Close()
		return fn(t)
	}
	// The recording is judged as the variant's from the start: a broken variant's protocol steps
	// may end in ways the correct store's never do (a split delivery whose commit failed, reported
	// delivered), which the trace format allows only in a trace that names its variant.
	claimed := *res.Shrunk
	claimed.Expect = traces.Expect{Variant: h.cfg.Variant, DivergesAt: -1, Violates: res.Failure.Violates()}
	var rec *traces.Trace
	err := withTarget(h.cfg.Variant, func(t replay.Target) (err error) {
		rec, err = replay.Record(h.ctx, &claimed, t)
		return err
	})
	if err != nil {
		return fmt.Errorf("properties: recording %s's run of the shrunk trace: %w", h.cfg.Variant, err)
	}
	rec.Expect = traces.Expect{Variant: h.cfg.Variant, DivergesAt: -1, Violates: res.Failure.Violates()}
	judge := func(target string) (replay.Verdict, report.Judgement, error) {
		var v replay.Verdict
		err := withTarget(target, func(t replay.Target) (err error) {
			v, err = replay.Run(h.ctx, rec, t, replay.Options{})
			return err
		})
		if err != nil {
			return v, report.Judgement{}, fmt.Errorf("properties: replay of the recorded trace against %s: %w", target, err)
		}
		return v, report.Judge(rec, target, v), nil
	}
	store, _, err := judge(targets.Store)
	if err != nil {
		return err
	}
	if store.Outcome != replay.Diverged {
		return fmt.Errorf("%w: the correct store accepts %s's recorded run: %s", ErrReproduce, h.cfg.Variant, store)
	}
	if store.Step != replay.FinalStep {
		rec.Expect.DivergesAt = store.Step
	}
	variant, vj, err := judge(h.cfg.Variant)
	if err != nil {
		return err
	}
	if !vj.AsClaimed {
		return fmt.Errorf("%w: %s does not reproduce its own recorded run: %s", ErrReproduce, h.cfg.Variant, vj.Summary)
	}
	res.Shrunk, res.Store, res.Variant = rec, store, variant
	return nil
}

// newTarget is NewTarget on the hunt's backend: on cfg.Server when set, else in dir, where a
// SQLite store starts as a copy of the hunt's migrated template (made at the first target): a
// hunt opens a fresh store for every sequence and every shrinking run, and running the
// migrations' DDL for each was about a fifth of a hunt's CPU time.
func (h *hunter) newTarget(name, dir string) (replay.Target, error) {
	if h.cfg.Server == nil {
		if h.template == nil {
			tp, err := targets.NewSQLiteTemplate(h.cfg.WorkDir)
			if err != nil {
				return nil, fmt.Errorf("properties: %w", err)
			}
			h.template = tp
		}
		return targets.NewOn(name, targets.StoreDB{Dir: dir, Template: h.template})
	}
	t, err := targets.NewOn(name, targets.StoreDB{Backend: actordelivery.BackendPostgres, Server: h.cfg.Server})
	if err != nil {
		return nil, fmt.Errorf("properties: target %q on postgres: %w", name, err)
	}
	return t, nil
}
