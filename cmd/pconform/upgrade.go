package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/traces"
)

func newUpgradeCmd() *cobra.Command {
	var check bool
	c := &cobra.Command{
		Use:   "upgrade FILE|DIR...",
		Short: "Rewrite trace files of an earlier format version in the current one",
		Long: `Upgrade reads each trace file (every *.json under a directory) in whatever format version it
carries and rewrites it in the current version, in canonical form. A field the earlier version did not
carry is declared unknown in final.unknown, never filled in. A file already current and canonical is
left untouched. Files are replaced atomically.

With --check nothing is written: each file that would change is listed, and the exit code is 1 if any
would. A file that does not read (a syntax error, an unknown format version) is reported with the
reader's error and the exit code is 3; the other files are still upgraded.`,
		Example: `  pconform upgrade --check traces/corpus
  pconform upgrade traces/corpus`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cobraUsage{fmt.Errorf("expected at least one FILE or DIR")}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return upgradePaths(args, check, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	c.Flags().BoolVar(&check, "check", false, "list the files that would change; write nothing")
	return c
}

// upgradePaths upgrades every trace file under paths, reporting one line per changed file and a
// summary.
func upgradePaths(paths []string, check bool, stdout, stderr io.Writer) error {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		found, err := traces.Walk(p)
		if err != nil {
			return err
		}
		files = append(files, found...)
	}
	var changed, failed int
	for _, path := range files {
		from, did, err := upgradeFile(path, check)
		switch {
		case err != nil:
			failed++
			fmt.Fprintf(stderr, "pconform: %v\n", err)
		case did && check:
			changed++
			fmt.Fprintf(stdout, "%s: would upgrade (%s -> %s)\n", path, from, traces.Format)
		case did:
			changed++
			fmt.Fprintf(stdout, "%s: upgraded (%s -> %s)\n", path, from, traces.Format)
		}
	}
	verb := "upgraded"
	if check {
		verb = "would upgrade"
	}
	fmt.Fprintf(stdout, "%d file(s): %s %d, %d already %s, %d unreadable\n", len(files), verb, changed, len(files)-changed-failed, traces.Format, failed)
	switch {
	case failed > 0:
		return errCannotRun
	case check && changed > 0:
		return errFinding
	}
	return nil
}

// upgradeFile rewrites one file in the current format unless it already is; it returns the
// version the file carried and whether it changed (or, with check, would).
func upgradeFile(path string, check bool) (string, bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false, err
	}
	out, err := traces.Upgrade(data, path)
	if err != nil {
		return "", false, err
	}
	if bytes.Equal(out, data) {
		return traces.Format, false, nil
	}
	// The file read, so it is a JSON object with a string "format".
	var head struct {
		Format string `json:"format"`
	}
	_ = json.Unmarshal(data, &head)
	if check {
		return head.Format, true, nil
	}
	t, err := traces.Unmarshal(out, path)
	if err != nil {
		return "", false, err
	}
	if err := traces.WriteFile(path, t); err != nil {
		return "", false, err
	}
	return head.Format, true, nil
}
