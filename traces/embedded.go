package traces

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
)

// committed holds the repository's committed traces: the corpus, the hunted counterexamples, the
// hand-written examples and the per-profile P corpora (profiles/NAME).
//
//go:embed corpus/*.json hunted/*.json testdata/good/*.json profiles/*/*.json
var committed embed.FS

// Committed returns the committed traces as a read-only file system with the directories
// "corpus", "hunted", "testdata/good" and "profiles/NAME", so a test outside this repository (the conformance
// kit) carries them without a checkout.
func Committed() fs.FS { return committed }

// ReadCommitted reads the committed traces in the given directories of [Committed] (each a
// pattern such as "corpus" or "profiles/*"), in the order given and in path order within each.
// A trace is named "traces/DIR/FILE" in its errors.
func ReadCommitted(dirs ...string) ([]*Trace, error) {
	var out []*Trace
	for _, dir := range dirs {
		names, err := fs.Glob(committed, dir+"/*.json")
		if err != nil {
			return nil, fmt.Errorf("traces: committed directory %q: %w", dir, err)
		}
		for _, name := range names {
			data, err := fs.ReadFile(committed, name)
			if err != nil {
				return nil, err
			}
			tr, err := Unmarshal(data, path.Join("traces", name))
			if err != nil {
				return nil, err
			}
			out = append(out, tr)
		}
	}
	return out, nil
}
