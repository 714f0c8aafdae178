package conformtest

import (
	"fmt"
	"os"
	"testing"

	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// extraTraces reads the trace files Config.Traces names, a directory standing for the *.json
// files under it, in the order given.
func extraTraces(paths []string) ([]*traces.Trace, error) {
	var out []*traces.Trace
	for _, p := range paths {
		files := []string{p}
		if fi, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("conformtest: Config.Traces: %w", err)
		} else if fi.IsDir() {
			if files, err = traces.Walk(p); err != nil {
				return nil, fmt.Errorf("conformtest: Config.Traces: %w", err)
			}
		}
		for _, f := range files {
			tr, err := traces.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("conformtest: Config.Traces: %w", err)
			}
			out = append(out, tr)
		}
	}
	return out, nil
}

// extra runs the traces of Config.Traces as the committed ones run.
func (k *kit) extra(t *testing.T) {
	t.Helper()
	all, err := extraTraces(k.c.Traces)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range all {
		if tr.Expect.Variant != "" {
			t.Run("variant/"+tr.Expect.Variant+"/"+tr.Name, func(t *testing.T) { k.variant(t, tr) })
			continue
		}
		t.Run("extra/"+tr.Name, func(t *testing.T) { k.green(t, tr, replay.Options{}) })
		t.Run("reopen/extra/"+tr.Name, func(t *testing.T) { k.green(t, tr, replay.Options{ReopenEveryStep: true}) })
	}
}
