package workload_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/observe/workload"
)

// childEnv marks this test binary, started again by RunProcesses, as a workload child.
const childEnv = "PCONFORM_WORKLOAD_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		c, err := workload.ParseChild(os.Args[1:])
		if err == nil {
			err = workload.RunChild(context.Background(), c, os.Stdout, os.Stdin)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childCommand runs this test binary as a child.
func childCommand(args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	return cmd
}

// TestProcessesKilledAtRandom runs the workload in child processes, SIGKILLs them at random and
// restarts them: for the correct store the merged history must convert (no gap, no repeat) and
// the model must agree with every result; raw-attempts must still be refused by the model.
func TestProcessesKilledAtRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping runs of child processes")
	}
	for _, tc := range []struct {
		variant string
		finding bool
	}{{"store", false}, {"raw-attempts", true}} {
		t.Run(tc.variant, func(t *testing.T) {
			dir := t.TempDir()
			var events bytes.Buffer
			ps, err := workload.RunProcesses(context.Background(), workload.Processes{
				Config: workload.Config{Target: filepath.Join(dir, "observe.db"), Seed: 1, Budget: 3 * time.Second,
					Events: &events, Variant: tc.variant},
				Command: childCommand, Dir: dir, KillEvery: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			raw := bytes.Clone(events.Bytes())
			_, tr := historyOf(t, &events, "procs")
			t.Logf("%+v, %d steps", ps, len(tr.Steps))
			if ps.Kills == 0 || ps.Writes < 50 || ps.Reads == 0 {
				t.Fatalf("the run killed nothing or did too little to check anything: %+v", ps)
			}
			f, err := observe.CheckModel(tr)
			if err != nil {
				t.Fatal(err)
			}
			if (f != nil) != tc.finding {
				t.Fatalf("model finding %v, want a finding: %v", f, tc.finding)
			}
			if !tc.finding {
				// As pconform check streams it: each restarted child's snapshot (some cut
				// short by a kill) is held to the state the history reached. raw is the commit
				// log followed by each child's reads, not one merged file: a window as long as
				// the log puts it in commit order, as merging the files would.
				window := bytes.Count(raw, []byte("\n")) + 1
				_, sf, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(raw), "events"), window), observe.CheckOptions{})
				if err != nil || sf != nil {
					kept := "(not kept)"
					if f, ferr := os.CreateTemp("", "pconform-killed-*.jsonl"); ferr == nil {
						_, _ = f.Write(raw)
						_ = f.Close()
						kept = f.Name()
					}
					t.Fatalf("the streaming oracle: finding %v, error %v; want the log clean\nthe log: %s (pconform check %s)", sf, err, kept, kept)
				}
				if !bytes.Contains(raw, []byte(`"op":"snapshot"`)) {
					t.Fatal("no restarted child stated its rows: the snapshots went unchecked")
				}
			}
		})
	}
}

func TestParseChildRoundTrip(t *testing.T) {
	c := workload.Child{Backend: "sqlite", Target: "/x/o.db", Variant: "store", Seed: 7, Role: "leased2", Incarnation: 3,
		Tick: 20 * time.Millisecond, Leased: 3, Events: "/x/e.jsonl"}
	got, err := workload.ParseChild(c.Args())
	if err != nil {
		t.Fatal(err)
	}
	if got != c {
		t.Fatalf("got %+v, want %+v", got, c)
	}
	if _, err := workload.ParseChild([]string{"-target", "x"}); err == nil {
		t.Fatal("arguments without a role: no error")
	}
}
