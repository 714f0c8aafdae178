// Package report reads replay verdicts for people: what a trace claims about a target
// ([ClaimFor], [Judge]) and the evidence kept on disk for a divergence ([Evidence],
// [WriteEvidence]), with the commands that reproduce it, and the violated property in plain
// words ([PlainProperty]).
//
// A trace without expect.variant claims the correct targets match it; a trace of variant V
// claims V matches it and the correct targets refuse it at expect.diverges_at. Judge never
// changes a verdict: it says whether the verdict is what the trace claims. WriteEvidence is the
// only part that touches files.
package report
