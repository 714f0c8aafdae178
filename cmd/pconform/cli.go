package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes, the same whether the CLI is built, installed or run through scripts/pconform.
const (
	// exitPass: the verdict is what the trace claims (a replay matched, a counterexample was
	// refused by the correct store at the predicted step, a hunt found nothing).
	exitPass = 0
	// exitFinding: a finding (an unpredicted divergence, a counterexample found by a hunt).
	exitFinding = 1
	// exitUsage: bad flags or arguments.
	exitUsage = 2
	// exitCannotRun: the run could not happen (unreadable file, parse error, a target or backend
	// that would not start).
	exitCannotRun = 3
)

// errFinding marks a command whose run succeeded and found something (a divergence, a
// counterexample); its message has already been printed.
var errFinding = errors.New("finding")

// errCannotRun marks a command that reported, per trace, that it could not run (its message has
// already been printed).
var errCannotRun = errors.New("could not run")

// errUsageReported marks a command that reported, per trace, a usage error (its message has
// already been printed).
var errUsageReported = errors.New("usage error")

// usageError marks bad flags or arguments.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// run executes the CLI with args and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runRoot(newRoot(stdout, stderr), args, stderr)
}

// runRoot executes root with args and maps its error to an exit code, printing it on stderr.
func runRoot(root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	help := "pconform --help"
	if cmd != nil {
		help = cmd.CommandPath() + " --help"
	}
	switch {
	case err == nil:
		return exitPass
	case errors.Is(err, errFinding):
		return exitFinding
	case errors.Is(err, errCannotRun):
		return exitCannotRun
	case errors.Is(err, errUsageReported):
		return exitUsage
	case errors.As(err, new(usageError)) || isCobraUsage(err):
		fmt.Fprintf(stderr, "pconform: %v\nRun '%s' for usage.\n", err, help)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "pconform: could not run: %v\n", err)
		return exitCannotRun
	}
}

// cobraUsage wraps flag-parsing and argument-count errors that cobra reports.
type cobraUsage struct{ error }

func isCobraUsage(err error) bool { return errors.As(err, new(cobraUsage)) }

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "pconform",
		Short: "Explore and replay traces of the durable delivery protocol",
		Long: `pconform replays traces of the delivery protocol against the real SQLite store, the pure
reference model or a known-broken variant, explains them step by step, converts P checker logs into
traces, and hunts for counterexamples with property tests.

Exit codes: 0 the verdict is what the trace claims, 1 a finding (a divergence the trace does not
predict, a counterexample found by a hunt), 2 usage error, 3 could not run (unreadable file, parse
error, a target that would not start).`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cobraUsage{fmt.Errorf("unknown command %q (commands: replay, explain, convert, hunt, observe, check, upgrade, profile)", args[0])}
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			c.SetOut(c.ErrOrStderr())
			_ = c.Help()
			return cobraUsage{errors.New("no command given")}
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cobraUsage{err} })
	root.AddCommand(newReplayCmd(), newExplainCmd(), newConvertCmd(), newHuntCmd(), newObserveCmd(), newObserveChildCmd(), newCheckCmd(), newUpgradeCmd(), newProfileCmd())
	for _, c := range root.Commands() {
		c.SilenceUsage = true
		c.SilenceErrors = true
	}
	return root
}

// exactArgs is cobra.ExactArgs with a message that says what is missing, reported as a usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return cobraUsage{fmt.Errorf("expected %s, got %d argument(s)", what, len(args))}
		}
		return nil
	}
}
