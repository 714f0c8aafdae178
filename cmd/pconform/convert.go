package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/traces"
)

func newConvertCmd() *cobra.Command {
	var testCase, outDir string
	c := &cobra.Command{
		Use:   "convert P_JSON_LOG",
		Short: "Turn a P checker JSON log (verbose or bug trace) into trace files",
		Long: `Convert reads a log the P checker wrote — the verbose log of 'p check -v' (one array per
schedule) or the JSON trace of a bug it found — extracts the observations the models announce, and
writes one trace file per schedule into --out, named after the test case, seed and schedule.

--test-case names the P test case the log came from: it decides whether the traces describe the
correct store or a known-broken variant (the *Counterexample test cases).`,
		Example: `  pconform convert models/p/PCheckerOutput/BugFinding/PConform_0_0.trace.json --test-case tcOutboxSplitWriteCounterexample --out /tmp/traces`,
		Args:    exactArgs(1, "one P JSON log file"),
		RunE: func(c *cobra.Command, args []string) error {
			if testCase == "" {
				return usagef("--test-case is required: the P test case the log came from")
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
	c.Flags().StringVar(&testCase, "test-case", "", "the P test case the log came from (required)")
	c.Flags().StringVar(&outDir, "out", ".", "directory to write the traces into")
	return c
}
