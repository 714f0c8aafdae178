package traces

import (
	"embed"
	"io/fs"
)

// committed holds the repository's committed traces: the corpus, the hunted counterexamples and
// the hand-written examples.
//
//go:embed corpus/*.json hunted/*.json testdata/good/*.json
var committed embed.FS

// Committed returns the committed traces as a read-only file system with the directories
// "corpus", "hunted" and "testdata/good", so a test outside this repository (the conformance
// kit) carries them without a checkout.
func Committed() fs.FS { return committed }
