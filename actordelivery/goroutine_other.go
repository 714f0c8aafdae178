//go:build !amd64 && !arm64

package actordelivery

// goroutineKey names the calling goroutine for the transaction-boundary check (boundary.go). On
// architectures without a register read (goroutine_asm.go) it is the goroutine's id, read from its
// stack trace: about a microsecond, paid only while a callback is in flight.
func goroutineKey() uint64 { return goroutineID() }
