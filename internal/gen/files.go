package gen

import "io/fs"

// File is one generated file: its path from the repository root and the function that makes it.
// A file that is only partly generated has Splice instead of Generate: it takes the file's
// current content and returns it with the generated part replaced. A file made from other
// source files of the repository has FromSource instead: it reads them from the repository
// root it is given.
type File struct {
	Path       string
	Generate   func() ([]byte, error)
	Splice     func(current []byte) ([]byte, error)
	FromSource func(root fs.FS) ([]byte, error)
}

// Make returns what the file should hold, given the repository root (read only by a FromSource
// file) and what the file holds now (read only by a Splice file).
func (f File) Make(root fs.FS, current []byte) ([]byte, error) {
	switch {
	case f.Splice != nil:
		return f.Splice(current)
	case f.FromSource != nil:
		return f.FromSource(root)
	}
	return f.Generate()
}

// Files lists every file the package generates.
var Files = []File{
	{Path: "traces/schema/trace.schema.json", Generate: Schema},
	{Path: "replay/args_gen.go", Generate: ReplayArgs},
	{Path: "replay/rows_gen.go", Generate: ReplayRows},
	{Path: "internal/modeltarget/rows_gen.go", Generate: ModelTargetRows},
	{Path: "models/p/PSrc/ObservationEvents_gen.p", Generate: PObservationEvents},
	{Path: "profile/profile_gen.go", Generate: ProfileGo},
	{Path: "models/p/PSrc/Profile_gen.p", Generate: PProfileDefault},
	{Path: "docs/semantics.md", Splice: SemanticsChoices},
	{Path: "docs/architecture.md", Splice: ArchitectureVariants},
	{Path: "internal/targets/doc.go", Splice: TargetsDoc},
	{Path: "traces/hunted/README.md", Splice: HuntedTable},
	{Path: "models/p/PSrc/Variants_gen.p", Generate: PVariants},
	{Path: "internal/brokenstore/storesql_gen.go", FromSource: BrokenstoreSQL},
}
