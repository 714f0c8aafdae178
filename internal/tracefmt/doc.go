// Package tracefmt renders trace steps, results, snapshots and their differences as text: one
// line per step ("#i @at op args -> result"), key=value pairs in the trace format's field order.
//
// Every rendering is byte-stable, so histories, reports and evidence files can be diffed and
// kept as golden files. The package is pure: it only formats values it is given.
package tracefmt
