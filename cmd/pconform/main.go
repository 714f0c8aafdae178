// Command pconform explores traces of the delivery protocol: it replays a trace against the real
// store, the reference model or a known-broken variant; explains a trace as a step-by-step timeline
// in the terminal or as an HTML page; converts P checker logs into traces; and hunts for
// counterexamples with the property tests.
//
// Exit codes: 0 pass (a replay matched, a hunt found nothing), 1 finding (a divergence, a
// counterexample) or a failure to run, 2 usage error.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
