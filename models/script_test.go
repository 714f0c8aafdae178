package models

import (
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/pconform/pconform/internal/script"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/traces"
)

// TestScripts runs the command scripts in testdata/script against the model, one command a step.
// The output under "----" is the step's result as a trace shows it, or the error of a malformed
// step. The operation commands are replay's script commands (internal/script reads both); tokens
// are the model's own (the first lease or claim gets 1, the next 2, ...). Besides the operations:
//
//	reset [attempts=raw]  start again from the initial state at time 0; attempts=raw runs the
//	                      raw-attempts consumer instead of the correct one
//	snapshot              the model's canonical state
//
// Regenerate the expected output with
//
//	go test ./models/ -run TestScripts -rewrite
//
// and review the diff.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/script", func(t *testing.T, path string) {
		e := &scriptEnv{m: NewMachine(Init(Config{}))}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "reset":
				return e.reset(t, td)
			case "snapshot":
				if len(td.CmdArgs) != 0 {
					td.Fatalf(t, "snapshot takes no arguments")
				}
				snap := e.m.s.Snapshot()
				traces.Canonicalize(&snap)
				return script.Snapshot(snap) + "\n"
			}
			op, ok := script.Op(td.Cmd)
			if !ok {
				td.Fatalf(t, "unknown command %q (the trace operations, reset and snapshot are known)", td.Cmd)
			}
			at, a, err := script.Args(op, td.CmdArgs, e.now)
			if err != nil {
				td.Fatalf(t, "%v", err)
			}
			e.now = at
			r, err := e.m.Step(op, at, a)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return tracefmt.Result(op, r) + "\n"
		})
	})
}

type scriptEnv struct {
	m   *Machine
	now int64
}

func (e *scriptEnv) reset(t *testing.T, td *datadriven.TestData) string {
	var cfg Config
	for _, arg := range td.CmdArgs {
		if arg.Key != "attempts" || !slices.Equal(arg.Vals, []string{"raw"}) {
			td.Fatalf(t, "reset takes only attempts=raw, not %s", strings.Join(append([]string{arg.Key}, arg.Vals...), "="))
		}
		cfg.Attempts = rawAttempts
	}
	*e = scriptEnv{m: NewMachine(Init(cfg))}
	return "ok\n"
}
