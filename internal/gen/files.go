package gen

// File is one generated file: its path from the repository root and the function that makes it.
type File struct {
	Path     string
	Generate func() ([]byte, error)
}

// Files lists every file the package generates.
var Files = []File{
	{Path: "traces/schema/trace.schema.json", Generate: Schema},
	{Path: "replay/args_gen.go", Generate: ReplayArgs},
	{Path: "models/p/PSrc/ObservationEvents_gen.p", Generate: PObservationEvents},
}
