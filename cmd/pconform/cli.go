package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitPass    = 0
	exitFinding = 1
	exitUsage   = 2
)

// errFinding marks a command whose run succeeded and found something (a divergence, a
// counterexample); its message has already been printed.
var errFinding = errors.New("finding")

// usageError marks bad flags or arguments.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// run executes the CLI with args and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	switch {
	case err == nil:
		return exitPass
	case errors.Is(err, errFinding):
		return exitFinding
	case errors.As(err, new(usageError)) || isCobraUsage(err):
		fmt.Fprintf(stderr, "pconform: %v\nRun 'pconform --help' for usage.\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "pconform: %v\n", err)
		return exitFinding
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

Exit codes: 0 pass, 1 finding (a divergence or counterexample) or failure, 2 usage error.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cobraUsage{fmt.Errorf("unknown command %q (commands: replay, explain, convert, hunt)", args[0])}
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cobraUsage{err} })
	root.AddCommand(newReplayCmd(), newExplainCmd(), newConvertCmd(), newHuntCmd())
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
