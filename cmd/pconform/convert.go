package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/traces"
)

func newConvertCmd() *cobra.Command {
	var testCase, outDir, events, variant string
	c := &cobra.Command{
		Use:   "convert P_JSON_LOG | convert --events EVENT_LOG",
		Short: "Turn a P checker JSON log, or a store's recorded event log, into trace files",
		Long: `Convert reads a log the P checker wrote — the verbose log of 'p check -v' (one array per
schedule) or the JSON trace of a bug it found — extracts the observations the models announce, and
writes one trace file per schedule into --out, named after the test case, seed and schedule.

--test-case names the P test case the log came from (required for a P log, refused with --events):
it decides whether the traces describe the correct store or a known-broken variant (the
*Counterexample test cases).

With --events, it reads instead the history a store recorded (actordelivery's Recorder: JSON
lines, or the same events as slog JSON records) and writes one trace of origin kind "observed", its
steps in commit order, into --out (a directory; the trace is named after the log). A gap or a
repeat in the sequence numbers is refused naming the gap, an unknown event or a result that does
not fit its operation naming the line; an incomplete last line is reported and ignored.`,
		Example: `  pconform convert bridge/testdata/logs/bad_bug.json --test-case tcLeaselessRawAttemptsCounterexample --out /tmp/traces
  pconform observe --seed 1 --budget 1s --out /tmp/observed.json --events /tmp/events.jsonl
  pconform convert --events /tmp/events.jsonl --out /tmp/traces`,
		Args: func(c *cobra.Command, args []string) error {
			if events != "" {
				return exactArgs(0, "no P log with --events")(c, args)
			}
			return exactArgs(1, "one P JSON log file")(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if events != "" {
				if testCase != "" {
					return usagef("--test-case is for P logs, not --events")
				}
				f, err := os.Open(events)
				if err != nil {
					return err
				}
				defer f.Close()
				name := strings.TrimSuffix(filepath.Base(events), filepath.Ext(events))
				t, err := convertEvents(f, events, observe.Options{Name: name, Variant: variant})
				if err != nil {
					return err
				}
				if err := os.MkdirAll(outDir, 0o755); err != nil {
					return err
				}
				path := filepath.Join(outDir, name+".json")
				if err := traces.WriteFile(path, t); err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "%s (%d steps)\n", path, len(t.Steps))
				return nil
			}
			if testCase == "" {
				return usagef("--test-case is required with a P log: the P test case the log came from")
			}
			ts, err := bridge.ConvertLogFile(args[0], testCase)
			if err != nil {
				return err
			}
			if len(ts) == 0 {
				return fmt.Errorf("%s: no schedule in the log announced any observation", args[0])
			}
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return err
			}
			for _, t := range ts {
				path := filepath.Join(outDir, t.Name+".json")
				if err := traces.WriteFile(path, t); err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "%s (%d steps)\n", path, len(t.Steps))
			}
			return nil
		},
	}
	c.Flags().StringVar(&testCase, "test-case", "", "the P test case the log came from (required for a P log; not with --events)")
	c.Flags().StringVar(&outDir, "out", ".", "directory to write the traces into")
	c.Flags().StringVar(&events, "events", "", "a store's recorded event log (JSON lines) to convert instead of a P log")
	c.Flags().StringVar(&variant, "variant", "", "with --events: the broken variant the store ran, if any")
	return c
}
