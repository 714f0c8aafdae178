// Package cursorx holds the few syntax helpers over inspector.Cursor that pconform's analyzers
// share: finding the function a node belongs to, the loop or statement list around it, and
// whether a branch leaves the function. It only reads syntax; it never consults types or
// reports anything.
package cursorx
