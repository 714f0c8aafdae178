// Command pconform-corpus regenerates the committed trace corpus from the P models, or with
// -check verifies that the committed corpus is what the models give now.
//
// Run it from the repository root with the P tool on PATH (. scripts/env.sh):
//
//	go run ./bridge/cmd/pconform-corpus            # rewrite traces/corpus
//	go run ./bridge/cmd/pconform-corpus -check     # exit 1 if traces/corpus is stale
//
// With -from DIR it runs no checker: it reads the runs scripts/pmodels.sh --logs recorded in DIR
// (models/p/PCheckerOutput/recorded), so the gate's checker runs also make the corpus:
//
//	scripts/pmodels.sh --logs && go run ./bridge/cmd/pconform-corpus -check -from models/p/PCheckerOutput/recorded
//
// With -profile FILE it compiles a copy of the P project whose Profile_gen.p is that profile's
// (the repository's files are not touched) and writes traces whose expect.profile is the profile:
// a small corpus of the executions the model has under the profile, which
// scripts/profile-corpus.sh writes into traces/profiles/NAME.
//
// Exit codes: 0 done (or up to date), 1 the corpus is stale, 2 any other failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/internal/gen"
	"github.com/pconform/pconform/profile"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pconform-corpus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "traces/corpus", "corpus directory")
	models := fs.String("models", "models/p", "P project directory")
	check := fs.Bool("check", false, "only check that the corpus is up to date; change nothing")
	seed := fs.Int64("seed", bridge.DefaultSeed, "checker --seed")
	schedules := fs.Int("schedules", bridge.DefaultSchedules, "checker -s per green test case")
	ceSchedules := fs.Int("ce-schedules", bridge.DefaultCounterexampleSchedules, "checker -s budget per counterexample")
	perTest := fs.Int("per-test", bridge.DefaultPerTest, "distinct traces kept per green test case")
	compile := fs.Bool("compile", true, "run p compile first (not with -from)")
	from := fs.String("from", "", "read the checker runs recorded in this directory (scripts/pmodels.sh --logs) instead of running the checker")
	pBin := fs.String("p", "p", "the p executable")
	tests := fs.String("tests", "", "comma-separated test cases to run (default: every listed test case)")
	verbose := fs.Bool("v", false, "log progress")
	profFile := fs.String("profile", "", "run the P model under this profile file and record it in every trace (not with -check or -from)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "pconform-corpus: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *from != "" {
		// Recorded runs were compiled and run already; only an explicit -compile conflicts.
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "compile" })
		if explicit && *compile {
			fmt.Fprintln(stderr, "pconform-corpus: -compile and -from exclude each other")
			return 2
		}
		*compile = false
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	cfg := bridge.Config{
		ProjectDir:              *models,
		P:                       *pBin,
		Compile:                 *compile,
		Seed:                    *seed,
		Schedules:               *schedules,
		CounterexampleSchedules: *ceSchedules,
		PerTest:                 *perTest,
		FromRuns:                *from,
		Logger:                  slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}
	if *tests != "" {
		cfg.TestCases = strings.Split(*tests, ",")
	}
	var prof profile.Profile
	if *profFile != "" {
		if *check || *from != "" {
			fmt.Fprintln(stderr, "pconform-corpus: -profile excludes -check and -from")
			return 2
		}
		var err error
		if prof, err = profile.ReadFile(*profFile); err != nil {
			fmt.Fprintln(stderr, "pconform-corpus:", err)
			return 2
		}
		tmp, err := os.MkdirTemp("", "pconform-corpus-profile-")
		if err != nil {
			fmt.Fprintln(stderr, "pconform-corpus:", err)
			return 2
		}
		defer os.RemoveAll(tmp)
		if err := copyUnder(*models, tmp, prof); err != nil {
			fmt.Fprintln(stderr, "pconform-corpus:", err)
			return 2
		}
		cfg.ProjectDir, cfg.Compile = tmp, true
		// A profile corpus holds traces only: a test case of which the bridge keeps no trace
		// would only be judged, and its verdict under the profile is profile check's to give.
		asked := len(cfg.TestCases)
		cfg.TestCases = slices.DeleteFunc(cfg.TestCases, func(tc string) bool {
			_, untraced := bridge.Untraced(tc)
			return untraced
		})
		if asked > 0 && len(cfg.TestCases) == 0 {
			fmt.Fprintln(stderr, "pconform-corpus: -tests names only test cases of which no trace is made")
			return 2
		}
	}
	if *check {
		err := bridge.CheckUpToDate(ctx, *out, cfg)
		switch {
		case errors.Is(err, bridge.ErrCorpusStale):
			fmt.Fprintln(stderr, err)
			return 1
		case err != nil:
			fmt.Fprintln(stderr, err)
			return 2
		}
		fmt.Fprintf(stdout, "%s is up to date with %s\n", *out, *models)
		return 0
	}
	corpus, err := bridge.RunChecker(ctx, cfg)
	if err == nil {
		for _, tr := range corpus.Traces {
			tr.Expect.Profile = prof
		}
		err = bridge.WriteCorpus(*out, corpus)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	steps := 0
	for _, tr := range corpus.Traces {
		steps += len(tr.Steps)
	}
	fmt.Fprintf(stdout, "wrote %d traces (%d steps) from %d test cases to %s (model %s)\n",
		len(corpus.Traces), steps, len(corpus.Runs), *out, corpus.Model)
	return 0
}

// copyUnder copies the .p and .pproj files of the P project dir into to, with p's Profile_gen.p.
func copyUnder(dir, to string, p profile.Profile) error {
	constants, err := gen.PProfile(p)
	if err != nil {
		return err
	}
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case d.IsDir() && (d.Name() == "PGenerated" || d.Name() == "PCheckerOutput"):
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		case !strings.HasSuffix(path, ".p") && !strings.HasSuffix(path, ".pproj"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(to, "PSrc", "Profile_gen.p"), constants, 0o644)
}
