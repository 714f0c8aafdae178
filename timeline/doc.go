// Package timeline turns a trace, and optionally the verdicts of replaying it, into a step-by-step
// timeline a person can read: one row per step (time, operation, arguments, the result the trace
// expects, what the target observed), one lane per mailbox, worker, publisher and for the outbox,
// the rows each step touched, and the divergence highlighted.
//
// A view centres on a focus (the divergence, else the predicted step). The steps that lead to it,
// found by following ids and tokens backwards ([Causal]), are never collapsed; runs of other steps
// far from the focus are. Each row has two sides, each drawn from one source: the expected side
// (what the trace records, with rows from a replay against the target it claims to match) and the
// observed side (what the replay target did). A view draws one side per row, so a row never
// contradicts itself; the diverging row shows both. An observed run is also drawn as intervals,
// one row per worker and publisher, with the commit order through them ([BuildIntervals]).
//
// It renders as plain text for a terminal ([WriteText]) and as one self-contained HTML page with no
// external resources ([WriteHTML]). The package is pure: it reads values and writes to an io.Writer;
// it never runs a replay, opens a store or touches the file system.
package timeline
