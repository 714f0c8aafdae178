#include "textflag.h"

// func currentG() uintptr
//
// Returns the runtime's g pointer of the calling goroutine from thread-local storage, where the
// runtime keeps it on amd64 (the runtime's own get_tls/g macros expand to these two loads).
TEXT ·currentG(SB),NOSPLIT,$0-8
	MOVQ TLS, CX
	MOVQ 0(CX)(TLS*1), AX
	MOVQ AX, ret+0(FP)
	RET
