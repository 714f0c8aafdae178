// Package gcpace paces the garbage collector of a long check: it sets the collector's target
// percentage (GOGC) from the live heap, so that a small heap is collected rarely and a large one
// is not allowed five times its size.
//
// A log check's garbage is about one event's worth per event, while its live heap is the model's
// rows, which grow with the store's live rows. A fixed GOGC must choose between the two: 400
// spares most of the collector's work on a small heap but lets a heap of 300 MB reach 1.5 GB;
// the default 100 doubles any heap. Percent gives 400 while the live heap is under a quarter of
// Headroom, then as much as keeps the collector's headroom (the heap goal less the live heap) at
// Headroom, and never less than 50. So peak memory is about the live heap plus Headroom until
// the live heap reaches twice Headroom, and one and a half times the live heap beyond: a large
// live heap is collected more often than Go's default would, for about two thirds of its memory.
// That costs CPU on a core the check does not use. A partitioned check (StartParallel) uses every
// core, and there the floor is Go's default 100.
//
// Start reads the live heap (runtime/metrics) at each period and applies Percent with
// debug.SetGCPercent when it changes. It does nothing when the GOGC environment variable is set:
// the user's setting wins.
package gcpace
