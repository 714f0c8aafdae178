package replay

// Unexported engine parts that the external tests (package replay_test) check directly.
var (
	CmpOptions    = cmpOptions
	CloneSnapshot = cloneSnapshot
	DiffResults   = diffResults
)
