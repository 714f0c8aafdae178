package traces

import (
	"embed"
	"io/fs"
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
