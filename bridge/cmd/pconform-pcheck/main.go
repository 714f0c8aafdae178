// Command pconform-pcheck runs the P checker for the gate. Its one command, models, is the gate's
// models stage (scripts/pmodels.sh is a wrapper that builds it and takes the checkout's lock): it
// compiles the P models, checks the checker's listing against the tests the sources declare, runs
// every test case by its exact name and reports one row per run ([bridge.CheckModels]).
//
//	pconform-pcheck models [-root DIR] [--logs [--part records|verdicts]] [NAME...]
//
// It runs on the repository at -root (default: the current directory): the models in
// models/p, their checker output in models/p/PCheckerOutput, the cache of checker runs in
// out/gate/pcache and of compiled projects in out/gate/pcompile. With --logs it also records
// runs for the bridge in models/p/PCheckerOutput/recorded. --part records makes only the runs the
// bridge reads (the recorded runs and the counterexamples' verdicts), --part verdicts only the
// rest (the green tests' verdicts): the gate runs them as two stages, so that the corpus starts
// as soon as the records exist. With NAMEs it runs only those tests.
//
// The budgets come from the environment, as the gate's: PCONFORM_SCHEDULES (1000 per green test),
// PCONFORM_CE_SCHEDULES (100 per counterexample), PCONFORM_RECORD_SCHEDULES (100 per green test
// recorded by --logs), PCONFORM_SEED (1), PCONFORM_JOBS (4 runs at a time),
// PCONFORM_TEST_TIMEOUT (600 seconds per run) and PCONFORM_P_CACHE (the run cache's directory,
// or "off").
//
// Exit codes: 0 every test as it should be, 1 a finding or a stage that could not run (a compile
// error, a listing that does not match the declarations, a green test with a bug, a
// counterexample without one, a run whose result cannot be read), 2 usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/pconform/pconform/bridge"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "pconform-pcheck: want a command: models")
		return 2
	}
	if args[0] != "models" {
		fmt.Fprintf(stderr, "pconform-pcheck: unknown command %q (commands: models)\n", args[0])
		return 2
	}
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", ".", "the repository: models/p and out/gate are under it")
	logs := fs.Bool("logs", false, "also record runs for the bridge in models/p/PCheckerOutput/recorded")
	part := fs.String("part", "", "with --logs, make only part of the runs: records (what the bridge reads) or verdicts (the green tests' verdicts)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	cfg, err := bridge.ModelsConfigFromEnv(getenv, filepath.Join(*root, "out", "gate", "pcache"))
	if err != nil {
		fmt.Fprintf(stderr, "pmodels: %v\n", err)
		return 2
	}
	cfg.ProjectDir = filepath.Join(*root, "models", "p")
	cfg.CompileCache = filepath.Join(*root, "out", "gate", "pcompile")
	cfg.Logs = *logs
	cfg.Part = bridge.ModelsPart(*part)
	if fs.NArg() > 0 {
		cfg.TestCases = fs.Args()
	}
	res, err := bridge.CheckModels(ctx, cfg, stdout)
	switch {
	case errors.Is(err, bridge.ErrModelsUsage):
		fmt.Fprintf(stderr, "pmodels: %v\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "pmodels: FAIL: %v\n", err)
		return 1
	case !res.Pass():
		return 1
	}
	return 0
}
