// Package suppress implements the //pconform:ignore directive, the one way to silence a
// pconform analyzer where code breaks a rule on purpose (replay's deliberately broken store
// variants, for instance).
//
// Forms, each naming one or more analyzers (comma-separated) and a mandatory reason:
//
//	//pconform:ignore txerr the seed bug, reproduced on purpose
//	func splitWriteDeliver(...)         // in a function's doc comment: the whole function
//
//	//pconform:ignore unfencedack reason // on its own line: the next line
//	st.AckByID(ctx, m.ID) //pconform:ignore unfencedack reason   // at a line's end: that line
//
// A directive without a reason suppresses nothing and is itself reported, so every silenced
// finding says why. The package only filters one analyzer's own reports; it never changes what
// an analyzer computes.
package suppress
