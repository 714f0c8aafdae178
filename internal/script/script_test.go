package script

import (
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/internal/tracefmt"
)

// FuzzArgs reads arbitrary command lines: Args must return an error or arguments that render
// back (tracefmt.Args) into a line that reads to the same arguments. Seeds are in
// testdata/fuzz/FuzzArgs.
func FuzzArgs(f *testing.F) {
	f.Fuzz(func(t *testing.T, line string) {
		cmd, cmdArgs, err := datadriven.ParseLine(line)
		if err != nil {
			return
		}
		op, ok := Op(cmd)
		if !ok {
			return
		}
		at, a, err := Args(op, cmdArgs, 0)
		if err != nil {
			return
		}
		_, again, err := datadriven.ParseLine(string(op) + " " + tracefmt.Args(op, a))
		if err != nil {
			t.Skip("a value the line syntax cannot carry")
		}
		at2, b, err := Args(op, again, at)
		if err != nil {
			t.Fatalf("%q read as %+v, rendered back it fails: %v", line, a, err)
		}
		if at2 != at || !cmp.Equal(a, b) {
			t.Fatalf("%q read as %+v, rendered back reads as %+v", line, a, b)
		}
	})
}
