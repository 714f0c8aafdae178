package replay_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/internal/script"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// TestScripts runs the command scripts in testdata/script against the store target and the model
// target side by side. Each command runs on both; the output under "----" is the result once
// when the two agree, and both results (and a test failure) when they do not. Regenerate the
// expected output with
//
//	go test ./replay/ -run TestScripts -rewrite
//
// and review the diff.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/script", func(t *testing.T, path string) {
		commands := scriptCommands()
		env := newScriptEnv(t)
		defer env.close(t)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			h, ok := commands[td.Cmd]
			if !ok {
				td.Fatalf(t, "unknown command %q (known: %s)", td.Cmd, strings.Join(commandNames(commands), ", "))
			}
			return h(env, t, td)
		})
	})
}

// scriptCommands dispatches a script line to its handler. Every trace operation is a command of
// the same name, read by internal/script (the model's scripts in models/testdata/script read
// them the same way):
//
//	enqueue mailbox=a id=m1 max_attempts=3 key=k priority=1 delay=5 payload=x
//	lease mailbox=a lease_for=10 at=2
//	ack id=m1 token=1
//	consumer_fetch worker=1 mailbox=a profile=leased lease_for=10
//	consumer_handle worker=1 mailbox=a profile=leased outcome=fail retry_delay=3
//	outbox_claim limit=2 claim_for=5
//	publisher_deliver publisher=1 id=o1 token=1 profile=split fault=commit_fails
//	crash
//
// Tokens are symbols, numbered in the order tokens first appear in results, separately on each
// side; since both sides must agree, so do their numberings. Besides the operations:
//
//	reopen     close and reopen the store (fetched deliveries kept)
//	snapshot   the canonical state of both sides
func scriptCommands() map[string]scriptCommand {
	cmds := map[string]scriptCommand{
		"reopen":   (*scriptEnv).reopen,
		"snapshot": (*scriptEnv).snapshot,
	}
	for _, op := range traces.Ops {
		cmds[string(op)] = func(e *scriptEnv, t *testing.T, td *datadriven.TestData) string {
			return e.op(t, td, op)
		}
	}
	return cmds
}

type scriptCommand func(*scriptEnv, *testing.T, *datadriven.TestData) string

func commandNames(cmds map[string]scriptCommand) []string {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// scriptSide is one target with its own token numbering.
type scriptSide struct {
	name   string
	target replay.Target
	b      *replay.Binding
}

type scriptEnv struct {
	sides []scriptSide
	now   int64
}

func newScriptEnv(t *testing.T) *scriptEnv {
	store, err := targets.New(targets.Store, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	model, err := targets.New(targets.Model, "")
	if err != nil {
		t.Fatal(err)
	}
	return &scriptEnv{sides: []scriptSide{
		{name: targets.Store, target: store, b: replay.NewBinding()},
		{name: targets.Model, target: model, b: replay.NewBinding()},
	}}
}

func (e *scriptEnv) close(t *testing.T) {
	for _, s := range e.sides {
		if err := s.target.Close(); err != nil {
			t.Errorf("close %s: %v", s.name, err)
		}
	}
}

// agree renders one value per side and returns it once when all sides agree; otherwise it
// fails the test and returns each side's rendering under its name.
func (e *scriptEnv) agree(t *testing.T, td *datadriven.TestData, outs []string) string {
	if len(slices.Compact(slices.Clone(outs))) == 1 {
		return outs[0] + "\n"
	}
	var b strings.Builder
	for i, s := range e.sides {
		fmt.Fprintf(&b, "%s: %s\n", s.name, outs[i])
	}
	t.Errorf("%s: %s: the sides disagree:\n%s", td.Pos, td.Cmd, b.String())
	return b.String()
}

// op runs one trace operation on every side.
func (e *scriptEnv) op(t *testing.T, td *datadriven.TestData, op traces.Op) string {
	at, a, err := script.Args(op, td.CmdArgs, e.now)
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	e.now = at
	outs := make([]string, len(e.sides))
	for i, s := range e.sides {
		obs, err := s.target.Do(context.Background(), op, e.now, s.b.Args(op, a))
		if err != nil {
			outs[i] = "error: " + err.Error()
			continue
		}
		outs[i] = tracefmt.Result(op, s.b.Result(nil, obs))
	}
	return e.agree(t, td, outs)
}

func (e *scriptEnv) reopen(t *testing.T, td *datadriven.TestData) string {
	outs := make([]string, len(e.sides))
	for i, s := range e.sides {
		outs[i] = "ok"
		if err := s.target.Reopen(context.Background()); err != nil {
			outs[i] = "error: " + err.Error()
		}
	}
	return e.agree(t, td, outs)
}

func (e *scriptEnv) snapshot(t *testing.T, td *datadriven.TestData) string {
	outs := make([]string, len(e.sides))
	var snaps []traces.Snapshot
	for i, s := range e.sides {
		snap, err := s.target.Snapshot(context.Background())
		if err != nil {
			outs[i] = "error: " + err.Error()
			continue
		}
		sym := s.b.Snapshot(snap)
		traces.Canonicalize(&sym)
		snaps = append(snaps, sym)
		outs[i] = script.Snapshot(sym)
	}
	if len(snaps) == 2 {
		if diff := cmp.Diff(snaps[0], snaps[1], replay.CmpOptions); diff != "" {
			t.Errorf("%s: snapshots differ (-store +model):\n%s", td.Pos, diff)
		}
	}
	return e.agree(t, td, outs)
}
