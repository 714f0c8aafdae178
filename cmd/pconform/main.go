// Command pconform explores traces of the delivery protocol: it replays a trace against the real
// store, the reference model or a known-broken variant; explains a trace as a step-by-step timeline
// in the terminal or as an HTML page; converts P checker logs into traces; and hunts for
// counterexamples with the property tests.
//
// Exit codes, the same built, installed (go install ./cmd/pconform) or through scripts/pconform:
// 0 the verdict is what the trace claims (a replay matched, a counterexample's bug was refused by
// the correct store at the predicted step, a hunt found nothing), 1 a finding (a divergence the
// trace does not predict, a counterexample found by a hunt), 2 usage error, 3 could not run
// (unreadable file, parse error, a target that would not start). `go run` reports every non-zero
// code as 1; use scripts/pconform for the real codes.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
