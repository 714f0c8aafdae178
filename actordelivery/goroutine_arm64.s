#include "textflag.h"

// func currentG() uintptr
//
// Returns the runtime's g pointer of the calling goroutine: arm64 keeps it in the g register.
TEXT ·currentG(SB),NOSPLIT,$0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET
