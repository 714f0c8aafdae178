//go:build amd64 || arm64

package actordelivery

// currentG returns the address of the calling goroutine's runtime descriptor (goroutine_*.s).
// It names the goroutine uniquely for as long as the goroutine runs: the runtime reuses a
// descriptor only after its goroutine has exited, and never moves it.
func currentG() uintptr

// goroutineKey names the calling goroutine for the transaction-boundary check (boundary.go).
func goroutineKey() uint64 { return uint64(currentG()) }
